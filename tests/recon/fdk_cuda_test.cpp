// FDK end to end on the cuda backend: parallel-beam FBP meets the cpu backend's phantom bounds (fdk_test.cpp). On the
// CUDA fixture.
#include <gtest/gtest.h>

#include <cmath>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/phantom.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "fdk_support.h"

namespace glrecon {
namespace {

using namespace test;  // fdk_support.h
using CudaFdk = test::CudaTest;

// As FdkBackends.ParallelBeamSheppLogan64OverHalfATurn (fdk_gl_test.cpp): the phantom's densities and RMSE bound, and the
// backprojection alone against the cpu backend's within the texture units' derived bound (fdk_support.h).
TEST_F(CudaFdk, ParallelBeamSheppLogan64OverHalfATurn) {
  FdkOptions options;
  options.backend = Backend::Cuda;
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulateParallel(phantom, 180, 128);
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  FdkReport report;
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, options, &report);
  EXPECT_EQ(report.backend.rfind("cuda", 0), 0u) << report.backend;
  const Metrics m = evaluate(recon, voxelizePhantom(phantom, grid, 4), phantom, scan.geometry, 2 * 4.0);
  EXPECT_LT(m.rmse, kRmse64Parallel);
  expectDensities(m, 0.02);
  expectBackprojectionMatchesCpu(scan, grid, options, "cuda");
}

}  // namespace
}  // namespace glrecon
