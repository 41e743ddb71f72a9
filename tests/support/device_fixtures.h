#pragma once
// The fixtures of the tests that need a device (the *_gl_test.cpp and *_cuda_test.cpp files): whether this machine
// has one is probed once per test process (a context made and dropped per test cost a tenth of a second each on
// llvmpipe), and every test on a fixture skips, saying why, where the device is missing. A suite names its fixture
// with an alias, `using Graphics = test::GlTest;`, so the suite and test names stay the tests' own.
#include "test_support.h"

namespace glrecon::test {

/// Tests that need an OpenGL 4.5 device (through EGL: a GPU, or Mesa's llvmpipe on a machine without one).
class GlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string& reason = glUnavailableReason(); !reason.empty()) GTEST_SKIP() << "no OpenGL 4.5 device: " << reason;
  }
};

/// Tests that need a CUDA device and a build with the cuda backend.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string& reason = cudaProjectorUnavailableReason(); !reason.empty()) GTEST_SKIP() << reason;
  }
};

}  // namespace glrecon::test
