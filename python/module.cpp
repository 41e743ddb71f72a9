// glrecon's Python extension (_glrecon): pybind11 over the public headers. The Python package
// (python/glrecon/__init__.py) puts the user-facing functions, defaults and docstrings on top.
//
// Arrays: NumPy (z, y, x) for volumes and (views, v, u) for projections, i.e. the C++ Image's memory order
// (x fastest) read as a C-contiguous array, as ITK/RTK/SimpleITK show a MetaImage. Results come back without a
// copy (the Image's buffer is handed to NumPy); projections given as C-contiguous float32 are read in place.
// Work runs with the GIL released; progress callbacks take it back for the call only.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/geometry.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/iterative.h"
#include "glrecon/phantom.h"
#include "glrecon/preprocess.h"
#include "glrecon/operator.h"
#include "glrecon/roi.h"
#include "glrecon/sink.h"
#include "glrecon/source.h"

namespace py = pybind11;
using namespace glrecon;

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// The backend a name means: one this build has; with allowAuto, "auto" is an empty optional. project() and the iterative
// methods take no graphics-mp (it differs from graphics in FDK's backprojection only).
std::optional<Backend> backendOf(const std::string& name, bool allowAuto) {
  if (allowAuto && name == "auto") return std::nullopt;
  const std::optional<Backend> backend = backendNamed(name);
  if (backend && backendInfo(*backend).built && (allowAuto || *backend != Backend::GraphicsMp)) return backend;
  std::string known;
  for (Backend b : builtBackends())
    if (allowAuto || b != Backend::GraphicsMp) known += (known.empty() ? "" : ", ") + std::string(backendInfo(b).name);
  throw UsageError(field("backend") + ": expected one of " + known + (allowAuto ? ", auto" : "") + ", found '" + name + "'");
}

// An Image's buffer as a NumPy array (z, y, x) without copying: the Image moves to the heap and a capsule frees it.
py::array toNumpy(Image&& image) {
  auto* owner = new Image(std::move(image));
  py::capsule free(owner, [](void* p) { delete static_cast<Image*>(p); });
  const std::vector<py::ssize_t> shape = {owner->size[2], owner->size[1], owner->size[0]};
  return py::array_t<float>(shape, owner->data.data(), free);
}

py::tuple triple(const std::array<double, 3>& a) { return py::make_tuple(a[0], a[1], a[2]); }

// A NumPy array (3D, or 2D as one slice) with (x, y, z) spacing and origin as an Image (one copy: the C++ writers
// and preprocessing take an Image).
Image toImage(const FloatArray& array, const std::array<double, 3>& spacing, const std::array<double, 3>& origin, const char* name) {
  if (array.ndim() != 3 && array.ndim() != 2)
    throwInputError(name, "shape", "a 2D (rows, columns) or 3D (z, y, x) array", std::to_string(array.ndim()) + " dimensions");
  const int nz = array.ndim() == 3 ? static_cast<int>(array.shape(0)) : 1;
  const int ny = static_cast<int>(array.shape(array.ndim() - 2)), nx = static_cast<int>(array.shape(array.ndim() - 1));
  Image image({nx, ny, nz}, spacing, origin);
  std::memcpy(image.data.data(), array.data(), image.data.size() * sizeof(float));
  return image;
}

// A geometry as Python sees it: RTK parameters waiting for a detector layout (read_rtk_geometry: the layout comes
// from the projections, as on the command line), or complete (circular(), from_vectors()).
struct PyGeometry {
  std::vector<CircularParams> circular;
  std::optional<DetectorLayout> detector;
  std::vector<ProjectionVectors> vectors;  // for geometries given as vectors (no RTK parameters)

  Geometry resolve(const std::optional<DetectorLayout>& fromProjections) const {
    if (!circular.empty()) {
      const std::optional<DetectorLayout>& layout = detector ? detector : fromProjections;
      if (!layout)
        throwInputError("geometry", "detector layout",
                        "the detector's pixel spacing and origin (projections from read_image, or geometry.with_detector(...))",
                        "an RTK geometry without a detector and plain array projections");
      return Geometry::fromCircular(circular, *layout);
    }
    Geometry g;
    g.detector = *detector;
    g.views = vectors;
    return g;
  }
};

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
  VolumeGrid grid = VolumeGrid::centred(size, {spacing[0], spacing[1], spacing[2]});
  if (origin) grid.origin = {(*origin)[0], (*origin)[1], (*origin)[2]};
  grid.validate("volume");
  return grid;
}

