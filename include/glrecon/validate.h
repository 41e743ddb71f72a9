#pragma once
/// Sanity checks every command runs before any work (RTK's VerifyPreconditions): physical bounds on the
/// volume grid and the scan, a volume that some projection sees, and values that cannot overflow float.
/// Each throws GeometryError or InputError naming where, the field, what was expected and what was found.
/// Tested in tests/app/bad_input_test.cpp (through the command line) and tests/core/limits_test.cpp.
#include <array>
#include <string>

#include "glrecon/geometry.h"
#include "glrecon/image.h"

namespace glrecon {

/// Spacings within [kMinSpacingMm, kMaxSpacingMm] and every voxel centre within kMaxCoordinateMm of the
/// origin.
void checkGridBounds(const VolumeGrid& grid, const std::string& where);

/// Detector pixel spacings positive and within [kMinSpacingMm, kMaxSpacingMm] (the layout's and every view's
/// steps), sources and detectors within kMaxCoordinateMm of the origin.
void checkScanBounds(const Geometry& geometry, const std::string& where);

/// Throws GeometryError when no voxel of the grid (sampled up to 17 points per axis, corners included)
/// projects onto the detector in any projection: the reconstruction would be all zero.
void checkVolumeInBeam(const Geometry& geometry, const VolumeGrid& grid, const std::string& where);

/// Throws InputError naming the first value that is not finite or exceeds `limit` in magnitude (values beyond
/// it overflow float in the ramp filter and the backprojection sums).
void checkFiniteValues(const Image& image, const std::string& where, const std::string& what, double limit);
/// The same on size[0] x size[1] x size[2] floats at `data`.
void checkFiniteValues(const float* data, const std::array<int, 3>& size, const std::string& where, const std::string& what,
                       double limit);

/// Throws InputError for projection `projection`'s pixel `pixel` (x fastest over `nu` columns) of `where`, whose
/// value is not finite or beyond kMaxProjectionValue: what every projection source says of such a value.
[[noreturn]] void throwBadProjectionValue(const std::string& where, std::size_t projection, std::size_t pixel, int nu, float value);

/// The magnitude checkFiniteValues allows in projections (line integrals): far beyond any physical
/// attenuation, far below where float sums over thousands of projections overflow.
inline constexpr double kMaxProjectionValue = 1e20;

}  // namespace glrecon
