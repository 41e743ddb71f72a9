// The split operator (glrecon/split.h) in one process against one operator of the whole grid: back and the subset
// update equal it bit for bit, the forward projection within the rounding of its changed order of additions, and the
// same parts give the same bits however they are held. Over MPI ranks: tests/app/cli_mpi_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "glrecon/cluster.h"
#include "glrecon/errors.h"
#include "glrecon/iterative.h"
#include "glrecon/phantom.h"
#include "glrecon/split.h"
#include "test_support.h"

namespace glrecon {
namespace {

// 72 y rows: 3 slabs of 16, 32 and 24 rows (granules of 16, the last one short); a tilted, offset scan so that rays
// climb across the slabs' boundaries at every angle.
VolumeGrid splitGrid() { return VolumeGrid::centred({20, 72, 18}, {9.0, 4.0, 10.0}); }

Geometry tiltedScan() {
  CircularScanSpec spec;
  spec.projections = 9;
  spec.nu = 36;
  spec.nv = 44;
  spec.spacingU = spec.spacingV = 9.0;
  spec.outOfPlaneAngle = 6.0;
  spec.inPlaneAngle = 4.0;
  spec.projectionOffsetX = 12.0;
  spec.projectionOffsetY = -20.0;
  spec.sourceOffsetX = 5.0;
  return makeCircularScan(spec);
}

std::vector<float> randomVolume(std::size_t n, unsigned seed) { return test::uniformValues(n, seed, -1.0f, 1.0f); }

TEST(Split, RowsAreGranulesAsEvenAsTheyCanBe) {
  EXPECT_EQ(splitRows(72, 3), (std::vector<int>{0, 16, 48, 72}));
  EXPECT_EQ(splitRows(72, 1), (std::vector<int>{0, 72}));
  EXPECT_EQ(splitRows(64, 4), (std::vector<int>{0, 16, 32, 48, 64}));
  EXPECT_EQ(splitRows(72, 5), (std::vector<int>{0, 16, 32, 48, 64, 72}));
  EXPECT_THROW(splitRows(72, 6), UsageError);  // 5 granules of 16 rows
  EXPECT_THROW(splitRows(72, 0), UsageError);
  try {
    splitRows(20, 3);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1 to 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("found 3"), std::string::npos) << e.what();
  }
  const Geometry g = tiltedScan();
  EXPECT_THROW(makeSplitOperator(Backend::Graphics, g, splitGrid(), {}, {}), UsageError);
}

// A cuda slab holds one of a process's 8 constant-memory matrix banks: a ninth slab in one process is refused by the
// option that asks for it (--slabs on the command line) before any CUDA call, so without a GPU or a CUDA build too.
// 160 rows: 10 granules, so that the rows alone would allow 9 slabs.
TEST(Split, NineCudaSlabsInOneProcessAreRefusedByName) {
  const Geometry g = tiltedScan();
  const VolumeGrid grid = VolumeGrid::centred({20, 160, 18}, {9.0, 4.0, 10.0});
  try {
    makeSplitOperator(Backend::Cuda, g, grid, {}, SplitOptions{9, {}, nullptr});
    FAIL() << "9 cuda slabs in one process were not refused";
  } catch (const UsageError& e) {
    const std::string message = e.render([](const std::string& name) { return "--" + name; });
    EXPECT_NE(message.find("--slabs: expected at most 8 slabs per process on cuda"), std::string::npos) << message;
    EXPECT_NE(message.find("found 9"), std::string::npos) << message;
  }
}

// Forward: every slab marches the whole grid's rays with the same samples and takes those reaching its rows; the sum
// of the slabs' projections differs from the whole grid's only in the rounding of the additions. Per ray, with u =
// 2^-24: the whole grid's sum of K samples and the slabs' sums with the P - 1 additions between them are within
// (K + P) u of the exact sum of the samples' absolute values (Higham's bound for recursive summation), each sample's
// trilinear interpolation within 12 u of its absolute-value interpolant (7 lerps a + f (b - a), three deep, about 3 u
// each level of the depth, twice for the two computations compared), and a slab's local y (y - first row, exact) moves
// the interpolation weights by an ulp of y: another u per sample. So |A_split x - A x| <= (K + P + 13) u A|x| ray by ray
// (A|x| taken by the whole grid's operator), with K the ray's samples (at most the sum of the grid's sizes).
TEST(Split, ForwardIsTheWholeGridsWithinTheRoundingOfItsAdditions) {
  const Geometry g = tiltedScan();
  const VolumeGrid grid = splitGrid();
  auto whole = makeOperator(Backend::Cpu, g, grid);
  auto split = makeSplitOperator(Backend::Cpu, g, grid, {}, SplitOptions{3, {}, nullptr});
  EXPECT_NE(split->description().find("3 slabs"), std::string::npos) << split->description();
  const std::vector<float> x = randomVolume(grid.voxelCount(), 7);
  std::vector<float> absolute(x.size());
  std::transform(x.begin(), x.end(), absolute.begin(), [](float v) { return std::abs(v); });
  const std::vector<std::size_t> views = {4, 0, 8, 2, 7};
  const std::size_t values = views.size() * static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  std::vector<float> a(values), b(values), bound(values);
  test::forwardOf(*whole, x.data(), views.data(), views.size(), a.data());
  test::forwardOf(*split, x.data(), views.data(), views.size(), b.data());
  test::forwardOf(*whole, absolute.data(), views.data(), views.size(), bound.data());
  const double u = std::ldexp(1.0, -24), samples = grid.size[0] + grid.size[1] + grid.size[2], parts = 3;
  double worst = 0.0, largest = 0.0;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < values; ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    ASSERT_LE(d, (samples + parts + 13) * u * bound[i]) << "value " << i << ": " << a[i] << " against " << b[i];
    worst = std::max(worst, d);
    largest = std::max(largest, static_cast<double>(std::abs(a[i])));
    differing += d > 0.0;
  }
  std::printf("split forward: largest difference %.3g of values up to %.3g, %zu of %zu values differ\n", worst, largest, differing, values);
  EXPECT_GT(largest, 1.0);  // the rays cross the volume
}

