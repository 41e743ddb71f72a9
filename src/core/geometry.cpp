#include "glrecon/geometry.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include <glm/geometric.hpp>
#include <glm/mat3x3.hpp>
#include <glm/matrix.hpp>

#include "glrecon/errors.h"

namespace glrecon {
namespace {

constexpr double kDegree = std::numbers::pi / 180.0;

// ITK's elementary rotations (right-handed, angles in radians); glm matrices are column-major,
// so these are written as columns.
glm::dmat3 rotationX(double a) {
  const double c = std::cos(a), s = std::sin(a);
  return glm::dmat3(glm::dvec3(1, 0, 0), glm::dvec3(0, c, s), glm::dvec3(0, -s, c));
}
glm::dmat3 rotationY(double a) {
  const double c = std::cos(a), s = std::sin(a);
  return glm::dmat3(glm::dvec3(c, 0, -s), glm::dvec3(0, 1, 0), glm::dvec3(s, 0, c));
}
glm::dmat3 rotationZ(double a) {
  const double c = std::cos(a), s = std::sin(a);
  return glm::dmat3(glm::dvec3(c, s, 0), glm::dvec3(-s, c, 0), glm::dvec3(0, 0, 1));
}

// Rotated (detector) frame -> world: the inverse of RTK's Rz(-ip) Rx(-oop) Ry(-g).
glm::dmat3 rotatedToWorld(const CircularParams& p) {
  return rotationY(p.gantryAngle * kDegree) * rotationX(p.outOfPlaneAngle * kDegree) *
         rotationZ(p.inPlaneAngle * kDegree);
}

bool finite(const glm::dvec3& v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }

std::string str(const glm::dvec3& v) {
  std::ostringstream s;
  s << '(' << v.x << ", " << v.y << ", " << v.z << ')';
  return s.str();
}

}  // namespace

VolumeGrid VolumeGrid::centred(std::array<int, 3> size, glm::dvec3 spacing) {
  VolumeGrid grid;
  grid.size = size;
  grid.spacing = spacing;
  grid.origin = -0.5 * glm::dvec3(size[0] - 1, size[1] - 1, size[2] - 1) * spacing;
  return grid;
}

void VolumeGrid::validate(const char* context) const {
  static const char* axis[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    if (size[a] <= 0)
      throwGeometryError(context, std::string("volume size ") + axis[a], "a positive number of voxels",
                         std::to_string(size[a]));
    if (!(spacing[a] > 0.0) || !std::isfinite(spacing[a]))
      throwGeometryError(context, std::string("volume spacing ") + axis[a], "a positive finite length in mm",
                         std::to_string(spacing[a]));
    if (!std::isfinite(origin[a]))
      throwGeometryError(context, std::string("volume origin ") + axis[a], "a finite position in mm",
                         std::to_string(origin[a]));
  }
}

glm::dvec3 ProjectionVectors::detectorNormal() const {
  glm::dvec3 n = glm::normalize(glm::cross(uStep, vStep));
  if (glm::dot(parallel() ? ray : pixel00 - source, n) < 0.0) n = -n;
  return n;
}

glm::dvec3 ProjectionVectors::rayDirection(double u, double v) const {
  return glm::normalize(parallel() ? ray : detectorPoint(u, v) - source);
}

double ProjectionVectors::sourceToDetector() const { return glm::dot(pixel00 - source, detectorNormal()); }

double ProjectionVectors::sourceToIsocentre() const { return glm::dot(-source, detectorNormal()); }

std::array<double, 2> ProjectionVectors::piercingPoint() const {
  const glm::dvec3 foot = source + sourceToDetector() * detectorNormal();
  // Solve foot - pixel00 = u*uStep + v*vStep through the 2x2 normal equations (steps need not be orthogonal).
  const glm::dvec3 d = foot - pixel00;
  const double a = glm::dot(uStep, uStep), b = glm::dot(uStep, vStep), c = glm::dot(vStep, vStep);
  const double ru = glm::dot(d, uStep), rv = glm::dot(d, vStep);
  const double det = a * c - b * b;
  return {(ru * c - rv * b) / det, (rv * a - ru * b) / det};
}

DetectorLayout DetectorLayout::centred(int nu, int nv, double spacingU, double spacingV) {
  return DetectorLayout{nu, nv, spacingU, spacingV, -0.5 * (nu - 1) * spacingU, -0.5 * (nv - 1) * spacingV};
}

ProjectionVectors vectorsFromCircular(const CircularParams& p, const DetectorLayout& d) {
  const glm::dmat3 r = rotatedToWorld(p);
  if (p.parallel()) {
    // RTK's parallel beam: rays along the rotated -z (from RTK's source side at +sid), the detector plane through the
    // isocentre (geometry.h says why not RTK's z = -sid), the source offsets unused (RTK's matrix cancels them).
    ProjectionVectors v;
    v.ray = r * glm::dvec3(0.0, 0.0, -1.0);
    v.pixel00 = r * glm::dvec3(d.originU + p.projectionOffsetX, d.originV + p.projectionOffsetY, 0.0);
    v.uStep = r * glm::dvec3(d.spacingU, 0.0, 0.0);
    v.vStep = r * glm::dvec3(0.0, d.spacingV, 0.0);
    return v;
  }
  ProjectionVectors v;
  v.source = r * glm::dvec3(p.sourceOffsetX, p.sourceOffsetY, p.sid);
  v.pixel00 = r * glm::dvec3(d.originU + p.projectionOffsetX, d.originV + p.projectionOffsetY, p.sid - p.sdd);
  v.uStep = r * glm::dvec3(d.spacingU, 0.0, 0.0);
  v.vStep = r * glm::dvec3(0.0, d.spacingV, 0.0);
  return v;
}

std::array<std::array<double, 4>, 3> rtkProjectionMatrix(const CircularParams& p) {
  // RTK: ProjectionTranslation(sox-pox, soy-poy) * Magnification(-sdd, -sid) * SourceTranslation(-sox,-soy,0)
  //      * Rotation; written out: world x -> rotated r = R x; shifted s = r - (sox, soy, 0);
  //      homogeneous detector mm = (-sdd*s.x + (sox-pox)*(s.z - sid), -sdd*s.y + (soy-poy)*(s.z - sid), s.z - sid).
  const glm::dmat3 worldToRotated = glm::transpose(rotatedToWorld(p));
  std::array<std::array<double, 4>, 3> m{};
  if (p.parallel()) {
    // RTK's magnification for sdd 0 is (1, 1; w = 1): detector mm = (r.x - pox, r.y - poy), the source offsets
    // cancelling between its source translation and its projection translation.
    for (int c = 0; c < 3; ++c) {
      m[0][c] = worldToRotated[c][0];
      m[1][c] = worldToRotated[c][1];
    }
    m[0][3] = -p.projectionOffsetX;
    m[1][3] = -p.projectionOffsetY;
    m[2][3] = 1.0;
    return m;
  }
  const double tx = p.sourceOffsetX - p.projectionOffsetX, ty = p.sourceOffsetY - p.projectionOffsetY;
  for (int c = 0; c < 3; ++c) {
    const double r0 = worldToRotated[c][0], r1 = worldToRotated[c][1], r2 = worldToRotated[c][2];
    m[0][c] = -p.sdd * r0 + tx * r2;
    m[1][c] = -p.sdd * r1 + ty * r2;
    m[2][c] = r2;
  }
  // Constant column: s = -(sox, soy, 0) when x = 0.
  m[0][3] = -p.sdd * -p.sourceOffsetX + tx * -p.sid;
  m[1][3] = -p.sdd * -p.sourceOffsetY + ty * -p.sid;
  m[2][3] = -p.sid;
  return m;
}

Geometry Geometry::fromCircular(std::vector<CircularParams> params, const DetectorLayout& detector) {
  Geometry g;
  g.detector = detector;
  g.views.reserve(params.size());
  for (const CircularParams& p : params) g.views.push_back(vectorsFromCircular(p, detector));
  g.circular = std::move(params);
  return g;
}

void Geometry::validate(const std::string& context) const {
  if (detector.nu <= 0 || detector.nv <= 0)
    throwGeometryError(context, "detector size", "at least 1 x 1 pixels",
                       std::to_string(detector.nu) + " x " + std::to_string(detector.nv));
  if (!(std::abs(detector.spacingU) > 0.0) || !(std::abs(detector.spacingV) > 0.0) ||
      !std::isfinite(detector.spacingU) || !std::isfinite(detector.spacingV))
    throwGeometryError(context, "detector spacing", "non-zero finite pixel spacing in mm",
                       std::to_string(detector.spacingU) + " x " + std::to_string(detector.spacingV));
  if (views.empty()) throwGeometryError(context, "projections", "at least one projection", "none");
  if (!circular.empty() && circular.size() != views.size())
    throwGeometryError(context, "circular parameters", std::to_string(views.size()) + " sets",
                       std::to_string(circular.size()));
  const bool beamParallel = parallel();
  for (std::size_t i = 0; i < views.size(); ++i) {
    const ProjectionVectors& v = views[i];
    const std::string where = "projection " + std::to_string(i);
    if (!finite(v.source) || !finite(v.pixel00) || !finite(v.uStep) || !finite(v.vStep) || !finite(v.ray))
      throwGeometryError(context, where, "finite source and detector vectors", "NaN or infinity");
    if (v.parallel() != beamParallel)
      throwGeometryError(context, where + " ray", beamParallel ? "a parallel-beam view (a ray direction), as projection 0" : "a cone-beam view (no ray direction), as projection 0",
                         v.parallel() ? "a parallel-beam view, ray " + str(v.ray) : "a cone-beam view");
    if (!circular.empty() && circular[i].parallel() != v.parallel())
      throwGeometryError(context, where + " circular parameters",
                         v.parallel() ? "SourceToDetectorDistance 0 for a parallel-beam view (RTK's convention)"
                                      : "a positive SourceToDetectorDistance for a cone-beam view",
                         "SourceToDetectorDistance " + std::to_string(circular[i].sdd));
    // RTK's parallel rays run from +SID to -SID: an RTK file with SID <= 0 integrates nothing there (the reader refuses
    // one), so none is made either.
    if (!circular.empty() && circular[i].parallel() && !(circular[i].sid > 0.0))
      throwGeometryError(context, where + " circular parameters", "a positive SourceToIsocenterDistance (RTK's parallel rays run from +SID to -SID)",
                         std::to_string(circular[i].sid));
    const double lu = glm::length(v.uStep), lv = glm::length(v.vStep);
    if (!(lu > 0.0) || !(lv > 0.0))
      throwGeometryError(context, where + " detector steps", "non-zero u and v steps",
                         "u " + str(v.uStep) + ", v " + str(v.vStep));
    if (glm::length(glm::cross(v.uStep, v.vStep)) < 1e-9 * lu * lv)
      throwGeometryError(context, where + " detector steps", "u and v steps that span a plane",
                         "parallel steps u " + str(v.uStep) + ", v " + str(v.vStep));
    if (beamParallel) {
      // Rays in (or within 1e-6 rad of) the detector plane never meet it: no pixel is defined.
      const double across = std::abs(glm::dot(glm::normalize(v.ray), glm::normalize(glm::cross(v.uStep, v.vStep))));
      if (!(across > 1e-6))
        throwGeometryError(context, where + " ray", "a ray direction that crosses the detector plane",
                           "ray " + str(v.ray) + " along the detector (u " + str(v.uStep) + ", v " + str(v.vStep) + ")");
      continue;
    }
    const double sdd = v.sourceToDetector();
    const double scale = std::max({glm::length(v.source), glm::length(v.pixel00), lu, lv});
    if (!(sdd > 1e-9 * scale))
      throwGeometryError(context, where + " source", "a source off the detector plane",
                         "source " + str(v.source) + " at distance " + std::to_string(sdd) +
                             " mm from the detector plane");
    if (!(v.sourceToIsocentre() > 0.0))
      throwGeometryError(context, where + " source", "the world origin in front of the source (towards the detector)",
                         "source-to-isocentre distance " + std::to_string(v.sourceToIsocentre()) + " mm");
  }
}

void Geometry::checkVolumeInFront(const VolumeGrid& grid, const std::string& context) const {
  for (std::size_t i = 0; i < views.size(); ++i) {
    const ProjectionMatrix p = matrix(i, grid);
    for (int corner = 0; corner < 8; ++corner) {
      // Voxel edges, not centres: the half-voxel margin keeps every sample point in front as well.
      const glm::dvec4 x((corner & 1) ? grid.size[0] - 0.5 : -0.5, (corner & 2) ? grid.size[1] - 0.5 : -0.5,
                         (corner & 4) ? grid.size[2] - 0.5 : -0.5, 1.0);
      if (!(p.apply(x).z > 0.0))
        throwGeometryError(context, "volume", "a volume entirely in front of every source",
                           "a corner at " + str(grid.worldOf(x.x, x.y, x.z)) + " mm at or behind the source of projection " +
                               std::to_string(i) + " at " + str(views[i].source));
    }
  }
}

ProjectionMatrix Geometry::matrix(std::size_t index, const VolumeGrid& grid) const {
  const ProjectionVectors& v = views[index];
  if (v.parallel()) {
    // (u, v, t) = M^-1 (x - pixel00) with M = [uStep | vStep | ray]: the ray through x meets the detector at (u, v);
    // the third row is (0, 0, 0, 1): w = 1, no distance weight (an affine map).
    const glm::dmat3 inv = glm::inverse(glm::dmat3(v.uStep, v.vStep, v.ray));
    const glm::dvec3 shift = -(inv * v.pixel00);
    ProjectionMatrix p;
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 3; ++c) p.m[r][c] = inv[c][r] * grid.spacing[c];
      p.m[r][3] = shift[r] + inv[0][r] * grid.origin.x + inv[1][r] * grid.origin.y + inv[2][r] * grid.origin.z;
    }
    p.m[2] = {0.0, 0.0, 0.0, 1.0};
    return p;
  }
  // (u', v', t') = M^-1 (x - s) with M = [uStep | vStep | pixel00 - s]: the ray through x meets the
  // detector at (u'/t', v'/t'), and t' = depth(x) / sourceToDetector. Scaling by
  // sourceToDetector / sourceToIsocentre turns t' into w = depth / sourceToIsocentre.
  const glm::dmat3 m(v.uStep, v.vStep, v.pixel00 - v.source);
  const glm::dmat3 inv = glm::inverse(m) * (v.sourceToDetector() / v.sourceToIsocentre());
  const glm::dvec3 shift = -(inv * v.source);
  // World = origin + index * spacing, folded into the matrix.
  ProjectionMatrix p;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) p.m[r][c] = inv[c][r] * grid.spacing[c];
    p.m[r][3] = shift[r] + inv[0][r] * grid.origin.x + inv[1][r] * grid.origin.y + inv[2][r] * grid.origin.z;
  }
  return p;
}

