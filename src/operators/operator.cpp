// What every operator shares: the base class (the block of rows held, the step), the subset rule on the host, the
// per-view constants of forward and Adjoint back, and the checks every operator needs before it is made.
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <glm/common.hpp>
#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/operator.h"
#include "glrecon/slab.h"
#include "glrecon/validate.h"
#include "operators/plane_gather.h"
#include "operators/projector_views.h"
#include "operators/ray_march.h"

namespace glrecon {

ConeBeamOperator::ConeBeamOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options)
    : geometry_(geometry), grid_(grid), options_(options), backend_(backend) {
  capacity_ = options.blockRows > 0 ? std::min(options.blockRows, grid.size[1]) : grid.size[1];
  rows_ = capacity_;
  step_ = detail::projectorStep(options.step, grid);
}

ConeBeamOperator::~ConeBeamOperator() = default;

ProjectorPair parseProjectorPair(const std::string& name) {
  if (name == "interpolating") return ProjectorPair::Interpolating;
  if (name == "matched") return ProjectorPair::Matched;
  if (name == "distance-driven") return ProjectorPair::DistanceDriven;
  throw UsageError(field("projector") + ": expected interpolating, matched or distance-driven, found '" + quoted(name) + "'");
}

const char* projectorPairName(ProjectorPair pair) {
  switch (pair) {
    case ProjectorPair::Interpolating: return "interpolating";
    case ProjectorPair::Matched: return "matched";
    case ProjectorPair::DistanceDriven: return "distance-driven";
  }
  return "?";
}

VolumeGrid ConeBeamOperator::blockGrid() const { return options_.blockRows > 0 ? slabGrid(grid_, firstRow_, rows_) : grid_; }

std::size_t ConeBeamOperator::blockVoxels() const { return static_cast<std::size_t>(grid_.size[0]) * rows_ * grid_.size[2]; }

void ConeBeamOperator::setBlock(int firstRow, int rows) {
  checkSlab(grid_, options_.blockRows > 0 ? capacity_ : 0, firstRow, rows);
  firstRow_ = firstRow;
  rows_ = rows;
}

void ConeBeamOperator::checkHoldsBlock(const std::array<int, 3>& volumeSize, int volumeFirstRow) const {
  if (volumeSize[0] != grid_.size[0] || volumeSize[2] != grid_.size[2] || volumeFirstRow != firstRow_ || volumeFirstRow + rows_ > volumeSize[1])
    throw std::invalid_argument("readBlockInto: the volume does not hold this block's rows");
}

void ConeBeamOperator::back(DeviceProjections&, const std::size_t*, std::size_t) {
  throw std::logic_error(std::string("back: the ") + backendInfo(backend_).name + " operator has no device windows");
}

void ConeBeamOperator::killOutsideRange(double, double, double) {
  throw UsageError(field("densityRange") + ": expected " + field("backend") + " graphics or cpu (the " + backendInfo(backend_).name +
                   " backend has no per-voxel kill)");
}

float subsetWeightFloor(float largestWeight, std::size_t views) {
  return static_cast<float>(largestWeight / (256.0 * static_cast<double>(views)));
}

void applySubsetRule(float* x, const float* update, const float* weights, const std::uint8_t* mask, std::size_t voxels,
                     std::size_t views, const SubsetRule& rule) {
  const float largest = rule.largestWeight > 0.0f ? rule.largestWeight : *std::max_element(weights, weights + voxels);
  const float weightFloor = subsetWeightFloor(largest, views);
  for (std::size_t i = 0; i < voxels; ++i) {
    if ((mask && !mask[i]) || !(weights[i] > weightFloor)) continue;
    if (rule.multiplicative) {
      x[i] *= update[i] / weights[i];
    } else {
      x[i] += rule.lambda * update[i] / weights[i];
      if (rule.positivity && x[i] < 0.0f) x[i] = 0.0f;
    }
  }
}

