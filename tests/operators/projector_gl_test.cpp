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

}  // namespace
}  // namespace glrecon
