#include "glrecon/preprocess.h"

#include <cmath>

#include "glrecon/errors.h"

namespace glrecon {
namespace {

// Averages the frames of a reference stack into one nu x nv image, after checking its size.
std::vector<double> referenceImage(const Image& reference, const Image& projections, const std::string& name) {
  if (reference.size[0] != projections.size[0] || reference.size[1] != projections.size[1])
    throwInputError(name, "DimSize",
                    std::to_string(projections.size[0]) + " x " + std::to_string(projections.size[1]) +
                        " pixels (the projections' size)",
                    std::to_string(reference.size[0]) + " x " + std::to_string(reference.size[1]));
  const std::size_t pixels = projections.sliceStride();
  std::vector<double> mean(pixels, 0.0);
  for (int f = 0; f < reference.size[2]; ++f)
    for (std::size_t i = 0; i < pixels; ++i) mean[i] += reference.slice(f)[i];
  for (double& m : mean) m /= reference.size[2];
  return mean;
}

}  // namespace

PreprocessStats intensitiesToLineIntegrals(Image& projections, const Image& flat, const Image& dark, double i0,
                                           const std::string& flatName, const std::string& darkName) {
  const bool haveFlat = !flat.data.empty(), haveDark = !dark.data.empty();
  if (!haveFlat && !(i0 > 0.0))
    throw UsageError("intensity conversion: expected a flat field (" + field("flat") + ") or a positive " + field("i0") + ", found neither");
  const std::size_t pixels = projections.sliceStride();
  const std::vector<double> flatMean = haveFlat ? referenceImage(flat, projections, flatName) : std::vector<double>(pixels, i0);
  const std::vector<double> darkMean = haveDark ? referenceImage(dark, projections, darkName) : std::vector<double>(pixels, 0.0);
  PreprocessStats stats;
  for (int p = 0; p < projections.size[2]; ++p) {
    float* image = projections.slice(p);
    for (std::size_t i = 0; i < pixels; ++i) {
      const double reference = flatMean[i] - darkMean[i];
      if (!(reference > 0.0)) {
        image[i] = 0.0f;
        ++stats.deadPixels;
        continue;
      }
      double transmission = (image[i] - darkMean[i]) / reference;
      if (!(transmission > kMinimumTransmission)) {
        if (!(image[i] - darkMean[i] > 0.0)) ++stats.clampedLow;
        transmission = std::max(transmission, kMinimumTransmission);
        if (!std::isfinite(transmission)) transmission = kMinimumTransmission;
      }
      image[i] = static_cast<float>(-std::log(transmission));
    }
  }
  return stats;
}

}  // namespace glrecon