std::string pythonName(const std::string& field);

py::array fdk(const py::array& input, const py::object& spacing, const py::object& origin, const PyGeometry& pygeometry,
              const std::array<int, 3>& size, const std::array<double, 3>& voxel, const std::optional<std::array<double, 3>>& volumeOrigin,
              const std::string& backend, int window, const std::string& filter, double cutoff, bool shortScan, int threads,
              int batch, int gpu, const std::string& roi, const py::object& progress, bool printProgress, py::dict report) {
  // Taken as it is when C-contiguous float32; otherwise converted once here (forcecast).
  const FloatArray projections = FloatArray::ensure(input);
  if (!projections) throw py::error_already_set();
  if (projections.ndim() != 3)
    throwInputError("projections", "shape", "a 3D array (views, v, u)", std::to_string(projections.ndim()) + " dimensions");
  const std::size_t views = projections.shape(0), nv = projections.shape(1), nu = projections.shape(2);
  const Geometry geometry = pygeometry.resolve(layoutOf(spacing, origin, nu, nv));
  geometry.validate("geometry");
  if (geometry.detector.nu != static_cast<int>(nu) || geometry.detector.nv != static_cast<int>(nv))
    throwInputError("projections", "shape (views, v, u)",
                    "v x u = " + std::to_string(geometry.detector.nv) + " x " + std::to_string(geometry.detector.nu) + " detector pixels",
                    std::to_string(nv) + " x " + std::to_string(nu));
  if (geometry.size() != views)
    throwInputError("projections", "number of projections", std::to_string(geometry.size()) + " as in the geometry", std::to_string(views));
  const VolumeGrid grid = makeGrid(size, voxel, volumeOrigin);

  FdkOptions options;
  options.filter.window = parseRampWindow(filter);
  options.filter.cutoff = cutoff;
  options.filter.shortScan = shortScan;
  options.backend = backendOf(backend, true);
  options.window = window;
  options.threads = threads;
  options.batch = static_cast<std::size_t>(std::max(1, batch));
  options.gpu = gpu;
  options.roi = roi;
  options.progress = printProgress;
  // The batch path on the array where it is (no copy): the filter on the device where the backend has one, slabs where
  // the volume does not fit the device. Its values are checked first, as the file readers check theirs.
  std::unique_ptr<ProjectionSource> source =
      memorySource(projections.data(), views, geometry.detector, "projections", /*check=*/true);
  std::exception_ptr callbackError;
  FdkReport stream;
  Image volume;
  {
    py::gil_scoped_release release;
    const FdkPlan plan = planFdk(geometry, grid, options, *source);
    ImageSink sink(grid, threads);
    FdkReconstructor reconstructor(plan);
    reconstructor.start(*source, sink);
    // Between steps the GIL is taken back for the progress callback and Ctrl-C; an exception there cancels the run.
    for (bool more = true; more;) {
      more = reconstructor.step(std::chrono::milliseconds(100));
      py::gil_scoped_acquire gil;
      try {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (!progress.is_none()) progress(reconstructor.done(), views);
      } catch (...) {
        callbackError = std::current_exception();
        break;
      }
    }
    if (callbackError) {
      reconstructor.cancel();
    } else {
      stream = reconstructor.finish();
      volume = sink.take();
    }
  }
  if (callbackError) std::rethrow_exception(callbackError);
  report["backend"] = stream.backend;
  if (!stream.autoNote.empty()) report["auto"] = renderFields(stream.autoNote, pythonName);
  report["seconds"] = stream.totalSeconds;
  report["backproject_seconds"] = stream.backprojectSeconds;
  report["g_voxel_updates_per_second"] = stream.gigaUpdatesPerSecond();
  report["projections_address"] = reinterpret_cast<std::uintptr_t>(projections.data());
  return toNumpy(std::move(volume));
}

