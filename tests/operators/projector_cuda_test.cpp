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

TEST_F(CudaProjector, OneSamplePerPlaneIntegratesTheInterpolantExactly) { oneSamplePerPlaneIsExact("cuda"); }

TEST_F(CudaProjector, MatchedPairMatchesCpuAndIsTheTranspose) {
  matchedPairMatchesCpu("cuda");
}

// The distance-driven pair: the same functions as cpu's (plane_gather.h) on the device, so within float rounding of
// it, and its own exact transpose; a block of rows as well (the slabs' operators).
TEST_F(CudaProjector, DistanceDrivenPairMatchesCpuAndIsTheTranspose) {
  matchedPairMatchesCpu("cuda", circularScan(12, 40), ProjectorPair::DistanceDriven);
  CircularScanSpec spec;
  spec.projections = 7;
  spec.nu = 30;
  spec.nv = 26;
  spec.spacingU = spec.spacingV = 14.0;
  spec.projectionOffsetX = 9.0;
  matchedPairMatchesCpu("cuda", makeCircularScan(spec), ProjectorPair::DistanceDriven);
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// Parallel beam (parallel3d, parallel3d_vec): forward, the interpolating back and the matched pair against cpu.
TEST_F(CudaProjector, ParallelBeamMatchesCpu) {
  test::parallelBeamMatchesCpu("cuda");
  test::oneSamplePerPlaneIsExact("cuda", true);
}

}  // namespace
}  // namespace glrecon
