// The iterative methods on the cuda backend against cpu, and the iterate kept on the device against the host path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <tuple>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/iterative.h"
#include "glrecon/phantom.h"
#include "glrecon/operator.h"
#include "glrecon/split.h"
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

// PDHG-TV and ASD-POCS with their vectors on the device (and ASD-POCS's TV phase copying the operator's volume on the
// device), against cpu's on the host: the GPU-against-cpu bound of iterativeBackendMatchesCpu.
TEST_F(CudaIterative, TotalVariationMethodsMatchCpu) {
  for (IterativeMethod m : {IterativeMethod::PdhgTv, IterativeMethod::AsdPocs}) iterativeBackendMatchesCpu("cuda", m);
}

// Each of OperatorVectors' TV operations in device memory against the host's vectors over the same operator.
TEST_F(CudaIterative, TotalVariationVectorsEqualTheHostVectors) {
  totalVariationVectorsMatchHost("cuda");
}

// Whole runs: the vectors on the device against host vectors over the same cuda operator.
TEST_F(CudaIterative, TotalVariationMethodsOnDeviceVectorsEqualTheHostVectorsPath) {
  totalVariationMethodsOnDeviceVectorsMatchHostVectors("cuda");
}

TEST_F(CudaIterative, IterateOnTheDeviceEqualsTheHostPath) {
  iterateOnDeviceMatchesHostPath("cuda", 0);
}

TEST_F(CudaIterative, CorrectionsOnTheDeviceEqualTheHostPath) {
  deviceCorrectionsMatchHostPath("cuda");
}

// The split operator (glrecon/split.h) over cuda: 3 slabs on device 0 (as --gpu 0,0,0 holds them) hold every row as the
// whole grid's operator does. Back (interpolating: one voxel's sum, the same kernel on the same global rows) equals the
// whole grid's bit for bit; forward differs by the slabs' sums and by the texture unit's 8-bit weights at a slab's
// shifted coordinates; SART over the slabs against the whole grid's cuda run within the GPU-against-cpu bound of
// iterativeBackendMatchesCpu (relative RMS 1e-2, the texture units' weights), and against the cpu backend's slabs too.
TEST_F(CudaIterative, SlabsOnOneDeviceFollowTheWholeGrid) {
  const Geometry g = test::circularScan(18, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 48, 24}, glm::dvec3(10.0));
  const Image b = projectPhantom(thickSkullPhantom(), g, {});
  auto whole = makeOperator(Backend::Cuda, g, grid);
  auto split = makeSplitOperator(Backend::Cuda, g, grid, {}, SplitOptions{3, {0, 0, 0}, nullptr});
  const std::vector<std::size_t> views = {2, 9, 15};
  std::vector<float> a(grid.voxelCount()), c(grid.voxelCount());
  test::backOf(*whole, b.data.data(), views.data(), views.size(), a.data());
  test::backOf(*split, b.data.data(), views.data(), views.size(), c.data());
  EXPECT_EQ(a, c);
  IterativeOptions o;
  o.method = IterativeMethod::Sart;
  o.iterations = 2;
  o.subsets = 6;
  const Image x = reconstructIterative(*whole, g, b, grid, o), y = reconstructIterative(*split, g, b, grid, o);
  auto cpuSplit = makeSplitOperator(Backend::Cpu, g, grid, {}, SplitOptions{3, {}, nullptr});
  const Image z = reconstructIterative(*cpuSplit, g, b, grid, o);
  for (const auto& [other, name] : {std::pair{&x, "the whole grid on cuda"}, std::pair{&z, "3 slabs on cpu"}}) {
    double sq = 0, scale = 0;
    for (std::size_t i = 0; i < y.data.size(); ++i) {
      const double d = static_cast<double>(y.data[i]) - other->data[i];
      sq += d * d;
      scale = std::max(scale, static_cast<double>(std::abs(other->data[i])));
    }
    const double rms = std::sqrt(sq / y.data.size()) / scale;
    std::printf("cuda SART over 3 slabs against %s: relative RMS %.3e\n", name, rms);
    EXPECT_LT(rms, 1e-2) << name;
    EXPECT_GT(scale, 0.5) << name;
  }
}