// The projections of a reconstruction as (views, v, u): taken as they are when C-contiguous float32, checked against
// the geometry (shape, count) with fdk's messages; the geometry resolved as fdk resolves it.
struct ScanInput {
  FloatArray projections;
  Geometry geometry;
};
ScanInput scanInput(const py::array& input, const py::object& spacing, const py::object& origin, const PyGeometry& pygeometry) {
  ScanInput scan{FloatArray::ensure(input), {}};
  if (!scan.projections) throw py::error_already_set();
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

OperatorOptions projectorOptions(int gpu, int threads, double step) {
  OperatorOptions po;
  po.device = gpu;
  po.threads = threads;
  po.step = step;
  return po;
}

// `glrecon project`: A volume for every view of the geometry, (views, v, u). The volume is read in place when
// C-contiguous float32; its grid is (size from the array, spacing, origin).
py::tuple project(const py::array& input, const std::array<double, 3>& spacing, const std::array<double, 3>& origin, const PyGeometry& pygeometry,
                  const std::string& backend, double step, int gpu, int threads) {
  const FloatArray volume = FloatArray::ensure(input);
  if (!volume) throw py::error_already_set();
  if (volume.ndim() != 3) throwInputError("volume", "shape", "a 3D array (z, y, x)", std::to_string(volume.ndim()) + " dimensions");
  if (!pygeometry.detector)
    throwInputError("geometry", "detector layout", "the detector's pixels, spacing and origin (geometry.with_detector(...))",
                    "an RTK geometry without a detector");
  const Geometry geometry = pygeometry.resolve(std::nullopt);
  geometry.validate("geometry");
  VolumeGrid grid;
  grid.size = {static_cast<int>(volume.shape(2)), static_cast<int>(volume.shape(1)), static_cast<int>(volume.shape(0))};
  grid.spacing = {spacing[0], spacing[1], spacing[2]};
  grid.origin = {origin[0], origin[1], origin[2]};
  grid.validate("volume");
  const DetectorLayout& layout = geometry.detector;
  Image out({layout.nu, layout.nv, static_cast<int>(geometry.size())}, {layout.spacingU, layout.spacingV, 1.0},
            {layout.originU, layout.originV, 0.0});
  {
    py::gil_scoped_release release;
    auto projector = makeOperator(*backendOf(backend, false), geometry, grid, projectorOptions(gpu, threads, step));
    std::vector<std::size_t> views(geometry.size());
    std::iota(views.begin(), views.end(), std::size_t{0});
    projector->setVolume(volume.data());
    projector->forward(views.data(), views.size(), out.data.data());
  }
  const auto s = out.spacing, o = out.origin;
  return py::make_tuple(toNumpy(std::move(out)), triple(s), triple(o));
}

struct IterationStopped {};

// A request field named in a library message (glrecon/errors.h) as this module's keyword: camelCase to snake_case;
// flags read as they are set.
std::string pythonName(const std::string& field) {
  if (field == "lambda") return "lamb";
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

// `glrecon sart|sirt|cgls|osem`: the checks and defaults of the command line (src/app/iterative.cpp), then
// reconstructIterative. The projections are copied once into an Image (reconstructIterative takes one).
py::array iterative(const std::string& methodName_, const py::array& input, const py::object& spacing, const py::object& origin,
                    const PyGeometry& pygeometry, const std::array<int, 3>& size, const std::array<double, 3>& voxel,
                    const std::optional<std::array<double, 3>>& volumeOrigin, int iterations, int subsets, double lambda, bool positivity,
                    const std::optional<FloatArray>& initial, const std::optional<std::array<double, 3>>& initialSpacing,
                    const std::optional<std::array<double, 3>>& initialOrigin, const std::string& roi, const std::string& backend, int gpu,
                    int threads, double step, const py::object& progress, bool printProgress, py::dict report) {
  IterativeOptions options;
  options.method = parseIterativeMethod(methodName_);
  options.iterations = iterations;
  options.subsets = subsets;
  options.lambda = lambda;
  options.positivity = positivity;
  if (iterations < 1) throw UsageError(field("iterations") + ": expected at least 1, found " + std::to_string(iterations));
  const VolumeGrid grid = makeGrid(size, voxel, volumeOrigin);
  const ScanInput scan = scanInput(input, spacing, origin, pygeometry);
  const Geometry& geometry = scan.geometry;
  Image projections({geometry.detector.nu, geometry.detector.nv, static_cast<int>(geometry.size())},
                    {geometry.detector.spacingU, geometry.detector.spacingV, 1.0}, {geometry.detector.originU, geometry.detector.originV, 0.0});
  std::memcpy(projections.data.data(), scan.projections.data(), projections.data.size() * sizeof(float));
  Image initialVolume;
  if (initial) {
    initialVolume = toImage(*initial, initialSpacing.value_or(std::array<double, 3>{grid.spacing.x, grid.spacing.y, grid.spacing.z}),
                            initialOrigin.value_or(std::array<double, 3>{grid.origin.x, grid.origin.y, grid.origin.z}), "initial");
    options.initial = &initialVolume;
  }
  if (!roi.empty()) options.mask = makeRegionOfInterest(roi, geometry, grid).mask;
  const IterativeMethod method = options.method;
  std::exception_ptr callbackError;
  IterativeReport rep;
  Image volume;
  std::string description;
  {
    py::gil_scoped_release release;
    auto projector = makeOperator(*backendOf(backend, false), geometry, grid, projectorOptions(gpu, threads, step));
    description = projector->description();
    double dataNorm = 0;
    for (float b : projections.data) dataNorm += static_cast<double>(b) * b;
    dataNorm = std::sqrt(dataNorm);
    try {
      volume = reconstructIterative(*projector, geometry, projections, grid, options, &rep, [&](const IterationRecord& r, const std::vector<float>&) {
        if (r.subset != r.subsets) return;
        if (printProgress)
          std::fprintf(stderr, "%s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", methodName(method), r.iteration, iterations,
                       r.residual, dataNorm > 0 ? r.residual / dataNorm : 0.0, r.seconds);
        py::gil_scoped_acquire gil;
        try {
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          if (!progress.is_none()) progress(r.iteration, iterations);
        } catch (...) {
          callbackError = std::current_exception();
        }
        if (callbackError) throw IterationStopped{};
      });
    } catch (const IterationStopped&) {
    }
  }
  if (callbackError) std::rethrow_exception(callbackError);
  py::list residuals;
  for (const IterationRecord& r : rep.iterations) residuals.append(r.residual);
  report["backend"] = description;
  report["residuals"] = residuals;
  report["final_residual"] = rep.finalResidual;
  report["data_norm"] = rep.dataNorm;
  report["subsets"] = rep.subsets;
  report["lambda"] = rep.lambda;
  report["seconds"] = rep.seconds;
  report["setup_seconds"] = rep.setupSeconds;
  return toNumpy(std::move(volume));
}

py::tuple readImageTuple(const std::string& path) {
  Image image;
  {
    py::gil_scoped_release release;
    image = readImage(path);
  }
  const auto spacing = image.spacing, origin = image.origin;
  return py::make_tuple(toNumpy(std::move(image)), triple(spacing), triple(origin));
}

py::tuple readProjectionsTuple(const std::string& spec) {
  Image image;
  {
    py::gil_scoped_release release;
    image = readProjectionStack(spec);
  }
  const auto spacing = image.spacing, origin = image.origin;
  return py::make_tuple(toNumpy(std::move(image)), triple(spacing), triple(origin));
}

py::array vectorsArray(const Geometry& g) {
  py::array_t<double> out({static_cast<py::ssize_t>(g.size()), py::ssize_t{12}});
  auto m = out.mutable_unchecked<2>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const ProjectionVectors& v = g.views[i];
    const glm::dvec3 parts[4] = {v.source, v.pixel00, v.uStep, v.vStep};
    for (int p = 0; p < 4; ++p)
      for (int c = 0; c < 3; ++c) m(i, p * 3 + c) = parts[p][c];
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_glrecon, m) {
  m.doc() = "glrecon's compiled core; use the glrecon package.";

  // Exceptions: one base (glrecon.Error, itself a RuntimeError), the C++ types under their own names; request fields
  // named in messages are written as this module's keywords (pythonName).
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<InputError> input(m, "InputError", error.ptr());
  static py::exception<GeometryError> geometryError(m, "GeometryError", error.ptr());
  static py::exception<UsageError> usage(m, "UsageError", error.ptr());
  static py::exception<DeviceError> deviceError(m, "DeviceError", error.ptr());
  static py::exception<gl::GlError> glError(m, "GlError", deviceError.ptr());
  static py::exception<CudaError> cudaError(m, "CudaError", deviceError.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      input(e.render(pythonName).c_str());
    } catch (const GeometryError& e) {
      geometryError(e.render(pythonName).c_str());
    } catch (const UsageError& e) {
      usage(e.render(pythonName).c_str());
    } catch (const gl::GlError& e) {
      glError(e.render(pythonName).c_str());
    } catch (const CudaError& e) {
      cudaError(e.render(pythonName).c_str());
    } catch (const DeviceError& e) {
      deviceError(e.render(pythonName).c_str());
    } catch (const Error& e) {
      error(e.render(pythonName).c_str());
    }
  });

  py::class_<PyGeometry>(m, "Geometry")
      .def_static(
          "_circular",
          [](int projections, double sid, double sdd, std::array<int, 2> detector, std::array<double, 2> pixel, double firstAngle,
             double arc, std::array<double, 2> detectorOffset, std::array<double, 2> sourceOffset, double outOfPlane, double inPlane) {
            CircularScanSpec spec;
            spec.projections = projections;
            spec.sid = sid;
            spec.sdd = sdd;
            spec.nu = detector[0];
            spec.nv = detector[1];
            spec.spacingU = pixel[0];
            spec.spacingV = pixel[1];
            spec.firstAngle = firstAngle;
            spec.arc = arc;
            spec.projectionOffsetX = detectorOffset[0];
            spec.projectionOffsetY = detectorOffset[1];
            spec.sourceOffsetX = sourceOffset[0];
            spec.sourceOffsetY = sourceOffset[1];
            spec.outOfPlaneAngle = outOfPlane;
            spec.inPlaneAngle = inPlane;
            const Geometry g = makeCircularScan(spec);
            g.validate("geometry");
            return PyGeometry{g.circular, g.detector, {}};
          })
      .def_static("_from_vectors",
                  [](const py::array_t<double, py::array::c_style | py::array::forcecast>& vectors, std::array<int, 2> detector) {
                    if (vectors.ndim() != 2 || vectors.shape(1) != 12)
                      throwInputError("vectors", "shape", "(views, 12): source, pixel (0,0), u step, v step",
                                      vectors.ndim() == 2 ? "(" + std::to_string(vectors.shape(0)) + ", " + std::to_string(vectors.shape(1)) + ")"
                                                          : std::to_string(vectors.ndim()) + " dimensions");
                    PyGeometry g;
                    auto r = vectors.unchecked<2>();
                    for (py::ssize_t i = 0; i < vectors.shape(0); ++i)
                      g.vectors.push_back({{r(i, 0), r(i, 1), r(i, 2)}, {r(i, 3), r(i, 4), r(i, 5)}, {r(i, 6), r(i, 7), r(i, 8)}, {r(i, 9), r(i, 10), r(i, 11)}});
                    if (g.vectors.empty()) throwInputError("vectors", "views", "at least one", "none");
                    DetectorLayout layout = DetectorLayout::centred(detector[0], detector[1], glm::length(g.vectors[0].uStep),
                                                                    glm::length(g.vectors[0].vStep));
                    g.detector = layout;
                    g.resolve(std::nullopt).validate("geometry");
                    return g;
                  })
      .def("_with_detector",
           [](const PyGeometry& self, std::array<int, 2> detector, std::array<double, 2> pixel, std::optional<std::array<double, 2>> origin) {
             PyGeometry g = self;
             DetectorLayout layout = DetectorLayout::centred(detector[0], detector[1], pixel[0], pixel[1]);
             if (origin) {
               layout.originU = (*origin)[0];
               layout.originV = (*origin)[1];
             }
             g.detector = layout;
             return g;
           })
      .def("__len__", [](const PyGeometry& g) { return g.circular.empty() ? g.vectors.size() : g.circular.size(); })
      .def_property_readonly("has_detector", [](const PyGeometry& g) { return g.detector.has_value(); })
      .def_property_readonly("is_circular", [](const PyGeometry& g) { return !g.circular.empty(); })
      .def_property_readonly("detector", [](const PyGeometry& g) -> py::object {
        if (!g.detector) return py::none();
        return py::make_tuple(g.detector->nu, g.detector->nv);
      })
      .def_property_readonly("pixel", [](const PyGeometry& g) -> py::object {
        if (!g.detector) return py::none();
        return py::make_tuple(g.detector->spacingU, g.detector->spacingV);
      })
      .def_property_readonly("detector_origin", [](const PyGeometry& g) -> py::object {
        if (!g.detector) return py::none();
        return py::make_tuple(g.detector->originU, g.detector->originV);
      })
      .def_property_readonly("gantry_angles", [](const PyGeometry& g) {
        std::vector<double> a;
        for (const auto& c : g.circular) a.push_back(c.gantryAngle);
        return a;
      })
      .def("_vectors", [](const PyGeometry& g) { return vectorsArray(g.resolve(std::nullopt)); })
      .def("_write_rtk", [](const PyGeometry& g, const std::string& path, bool overwrite) {
        if (g.circular.empty())
          throwInputError(path, "geometry", "RTK circular parameters (circular() or read_rtk_geometry())", "a geometry given as vectors");
        writeRtkGeometry(path, g.circular, overwrite);
      });

  m.def("read_rtk_geometry", [](const std::string& path) { return PyGeometry{readRtkGeometry(path), std::nullopt, {}}; });
  m.def("_read_image", &readImageTuple);
  m.def("_read_projections", &readProjectionsTuple);
  m.def("_write_image", [](const std::string& path, const FloatArray& array, std::array<double, 3> spacing, std::array<double, 3> origin,
                           bool overwrite) {
    const Image image = toImage(array, spacing, origin, path.c_str());
    py::gil_scoped_release release;
    writeImage(path, image, overwrite);
  });
  m.def("_fdk", &fdk);
  m.def("_project", &project);
  m.def("_iterative", &iterative);
  m.def("projectors", [] {
    std::vector<std::string> names;
    for (Backend b : builtBackends())
      if (b != Backend::GraphicsMp) names.push_back(backendInfo(b).name);
    return names;
  }, "Backends of project() and the iterative methods (cpu, graphics, compute, cuda where built).");
  m.def("_line_integrals", [](const FloatArray& p, std::array<double, 3> spacing, std::array<double, 3> origin, const std::optional<FloatArray>& flat,
                              const std::optional<FloatArray>& dark, double i0) {
    Image image = toImage(p, spacing, origin, "projections");
    const Image flatImage = flat ? toImage(*flat, spacing, origin, "flat") : Image{};
    const Image darkImage = dark ? toImage(*dark, spacing, origin, "dark") : Image{};
    PreprocessStats stats;
    {
      py::gil_scoped_release release;
      stats = intensitiesToLineIntegrals(image, flatImage, darkImage, i0, "flat", "dark");
    }
    return py::make_tuple(toNumpy(std::move(image)), stats.clampedLow, stats.deadPixels);
  });
  m.def("_shepp_logan", [](std::array<int, 3> size, std::array<double, 3> spacing, std::optional<std::array<double, 3>> origin,
                           const std::string& variant, double scale, double densityScale, int supersample, int threads) {
    const VolumeGrid grid = makeGrid(size, spacing, origin);
    Phantom phantom = Phantom::sheppLogan(parseSheppLoganVariant(variant), scale);
    if (densityScale != 1.0) phantom.scaleDensities(densityScale);
    Image volume;
    {
      py::gil_scoped_release release;
      volume = voxelizePhantom(phantom, grid, supersample, threads);
    }
    const auto o = volume.origin;
    return py::make_tuple(toNumpy(std::move(volume)), triple(o));
  });
  m.def("_project_shepp_logan", [](const PyGeometry& pygeometry, const std::string& variant, double scale, double densityScale,
                                   int supersample, double noiseI0, std::uint64_t seed, int threads) {
    const Geometry geometry = pygeometry.resolve(std::nullopt);
    Phantom phantom = Phantom::sheppLogan(parseSheppLoganVariant(variant), scale);
    if (densityScale != 1.0) phantom.scaleDensities(densityScale);
    ProjectionOptions options;
    options.supersample = supersample;
    options.noiseI0 = noiseI0;
    options.seed = seed;
    options.threads = threads;
    // As `glrecon phantom` does it: batches of 16 views, the noise seed advanced per batch, so a noisy scan
    // equals the command line's too.
    Image projections({geometry.detector.nu, geometry.detector.nv, static_cast<int>(geometry.size())},
                      {geometry.detector.spacingU, geometry.detector.spacingV, 1.0},
                      {geometry.detector.originU, geometry.detector.originV, 0.0});
    {
      py::gil_scoped_release release;
      constexpr std::size_t kBatch = 16;
      for (std::size_t first = 0; first < geometry.size(); first += kBatch) {
        Geometry part;
        part.detector = geometry.detector;
        part.views.assign(geometry.views.begin() + first, geometry.views.begin() + std::min(geometry.size(), first + kBatch));
        ProjectionOptions partOptions = options;
        partOptions.seed = options.seed + first;
        const Image simulated = projectPhantom(phantom, part, partOptions);
        std::copy(simulated.data.begin(), simulated.data.end(), projections.slice(static_cast<int>(first)));
      }
    }
    const auto s = projections.spacing, o = projections.origin;
    return py::make_tuple(toNumpy(std::move(projections)), triple(s), triple(o));
  });
  m.def("backends", [] {
    std::vector<std::string> names;
    for (Backend b : builtBackends()) names.push_back(backendInfo(b).name);
    return names;
  }, "Backend names this build knows (cpu, graphics, graphics-mp, compute, cuda where built).");
  m.attr("max_window") = kMaximumWindow;
}