std::vector<double> Geometry::sourceAngles() const {
  std::vector<double> angles;
  angles.reserve(views.size());
  for (const ProjectionVectors& v : views) {
    double a = v.parallel() ? std::atan2(-v.ray.x, -v.ray.z) : std::atan2(v.source.x, v.source.z);
    if (a < 0.0) a += 2.0 * std::numbers::pi;
    angles.push_back(a);
  }
  return angles;
}

Geometry makeCircularScan(const CircularScanSpec& spec) {
  if (spec.projections <= 0)
    throwGeometryError("circular scan", "projections", "a positive count", std::to_string(spec.projections));
  std::vector<CircularParams> params;
  params.reserve(spec.projections);
  for (int i = 0; i < spec.projections; ++i) {
    CircularParams p;
    p.sid = spec.sid;
    p.sdd = spec.sdd;
    p.gantryAngle = spec.firstAngle + spec.arc * i / spec.projections;
    p.outOfPlaneAngle = spec.outOfPlaneAngle;
    p.inPlaneAngle = spec.inPlaneAngle;
    p.sourceOffsetX = spec.sourceOffsetX;
    p.sourceOffsetY = spec.sourceOffsetY;
    p.projectionOffsetX = spec.projectionOffsetX;
    p.projectionOffsetY = spec.projectionOffsetY;
    params.push_back(p);
  }
  Geometry g = Geometry::fromCircular(std::move(params),
                                      DetectorLayout::centred(spec.nu, spec.nv, spec.spacingU, spec.spacingV));
  g.validate("circular scan");
  return g;
}

