// The helpers every binding file uses (bindings.h).
#include <cstring>

#include "bindings.h"
#include "glrecon/errors.h"
#include "glrecon/limits.h"

namespace glrecon::python {

std::optional<Backend> backendOf(const std::string& name, bool allowAuto) {
  if (allowAuto && name == "auto") return std::nullopt;
  const std::optional<Backend> backend = backendNamed(name);
  if (backend && backendInfo(*backend).built && (allowAuto || *backend != Backend::GraphicsMp)) return backend;
  std::string known;
  for (Backend b : builtBackends())
    if (allowAuto || b != Backend::GraphicsMp) known += (known.empty() ? "" : ", ") + std::string(backendInfo(b).name);
  throw UsageError(field("backend") + ": expected one of " + known + (allowAuto ? ", auto" : "") + ", found '" + name + "'");
}

FloatArray floatArray(const py::array& input) {
  // An array at an odd address is copied: pybind11 takes one that is C-contiguous float32 as it is, and the library's
  // float reads there are undefined behaviour. (The package hands over aligned arrays; this covers _glrecon's callers.)
  if (!(input.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    return FloatArray(py::module_::import("numpy").attr("require")(input, "float32", py::make_tuple("C", "A")));
  return FloatArray(py::reinterpret_borrow<py::object>(input));
}

py::array toNumpy(Image&& image) {
  auto* owner = new Image(std::move(image));
  py::capsule free(owner, [](void* p) { delete static_cast<Image*>(p); });
  const std::vector<py::ssize_t> shape = {owner->size[2], owner->size[1], owner->size[0]};
  return py::array_t<float>(shape, owner->data.data(), free);
}

py::tuple triple(const std::array<double, 3>& a) { return py::make_tuple(a[0], a[1], a[2]); }

Image toImage(const FloatArray& array, const std::array<double, 3>& spacing, const std::array<double, 3>& origin, const char* name) {
  if (array.ndim() != 3 && array.ndim() != 2)
    throwInputError(name, "shape", "a 2D (rows, columns) or 3D (z, y, x) array", std::to_string(array.ndim()) + " dimensions");
  const int nz = array.ndim() == 3 ? static_cast<int>(array.shape(0)) : 1;
  const int ny = static_cast<int>(array.shape(array.ndim() - 2)), nx = static_cast<int>(array.shape(array.ndim() - 1));
  checkHostMemory(name, "a copy of the " + std::to_string(nx) + " x " + std::to_string(ny) + " x " + std::to_string(nz) + " array",
                  std::uint64_t{4} * static_cast<std::uint64_t>(array.size()));
  Image image({nx, ny, nz}, spacing, origin);
  // An empty array's data pointer may be null, and memcpy from null is undefined even for 0 bytes (UBSan); the
  // writers and the checks after this refuse the empty image naming its size.
  if (!image.data.empty()) std::memcpy(image.data.data(), array.data(), image.data.size() * sizeof(float));
  return image;
}

std::optional<DetectorLayout> layoutOf(const py::object& spacing, const py::object& origin, std::size_t nu, std::size_t nv) {
  if (spacing.is_none()) return std::nullopt;
  const auto s = spacing.cast<std::vector<double>>();
  const auto o = origin.is_none() ? std::vector<double>{} : origin.cast<std::vector<double>>();
  if (s.size() < 2) throwInputError("projections", "spacing", "(u, v[, view]) spacing in mm", std::to_string(s.size()) + " values");
  DetectorLayout layout = DetectorLayout::centred(static_cast<int>(nu), static_cast<int>(nv), s[0], s[1]);
  if (o.size() >= 2) {
    layout.originU = o[0];
    layout.originV = o[1];
  }
  return layout;
}

VolumeGrid makeGrid(const std::array<int, 3>& size, const std::array<double, 3>& spacing, const std::optional<std::array<double, 3>>& origin) {
  for (int n : size) checkValue("size", n);
  VolumeGrid grid = VolumeGrid::centred(size, {spacing[0], spacing[1], spacing[2]});
  if (origin) grid.origin = {(*origin)[0], (*origin)[1], (*origin)[2]};
  grid.validate("volume");
  return grid;
}

ScanInput scanInput(const py::array& input, const py::object& spacing, const py::object& origin, const PyGeometry& pygeometry) {
  ScanInput scan{floatArray(input), {}};
  const FloatArray& projections = scan.projections;
  if (projections.ndim() != 3)
    throwInputError("projections", "shape", "a 3D array (views, v, u)", std::to_string(projections.ndim()) + " dimensions");
  const std::size_t views = projections.shape(0), nv = projections.shape(1), nu = projections.shape(2);
  scan.geometry = pygeometry.resolve(layoutOf(spacing, origin, nu, nv));
  scan.geometry.validate("geometry");
  if (scan.geometry.detector.nu != static_cast<int>(nu) || scan.geometry.detector.nv != static_cast<int>(nv))
    throwInputError("projections", "shape (views, v, u)",
                    "v x u = " + std::to_string(scan.geometry.detector.nv) + " x " + std::to_string(scan.geometry.detector.nu) + " detector pixels",
                    std::to_string(nv) + " x " + std::to_string(nu));
  if (scan.geometry.size() != views)
    throwInputError("projections", "number of projections", std::to_string(scan.geometry.size()) + " as in the geometry", std::to_string(views));
  return scan;
}

OperatorOptions projectorOptions(int gpu, int threads, double step, const std::string& pair) {
  OperatorOptions po;
  po.pair = parseProjectorPair(pair);
  po.device = gpu;
  po.threads = threads;
  po.step = step;
  return po;
}

std::string pythonName(const std::string& field) {
  if (field == "lambda") return "lamb";
  if (field == "phantomScale") return "scale";
  if (field == "overwrite" || field == "positivity") return field + "=True";
  std::string name;
  for (char c : field) {
    if (c >= 'A' && c <= 'Z') {
      name += '_';
      name += static_cast<char>(c - 'A' + 'a');
    } else {
      name += c;
    }
  }
  return name;
}

bool interruptedBetweenSteps(const std::function<void()>& callback, std::exception_ptr& error) {
  py::gil_scoped_acquire gil;
  try {
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (callback) callback();
  } catch (...) {
    error = std::current_exception();
    return true;
  }
  return false;
}

}  // namespace glrecon::python