// Back (both pairs) and the subset update: each slab computes its voxels as the whole grid computes them.
TEST(Split, BackAndSubsetUpdatesEqualTheWholeGridBitForBit) {
  const Geometry g = tiltedScan();
  const VolumeGrid grid = splitGrid();
  const std::vector<std::size_t> views = {1, 5, 3};
  const std::size_t values = views.size() * static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  const std::vector<float> projections = randomVolume(values, 11);
  std::vector<std::uint8_t> mask(grid.voxelCount());
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7919 % 13) != 0;
  for (ProjectorPair pair : {ProjectorPair::Interpolating, ProjectorPair::Matched}) {
    OperatorOptions options;
    options.pair = pair;
    auto whole = makeOperator(Backend::Cpu, g, grid, options);
    auto split = makeSplitOperator(Backend::Cpu, g, grid, options, SplitOptions{3, {}, nullptr});
    std::vector<float> a(grid.voxelCount()), b(grid.voxelCount());
    test::backOf(*whole, projections.data(), views.data(), views.size(), a.data());
    test::backOf(*split, projections.data(), views.data(), views.size(), b.data());
    EXPECT_EQ(a, b) << (pair == ProjectorPair::Matched ? "matched" : "interpolating");
    EXPECT_GT(*std::max_element(a.begin(), a.end()), 0.0f);
    // The update, its weights computed by each operator (the split one on each slab, its floor from the largest of all).
    const std::vector<float> x = randomVolume(grid.voxelCount(), 3);
    for (bool multiplicative : {false, true}) {
      SubsetRule rule;
      rule.multiplicative = multiplicative;
      rule.lambda = 0.7f;
      rule.positivity = !multiplicative;
      whole->setVolume(x.data());
      split->setVolume(x.data());
      whole->setUpdateMask(mask.data());
      split->setUpdateMask(mask.data());
      whole->updateSubset(projections.data(), views.data(), views.size(), rule);
      split->updateSubset(projections.data(), views.data(), views.size(), rule);
      whole->readVolume(a.data());
      split->readVolume(b.data());
      EXPECT_EQ(a, b) << (multiplicative ? "multiplicative" : "additive");
      EXPECT_NE(a, x);
    }
  }
}

