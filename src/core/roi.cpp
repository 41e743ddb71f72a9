#include "glrecon/roi.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include <glm/geometric.hpp>
#include <glm/mat3x3.hpp>
#include <glm/matrix.hpp>

#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/parse.h"

namespace glrecon {
namespace {

RegionOfInterest emptyRegion(const VolumeGrid& grid, std::string description) {
  RegionOfInterest r;
  r.description = std::move(description);
  r.size = grid.size;
  r.mask.assign(grid.voxelCount(), 0);
  return r;
}

template <typename Inside>
RegionOfInterest shapeRegion(const VolumeGrid& grid, std::string description, Inside inside) {
  RegionOfInterest r = emptyRegion(grid, std::move(description));
  std::size_t n = 0;
  for (int k = 0; k < grid.size[2]; ++k)
    for (int j = 0; j < grid.size[1]; ++j)
      for (int i = 0; i < grid.size[0]; ++i, ++n) r.mask[n] = inside(grid.worldOf(i, j, k)) ? 1 : 0;
  r.updateSpans();
  return r;
}

std::vector<double> numbers(const std::string& spec, const std::string& list, std::size_t count) {
  const std::vector<double> values = parseNumberList(field("roi"), list, spec);
  if (values.size() != count)
    throw UsageError(field("roi") + ": expected " + std::to_string(count) + " numbers after the shape name, found '" + quoted(spec) + "'");
  return values;
}

}  // namespace

std::size_t RegionOfInterest::insideCount() const {
  return static_cast<std::size_t>(std::count_if(mask.begin(), mask.end(), [](std::uint8_t m) { return m != 0; }));
}

void RegionOfInterest::updateSpans() {
  const std::size_t rows = static_cast<std::size_t>(size[1]) * size[2];
  rowSpans.assign(rows, {0, 0});
  for (std::size_t row = 0; row < rows; ++row) {
    const std::uint8_t* m = mask.data() + row * size[0];
    int first = 0, last = size[0];
    while (first < last && !m[first]) ++first;
    while (last > first && !m[last - 1]) --last;
    rowSpans[row] = {first, last};
  }
}

RegionOfInterest fieldOfView(const Geometry& geometry, const VolumeGrid& grid) {
  geometry.validate("field of view");
  geometry.checkVolumeInFront(grid, "field of view");
  RegionOfInterest r = emptyRegion(grid, "fov");
  const int nx = grid.size[0], ny = grid.size[1], nz = grid.size[2];
  const double limits[2][2] = {{-0.5, geometry.detector.nu - 0.5}, {-0.5, geometry.detector.nv - 0.5}};
  std::vector<ProjectionMatrix> matrices;
  for (std::size_t p = 0; p < geometry.size(); ++p) matrices.push_back(geometry.matrix(p, grid));
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j) {
      double lo = 0.0, hi = nx - 1.0;
      for (const ProjectionMatrix& m : matrices) {
        const double aw = m.m[2][1] * j + m.m[2][2] * k + m.m[2][3], bw = m.m[2][0];
        for (int axis = 0; axis < 2 && lo <= hi; ++axis) {
          const double a = m.m[axis][1] * j + m.m[axis][2] * k + m.m[axis][3], b = m.m[axis][0];
          // coordinate >= edge  <=>  (a - edge aw) + i (b - edge bw) >= 0   (w > 0 in front of the source);
          // coordinate <= edge  <=>  (edge aw - a) + i (edge bw - b) >= 0.
          for (int side = 0; side < 2; ++side) {
            const double edge = limits[axis][side], sign = side == 0 ? 1.0 : -1.0;
            const double c0 = sign * (a - edge * aw), c1 = sign * (b - edge * bw);
            if (c1 > 0)
              lo = std::max(lo, -c0 / c1);
            else if (c1 < 0)
              hi = std::min(hi, -c0 / c1);
            else if (c0 < 0)
              hi = -1;  // never inside
          }
        }
      }
      if (lo > hi) continue;
      const int first = static_cast<int>(std::ceil(lo)), last = static_cast<int>(std::floor(hi));
      std::uint8_t* row = r.mask.data() + (static_cast<std::size_t>(k) * ny + j) * nx;
      for (int i = std::max(first, 0); i <= std::min(last, nx - 1); ++i) row[i] = 1;
    }
  r.updateSpans();
  return r;
}

std::string conservativeCylinder(const Geometry& geometry) {
  double radius = std::numeric_limits<double>::max(), low = -radius, high = radius;
  for (const ProjectionVectors& v : geometry.views) {
    if (v.parallel()) {
      // The ray through the world origin meets the detector at (pu, pv); the beam is a slab of rays nu pixels wide.
      const glm::dvec3 at = glm::inverse(glm::dmat3(v.uStep, v.vStep, v.ray)) * -v.pixel00;
      const glm::dvec3 r = glm::normalize(v.ray);
      const double across = glm::length(v.uStep - glm::dot(v.uStep, r) * r), dv = glm::length(v.vStep);
      radius = std::min(radius, std::min(at.x + 0.5, geometry.detector.nu - 0.5 - at.x) * across);
      low = std::max(low, -(at.y + 0.5) * dv);
      high = std::min(high, (geometry.detector.nv - 0.5 - at.y) * dv);
      continue;
    }
    const auto pierce = v.piercingPoint();
    const double sdd = v.sourceToDetector(), sid = v.sourceToIsocentre();
    const double du = glm::length(v.uStep), dv = glm::length(v.vStep);
    const double halfWidth = std::min(pierce[0] + 0.5, geometry.detector.nu - 0.5 - pierce[0]) * du;
    const double r = sid * std::sin(std::atan(halfWidth / sdd));
    radius = std::min(radius, r);
    // Rows see |y| <= (row extent) * depth / sdd; the nearest depth, sid - r, is the binding one.
    low = std::max(low, -(pierce[1] + 0.5) * dv * (sid - r) / sdd);
    high = std::min(high, (geometry.detector.nv - 0.5 - pierce[1]) * dv * (sid - r) / sdd);
  }
  std::ostringstream s;
  s.precision(10);
  s << "cylinder:0,0," << std::max(radius, 0.0) << ',' << low << ',' << high;
  return s.str();
}