Geometry makeParallelScan(const ParallelScanSpec& spec) {
  if (spec.projections <= 0)
    throwGeometryError("parallel scan", "projections", "a positive count", std::to_string(spec.projections));
  // RTK's parallel geometry (sdd 0), so that the scan, its RTK file and that file read back are one geometry.
  CircularScanSpec circular;
  circular.sid = spec.sid;
  circular.sdd = 0.0;
  circular.projections = spec.projections;
  circular.firstAngle = spec.firstAngle;
  circular.arc = spec.arc;
  circular.nu = spec.nu;
  circular.nv = spec.nv;
  circular.spacingU = spec.spacingU;
  circular.spacingV = spec.spacingV;
  circular.projectionOffsetX = spec.offsetU;
  circular.projectionOffsetY = spec.offsetV;
  return makeCircularScan(circular);
}

ProjectionVectors parallelVectors(const glm::dvec3& ray, const glm::dvec3& centre, const glm::dvec3& uStep, const glm::dvec3& vStep,
                                  int nu, int nv) {
  ProjectionVectors p;
  p.ray = ray;
  p.uStep = uStep;
  p.vStep = vStep;
  p.pixel00 = centre - 0.5 * (nu - 1) * uStep - 0.5 * (nv - 1) * vStep;
  return p;
}

double shortScanArcDegrees(double sdd, const DetectorLayout& d, double projectionOffsetX) {
  const double first = d.originU + projectionOffsetX - 0.5 * std::abs(d.spacingU);
  const double last = d.originU + projectionOffsetX + (d.nu - 0.5) * std::abs(d.spacingU);
  const double halfFan = std::atan(std::max(std::abs(first), std::abs(last)) / sdd);
  return 180.0 + 2.0 * halfFan / kDegree;
}

}  // namespace glrecon
