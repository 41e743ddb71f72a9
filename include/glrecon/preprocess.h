#pragma once
/// Raw detector intensities to line integrals, before filtering.
#include <cstddef>
#include <string>
#include <vector>

#include "glrecon/image.h"

namespace glrecon {

struct PreprocessStats {
  std::size_t clampedLow = 0;   ///< pixels with I - dark <= 0 (no transmitted signal): set to the largest line integral
  std::size_t deadPixels = 0;   ///< pixels with flat - dark <= 0: no reference signal, set to 0
};

/// Smallest transmission kept, so a pixel with no signal gives -ln(1e-6) = 13.8 rather than infinity.
inline constexpr double kMinimumTransmission = 1e-6;

/// The conversion with its references averaged once: applied projection by projection as they are read
/// (lineIntegralSource), or to a whole stack (intensitiesToLineIntegrals).
class LineIntegrals {
 public:
  /// `flat`/`dark` as intensitiesToLineIntegrals takes them, checked against a detector of nu x nv pixels.
  LineIntegrals(int nu, int nv, const Image& flat, const Image& dark, double i0, const std::string& flatName = "flat field",
                const std::string& darkName = "dark field");
  /// In place, `count` projections of nu x nv pixels; adds to the counts.
  void apply(float* projections, std::size_t count);
  const PreprocessStats& stats() const { return stats_; }

 private:
  std::vector<double> flat_, dark_;
  PreprocessStats stats_;
};

/// In place: p = -ln((I - dark) / (flat - dark)). `flat` and `dark` are single images (nu x nv; a stack of
/// several frames is averaged first) or empty images (dark = 0; flat = the scalar `i0`). Names are used in
/// error messages. Requires either a flat image or i0 > 0.
PreprocessStats intensitiesToLineIntegrals(Image& projections, const Image& flat, const Image& dark, double i0,
                                           const std::string& flatName = "flat field",
                                           const std::string& darkName = "dark field");

}  // namespace glrecon
