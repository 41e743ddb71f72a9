#pragma once
/// Sanity checks every command and Python function runs before any work (RTK's VerifyPreconditions): physical bounds on the
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

// ---- the one validation point: every reconstruction and projection (fdk's plan, the iterative methods, project,
// view, Python) runs these on its scan, grid and data before any work, so each gives the same answer everywhere ----

/// The geometry and grid valid (finite, non-degenerate), within the physical bounds (checkGridBounds,
/// checkScanBounds), the volume entirely in front of every source and seen by at least one projection.
void checkScanAndGrid(const Geometry& geometry, const VolumeGrid& grid, const std::string& where);

/// Projections for `geometry` (nu x nv x views, x fastest): the geometry's detector size and number of views, every
/// value finite and within kMaxProjectionValue. `name` is the file or array they came from.
void checkProjectionData(const Geometry& geometry, const Image& projections, const std::string& name);

/// A volume to forward-project: every value finite and small enough that no line integral through the grid can pass
/// kMaxProjectionValue (the limit divided by the grid's diagonal in mm).
void checkVolumeToProject(const float* volume, const VolumeGrid& grid, const std::string& name);

/// The magnitude checkFiniteValues allows in projections (line integrals): far beyond any physical
/// attenuation, far below where float sums over thousands of projections overflow.
inline constexpr double kMaxProjectionValue = 1e20;

}  // namespace glrecon