// SIRT over 3 slabs against the whole grid within what its rounding allows; and the one-process fold of
// Cluster::sumInOrder, in part order (what lets MPI ranks holding the same parts equal one process: cli_mpi_test.cpp).
TEST(Split, SirtOverSlabsFollowsTheWholeGrid) {
  const Geometry g = tiltedScan();
  const VolumeGrid grid = splitGrid();
  const Image truth = voxelizePhantom(Phantom::sheppLogan(SheppLoganVariant::Modified, 100.0), grid, 1);
  auto whole = makeOperator(Backend::Cpu, g, grid);
  Image projections({g.detector.nu, g.detector.nv, static_cast<int>(g.size())}, {1, 1, 1}, {0, 0, 0});
  std::vector<std::size_t> all(g.size());
  for (std::size_t v = 0; v < all.size(); ++v) all[v] = v;
  test::forwardOf(*whole, truth.data.data(), all.data(), all.size(), projections.data.data());
  IterativeOptions options;
  options.method = IterativeMethod::Sirt;
  options.iterations = 5;
  IterativeReport wholeReport, splitReport;
  double largest = 0.0;  // the largest |x| of any iterate of the whole grid's run
  const Image a = reconstructIterative(*whole, g, projections, grid, options, &wholeReport, [&](const IterationRecord&, IterativeReconstructor& r) {
    for (float v : r.volume()) largest = std::max(largest, static_cast<double>(std::abs(v)));
  });
  auto split = makeSplitOperator(Backend::Cpu, g, grid, {}, SplitOptions{3, {}, nullptr});
  const Image b = reconstructIterative(*split, g, projections, grid, options, &splitReport);
  // SIRT's step x += lambda D B M (b - A x) (D = 1 / B 1, M = 1 / A 1, lambda = 1) is non-expansive in the max norm (the
  // rows of D B M A are non-negative and sum to 1), so a difference between the two runs does not grow; each iteration
  // adds the difference of its forward projections, at most (K + P + 13) u A|x| per ray (the bound above), which M and
  // D B turn into at most (K + P + 13) u max|x| per voxel. After N iterations: N (K + P + 13) u max|x|. Back projection
  // and the update are the same float operations on both sides (BackAndSubsetUpdates... above).
  const double u = std::ldexp(1.0, -24), samples = grid.size[0] + grid.size[1] + grid.size[2], parts = 3;
  const double bound = options.iterations * (samples + parts + 13) * u * largest;
  double worst = 0.0;
  for (std::size_t i = 0; i < a.data.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
  std::printf("sirt over 3 slabs: largest difference from the whole grid %.3g (bound %.3g)\n", worst, bound);
  EXPECT_LE(worst, bound);
  EXPECT_GT(largest, 0.5);
  // One process's fold is the left fold in order.
  const auto cluster = singleProcessCluster();
  const std::vector<float> t0 = {1e8f, 1.0f}, t1 = {-1e8f, 2.0f}, t2 = {1.0f, 3.0f};
  std::vector<float> sum(2);
  cluster->sumInOrder({t0.data(), t1.data(), t2.data()}, 2, sum.data());
  EXPECT_EQ(sum[0], (1e8f + -1e8f) + 1.0f);  // 1, where t0 + (t1 + t2) would give 0
  EXPECT_EQ(sum[1], 6.0f);
}

}  // namespace
}  // namespace glrecon
