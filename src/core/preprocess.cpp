#include "glrecon/preprocess.h"

#include <algorithm>
#include <cmath>

#include "glrecon/errors.h"

namespace glrecon {
namespace {

// Averages the frames of a reference stack into one nu x nv image, after checking its size.
std::vector<double> referenceImage(const Image& reference, int nu, int nv, const std::string& name) {
  if (reference.size[0] != nu || reference.size[1] != nv)
    throwInputError(name, "DimSize", std::to_string(nu) + " x " + std::to_string(nv) + " pixels (the projections' size)",
                    std::to_string(reference.size[0]) + " x " + std::to_string(reference.size[1]));
  const std::size_t pixels = static_cast<std::size_t>(nu) * nv;
  std::vector<double> mean(pixels, 0.0);
  for (int f = 0; f < reference.size[2]; ++f)
    for (std::size_t i = 0; i < pixels; ++i) mean[i] += reference.slice(f)[i];
  for (double& m : mean) m /= reference.size[2];
  return mean;
}

}  // namespace

LineIntegrals::LineIntegrals(int nu, int nv, const Image& flat, const Image& dark, double i0, const std::string& flatName,
                             const std::string& darkName) {
  const bool haveFlat = !flat.data.empty(), haveDark = !dark.data.empty();
  if (!haveFlat && !(i0 > 0.0))
    throw UsageError("intensity conversion: expected a flat field (" + field("flat") + ") or a positive " + field("i0") + ", found neither");
  const std::size_t pixels = static_cast<std::size_t>(nu) * nv;
  flat_ = haveFlat ? referenceImage(flat, nu, nv, flatName) : std::vector<double>(pixels, i0);
  dark_ = haveDark ? referenceImage(dark, nu, nv, darkName) : std::vector<double>(pixels, 0.0);
}

void LineIntegrals::apply(float* projections, std::size_t count) {
  const std::size_t pixels = flat_.size();
  for (std::size_t p = 0; p < count; ++p) {
    float* image = projections + p * pixels;
    for (std::size_t i = 0; i < pixels; ++i) {
      const double reference = flat_[i] - dark_[i];
      if (!(reference > 0.0)) {
        image[i] = 0.0f;
        ++stats_.deadPixels;
        continue;
      }
      double transmission = (image[i] - dark_[i]) / reference;
      if (!(transmission > kMinimumTransmission)) {
        if (!(image[i] - dark_[i] > 0.0)) ++stats_.clampedLow;
        transmission = std::max(transmission, kMinimumTransmission);
        if (!std::isfinite(transmission)) transmission = kMinimumTransmission;
      }
      image[i] = static_cast<float>(-std::log(transmission));
    }
  }
}

PreprocessStats intensitiesToLineIntegrals(Image& projections, const Image& flat, const Image& dark, double i0,
                                           const std::string& flatName, const std::string& darkName) {
  LineIntegrals convert(projections.size[0], projections.size[1], flat, dark, i0, flatName, darkName);
  convert.apply(projections.data.data(), static_cast<std::size_t>(projections.size[2]));
  return convert.stats();
}

}  // namespace glrecon