// The subset methods over slabs with their sums on the devices (each part's A_S x kept on its device, summed on the
// first part's, the corrections formed beside each part's rows) against the same split summing on the host: the same
// float additions in the same order and the same correction kernel's operations as the host's loop, so the same bits.
// Three slabs on device 0, and where the host has two devices three slabs over devices 0 and 1 (peer copies).
TEST_F(CudaIterative, SubsetSumsOnTheDevicesEqualTheHostSums) {
  const Geometry g = test::circularScan(18, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 48, 24}, glm::dvec3(10.0));
  const Image b = projectPhantom(thickSkullPhantom(), g, {});
  std::vector<std::vector<int>> layouts = {{0, 0, 0}};
  if (deviceCount(Backend::Cuda) >= 2) layouts.push_back({0, 1});
  for (const std::vector<int>& devices : layouts) {
    for (IterativeMethod method : {IterativeMethod::Sirt, IterativeMethod::Sart, IterativeMethod::Osem}) {
      IterativeOptions o;
      o.method = method;
      o.iterations = 2;
      o.subsets = method == IterativeMethod::Sirt ? 1 : 6;
      const std::string name = std::string(methodName(method)) + " on devices " + std::to_string(devices.front()) + "," +
                                std::to_string(devices.back());
      auto onDevices = makeSplitOperator(Backend::Cuda, g, grid, {}, SplitOptions{3, devices, nullptr, /*sumOnDevices=*/true});
      auto onHost = makeSplitOperator(Backend::Cuda, g, grid, {}, SplitOptions{3, devices, nullptr, /*sumOnDevices=*/false});
      const Image x = reconstructIterative(*onDevices, g, b, grid, o), y = reconstructIterative(*onHost, g, b, grid, o);
      EXPECT_EQ(x.data, y.data) << name;
      // Not two volumes of zeros: two iterations of SIRT reach 0.43 of the skull's density 1 (H200), SART and OS-EM more.
      EXPECT_GT(*std::max_element(x.data.begin(), x.data.end()), 0.25f) << name;
      // The device path was the one taken: its data kept (the host path's split keeps none).
      const std::vector<float> rayLengths(b.data.size(), 1.0f);
      EXPECT_TRUE(onDevices->setSubsetData(b.data.data(), rayLengths.data(), 0.0f, false)) << name;
      EXPECT_FALSE(onHost->setSubsetData(b.data.data(), rayLengths.data(), 0.0f, false)) << name;
    }
  }
}

// A split operator's vectors (two slabs on device 0; where the host has two devices, one slab on each) against its own
// host calls: A sums the parts' projections on the devices in the host's order, so the same bits; B and the
// element-wise operations per part; a volume's dot adds the parts' (the bound of the order of the sums).
TEST_F(CudaIterative, SplitVectorsEqualTheHostCalls) {
  std::vector<std::vector<int>> layouts = {{0, 0}};
  if (deviceCount(Backend::Cuda) >= 2) layouts.push_back({0, 1});
  for (const std::vector<int>& devices : layouts)
    vectorsOnDeviceMatchHost("cuda over 2 slabs on devices " + std::to_string(devices.front()) + "," + std::to_string(devices.back()),
                             [&](const Geometry& g, const VolumeGrid& grid) {
                               return makeSplitOperator(Backend::Cuda, g, grid, {}, SplitOptions{2, devices, nullptr});
                             });
}

// The TV methods' operations over a split's vectors (3 slabs on device 0: a middle part with both neighbours; where the
// host has two devices, 2 slabs on devices 0 and 1) against host vectors over the same operator: the stencils read
// their neighbours' edge rows (OperatorVectors::setNeighbours), so every voxel equals the host's bit for bit.
TEST_F(CudaIterative, SplitTotalVariationVectorsEqualTheHostVectors) {
  std::vector<std::vector<int>> layouts = {{0, 0, 0}};
  if (deviceCount(Backend::Cuda) >= 2) layouts.push_back({0, 1});
  for (const std::vector<int>& devices : layouts)
    totalVariationVectorsMatchHost("cuda over " + std::to_string(devices.size()) + " slabs on devices " + std::to_string(devices.front()) + "," +
                                       std::to_string(devices.back()),
                                   [&](const Geometry& g, const VolumeGrid& grid) {
                                     return makeSplitOperator(Backend::Cuda, g, grid, {},
                                                              SplitOptions{static_cast<int>(devices.size()), devices, nullptr});
                                   },
                                   /*rows=*/40);
}

