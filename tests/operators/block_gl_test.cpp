// The GL operators on a block of y rows (OperatorOptions::blockRows, moveBlock): a volume reconstructed block by block,
// each with the whole grid's matrices and global voxel indices, equals the one-block reconstruction bit for bit (with
// and without a region); each projection uploads only the detector rows its block can reach (slabRowBand), and those
// rows cover every row a block's voxel samples. On the GL fixture.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <tuple>

#include "glrecon/operator.h"
#include "glrecon/errors.h"
#include "device/gl/objects.h"
#include "operators/gl/gl_operator.h"
#include "glrecon/roi.h"
#include "glrecon/slab.h"
#include "device_fixtures.h"
#include "test_support.h"

namespace glrecon {
namespace {

using GraphicsSlab = test::GlTest;
// An untilted circular scan: u and w do not change along y (the compute shader's Y_INVARIANT path).
Geometry circularScan(int projections, int nu, int nv) {
  CircularScanSpec spec;
  spec.projections = projections;
  spec.nu = nu;
  spec.nv = nv;
  spec.spacingU = spec.spacingV = 6.0;
  return makeCircularScan(spec);
}

// A tilted C-arm with offsets that change from view to view: detector offsets, out-of-plane and in-plane angles,
// source offsets (the general path; bands are neither centred nor symmetric).
Geometry tiltedScan(int projections, int nu, int nv) {
  std::vector<CircularParams> params;
  for (int p = 0; p < projections; ++p) {
    const double a = 2 * std::numbers::pi * p / projections;
    CircularParams c;
    c.gantryAngle = 7.0 + 360.0 * p / projections;
    c.outOfPlaneAngle = 12.0 + 3.0 * std::sin(a);
    c.inPlaneAngle = 5.0 * std::cos(a);
    c.sourceOffsetX = 15.0;
    c.sourceOffsetY = -20.0 + 5.0 * std::sin(2 * a);
    c.projectionOffsetX = 30.0;
    c.projectionOffsetY = 18.0 + 4.0 * std::cos(a);
    params.push_back(c);
  }
  Geometry g = Geometry::fromCircular(std::move(params), DetectorLayout::centred(nu, nv, 6.0, 6.0));
  g.validate("tilted test scan");
  return g;
}

struct Problem {
  std::string label;
  Geometry geometry;
  VolumeGrid grid;
  std::vector<float> q;
};

Problem circularProblem(int ny = 37, int nv = 40) {
  Problem p{"circular", circularScan(24, 48, nv), VolumeGrid::centred({40, ny, 24}, glm::dvec3(4.0)), {}};
  p.q = test::randomProjections(p.geometry);
  return p;
}

Problem tiltedProblem(int ny = 37) {
  Problem p{"tilted", tiltedScan(24, 48, 40), VolumeGrid::centred({40, ny, 24}, glm::dvec3(4.0)), {}};
  p.grid.origin += glm::dvec3(6.0, -10.0, 3.0);  // off centre too
  p.q = test::randomProjections(p.geometry, 777);
  return p;
}

OperatorOptions options(int slabRows, bool substacks = false) {
  OperatorOptions o;
  o.window = 8;  // fixed: the accumulation order then does not depend on timing
  o.blockRows = slabRows;
  o.substackStencil = substacks;
  return o;
}

// Feeds the stack in batches of 5 (they do not divide the window: partial windows carry over between calls).
void feed(ConeBeamOperator& b, const Problem& p) {
  const std::size_t pixels = static_cast<std::size_t>(p.geometry.detector.nu) * p.geometry.detector.nv;
  for (std::size_t first = 0; first < p.geometry.size(); first += 5) {
    const std::size_t n = std::min<std::size_t>(5, p.geometry.size() - first);
    std::vector<std::size_t> views(n);
    for (std::size_t i = 0; i < n; ++i) views[i] = first + i;
    b.back(p.q.data() + first * pixels, views.data(), n, Weighting::Fdk);
  }
}

Image oneBlock(const std::string& backend, const Problem& p, const RegionOfInterest* region, bool substacks = false) {
  auto b = test::makeNamed(backend, p.geometry, p.grid, options(0, substacks));
  if (region) b->setRegion(*region);
  feed(*b, p);
  return test::volumeOf(*b);
}

// The slabs of `slabRows` rows, one after another in one backprojector, assembled into the whole grid. Odd
// slabs read back through readVolume(), even ones through volume().
Image inSlabs(const std::string& backend, const Problem& p, int slabRows, const RegionOfInterest* region, int* slabCount,
              bool substacks = false) {
  auto b = test::makeNamed(backend, p.geometry, p.grid, options(slabRows, substacks));
  Image whole(p.grid);
  const int nx = p.grid.size[0], ny = p.grid.size[1], nz = p.grid.size[2];
  int count = 0;
  for (int first = 0; first < ny; first += slabRows, ++count) {
    const int rows = std::min(slabRows, ny - first);
    b->moveBlock(first, rows);
    if (region) b->setRegion(slabRegion(*region, first, rows));
    feed(*b, p);
    Image slab;
    if (count % 2 == 0) {
      slab = test::volumeOf(*b);
      const VolumeGrid expected = slabGrid(p.grid, first, rows);
      EXPECT_EQ(slab.size, expected.size);
      EXPECT_EQ(slab.origin[1], expected.origin.y);
    } else {
      slab = Image(slabGrid(p.grid, first, rows));
      b->readVolume(slab.data.data());
    }
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
    for (int k = 0; k < nz; ++k)
      for (int j = 0; j < rows; ++j)
        std::memcpy(&whole.data[whole.index(0, first + j, k)], &slab.data[slab.index(0, j, k)], nx * sizeof(float));
  }
  *slabCount = count;
  return whole;
}

// `minNonzero`: how many voxels the one-block volume must hold that are not 0 (the test must backproject something).
void expectBitIdentical(const Image& expected, const Image& actual, std::size_t minNonzero, const std::string& what) {
  ASSERT_EQ(expected.size, actual.size) << what;
  std::size_t differ = 0, nonzero = 0;
  double worst = 0, worstRelative = 0;
  for (std::size_t i = 0; i < expected.data.size(); ++i) {
    nonzero += expected.data[i] != 0.0f;
    if (std::memcmp(&expected.data[i], &actual.data[i], sizeof(float)) != 0) {
      ++differ;
      const double d = std::abs(double(expected.data[i]) - actual.data[i]);
      worst = std::max(worst, d);
      worstRelative = std::max(worstRelative, d / std::max(1e-30, std::abs(double(expected.data[i]))));
    }
  }
  EXPECT_GT(nonzero, minNonzero) << what << ": the test should backproject something";
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << expected.data.size()
                        << " voxels differ from the one-block volume; largest |difference| " << worst << ", relative " << worstRelative;
}

// One-block and slab runs of `backend` on both geometries, with 2, 3 and 7 slabs, without and with a region.
void checkSlabsAreBitIdentical(const std::string& backend, bool substacks = false) {
  for (const bool tilted : {false, true}) {
    // ny 37: slabs of 32 (2 slabs: 32 + 5) and 16 (3 slabs: 16 + 16 + 5); ny 100, slabs of 16: 7 (6 x 16 + 4).
    for (const auto& [ny, slabRows, expectedSlabs] : {std::tuple{37, 32, 2}, std::tuple{37, 16, 3}, std::tuple{100, 16, 7}}) {
      const Problem p = tilted ? tiltedProblem(ny) : circularProblem(ny);
      // A sphere off centre and the field of view: both cut slabs unevenly.
      const RegionOfInterest sphere = makeRegionOfInterest("sphere:10,-6,4,52", p.geometry, p.grid);
      const RegionOfInterest fov = fieldOfView(p.geometry, p.grid);
      const std::vector<std::pair<std::string, const RegionOfInterest*>> regions = {
          {"no region", nullptr}, {"sphere", &sphere}, {"fov", tilted ? &fov : nullptr}};
      for (const auto& [regionName, region] : regions) {
        if (regionName == "fov" && !region) continue;
        if (region) ASSERT_GT(region->insideCount(), 0u);
        const std::string what = backend + (substacks ? " (sub-stack stencil)" : "") + ", " + p.label + ", ny " + std::to_string(ny) +
                                 ", slabs of " + std::to_string(slabRows) + ", " + regionName;
        const Image whole = oneBlock(backend, p, region, substacks);
        int slabs = 0;
        const Image assembled = inSlabs(backend, p, slabRows, region, &slabs, substacks);
        EXPECT_EQ(slabs, expectedSlabs) << what;
        expectBitIdentical(whole, assembled, region ? region->insideCount() / 2 : whole.data.size() / 4, what);
      }
    }
  }
}

TEST_F(GraphicsSlab, AgGpuSlabsAreBitIdenticalToOneBlock) {
  checkSlabsAreBitIdentical("graphics");
}

// The paper's sub-stack stencil updates some voxels outside the region (its bits are unions over slices): in
// slabs the same ones, so even those are equal.
TEST_F(GraphicsSlab, SubstackStencilSlabsAreBitIdentical) {
  checkSlabsAreBitIdentical("graphics", true);
  checkSlabsAreBitIdentical("graphics-mp", true);
}

TEST_F(GraphicsSlab, MpGpuSlabsAreBitIdenticalToOneBlock) {
  checkSlabsAreBitIdentical("graphics-mp");
}

TEST_F(GraphicsSlab, ComputeSlabsAreBitIdenticalToOneBlock) {
  checkSlabsAreBitIdentical("compute");
}

// Every backend counts whole projections outside slab mode, and exactly the row bands in it: less than the
// slabs x whole projections a naive slab loop would send, for a circular scan whose slabs see narrow bands.
TEST_F(GraphicsSlab, UploadsOnlyTheRowBands) {
  const Problem p = circularProblem(100, 120);
  const int slabRows = 16, ny = p.grid.size[1];
  const double projectionBytes = static_cast<double>(p.geometry.detector.nu) * p.geometry.detector.nv * sizeof(float);
  for (const std::string backend : {"graphics", "graphics-mp", "compute"}) {
    auto whole = test::makeNamed(backend, p.geometry, p.grid, options(0));
    feed(*whole, p);
    test::volumeOf(*whole);
    EXPECT_EQ(whole->uploadedBytes(), projectionBytes * p.geometry.size()) << backend;

    auto b = test::makeNamed(backend, p.geometry, p.grid, options(slabRows));
    double expected = 0;
    int slabs = 0;
    for (int first = 0; first < ny; first += slabRows, ++slabs) {
      const int rows = std::min(slabRows, ny - first);
      b->moveBlock(first, rows);
      for (std::size_t view = 0; view < p.geometry.size(); ++view) {
        const RowBand band = slabRowBand(p.geometry, view, p.grid, first, rows);
        EXPECT_LT(band.count, p.geometry.detector.nv) << "slab " << first << ", view " << view << ": the band should be narrow";
        expected += static_cast<double>(band.count) * p.geometry.detector.nu * sizeof(float);
      }
      feed(*b, p);
      test::volumeOf(*b);
    }
    EXPECT_EQ(slabs, 7);
    EXPECT_EQ(b->uploadedBytes(), expected) << backend;
    EXPECT_LT(b->uploadedBytes(), slabs * projectionBytes * p.geometry.size()) << backend;
    std::printf("%s: %d slabs uploaded %.0f bytes, %.2f of slabs x whole projections\n", backend.c_str(), slabs, b->uploadedBytes(),
                b->uploadedBytes() / (slabs * projectionBytes * p.geometry.size()));
    b->reset();
    EXPECT_EQ(b->uploadedBytes(), 0.0) << backend << ": reset() clears the counters";
  }
}

// The automatic window search goes on across slabs (it does not restart at each), and the window it chose stays.
TEST_F(GraphicsSlab, WindowSearchCarriesAcrossSlabs) {
  const Problem p = circularProblem(37);
  OperatorOptions o;
  o.blockRows = 16;  // window 0: automatic
  auto made = makeOperator(Backend::Graphics, p.geometry, p.grid, o);
  GlOperator& b = dynamic_cast<GlOperator&>(*made);
  std::size_t afterFirst = 0;
  for (int first = 0; first < 37; first += 16) {
    b.moveBlock(first, std::min(16, 37 - first));
    feed(b, p);
    test::volumeOf(b);
    if (first == 0) afterFirst = b.windowTimings().size();
  }
  const auto& timings = b.windowTimings();
  EXPECT_GT(timings.size(), afterFirst) << "the search should carry on in the later slabs";
  EXPECT_EQ(std::count_if(timings.begin(), timings.end(), [](auto& t) { return t.first == 1; }), 1) << "the search restarted";
}

TEST_F(GraphicsSlab, MisuseIsReported) {
  const Problem p = circularProblem(37);
  for (const std::string backend : {"graphics", "graphics-mp", "compute"}) {
    auto whole = test::makeNamed(backend, p.geometry, p.grid, options(0));
    test::expectError<UsageError>([&] { whole->moveBlock(0, 16); }, {"blockRows"});
    auto b = test::makeNamed(backend, p.geometry, p.grid, options(16));
    test::expectError<UsageError>([&] { b->moveBlock(8, 16); }, {"multiple of 16"});
    test::expectError<UsageError>([&] { b->moveBlock(0, 17); }, {"n 17"});
    test::expectError<UsageError>([&] { b->moveBlock(32, 16); }, {"first + n <= 37"});
    // The volume holds the slab's rows: a region on the whole grid does not fit it.
    b->moveBlock(16, 16);
    EXPECT_THROW(b->setRegion(fieldOfView(p.geometry, p.grid)), std::invalid_argument);
    b->setRegion(slabRegion(fieldOfView(p.geometry, p.grid), 16, 16));
    test::expectError<UsageError>([&] { b->killOutsideRange(0.0, 1.0, 1.0); }, {"densityRange"});
    const Image slab = test::volumeOf(*b);
    EXPECT_EQ(slab.size, (std::array<int, 3>{40, 16, 24}));
    EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
  }
}

}  // namespace
}  // namespace glrecon
