// The cuda operator against the CPU one on the geometries of operator_gl_test.cpp, within the same derived bound.
#include <gtest/gtest.h>

#include <cmath>
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