// CGLS, PDHG-TV and ASD-POCS over 3 slabs with their vectors on the devices: against the same split with host vectors
// (their dots add in another order: the steps differ by ~1e-12 relative, which moves a voxel by at most an ulp (6e-8)
// now and then; two iterations of A and B, averaging operators, keep such flips near that size: 1e-5 leaves a
// hundredfold margin) and against the whole grid (SlabsOnOneDeviceFollowTheWholeGrid's bound).
TEST_F(CudaIterative, MethodsOverSlabsKeepTheirVectorsOnTheDevices) {
  const Geometry g = test::circularScan(18, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 48, 24}, glm::dvec3(10.0));
  const Image b = projectPhantom(thickSkullPhantom(), g, {});
  auto onDevices = makeSplitOperator(Backend::Cuda, g, grid, {}, SplitOptions{3, {0, 0, 0}, nullptr, /*sumOnDevices=*/true});
  auto onHost = makeSplitOperator(Backend::Cuda, g, grid, {}, SplitOptions{3, {0, 0, 0}, nullptr, /*sumOnDevices=*/false});
  auto whole = makeOperator(Backend::Cuda, g, grid);
  EXPECT_TRUE(onDevices->makeVectors(10, 5));
  EXPECT_FALSE(onHost->makeVectors(3, 2));
  for (IterativeMethod method : {IterativeMethod::Cgls, IterativeMethod::PdhgTv, IterativeMethod::AsdPocs}) {
    IterativeOptions o;
    o.method = method;
    o.iterations = 2;
    const Image x = reconstructIterative(*onDevices, g, b, grid, o);
    for (const auto& [other, bound, name] : {std::tuple{reconstructIterative(*onHost, g, b, grid, o), 1e-5, "3 slabs with host vectors"},
                                             std::tuple{reconstructIterative(*whole, g, b, grid, o), 1e-2, "the whole grid"}}) {
      double sq = 0, scale = 0;
      for (std::size_t i = 0; i < x.data.size(); ++i) {
        const double d = static_cast<double>(x.data[i]) - other.data[i];
        sq += d * d;
        scale = std::max(scale, static_cast<double>(std::abs(other.data[i])));
      }
      const double rms = std::sqrt(sq / x.data.size()) / scale;
      std::printf("cuda %s over 3 slabs on the devices against %s: relative RMS %.3e\n", methodName(method), name, rms);
      EXPECT_LT(rms, bound) << methodName(method) << " against " << name;
      EXPECT_GT(scale, 1e-3) << methodName(method) << " against " << name;  // the iterate moved from its zero start
    }
  }
}

// The exact pairs over slabs (blocks of rows: the plane-form forward's row bounds, the gather's runs from a block's
// first row, the swapped copy of a block): back equals the whole grid's bit for bit (each voxel sums the same pixels
// in the same order whatever block holds it); forward within the sums' split into 3 (float sums of a few hundred
// terms of |x| <= 0.5: 1e-5 of the largest value).
TEST_F(CudaIterative, ExactPairsOverSlabsFollowTheWholeGrid) {
  const Geometry g = test::circularScan(18, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 48, 24}, glm::dvec3(10.0));
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> centred(-0.5f, 0.5f);
  std::vector<float> x(grid.voxelCount()), y(g.size() * 32 * 32);
  for (float& v : x) v = centred(rng);
  for (float& v : y) v = centred(rng);
  std::vector<std::size_t> views(g.size());
  std::iota(views.begin(), views.end(), std::size_t{0});
  for (ProjectorPair pair : {ProjectorPair::Matched, ProjectorPair::DistanceDriven}) {
    OperatorOptions o;
    o.pair = pair;
    auto whole = makeOperator(Backend::Cuda, g, grid, o);
    auto split = makeSplitOperator(Backend::Cuda, g, grid, o, SplitOptions{3, {0, 0, 0}, nullptr});
    std::vector<float> a(grid.voxelCount()), c(grid.voxelCount()), fa(y.size()), fc(y.size());
    test::backOf(*whole, y.data(), views.data(), views.size(), a.data());
    test::backOf(*split, y.data(), views.data(), views.size(), c.data());
    EXPECT_EQ(a, c) << projectorPairName(pair);
    test::forwardOf(*whole, x.data(), views.data(), views.size(), fa.data());
    test::forwardOf(*split, x.data(), views.data(), views.size(), fc.data());
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < fa.size(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(fa[i]) - fc[i]));
      scale = std::max(scale, static_cast<double>(std::abs(fa[i])));
    }
    EXPECT_LT(worst, 1e-5 * scale) << projectorPairName(pair);
    EXPECT_GT(scale, 0.0) << projectorPairName(pair);
  }
}

}  // namespace
}  // namespace glrecon
