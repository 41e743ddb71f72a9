// The iterative methods on the cuda backend against cpu, and the iterate kept on the device against the host path.
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

using CudaIterative = test::CudaTest;
using namespace test;  // iterative_support.h

TEST_F(CudaIterative, MatchesCpu) {
  // CGLS with its vectors on the device (OperatorVectors), against cpu's on the host.
  for (IterativeMethod m : {IterativeMethod::Sart, IterativeMethod::Osem, IterativeMethod::Cgls}) iterativeBackendMatchesCpu("cuda", m);
}

TEST_F(CudaIterative, VectorsOnTheDeviceEqualTheHostCalls) {
  vectorsOnDeviceMatchHost("cuda");
}

TEST_F(CudaIterative, IterateOnTheDeviceEqualsTheHostPath) {
  iterateOnDeviceMatchesHostPath("cuda", 0);
}

TEST_F(CudaIterative, CorrectionsOnTheDeviceEqualTheHostPath) {
  deviceCorrectionsMatchHostPath("cuda");
}

}  // namespace
}  // namespace glrecon