namespace detail {

std::vector<ProjectorView> projectorViews(const Geometry& geometry, const VolumeGrid& grid) {
  std::vector<ProjectorView> out(geometry.size());
  const double voxelVolume = grid.spacing.x * grid.spacing.y * grid.spacing.z;
  for (std::size_t p = 0; p < geometry.size(); ++p) {
    const ProjectionVectors& v = geometry.views[p];
    ProjectorView& o = out[p];
    if (v.parallel()) {
      const glm::dvec3 start = (v.pixel00 - grid.origin) / grid.spacing, n = v.detectorNormal();
      const glm::dvec3 eu = v.uStep / grid.spacing, ev = v.vStep / grid.spacing;
      for (int a = 0; a < 3; ++a) {
        o.sourceIndex[a] = static_cast<float>(start[a]);
        o.e0[a] = static_cast<float>(v.ray[a]);
        o.eu[a] = static_cast<float>(eu[a]);
        o.ev[a] = static_cast<float>(ev[a]);
        o.normal[a] = static_cast<float>(n[a]);
      }
      // Rays per unit area across them: 1 / (the pixel's area seen along the ray).
      o.weight = static_cast<float>(voxelVolume / std::abs(glm::dot(glm::cross(v.uStep, v.vStep), glm::normalize(v.ray))));
      const ProjectionMatrix m = geometry.matrix(p, grid);
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) o.matrix[r][c] = static_cast<float>(m.m[r][c]);
      const glm::dvec3 across = glm::abs(v.ray / grid.spacing);
      o.mainAxis = across.x >= across.y && across.x >= across.z ? 0 : (across.y >= across.z ? 1 : 2);
      o.parallel = 1;
      continue;
    }
    o.parallel = 0;
    const glm::dvec3 sIndex = (v.source - grid.origin) / grid.spacing;
    const glm::dvec3 e0 = v.pixel00 - v.source, n = v.detectorNormal();
    const double sdd = v.sourceToDetector(), area = glm::length(glm::cross(v.uStep, v.vStep));
    for (int a = 0; a < 3; ++a) {
      o.sourceIndex[a] = static_cast<float>(sIndex[a]);
      o.e0[a] = static_cast<float>(e0[a]);
      o.eu[a] = static_cast<float>(v.uStep[a]);
      o.ev[a] = static_cast<float>(v.vStep[a]);
      o.normal[a] = static_cast<float>(n[a]);
    }
    o.weight = static_cast<float>(voxelVolume * sdd * sdd / area);
    const ProjectionMatrix m = geometry.matrix(p, grid);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) o.matrix[r][c] = static_cast<float>(m.m[r][c]);
    // In double on the host, once: every backend then samples the same planes (a per-ray choice in float could tip
    // differently on a GPU's fused multiply-adds for rays at 45 degrees).
    const glm::dvec3 central = (e0 + 0.5 * (geometry.detector.nu - 1) * v.uStep + 0.5 * (geometry.detector.nv - 1) * v.vStep) / grid.spacing;
    const glm::dvec3 across = glm::abs(central);
    o.mainAxis = across.x >= across.y && across.x >= across.z ? 0 : (across.y >= across.z ? 1 : 2);
  }
  return out;
}

double projectorStep(double step, const VolumeGrid& grid) {
  if (step == 0.0) return 0.0;  // one sample per voxel plane
  // Bounded by the grid: below a hundredth of the smallest spacing trilinear samples gain nothing and the rays' sample
  // counts grow past what float sums and int counters hold (--step 1e-300 gave NaN); above twice the largest spacing
  // a ray skips whole voxels and one step can pass the whole volume (--step 1e10 gave all-zero projections).
  const double smallest = std::min({grid.spacing.x, grid.spacing.y, grid.spacing.z});
  const double largest = std::max({grid.spacing.x, grid.spacing.y, grid.spacing.z});
  if (!(step >= 0.01 * smallest && step <= 2.0 * largest)) {
    char expected[160];
    std::snprintf(expected, sizeof expected, "a ray-marching step from %.4g to %.4g mm (a hundredth of the smallest voxel spacing to twice the largest)",
                  0.01 * smallest, 2.0 * largest);
    char found[64];
    std::snprintf(found, sizeof found, "%g mm", step);
    throwGeometryError("projector", field("step"), expected, found);
  }
  return step;
}

void checkDistanceDrivenGeometry(const Geometry& geometry, const VolumeGrid& grid, double step, const std::string& context) {
  if (step != 0.0)
    throw UsageError(field("step") + ": the distance-driven pair integrates across the voxel planes, expected 0, found " + std::to_string(step));
  const std::vector<ProjectorView> views = projectorViews(geometry, grid);
  const detail::FloatSpacing h(grid);
  const int size[3] = {grid.size[0], grid.size[1], grid.size[2]};
  for (std::size_t p = 0; p < views.size(); ++p)
    if (const char* why = planeFormRefusal(views[p], h, size, geometry.detector.nu, geometry.detector.nv))
      throwGeometryError(context, "projection " + std::to_string(p) + " (projector distance-driven)",
                         "a cone-beam view of a gantry about y: the detector's u across y and v along y, the source beside the volume, "
                         "every ray running mostly along x or z (--projector matched takes any geometry)",
                         why);
}

