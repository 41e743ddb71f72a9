// Files: images and projection stacks read and written (MetaImage, TIFF), raw intensities to line integrals.
#include "bindings.h"
#include <limits>

#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/preprocess.h"
#include "glrecon/validate.h"

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

// Raw intensities, flat and dark fields as the command line reads them (fdk --i0/--flat/--dark: projection files, whose
// values are checked as they are read): finite and within kMaxProjectionValue, or an InputError naming the projection
// and the pixel. A NaN intensity had become the largest line integral (-ln 1e-6) and a NaN flat pixel a dead one, both
// silently; 1e30 went through where the command line refuses it.
void checkIntensities(const FloatArray& a, const char* name) {
  const std::size_t count = static_cast<std::size_t>(a.size());
  const std::size_t bad = firstValueOutside(a.data(), count, kMaxProjectionValue);
  if (bad >= count) return;
  const int nu = static_cast<int>(a.shape(a.ndim() - 1));
  const std::size_t pixels = static_cast<std::size_t>(nu) * static_cast<std::size_t>(a.shape(a.ndim() - 2));
  throwBadProjectionValue(name, bad / pixels, bad % pixels, nu, a.data()[bad]);
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
    // i0 stands in for a missing flat field: the command line's bounds on --i0 (i0=inf gave every pixel the clamp).
    if (!flat) checkValue("i0", i0);
    Image image = toImage(p, spacing, origin, "projections");
    checkIntensities(p, "projections");
    if (flat) checkIntensities(*flat, "flat");
    if (dark) checkIntensities(*dark, "dark");
    const Image flatImage = flat ? toImage(*flat, spacing, origin, "flat") : Image{};
    const Image darkImage = dark ? toImage(*dark, spacing, origin, "dark") : Image{};
    PreprocessStats stats;
    {
      py::gil_scoped_release release;
      stats = intensitiesToLineIntegrals(image, flatImage, darkImage, i0, "flat", "dark");
    }
    // An infinite intensity gives -log(inf) = -inf: refused naming the pixel, as the reconstructions refuse it (the
    // command line's fdk --i0 does so after the same conversion); never handed back as a line integral.
    const std::size_t count = image.data.size();
    const std::size_t bad = firstValueOutside(image.data.data(), count, std::numeric_limits<float>::max());
    if (bad < count) {
      const std::size_t pixels = static_cast<std::size_t>(image.size[0]) * image.size[1];
      const std::size_t pixel = bad % pixels;
      throwInputError("projections", "projection " + std::to_string(bad / pixels) + " pixel (" + std::to_string(pixel % image.size[0]) +
                                         ", " + std::to_string(pixel / image.size[0]) + ")",
                      "a finite intensity (its line integral is -log of it)", std::to_string(p.data()[bad]));
    }
    return py::make_tuple(toNumpy(std::move(image)), stats.clampedLow, stats.deadPixels);
  });
}

}  // namespace glrecon::python
