#include "viewer/grid_preview.h"

#include <cmath>
#include <limits>
#include <numbers>

#include <glm/geometric.hpp>

#include "glrecon/parse.h"
#include "glrecon/roi.h"

namespace glrecon::viewer {
namespace {

// Points on circles: enough that a chord strays from the arc by R (1 - cos(pi / n)) = 1e-3 R, under a pixel for a
// circle less than a thousand pixels across.
constexpr int kCirclePoints = 72;

// The points of a circle of radius r about `centre` in the plane spanned by the unit vectors a and b, closed.
std::vector<glm::dvec3> circle(const glm::dvec3& centre, const glm::dvec3& a, const glm::dvec3& b, double r) {
  std::vector<glm::dvec3> points;
  for (int i = 0; i <= kCirclePoints; ++i) {
    const double t = 2.0 * std::numbers::pi * (i % kCirclePoints) / kCirclePoints;
    points.push_back(centre + r * (std::cos(t) * a + std::sin(t) * b));
  }
  return points;
}

DetectorPolyline onDetector(const Geometry& geometry, std::size_t view, const std::vector<glm::dvec3>& points) {
  DetectorPolyline line;
  for (const glm::dvec3& p : points) line.push_back(projectToDetector(geometry, view, p));
  return line;
}

// The 12 edges of the box from `a` to `b` (opposite corners, world mm).
std::vector<DetectorPolyline> boxEdges(const Geometry& geometry, std::size_t view, const glm::dvec3& a, const glm::dvec3& b) {
  std::vector<DetectorPolyline> edges;
  const auto corner = [&](int c) { return glm::dvec3(c & 1 ? b.x : a.x, c & 2 ? b.y : a.y, c & 4 ? b.z : a.z); };
  for (int c = 0; c < 8; ++c)
    for (int axis = 0; axis < 3; ++axis)
      if (!(c & (1 << axis))) edges.push_back(onDetector(geometry, view, {corner(c), corner(c | (1 << axis))}));
  return edges;
}

// Two unit vectors perpendicular to the unit vector n and to each other.
std::pair<glm::dvec3, glm::dvec3> perpendiculars(const glm::dvec3& n) {
  const glm::dvec3 helper = std::abs(n.y) < 0.9 ? glm::dvec3(0, 1, 0) : glm::dvec3(1, 0, 0);
  const glm::dvec3 a = glm::normalize(glm::cross(n, helper));
  return {a, glm::cross(n, a)};
}

}  // namespace

glm::dvec2 projectToDetector(const Geometry& geometry, std::size_t view, const glm::dvec3& p) {
  // The matrix of a grid whose voxel indices are world millimetres.
  VolumeGrid world;
  world.size = {1, 1, 1};
  const glm::dvec3 h = geometry.matrix(view, world).apply(glm::dvec4(p, 1.0));
  // At or behind the source's plane a point has no place on the detector (w <= 0 would mirror it).
  if (!(h.z > 0)) return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  return {h.x / h.z, h.y / h.z};
}

std::vector<DetectorPolyline> gridOutline(const Geometry& geometry, std::size_t view, const VolumeGrid& grid) {
  const glm::dvec3 low = grid.worldOf(-0.5, -0.5, -0.5), high = grid.worldOf(grid.size[0] - 0.5, grid.size[1] - 0.5, grid.size[2] - 0.5);
  return boxEdges(geometry, view, low, high);
}

std::vector<DetectorPolyline> regionOutline(const std::string& spec, const Geometry& geometry, std::size_t view) {
  if (view >= geometry.size()) return {};
  if (spec == "fov-cylinder") return regionOutline(conservativeCylinder(geometry), geometry, view);
  const std::size_t colon = spec.find(':');
  if (colon == std::string::npos) return {};
  const std::string shape = spec.substr(0, colon);
  std::vector<double> v;
  try {
    v = parseNumberList("roi", spec.substr(colon + 1), spec);
  } catch (const std::exception&) {
    return {};
  }
  const ProjectionVectors& pv = geometry.views[view];
  if (shape == "box" && v.size() == 6) return boxEdges(geometry, view, {v[0], v[1], v[2]}, {v[3], v[4], v[5]});
  if (shape == "sphere" && v.size() == 4 && v[3] > 0) {
    // The silhouette: the circle where the cone of rays from the source touches the sphere, at r^2 / d from the centre
    // towards the source, of radius r sqrt(d^2 - r^2) / d (a parallel beam: the great circle across the rays).
    const glm::dvec3 c(v[0], v[1], v[2]);
    const double r = v[3];
    if (pv.parallel()) {
      const auto [a, b] = perpendiculars(glm::normalize(pv.ray));
      return {onDetector(geometry, view, circle(c, a, b, r))};
    }
    const glm::dvec3 toSource = pv.source - c;
    const double d = glm::length(toSource);
    if (d <= r) return {};  // the source inside the sphere: no silhouette
    const glm::dvec3 n = toSource / d;
    const auto [a, b] = perpendiculars(n);
    return {onDetector(geometry, view, circle(c + (r * r / d) * n, a, b, r * std::sqrt(d * d - r * r) / d))};
  }
  if (shape == "cylinder" && v.size() == 5 && v[2] > 0) {
    // About the y axis: centre (x, z), radius R, from y0 to y1. Its end circles, and the two lines along it where the
    // rays graze it: through the points where the tangents from the source (seen along y) touch its cross-section.
    const double x = v[0], z = v[1], r = v[2], y0 = v[3], y1 = v[4];
    std::vector<DetectorPolyline> lines = {onDetector(geometry, view, circle({x, y0, z}, {1, 0, 0}, {0, 0, 1}, r)),
                                           onDetector(geometry, view, circle({x, y1, z}, {1, 0, 0}, {0, 0, 1}, r))};
    double towards = 0, spread = 0;  // the direction of the source (or against the rays) about (x, z), and the tangents' angle off it
    if (pv.parallel()) {
      towards = std::atan2(-pv.ray.z, -pv.ray.x);
      spread = std::numbers::pi / 2;
    } else {
      const double dx = pv.source.x - x, dz = pv.source.z - z, d = std::hypot(dx, dz);
      if (d <= r) return lines;  // the source inside: no silhouette lines
      towards = std::atan2(dz, dx);
      spread = std::acos(r / d);
    }
    for (const double t : {towards - spread, towards + spread}) {
      const double px = x + r * std::cos(t), pz = z + r * std::sin(t);
      lines.push_back(onDetector(geometry, view, {{px, y0, pz}, {px, y1, pz}}));
    }
    return lines;
  }
  return {};
}

}  // namespace glrecon::viewer
