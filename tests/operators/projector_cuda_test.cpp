// The cuda operator's forward and back projections against the cpu backend's. On the CUDA fixture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "glrecon/errors.h"
#include "device/gl/context.h"
#include "glrecon/phantom.h"
#include "glrecon/operator.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "projector_support.h"

namespace glrecon {
namespace {

using CudaProjector = test::CudaTest;
using namespace test;  // projector_support.h
using test::circularScan;

TEST_F(CudaProjector, MatchesCpu) {
  backendMatchesCpu("cuda");
}

// The matched pair on cuda: A with float trilinear weights, A^T its scatter (atomic adds). Against cpu's matched pair
// no texture unit is involved, so expectClose's software bounds hold (position rounding: fused multiply-adds; the
// order of the atomic sums: float rounding of each voxel's sum, ~1e-7 relative per term). Adjoint gap for zero-mean
// x, y within the 1e-5 (as on cpu: the same products, summed in other orders).
TEST_F(CudaProjector, MatchedPairMatchesCpuAndIsTheTranspose) {
  const Geometry g = circularScan(12, 40);
  const VolumeGrid grid = VolumeGrid::centred({32, 28, 24}, {7.0, 8.0, 9.0});
  OperatorOptions o;
  o.pair = ProjectorPair::Matched;
  auto cpu = makeOperator(Backend::Cpu, g, grid, o);
  auto gpu = makeOperator(Backend::Cuda, g, grid, o);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> centred(-0.5f, 0.5f);
  std::vector<float> x(grid.voxelCount());
  for (float& v : x) v = centred(rng);
  std::vector<std::size_t> views(g.size());
  std::iota(views.begin(), views.end(), std::size_t{0});
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  std::vector<float> a(views.size() * pixels), b(views.size() * pixels), y(views.size() * pixels);
  for (float& v : y) v = centred(rng);
  test::forwardOf(*cpu, x.data(), views.data(), views.size(), a.data());
  test::forwardOf(*gpu, x.data(), views.data(), views.size(), b.data());
  expectClose(b, a, "cuda matched forward", true);
  std::vector<float> va(grid.voxelCount()), vb(grid.voxelCount());
  test::backOf(*cpu, y.data(), views.data(), views.size(), va.data());
  test::backOf(*gpu, y.data(), views.data(), views.size(), vb.data());
  expectClose(vb, va, "cuda matched back", true);
  auto dot = [](const std::vector<float>& p, const std::vector<float>& q) {
    double s = 0;
    for (std::size_t i = 0; i < p.size(); ++i) s += static_cast<double>(p[i]) * q[i];
    return s;
  };
  const double gap = std::abs(dot(b, y) - dot(x, vb)) / std::sqrt(dot(b, b) * dot(y, y));
  std::printf("cuda matched adjoint gap / (|Ax| |y|): %.3e\n", gap);
  EXPECT_LT(gap, 1e-5);
}

}  // namespace
}  // namespace glrecon
