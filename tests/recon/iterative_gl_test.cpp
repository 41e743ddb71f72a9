// The iterative methods on the GL backends against cpu, and the iterate kept on the device against the host path.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/iterative.h"
#include "glrecon/phantom.h"
#include "glrecon/operator.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "iterative_support.h"

namespace glrecon {
namespace {

using GraphicsIterative = test::GlTest;
using namespace test;  // iterative_support.h

TEST_F(GraphicsIterative, GraphicsAndComputeMatchCpu) {
  for (const char* backend : {"graphics", "compute"})
    for (IterativeMethod m : {IterativeMethod::Sart, IterativeMethod::Osem, IterativeMethod::Cgls}) iterativeBackendMatchesCpu(backend, m);
}

// The TV methods on the GL backends' operators with host vectors (they keep none on their device), against cpu.
TEST_F(GraphicsIterative, TotalVariationMethodsMatchCpu) {
  for (const char* backend : {"graphics", "compute"})
    for (IterativeMethod m : {IterativeMethod::PdhgTv, IterativeMethod::AsdPocs}) iterativeBackendMatchesCpu(backend, m);
}

TEST_F(GraphicsIterative, IterateOnTheDeviceMatchesTheHostPath) {
  for (const char* backend : {"graphics", "compute"}) iterateOnDeviceMatchesHostPath(backend, 64);
}

TEST_F(GraphicsIterative, CorrectionsOnTheDeviceMatchTheHostPath) {
  for (const char* backend : {"graphics", "compute"}) deviceCorrectionsMatchHostPath(backend, 64);
}

}  // namespace
}  // namespace glrecon