void checkProjectorGeometry(const Geometry& geometry, const VolumeGrid& grid, const std::string& context) {
  grid.validate(context.c_str());
  // The physical bounds of glrecon/validate.h (a block of a valid grid meets them too): a detector spacing of 1e-37
  // from Python reached the operators and crashed them.
  checkGridBounds(grid, context);
  checkScanBounds(geometry, context);
  if (geometry.size() == 0) throwGeometryError(context, "projections", "at least one view", "none");
  // A ray from the source to a pixel centre of zero length has no direction: nothing to integrate along. Checked
  // at the four corners and wherever the detector plane passes through the source (the nearest pixel).
  for (std::size_t p = 0; p < geometry.size() && !geometry.parallel(); ++p) {  // parallel rays have their direction
    const ProjectionVectors& v = geometry.views[p];
    const auto pierce = v.piercingPoint();
    const double cu = std::clamp(std::round(pierce[0]), 0.0, geometry.detector.nu - 1.0);
    const double cv = std::clamp(std::round(pierce[1]), 0.0, geometry.detector.nv - 1.0);
    const double corners[5][2] = {{0, 0}, {geometry.detector.nu - 1.0, 0}, {0, geometry.detector.nv - 1.0},
                                  {geometry.detector.nu - 1.0, geometry.detector.nv - 1.0}, {cu, cv}};
    for (const auto& c : corners) {
      const double length = glm::length(v.detectorPoint(c[0], c[1]) - v.source);
      if (!(length > 0.0) || !std::isfinite(length))
        throwGeometryError(context, "projection " + std::to_string(p) + " ray length (source to pixel " +
                                        std::to_string(static_cast<int>(c[0])) + "," + std::to_string(static_cast<int>(c[1])) + ")",
                           "a positive length", std::to_string(length) + " mm");
    }
  }
  geometry.validate(context);
  geometry.checkVolumeInFront(grid, context);
}

}  // namespace detail

double countRaySamples(const Geometry& geometry, const VolumeGrid& grid, double step) {
  // forward()'s rays without the samples: how many samples every ray of every view takes.
  const std::vector<detail::ProjectorView> views = detail::projectorViews(geometry, grid);
  const detail::FloatSpacing sp(grid);
  const float hi[3] = {static_cast<float>(grid.size[0]), static_cast<float>(grid.size[1]), static_cast<float>(grid.size[2])};
  double total = 0;
  for (const detail::ProjectorView& o : views)
    for (int iv = 0; iv < geometry.detector.nv; ++iv)
      for (int iu = 0; iu < geometry.detector.nu; ++iu) {
        detail::RaySamples ray;
        if (detail::marchRay(o, static_cast<float>(iu), static_cast<float>(iv), sp, hi, static_cast<float>(step), ray)) total += ray.count;
      }
  return total;
}

std::string raySamplingDescription(double step) {
  if (step == 0.0) return "one sample per voxel plane";
  char text[48];
  std::snprintf(text, sizeof text, "step %.4g mm", step);
  return text;
}

float ConeBeamOperator::subsetLargestWeight(const std::size_t* views, std::size_t count) {
  std::vector<float> iterate(blockVoxels()), weights(blockVoxels(), 0.0f);
  const std::vector<float> ones(count * static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv, 1.0f);
  readVolume(iterate.data());
  setVolume(weights.data());
  back(ones.data(), views, count, Weighting::Adjoint);
  readVolume(weights.data());
  setVolume(iterate.data());
  return weights.empty() ? 0.0f : *std::max_element(weights.begin(), weights.end());
}

bool ConeBeamOperator::setSubsetData(const float*, const float*, float, bool) { return false; }

std::unique_ptr<OperatorVectors> ConeBeamOperator::makeVectors(int, int) { return nullptr; }

void OperatorVectors::takeFrom(Id, OperatorVectors&, Id, bool) {
  throw std::logic_error("OperatorVectors::takeFrom: these vectors cannot reach another operator's");
}

void OperatorVectors::setNeighbours(OperatorVectors* before, OperatorVectors* after) {
  if (before || after) throw std::logic_error("OperatorVectors::setNeighbours: these vectors hold the whole grid");
}

double ConeBeamOperator::correctSubset(const std::size_t*, std::size_t) {
  throw std::logic_error("correctSubset: this operator keeps no data on a device (setSubsetData returned false)");
}

bool ConeBeamOperator::projectSubset(const std::size_t*, std::size_t) { return false; }

void ConeBeamOperator::takeSubsetProjection(ConeBeamOperator&, bool) {
  throw std::logic_error("takeSubsetProjection: this operator keeps no projections on a device (projectSubset returned false)");
}

double ConeBeamOperator::correctProjectedSubset(const std::size_t*, std::size_t) {
  throw std::logic_error("correctProjectedSubset: this operator keeps no projections on a device (projectSubset returned false)");
}

}  // namespace glrecon
