// The CPU backprojector against an independent double-precision reference with a derived error bound.
#include <gtest/gtest.h>

#include <cmath>

#include <glm/geometric.hpp>

#include "glrecon/operator.h"
#include "glrecon/errors.h"
#include "test_support.h"

namespace glrecon {
namespace {

constexpr double kMaxQ = test::kTestMaxQ, kMaxGradientU = test::kTestSlopeU, kMaxGradientV = test::kTestSlopeV;

struct Reference {
  Image volume;
  std::vector<double> bound;
};

// Straight from the definitions, in double: intersect the ray source->voxel with the detector plane,
// sample bilinearly with 0 outside, weight by (sourceToIsocentre / depth)^2. Beside each voxel it
// accumulates the error the float backprojector may make there (see the comment inside).
Reference referenceBackprojection(const Geometry& g, const VolumeGrid& grid, const std::vector<float>& projections) {
  Reference r{Image(grid), std::vector<double>(grid.voxelCount(), 0.0)};
  std::vector<double> sum(grid.voxelCount(), 0.0);
  const int nu = g.detector.nu, nv = g.detector.nv;
  auto pixel = [&](int p, int u, int v) -> double {
    if (u < 0 || v < 0 || u >= nu || v >= nv) return 0.0;
    return projections[(static_cast<std::size_t>(p) * nv + v) * nu + u];
  };
  const double eps = test::kFloatRoundoff;
  for (std::size_t p = 0; p < g.size(); ++p) {
    const ProjectionVectors& pv = g.views[p];
    const glm::dvec3 n = pv.detectorNormal();
    // Parallel beam: the ray through x runs along `ray` to the detector plane, and the weight is 1.
    const double sdd = pv.parallel() ? 0.0 : pv.sourceToDetector(), sid = pv.parallel() ? 0.0 : pv.sourceToIsocentre();
    const ProjectionMatrix m = g.matrix(p, grid);  // only for the magnitudes of the float path's terms
    for (int k = 0; k < grid.size[2]; ++k)
      for (int j = 0; j < grid.size[1]; ++j)
        for (int i = 0; i < grid.size[0]; ++i) {
          const glm::dvec3 x = grid.worldOf(i, j, k);
          const double depth = pv.parallel() ? 0.0 : glm::dot(x - pv.source, n);
          const glm::dvec3 hit = pv.parallel() ? x + pv.ray * (glm::dot(pv.pixel00 - x, n) / glm::dot(pv.ray, n))
                                               : pv.source + (x - pv.source) * (sdd / depth);
          // Solve hit = pixel00 + u uStep + v vStep (steps may be non-orthogonal).
          const glm::dvec3 d = hit - pv.pixel00;
          const double a = glm::dot(pv.uStep, pv.uStep), b = glm::dot(pv.uStep, pv.vStep), c = glm::dot(pv.vStep, pv.vStep);
          const double det = a * c - b * b;
          const double u = (glm::dot(d, pv.uStep) * c - glm::dot(d, pv.vStep) * b) / det;
          const double v = (glm::dot(d, pv.vStep) * a - glm::dot(d, pv.uStep) * b) / det;
          const int u0 = static_cast<int>(std::floor(u)), v0 = static_cast<int>(std::floor(v));
          const double fu = u - u0, fv = v - v0;
          const double sample = (1 - fv) * ((1 - fu) * pixel(p, u0, v0) + fu * pixel(p, u0 + 1, v0)) +
                                fv * ((1 - fu) * pixel(p, u0, v0 + 1) + fu * pixel(p, u0 + 1, v0 + 1));
          const double weight = pv.parallel() ? 1.0 : (sid / depth) * (sid / depth);
          const std::size_t idx = r.volume.index(i, j, k);
          sum[idx] += weight * sample;
          // Error budget of the float path for this update, in float roundings eps. It computes
          // u = (U0 + i dU) / (W0 + i dW) with U0, W0 rounded from double, i*dU and the sum rounded, then the
          // division, the +1 shift and the fraction (exact): |du| <= 3 eps (|U0| + |i dU|) / |W|
          // + 3 eps |u| (|W0| + |i dW|) / |W| + eps (|u| + 1); likewise v. A coordinate error moves the
          // sample by at most gradient x error. The interpolation (6 operations) and weight (3) add about
          // 10 roundings of values at most kMaxQ. Everything is doubled as margin for the
          // first-order analysis.
          const double W = m.m[2][1] * j + m.m[2][2] * k + m.m[2][3] + m.m[2][0] * i;
          const double wTerms = std::abs(m.m[2][1] * j + m.m[2][2] * k + m.m[2][3]) + std::abs(m.m[2][0] * i);
          auto coordinateError = [&](int row, double coordinate) {
            const double terms = std::abs(m.m[row][1] * j + m.m[row][2] * k + m.m[row][3]) + std::abs(m.m[row][0] * i);
            return 3 * eps * terms / std::abs(W) + 3 * eps * std::abs(coordinate) * wTerms / std::abs(W) +
                   eps * (std::abs(coordinate) + 1);
          };
          const bool inside = u > -1 && v > -1 && u < nu && v < nv;
          // Within a pixel of the detector edge the interpolant falls from Q to the border's 0: slope kMaxQ.
          const double slopeU = (u < 0 || u > nu - 1) ? kMaxQ : kMaxGradientU;
          const double slopeV = (v < 0 || v > nv - 1) ? kMaxQ : kMaxGradientV;
          if (inside)
            r.bound[idx] += 2 * weight * (slopeU * coordinateError(0, u) + slopeV * coordinateError(1, v) + 10 * eps * kMaxQ);
        }
  }
  // The float accumulation over the projections adds one rounding of the running sum per projection.
  for (std::size_t i = 0; i < sum.size(); ++i) {
    r.volume.data[i] = static_cast<float>(sum[i]);
    r.bound[i] += g.size() * eps * std::abs(sum[i]) + eps * std::abs(sum[i]);
  }
  return r;
}

void expectMatchesReference(const Geometry& g, const VolumeGrid& grid, std::size_t batch) {
  const std::vector<float> projections = test::smoothProjections(g);
  const Reference ref = referenceBackprojection(g, grid, projections);
  OperatorOptions two;
  two.threads = 2;
  auto cpu = makeOperator(Backend::Cpu, g, grid, two);
  const Image result = test::backprojectInBatches(*cpu, g, projections, batch);
  std::size_t failures = 0, nonzero = 0;
  double worst = 0;
  for (std::size_t i = 0; i < result.data.size(); ++i) {
    const double err = std::abs(result.data[i] - ref.volume.data[i]);
    worst = std::max(worst, err / (ref.bound[i] + 1e-30));
    if (!(err <= ref.bound[i])) ++failures;
    if (ref.volume.data[i] != 0.0f) ++nonzero;
  }
  EXPECT_EQ(failures, 0u) << "largest error / bound " << worst;
  EXPECT_GT(nonzero, result.data.size() / 2);  // the test exercises real samples, not just zeros
}

TEST(CpuBackprojector, MatchesReferenceOnACircularScan) {
  CircularScanSpec spec;
  spec.projections = 24;
  spec.nu = 80;
  spec.nv = 60;
  spec.spacingU = spec.spacingV = 4.0;
  expectMatchesReference(makeCircularScan(spec), VolumeGrid::centred({40, 36, 32}, glm::dvec3(4.0)), 8);
}

TEST(CpuBackprojector, MatchesReferenceOnAGeneralGeometry) {
  // Offset detector (half the volume falls off it), tilt, roll, anisotropic non-centred grid.
  CircularScanSpec spec;
  spec.projections = 10;
  spec.arc = 250;
  spec.nu = 50;
  spec.nv = 44;
  spec.spacingU = 5.0;
  spec.spacingV = 3.5;
  spec.projectionOffsetX = 60;
  spec.sourceOffsetY = -10;
  spec.outOfPlaneAngle = 12;
  spec.inPlaneAngle = 5;
  VolumeGrid grid;
  grid.size = {37, 23, 29};
  grid.spacing = {3.0, 5.0, 2.5};
  grid.origin = {-50, -60, -30};
  expectMatchesReference(makeCircularScan(spec), grid, 3);
}

TEST(CpuBackprojector, UnknownBackendIsAUsageError) {
  // Names are the front ends' (the command line and Python parse them): the library knows backends by the registry.
  EXPECT_FALSE(backendNamed("vulkan").has_value());
  const test::CliRun r = test::runCli(test::scratchDir(), "fdk -g g.xml -p p.mha -o v.mha --backend vulkan");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  for (const std::string f : {"--backend", "cpu", "'vulkan'"}) EXPECT_TRUE(test::contains(r.output, f)) << r.output;
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// Parallel beam: the affine matrix (w = 1) against rays along the direction to the detector plane, weight 1.
TEST(CpuBackprojector, MatchesReferenceOnParallelBeamScans) {
  expectMatchesReference(test::parallelScan(24, 60, 240.0), VolumeGrid::centred({40, 36, 32}, glm::dvec3(5.0)), 8);
  VolumeGrid grid;
  grid.size = {37, 23, 29};
  grid.spacing = {3.0, 5.0, 2.5};
  grid.origin = {-50, -60, -30};
  expectMatchesReference(test::tiltedParallelScan(10, 50, 44, 4.0), grid, 3);
}

}  // namespace
}  // namespace glrecon
