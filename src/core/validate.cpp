#include "glrecon/validate.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <glm/geometric.hpp>
#include <sstream>

#include "glrecon/errors.h"
#include "glrecon/limits.h"

namespace glrecon {
namespace {

std::string str(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}
std::string str(const glm::dvec3& v) { return "(" + str(v.x) + ", " + str(v.y) + ", " + str(v.z) + ")"; }

bool within(const glm::dvec3& p, double limit) {
  return std::abs(p.x) <= limit && std::abs(p.y) <= limit && std::abs(p.z) <= limit;
}

}  // namespace

void checkGridBounds(const VolumeGrid& grid, const std::string& where) {
  static const char* axis[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a)
    if (!(grid.spacing[a] >= kMinSpacingMm && grid.spacing[a] <= kMaxSpacingMm))
      throwGeometryError(where, std::string("volume spacing ") + axis[a], "a spacing from 1e-6 to 1e6 mm",
                         str(grid.spacing[a]));
  const glm::dvec3 first = grid.origin;
  const glm::dvec3 last = grid.worldOf(grid.size[0] - 1, grid.size[1] - 1, grid.size[2] - 1);
  if (!within(first, kMaxCoordinateMm) || !within(last, kMaxCoordinateMm))
    throwGeometryError(where, "volume extent", "voxel centres within 1e7 mm of the origin",
                       "voxels from " + str(first) + " to " + str(last) + " mm");
}

void checkScanBounds(const Geometry& geometry, const std::string& where) {
  const DetectorLayout& d = geometry.detector;
  for (const auto& [name, s] :
       {std::pair{"detector spacing u", d.spacingU}, std::pair{"detector spacing v", d.spacingV}})
    if (!(s >= kMinSpacingMm && s <= kMaxSpacingMm))
      throwGeometryError(where, name,
                         "a positive pixel spacing from 1e-6 to 1e6 mm" +
                             std::string(s < 0 ? " (a mirrored detector is not supported)" : ""),
                         str(s));
  if (!(std::abs(d.originU) <= kMaxCoordinateMm && std::abs(d.originV) <= kMaxCoordinateMm))
    throwGeometryError(where, "detector origin", "within 1e7 mm", str(d.originU) + ", " + str(d.originV));
  for (std::size_t i = 0; i < geometry.views.size(); ++i) {
    const ProjectionVectors& v = geometry.views[i];
    const std::string view = "projection " + std::to_string(i);
    if (!within(v.source, kMaxCoordinateMm) || !within(v.pixel00, kMaxCoordinateMm))
      throwGeometryError(where, view, "a source and detector within 1e7 mm of the origin",
                         "source " + str(v.source) + ", pixel (0,0) at " + str(v.pixel00));
    const double lu = glm::length(v.uStep), lv = glm::length(v.vStep);
    if (!(lu >= kMinSpacingMm && lu <= kMaxSpacingMm && lv >= kMinSpacingMm && lv <= kMaxSpacingMm))
      throwGeometryError(where, view + " detector steps", "pixel steps from 1e-6 to 1e6 mm",
                         str(lu) + " and " + str(lv));
  }
}

void checkVolumeInBeam(const Geometry& geometry, const VolumeGrid& grid, const std::string& where) {
  // Sample points per axis: every voxel of small axes, else 17 spread from the first to the last voxel.
  std::array<std::vector<double>, 3> samples;
  for (int a = 0; a < 3; ++a) {
    const int n = grid.size[a], count = std::min(n, 17);
    for (int s = 0; s < count; ++s) samples[a].push_back(count == 1 ? 0.0 : s * (n - 1.0) / (count - 1));
  }
  const double nu = geometry.detector.nu, nv = geometry.detector.nv;
  for (std::size_t i = 0; i < geometry.size(); ++i) {
    const ProjectionMatrix p = geometry.matrix(i, grid);
    for (double k : samples[2])
      for (double j : samples[1])
        for (double x : samples[0]) {
          const glm::dvec3 h = p.apply(glm::dvec4(x, j, k, 1.0));
          if (!(h.z > 0.0)) continue;
          const double u = h.x / h.z, v = h.y / h.z;
          if (u >= -0.5 && u <= nu - 0.5 && v >= -0.5 && v <= nv - 0.5) return;
        }
  }
  throwGeometryError(where, "volume",
                     "a volume that at least one projection sees (its beam crosses the volume)",
                     "no voxel of the volume from " + str(grid.origin) + " to " +
                         str(grid.worldOf(grid.size[0] - 1, grid.size[1] - 1, grid.size[2] - 1)) +
                         " mm projects onto the detector in any of the " + std::to_string(geometry.size()) +
                         " projections (check " + field("origin") + ", the offsets and the distances)");
}

void checkFiniteValues(const Image& image, const std::string& where, const std::string& what, double limit) {
  if (image.data.size() != image.voxelCount()) throw std::logic_error("checkFiniteValues: image data does not match its size");
  checkFiniteValues(image.data.data(), image.size, where, what, limit);
}

void checkFiniteValues(const float* data, const std::array<int, 3>& size, const std::string& where, const std::string& what,
                       double limit) {
  // On all threads (a 512^3 volume is 134 M values, 0.1 s on one).
  const std::size_t count = static_cast<std::size_t>(size[0]) * size[1] * size[2];
  const std::size_t n = firstValueOutside(data, count, limit, std::size_t{1} << 20, 0);
  if (n == count) return;
  const std::size_t stride = static_cast<std::size_t>(size[0]) * size[1];
  const std::size_t k = n / stride, j = (n % stride) / size[0], i = n % size[0];
  throwInputError(where, what + " value at (" + std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) + ")",
                  "finite values within " + str(limit) + " in magnitude", str(data[n]));
}

