// The cuda operator against the CPU one on the geometries of operator_gl_test.cpp, within the same derived bound.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "device/gl/objects.h"
#include "device/gl/shader.h"
#include "device/cuda/device.h"
#include "operators/gl/gl_operator.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "viewer/window.h"
#include "operator_support.h"

namespace glrecon {
namespace {

using Cuda = test::CudaTest;
using namespace test;  // operator_support.h
using test::kFloatRoundoff;
using test::smoothProjections;

// The CUDA backend runs the same test body; it is compiled in CI and runs where a CUDA device exists.
TEST_F(Cuda, MatchesCpuOnTheSameGeometries) {
  CircularScanSpec spec;
  spec.projections = 70;  // more than its largest window (64)
  spec.nu = 72;
  spec.nv = 56;
  spec.spacingU = spec.spacingV = 5.0;
  spec.projectionOffsetX = 30;
  spec.outOfPlaneAngle = 6;
  const Geometry g = makeCircularScan(spec);
  VolumeGrid grid;
  grid.size = {36, 28, 20};
  grid.spacing = {5.0, 6.5, 8.0};
  grid.origin = {-90, -85, -70};
  compareBackends(g, grid, "cuda", {"cuda"});
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// Parallel beam: the FDK back projection (an affine matrix, w = 1) against cpu within the same derived bound.
TEST_F(Cuda, MatchesCpuOnParallelBeamScans) {
  test::compareBackends(test::parallelScan(70, 60, 300.0), VolumeGrid::centred({36, 28, 20}, {5.0, 6.5, 8.0}), "cuda parallel3d", {"cuda"});
  test::compareBackends(test::tiltedParallelScan(17, 56, 44, 5.0), VolumeGrid::centred({30, 26, 22}, glm::dvec3(6.0)), "cuda parallel3d_vec",
                        {"cuda"});
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// blockLargestMagnitude: the largest |voxel| exactly (the finite check the scheduler skips the host's scan for), and
// NaN where any voxel is NaN, so that the host's check runs and names it.
TEST_F(Cuda, BlockLargestMagnitudeFindsTheLargestAndNaN) {
  const Geometry g = test::circularScan(4, 8);
  const VolumeGrid grid = VolumeGrid::centred({9, 7, 5}, glm::dvec3(4.0));
  auto op = makeOperator(Backend::Cuda, g, grid, {});
  std::vector<float> voxels(grid.voxelCount());
  for (std::size_t i = 0; i < voxels.size(); ++i) voxels[i] = std::sin(0.37f * static_cast<float>(i));
  voxels[123] = -7.5f;
  op->setVolume(voxels.data());
  std::optional<float> largest = op->blockLargestMagnitude();
  ASSERT_TRUE(largest.has_value());
  EXPECT_EQ(*largest, 7.5f);
  voxels[200] = std::numeric_limits<float>::infinity();
  op->setVolume(voxels.data());
  EXPECT_EQ(*op->blockLargestMagnitude(), std::numeric_limits<float>::infinity());
  voxels[17] = std::numeric_limits<float>::quiet_NaN();
  op->setVolume(voxels.data());
  EXPECT_TRUE(std::isnan(*op->blockLargestMagnitude()));
}

}  // namespace
}  // namespace glrecon
