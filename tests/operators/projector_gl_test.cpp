// The GL operators' forward and back projections against the cpu backend's. On the GL fixture.
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

using GraphicsProjector = test::GlTest;
using namespace test;  // projector_support.h
using test::circularScan;

TEST_F(GraphicsProjector, GraphicsMatchesCpu) {
  backendMatchesCpu("graphics");
}

TEST_F(GraphicsProjector, ComputeMatchesCpu) {
  backendMatchesCpu("compute");
}

TEST_F(GraphicsProjector, OneSamplePerPlaneIntegratesTheInterpolantExactly) {
  oneSamplePerPlaneIsExact("graphics");
  oneSamplePerPlaneIsExact("compute");
}

TEST_F(GraphicsProjector, MatchedPairMatchesCpuAndIsTheTranspose) {
  matchedPairMatchesCpu("graphics");
  matchedPairMatchesCpu("compute");
}

// The distance-driven pair in GLSL (project_matched.comp): plane_gather.h's functions, so within float rounding of
// cpu's (llvmpipe: the software bound), and its own exact transpose.
TEST_F(GraphicsProjector, DistanceDrivenPairMatchesCpuAndIsTheTranspose) {
  matchedPairMatchesCpu("compute", circularScan(12, 40), ProjectorPair::DistanceDriven);
  matchedPairMatchesCpu("graphics", circularScan(12, 40), ProjectorPair::DistanceDriven);
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// Parallel beam (parallel3d, parallel3d_vec): forward, the interpolating back and the matched pair against cpu.
TEST_F(GraphicsProjector, ParallelBeamMatchesCpu) {
  test::parallelBeamMatchesCpu("graphics");
  test::parallelBeamMatchesCpu("graphics-mp", false);  // an FDK backprojector: its forward and B are graphics'; no matched pair
  test::parallelBeamMatchesCpu("compute");
  test::oneSamplePerPlaneIsExact("graphics", true);
  test::oneSamplePerPlaneIsExact("compute", true);
}

}  // namespace
}  // namespace glrecon