void checkScanAndGrid(const Geometry& geometry, const VolumeGrid& grid, const std::string& where) {
  geometry.validate(where);
  grid.validate(where.c_str());
  checkGridBounds(grid, field("size") + "/" + field("spacing") + "/" + field("origin"));
  checkScanBounds(geometry, where);
  geometry.checkVolumeInFront(grid, where);
  checkVolumeInBeam(geometry, grid, where);
}

void checkProjectionData(const Geometry& geometry, const Image& projections, const std::string& name) {
  const DetectorLayout& d = geometry.detector;
  if (projections.size[0] != d.nu || projections.size[1] != d.nv)
    throwInputError(name, "DimSize", std::to_string(d.nu) + " x " + std::to_string(d.nv) + " detector pixels (the geometry's)",
                    std::to_string(projections.size[0]) + " x " + std::to_string(projections.size[1]));
  if (static_cast<std::size_t>(projections.size[2]) != geometry.size())
    throwInputError(name, "number of projections", std::to_string(geometry.size()) + " (one per projection of the geometry)",
                    std::to_string(projections.size[2]));
  const std::size_t pixels = static_cast<std::size_t>(d.nu) * d.nv, count = pixels * geometry.size();
  if (projections.data.size() != count) throw std::logic_error("checkProjectionData: image data does not match its size");
  const std::size_t bad = firstValueOutside(projections.data.data(), count, kMaxProjectionValue, std::size_t{1} << 20, 0);
  if (bad < count) throwBadProjectionValue(name, bad / pixels, bad % pixels, d.nu, projections.data[bad]);
}

void checkVolumeToProject(const float* volume, const VolumeGrid& grid, const std::string& name) {
  // No ray crosses more of the grid than its diagonal (voxel edges included), so values within the limit over that
  // length keep every line integral within kMaxProjectionValue, where the reconstructions' checks expect them.
  const glm::dvec3 extent = glm::dvec3(grid.size[0], grid.size[1], grid.size[2]) * grid.spacing;
  const double diagonal = std::max(glm::length(extent), 1e-300);
  checkFiniteValues(volume, grid.size, name, "voxel", kMaxProjectionValue / diagonal);
}

void throwBadProjectionValue(const std::string& where, std::size_t projection, std::size_t pixel, int nu, float value) {
  // A NaN or infinity would spread through the ramp filter over a whole detector row, and values near float's limit
  // (3e38) overflow the filter's and the backprojection's sums into NaN.
  const std::size_t columns = static_cast<std::size_t>(nu);
  const std::string field = "projection " + std::to_string(projection) + " pixel (" + std::to_string(pixel % columns) + ", " +
                            std::to_string(pixel / columns) + ")";
  if (!std::isfinite(value)) throwInputError(where, field, "a finite value", std::isnan(value) ? "NaN" : "infinity");
  throwInputError(where, field, "a value within 1e20 in magnitude", std::to_string(value) + " (overflows float in the reconstruction)");
}

}  // namespace glrecon