namespace {
std::optional<RegionOfInterest> makeRegion(const std::string& spec, const Geometry& geometry, const VolumeGrid& grid);
}

namespace {
std::string describeExtent(const VolumeGrid& grid) {
  std::ostringstream s;
  s.precision(6);
  const glm::dvec3 a = grid.origin, b = grid.worldOf(grid.size[0] - 1, grid.size[1] - 1, grid.size[2] - 1);
  s << "x " << a.x << " to " << b.x << ", y " << a.y << " to " << b.y << ", z " << a.z << " to " << b.z << " mm";
  return s.str();
}
}  // namespace

std::optional<RegionOfInterest> shapeRegionOfInterest(const std::string& spec, const Geometry& geometry, const VolumeGrid& grid) {
  return makeRegion(spec, geometry, grid);
}

void requireVoxelsInside(const RegionOfInterest& region, const std::string& spec, const VolumeGrid& grid) {
  // An empty region would reconstruct an all-zero volume: a mistake in the spec or the grid, said early.
  if (region.insideCount() == 0)
    throw UsageError(field("roi") + ": expected a region holding at least one voxel centre of the volume, found '" +
                     quoted(spec) + "' holding none (the volume spans " + describeExtent(grid) + ")");
}

namespace {
std::optional<RegionOfInterest> makeRegion(const std::string& spec, const Geometry& geometry, const VolumeGrid& grid) {
  if (spec == "fov") return fieldOfView(geometry, grid);
  if (spec == "fov-cylinder") {
    RegionOfInterest r = *makeRegion(conservativeCylinder(geometry), geometry, grid);
    r.description = "fov-cylinder (" + r.description + ")";
    return r;
  }
  const auto colon = spec.find(':');
  const std::string shape = spec.substr(0, colon), list = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (shape == "cylinder") {
    const auto v = numbers(spec, list, 5);
    if (!(v[2] > 0) || !(v[4] > v[3])) throw UsageError(field("roi") + " cylinder: expected a positive radius and Y0 < Y1, found '" + quoted(spec) + "'");
    return shapeRegion(grid, spec, [&](const glm::dvec3& p) {
      const double dx = p.x - v[0], dz = p.z - v[1];
      return dx * dx + dz * dz <= v[2] * v[2] && p.y >= v[3] && p.y <= v[4];
    });
  }
  if (shape == "box") {
    const auto v = numbers(spec, list, 6);
    if (!(v[3] > v[0] && v[4] > v[1] && v[5] > v[2])) throw UsageError(field("roi") + " box: expected X0 < X1, Y0 < Y1, Z0 < Z1, found '" + quoted(spec) + "'");
    return shapeRegion(grid, spec, [&](const glm::dvec3& p) {
      return p.x >= v[0] && p.x <= v[3] && p.y >= v[1] && p.y <= v[4] && p.z >= v[2] && p.z <= v[5];
    });
  }
  if (shape == "sphere") {
    const auto v = numbers(spec, list, 4);
    if (!(v[3] > 0)) throw UsageError(field("roi") + " sphere: expected a positive radius, found '" + quoted(spec) + "'");
    return shapeRegion(grid, spec, [&](const glm::dvec3& p) { return glm::length(p - glm::dvec3(v[0], v[1], v[2])) <= v[3]; });
  }
  return std::nullopt;  // not a shape: a mask file, perhaps (makeRegionOfInterest)
}
}  // namespace

std::vector<std::pair<int, int>> columnZRanges(const RegionOfInterest& roi) {
  const int nx = roi.size[0], ny = roi.size[1], nz = roi.size[2];
  std::vector<std::pair<int, int>> ranges(static_cast<std::size_t>(nx) * ny, {nz, 0});
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i)
        if (roi.inside(i, j, k)) {
          auto& r = ranges[static_cast<std::size_t>(j) * nx + i];
          r.first = std::min(r.first, k);
          r.second = k + 1;
        }
  for (auto& r : ranges)
    if (r.first >= r.second) r = {0, 0};
  return ranges;
}

void applyRegion(Image& volume, const RegionOfInterest& roi) { applyRegion(volume.data.data(), roi); }

void applyRegion(float* data, const RegionOfInterest& roi) {
  for (std::size_t i = 0; i < roi.mask.size(); ++i)
    if (!roi.mask[i]) data[i] = 0.0f;
}

}  // namespace glrecon
