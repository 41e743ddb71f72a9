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
