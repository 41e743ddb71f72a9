// Files: images and projection stacks read and written (MetaImage, TIFF), raw intensities to line integrals.
#include "bindings.h"
#include "glrecon/io.h"
#include "glrecon/preprocess.h"

namespace glrecon::python {
namespace {

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

}  // namespace

void bindIo(py::module_& m) {
  m.def("_read_image", &readImageTuple);
  m.def("_read_projections", &readProjectionsTuple);
  m.def("_write_image", [](const std::string& path, const FloatArray& array, std::array<double, 3> spacing, std::array<double, 3> origin,
                           bool overwrite) {
    const Image image = toImage(array, spacing, origin, path.c_str());
    py::gil_scoped_release release;
    writeImage(path, image, overwrite);
  });
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
}

}  // namespace glrecon::python
