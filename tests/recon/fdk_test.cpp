// FDK end to end: analytic phantom -> exact projections -> CPU FDK -> compare with the phantom.
#include <gtest/gtest.h>

#include <cmath>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/phantom.h"
#include "test_support.h"
#include "fdk_support.h"

namespace glrecon {
namespace {

using namespace test;  // fdk_support.h

constexpr double kRmse64Short = 0.075;  // first run: 0.06942 (200 projections over 180 degrees + fan)

TEST(Fdk, SheppLogan64FullScan) {
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulate(phantom, 360, 360, 128);
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  FdkReport report;
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, {}, &report);
  EXPECT_FALSE(report.shortScan);
  const Metrics m = evaluate(recon, voxelizePhantom(phantom, grid, 4), phantom, scan.geometry, 2 * 4.0);
  EXPECT_LT(m.rmse, kRmse64);
  expectDensities(m, 0.02);
}

// The short scan's RMSE is twice the full scan's, all of it away from the mid-plane: within |y| < 48 mm
// it matches the full scan (0.04), and it grows to 0.13 at |y| = 100 mm. That is FDK's cone-beam error,
// which a short scan no longer halves by averaging opposite views.
TEST(Fdk, SheppLogan64ShortScanWithParker) {
  const Phantom phantom = Phantom::sheppLogan();
  const double arc = shortScanArcDegrees(1536.0, DetectorLayout::centred(128, 128, 4.0, 4.0));
  const int projections = 200;
  const Scan scan = simulate(phantom, projections, arc * projections / (projections - 1), 128);
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  FdkReport report;
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, {}, &report);
  EXPECT_TRUE(report.shortScan);
  const Image truth = voxelizePhantom(phantom, grid, 4);
  const Metrics m = evaluate(recon, truth, phantom, scan.geometry, 2 * 4.0);
  EXPECT_LT(m.rmse, kRmse64Short);
  expectDensities(m, 0.02);
  // Without Parker's weights the doubly measured rays count twice: the result must be visibly worse.
  FdkOptions off;
  off.filter.shortScan = false;
  const Metrics bad = evaluate(reconstructFdk(scan.geometry, scan.projections, grid, off), truth, phantom, scan.geometry, 8.0);
  EXPECT_GT(bad.rmse, 2 * m.rmse);
}

TEST(Fdk, ResultDoesNotDependOnBatchOrThreads) {
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulate(phantom, 45, 360, 64);
  const VolumeGrid grid = VolumeGrid::centred({24, 20, 16}, glm::dvec3(10.0));
  FdkOptions a, b;
  a.batch = 45;
  a.threads = 2;
  b.batch = 7;
  b.threads = 1;
  // Each voxel sums the projections in the same order whatever the split: identical bits.
  EXPECT_EQ(reconstructFdk(scan.geometry, scan.projections, grid, a).data,
            reconstructFdk(scan.geometry, scan.projections, grid, b).data);
}

TEST(Fdk, MismatchedProjectionsNameTheField) {
  const Phantom phantom = Phantom::sheppLogan();
  Scan scan = simulate(phantom, 10, 360, 32);
  scan.projections.size[2] = 9;
  scan.projections.data.resize(scan.projections.voxelCount());
  test::expectError<InputError>(
      [&] { reconstructFdk(scan.geometry, scan.projections, VolumeGrid::centred({8, 8, 8}, glm::dvec3(8.0)), {}); },
      {"number of projections", "10", "found 9"});
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// Parallel-beam FBP (the FDK filter without the cone's weights, ASTRA's FBP_CUDA): the phantom's exact parallel
// projections over [0, 180) (ASTRA's sampling: N views at k pi / N, the last 180/N short of 180 degrees) are a complete
// scan, and the densities come back as the cone's do (the same regions and tolerance; kRmse64Parallel in fdk_support.h).

TEST(Fdk, ParallelBeamSheppLogan64OverHalfATurn) {
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulateParallel(phantom, 180, 128);
  const VolumeGrid grid = VolumeGrid::centred({64, 64, 64}, glm::dvec3(4.0));
  // The cpu backend, whatever the machine: the bound below is its float rounding (a GPU's texture units weigh bilinear
  // samples in 8-bit fractions, which the mirrored views meet at other fractions: 3.5e-3 relative on an H200).
  FdkOptions cpu;
  cpu.backend = Backend::Cpu;
  FdkReport report;
  const Image recon = reconstructFdk(scan.geometry, scan.projections, grid, cpu, &report);
  EXPECT_FALSE(report.shortScan);
  const Image truth = voxelizePhantom(phantom, grid, 4);
  const Metrics m = evaluate(recon, truth, phantom, scan.geometry, 2 * 4.0);
  RecordProperty("rmse", std::to_string(m.rmse));
  EXPECT_LT(m.rmse, kRmse64Parallel);
  expectDensities(m, 0.02);
  // A whole turn measures every line twice: its gaps on the circle of pi are halved, and the result is the half turn's
  // (the views at a + 180 degrees read the same lines through the mirrored, pixel for pixel equal, detector: the same
  // bilinear samples, summed in another order and weighted by half gaps: float rounding of ~360 terms, 1e-4 relative).
  const Scan full = simulateParallel(phantom, 360, 128, 360.0);
  const Image fullRecon = reconstructFdk(full.geometry, full.projections, grid, cpu);
  float largest = 0, worst = 0;
  for (std::size_t i = 0; i < recon.data.size(); ++i) {
    largest = std::max(largest, std::abs(recon.data[i]));
    worst = std::max(worst, std::abs(fullRecon.data[i] - recon.data[i]));
  }
  std::printf("parallel beam: whole turn against half turn: largest |difference| %.3g of %.3g\n", worst, largest);
  EXPECT_LT(worst, 1e-4 * largest);
}

// Short of 180 degrees a parallel scan misses lines (no Parker pairing can make them up): refused, naming the range, and
// taken as a limited-angle reconstruction with shortScan off.
TEST(Fdk, ParallelBeamShortOfHalfATurnIsRefusedUnlessAsked) {
  const Phantom phantom = Phantom::sheppLogan();
  const Scan scan = simulateParallel(phantom, 60, 32, 120.0);
  const VolumeGrid grid = VolumeGrid::centred({16, 16, 16}, glm::dvec3(16.0));
  test::expectError<GeometryError>([&] { reconstructFdk(scan.geometry, scan.projections, grid, {}); },
                                   {"parallel-beam", "at least 180 degrees", "found 118"});
  FdkOptions off;
  off.filter.shortScan = false;
  const Image limited = reconstructFdk(scan.geometry, scan.projections, grid, off);
  EXPECT_GT(*std::max_element(limited.data.begin(), limited.data.end()), 0.5f);
}

}  // namespace
}  // namespace glrecon
