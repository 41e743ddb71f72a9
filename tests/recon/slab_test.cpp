// Slabs (glrecon/slab.h): the row band each slab uploads, the plan from a memory budget, cpu slabs against the
// one-block reconstruction bit for bit, the scratch file, the slab-wise file writer and the command line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <thread>
#include <vector>

#include "glrecon/cluster.h"
#include "glrecon/operator.h"
#include "device/cuda/device.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "glrecon/sink.h"
#include "glrecon/slab.h"
#include "glrecon/source.h"
#include "test_support.h"
#include "slab_support.h"

namespace glrecon {
namespace {

using namespace test;  // slab_support.h
namespace fs = std::filesystem;

// The cost of one row of the grid on the cpu backend (no window): what --gpu-memory needs per row.
std::uint64_t rowBytes(const VolumeGrid& grid) { return std::uint64_t{4} * grid.size[0] * grid.size[2]; }

TEST(Slab, RowBandCoversEveryRowAVoxelTouches) {
  for (const Geometry& g : {circularScan(), tiltedScan()})
  for (const int ny : {37, 100}) {  // 37: an uneven last slab
    const VolumeGrid grid = smallGrid(ny);
    int narrowest = g.detector.nv;
    std::size_t touched = 0;  // samples on the detector: the check below is not vacuous
    for (int first = 0; first < grid.size[1]; first += kSlabGranule) {
      const int rows = std::min(kSlabGranule, grid.size[1] - first);
      for (std::size_t view = 0; view < g.size(); ++view) {
        const RowBand band = slabRowBand(g, view, grid, first, rows);
        ASSERT_GE(band.first, 0);
        ASSERT_GE(band.count, 0);
        ASSERT_LE(band.first + band.count, g.detector.nv);
        narrowest = std::min(narrowest, band.count);
        const ProjectionMatrix m = g.matrix(view, grid);
        // Brute force: every voxel centre's v in double; the rows its bilinear sample reads, where on the detector.
        for (int k = 0; k < grid.size[2]; ++k)
          for (int j = first; j < first + rows; ++j)
            for (int i = 0; i < grid.size[0]; ++i) {
              const glm::dvec3 h = m.apply(glm::dvec4(i, j, k, 1.0));
              const double v = h.y / h.z;
              for (const double row : {std::floor(v), std::floor(v) + 1.0})
                if (row >= 0 && row < g.detector.nv && ++touched)
                  ASSERT_TRUE(row >= band.first && row < band.first + band.count)
                      << "view " << view << " slab " << first << " voxel " << i << "," << j << "," << k << " row " << row
                      << " outside [" << band.first << ", " << band.first + band.count << ")";
            }
      }
    }
    // Not the trivial answer: a 16-row slab of 2.5 mm rows reaches about 16 * 2.5 * 1.5 / 8 = 7.5 detector rows.
    EXPECT_LT(narrowest, g.detector.nv / 2);
    EXPECT_GT(touched, 0u);
  }
}

TEST(Slab, BandUnionSpansTheViewsBandsAndSkipsEmptyOnes) {
  const std::vector<RowBand> bands = {{4, 3}, {0, 0}, {10, 2}, {2, 1}, {0, 0}};
  const std::size_t some[] = {0, 2}, withEmpty[] = {1, 3, 0}, onlyEmpty[] = {1, 4}, one[] = {2};
  const auto expectBand = [](RowBand band, int first, int count) {
    EXPECT_EQ(band.first, first);
    EXPECT_EQ(band.count, count);
  };
  expectBand(bandUnion(bands.data(), some, 2), 4, 8);       // rows 4..11: the gap between the bands is inside
  expectBand(bandUnion(bands.data(), withEmpty, 3), 2, 5);  // an empty band's {0, 0} does not pull the first row to 0
  expectBand(bandUnion(bands.data(), onlyEmpty, 2), 0, 0);
  expectBand(bandUnion(bands.data(), one, 1), 10, 2);
  expectBand(bandUnion(bands.data(), one, 0), 0, 0);
}

// The plan reads slabs back beside by itself (FdkOptions::drainBeside unset) on cuda, the projections in memory and
// filtered on the devices, from a device share of 2 GiB: over two H200s measured even at 1024^3 and slower at 768^3,
// on one H100 3-10% faster than one block from 1024^3 (docs/benchmarks.md). Only the plan: no device is opened (the
// budget is given), and the grid's size alone sets the share (the scan is tiny; the voxels are small enough that every
// projection sees them).
TEST(Slab, CudaReadsBackBesideFromATwoGibShareOfEachDevice) {
  const Geometry g = circularScan();
  const Image projections = phantomScan(g);
  const auto source = memorySource(projections, "projections");
  FdkOptions options;
  options.backend = Backend::Cuda;
  options.gpus = {0, 1};
  options.gpuMemory = std::uint64_t{64} << 30;  // room for two buffers of a share: the 4:1 plan
  const auto planned = [&](int ny, const FdkOptions& o) { return planFdk(g, VolumeGrid::centred({1024, ny, 1024}, glm::dvec3(0.05)), o, *source); };
  const FdkPlan twoGib = planned(1024, options);  // 4 GiB over two devices: 2 GiB each
  ASSERT_TRUE(twoGib.deviceFilter) << "the plan filters on the devices";
  EXPECT_TRUE(twoGib.slabs.drainBeside);
  EXPECT_EQ(twoGib.slabs.slabs.size(), 4u) << "each device a large slab, then a small one";
  EXPECT_FALSE(planned(1008, options).slabs.drainBeside) << "a granule less: under 2 GiB a device";
  FdkOptions onCpu = options;
  onCpu.filterOn = FilterPlace::Cpu;  // filtered into host memory first: two slabs per device would keep every projection
  EXPECT_FALSE(planned(1024, onCpu).slabs.drainBeside);
  // One device, its volume fitting: a large slab, then a small one read back beside it, from 2 GiB (512 rows of 4 MiB).
  FdkOptions oneDevice = options;
  oneDevice.gpus = {0};
  const FdkPlan alone = planned(1024, oneDevice);
  EXPECT_TRUE(alone.slabs.drainBeside) << "one device too (its share is 4 GiB)";
  ASSERT_EQ(alone.slabs.slabs.size(), 2u);
  EXPECT_GT(alone.slabs.slabs[0].second, 3 * alone.slabs.slabs[1].second) << "the first slab about 4/5 of the rows";
  EXPECT_TRUE(planned(512, oneDevice).slabs.drainBeside) << "2 GiB exactly";
  EXPECT_FALSE(planned(496, oneDevice).slabs.drainBeside) << "a granule less";
  FdkOptions kept = oneDevice;
  kept.drainBeside = false;
  EXPECT_FALSE(planned(1024, kept).slabs.drainBeside) << "asked for in line";
}

TEST(Slab, PlanSplitsIntoGranulesWithinTheBudget) {
  const VolumeGrid grid = smallGrid(100);
  const SlabCost cost{1000, rowBytes(grid)};
  const SlabPlan one = planSlabs(grid, cost, cost.fixedBytes + 100 * cost.bytesPerRow, "cap");
  ASSERT_EQ(one.slabs.size(), 1u);
  EXPECT_EQ(one.rowsPerSlab, 100);
  for (int budgetRows : {16, 31, 40, 64, 99}) {
    const SlabPlan plan = planSlabs(grid, cost, cost.fixedBytes + budgetRows * cost.bytesPerRow, "cap");
    EXPECT_EQ(plan.rowsPerSlab % kSlabGranule, 0);
    EXPECT_LE(plan.rowsPerSlab, budgetRows);
    int covered = 0;
    for (const auto& [first, rows] : plan.slabs) {
      EXPECT_EQ(first, covered);
      EXPECT_EQ(first % kSlabGranule, 0);
      covered += rows;
    }
    EXPECT_EQ(covered, 100);
    // The fewest slabs of granule-rounded height: no plan with one slab fewer fits.
    const int fewest = (100 + budgetRows / kSlabGranule * kSlabGranule - 1) / (budgetRows / kSlabGranule * kSlabGranule);
    EXPECT_EQ(static_cast<int>(plan.slabs.size()), fewest) << budgetRows;
  }
  test::expectError<InputError>([&] { planSlabs(grid, cost, cost.fixedBytes + 15 * cost.bytesPerRow, "--gpu-memory 60K"); },
                          {"--gpu-memory 60K", "GPU memory for one slab", "16 rows"});
  EXPECT_EQ(parseByteSize("--gpu-memory", "8G"), std::uint64_t{8} << 30);
  EXPECT_EQ(parseByteSize("--gpu-memory", "1.5MiB"), std::uint64_t{3} << 19);
  EXPECT_EQ(parseByteSize("--gpu-memory", "65536"), 65536u);
  for (const char* bad : {"", "G", "8X", "-1G", "nan", "1K"})
    test::expectError<UsageError>([&] { parseByteSize("--gpu-memory", bad); }, {"--gpu-memory", "expected a memory size"});
}

// Several devices take slabs from one counter: a count they share evenly (where the granules allow) and heights within
// a granule of each other, or one device idles while another takes the odd slab.
TEST(Slab, PlanSharesSlabsEvenlyAmongDevices) {
  for (int ny : {16, 40, 100, 128, 2048}) {
    const VolumeGrid grid = smallGrid(ny);
    const SlabCost cost{1000, rowBytes(grid)};
    const int granules = (ny + kSlabGranule - 1) / kSlabGranule;
    for (int devices : {2, 3, 4})
      for (int budgetRows : {16, 48, 400, 4096}) {
        const SlabPlan plan = planSlabs(grid, cost, cost.fixedBytes + std::uint64_t(budgetRows) * cost.bytesPerRow, "cap", devices, devices);
        const int count = static_cast<int>(plan.slabs.size());
        SCOPED_TRACE("ny " + std::to_string(ny) + ", devices " + std::to_string(devices) + ", budget rows " + std::to_string(budgetRows));
        // The fewest that fit the budget, at least one per device, rounded up to a multiple of the devices, but no more
        // than the granules (a slab holds at least one).
        const int fitting = budgetRows >= ny ? ny : budgetRows / kSlabGranule * kSlabGranule;
        const int fewest = std::max((ny + fitting - 1) / fitting, devices);
        EXPECT_EQ(count, std::min(granules, (fewest + devices - 1) / devices * devices));
        int covered = 0, lowest = ny, highest = 0;
        for (const auto& [first, rows] : plan.slabs) {
          EXPECT_EQ(first, covered);
          EXPECT_EQ(first % kSlabGranule, 0);
          EXPECT_GT(rows, 0);
          EXPECT_LE(rows, plan.rowsPerSlab);
          EXPECT_LE(rows, budgetRows >= ny ? ny : budgetRows / kSlabGranule * kSlabGranule);  // within the budget
          covered += rows;
          lowest = std::min(lowest, rows);
          highest = std::max(highest, rows);
        }
        EXPECT_EQ(covered, ny);
        // Within a granule, but for a last slab holding the grid's partial granule.
        EXPECT_LE(highest - lowest, kSlabGranule + (ny % kSlabGranule ? kSlabGranule : 0));
      }
  }
  // One device keeps the plan it had: the fewest slabs of granule-rounded height (32 rows fit a budget of 40), the last
  // one shorter; two devices get 16, 32, 32 and 20 rows, so that taking them in turn gives each about half (48 and 52).
  const VolumeGrid grid = smallGrid(100);
  const SlabCost cost{1000, rowBytes(grid)};
  const SlabPlan one = planSlabs(grid, cost, 1000 + 40 * rowBytes(grid), "cap");
  ASSERT_EQ(one.slabs.size(), 4u);
  EXPECT_EQ(one.slabs.back(), (std::pair<int, int>{96, 4}));
  const SlabPlan two = planSlabs(grid, cost, 1000 + 40 * rowBytes(grid), "cap", 2, 2);
  EXPECT_EQ(two.slabs, (std::vector<std::pair<int, int>>{{0, 16}, {16, 32}, {48, 32}, {80, 20}}));
}

TEST(Slab, CpuSlabsEqualOneBlockBitForBit) { slabsEqualOneBlock("cpu", 0); }

TEST(Slab, CpuClusterBandsEqualOneBlockBitForBit) { bandsEqualOneBlock("cpu", 0); }

// A source read from (not in memory) that counts the bands begun: a cluster's rank reads each band from projection 0.
class BandCountingSource final : public ProjectionSource {
 public:
  explicit BandCountingSource(const Image& stack) : inner_(memorySource(stack, "projections")) {}
  std::size_t count() const override { return inner_->count(); }
  DetectorLayout detector() const override { return inner_->detector(); }
  std::string origin(std::size_t index) const override { return inner_->origin(index); }
  void read(std::size_t first, std::size_t n, float* out) override { inner_->read(first, n, out); }
  void readRows(std::size_t first, std::size_t n, const RowBand* bands, float* out) override {
    if (first == 0) ++bandsBegun;
    inner_->readRows(first, n, bands, out);
  }
  std::atomic<int> bandsBegun{0};

 private:
  std::unique_ptr<ProjectionSource> inner_;
};

// Holds the worker at its first slab's readback until `source` has begun reading a second band (or 30 s passed).
class ReadbackHoldingSink final : public VolumeSink {
 public:
  ReadbackHoldingSink(const VolumeGrid& grid, const BandCountingSource& source) : inner(grid), source_(source) {}
  std::string name() const override { return inner.name(); }
  void devicesReady() override { inner.devicesReady(); }
  float* wholeVolume() override { return inner.wholeVolume(); }
  void writeRows(int firstRow, int rows, const float* data) override { inner.writeRows(firstRow, rows, data); }
  float* rowsInPlace() override {
    if (!held) {
      held = true;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (source_.bandsBegun.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      secondBandBegunDuringReadback = source_.bandsBegun.load() >= 2;
    }
    return inner.rowsInPlace();
  }
  bool hasRowsInPlace() const override { return inner.hasRowsInPlace(); }
  ImageSink inner;
  bool held = false, secondBandBegunDuringReadback = false;

 private:
  const BandCountingSource& source_;
};

// A cluster's rank deals itself its next slab before this one is done (Run::startDealer), so that the next slab's
// rows are read and filtered while its device still works: here, while the first slab is read back. Dealt only once
// they were asked for (the old way), the rows of the second slab would be read after the first slab's readback, and
// the readback, held until then, would wait the 30 s out. The bits stay those of one block.
TEST(Slab, AClusterRankReadsTheNextSlabsRowsBeforeThisSlabIsDone) {
  const Geometry g = circularScan();
  const Image projections = phantomScan(g);
  const VolumeGrid grid = smallGrid(100);
  FdkOptions options = slabTestOptions("cpu", 0, "");
  const Image whole = reconstructFdk(g, projections, grid, options);
  std::unique_ptr<Cluster> one = singleProcessCluster();
  options.cluster = one.get();
  BandCountingSource source(projections);
  ReadbackHoldingSink sink(grid, source);
  FdkReconstructor reconstructor(planFdk(g, grid, options, source));
  const FdkReport report = reconstructor.run(source, sink);
  EXPECT_TRUE(sink.held) << "the sink was never asked for its rows in place";
  EXPECT_TRUE(sink.secondBandBegunDuringReadback) << "the second slab's rows were not read before the first slab was read back";
  EXPECT_EQ(report.slabs, 4);
  EXPECT_EQ(source.bandsBegun.load(), report.slabs);  // each band read once
  expectBitIdentical(sink.inner.take(), whole, "bands dealt one ahead");
}

TEST(Slab, CpuOverflowIsRefusedInOneBlockAndSlabs) { overflowIsRefused("cpu", 0); }

// A block's elements copied range by range, cut anywhere (mid-row, mid-slice, as chunks and threads cut them), land
// where moveSlabRows puts the whole block.
TEST(Slab, BlockRangesLandWhereTheWholeBlockDoes) {
  const std::array<int, 3> size{5, 11, 4};
  const int firstRow = 3, rows = 6;
  std::vector<int> block(static_cast<std::size_t>(size[0]) * rows * size[2]);
  std::iota(block.begin(), block.end(), 1);
  std::vector<int> whole(static_cast<std::size_t>(size[0]) * size[1] * size[2], 0);
  moveSlabRows(size, firstRow, rows, block.data(), whole.data(), /*toBlock=*/false);
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{30}, block.size()}) {
    std::vector<int> ranged(whole.size(), 0);
    for (std::size_t begin = 0; begin < block.size(); begin += piece)
      copyBlockRangeToVolume(size, firstRow, rows, begin, std::min(block.size(), begin + piece), block.data() + begin, ranged.data());
    EXPECT_EQ(ranged, whole) << "ranges of " << piece;
  }
}

// One slab per device: the devices go through the projections side by side, so the run keeps a ring of 4 batches
// behind the slowest of them (as one block does) instead of every projection; more slabs than devices keep them all
// (a later slab reads every projection again). The same bits either way.
TEST(Slab, OneSlabPerDeviceKeepsARingNotEveryProjection) {
  const Geometry g = circularScan();  // 24 projections
  const Image projections = phantomScan(g);
  const VolumeGrid grid = smallGrid(37);
  FdkOptions options = slabTestOptions("cpu", 0, "");
  options.batch = 2;  // a ring of 8 slots, 3 times round
  const Image whole = reconstructFdk(g, projections, grid, options);
  options.gpus = {0, 0};
  FdkReport ring;
  expectBitIdentical(reconstructFdk(g, projections, grid, options, &ring), whole, "one slab per device");
  EXPECT_EQ(ring.slabs, 2);
  EXPECT_LE(ring.peakQueued, 8u);
  options.gpuMemory = rowBytes(grid) * 16;  // 3 slabs on 2 devices
  FdkReport all;
  expectBitIdentical(reconstructFdk(g, projections, grid, options, &all), whole, "3 slabs on 2 devices");
  EXPECT_EQ(all.slabs, 3);
  EXPECT_EQ(all.peakQueued, 24u);
}

// The scheduler tells its sink once per run, when every device's operator is made (a count; when, among devices set up
// in microseconds, is not measurable here): an ImageSink faults its volume in only from then on, since a 32 GiB
// volume faulted in beside two H200s' setup slowed the pinned buffers that setup makes (0.20-0.31 s of setup, 0.07 s
// once the volume waited). Told or not, an ImageSink gives the same volume.
class ReadyCountingSink final : public VolumeSink {
 public:
  explicit ReadyCountingSink(const VolumeGrid& grid) : inner(grid) {}
  std::string name() const override { return inner.name(); }
  void devicesReady() override {
    ++ready;
    inner.devicesReady();
  }
  float* wholeVolume() override { return note(inner.wholeVolume()); }
  void writeRows(int firstRow, int rows, const float* data) override {
    note(nullptr);
    inner.writeRows(firstRow, rows, data);
  }
  float* rowsInPlace() override { return note(inner.rowsInPlace()); }
  bool hasRowsInPlace() const override { return inner.hasRowsInPlace(); }
  float* note(float* memory) {
    if (ready.load() == 0) askedBeforeReady = true;
    return memory;
  }
  ImageSink inner;
  std::atomic<int> ready{0};
  std::atomic<bool> askedBeforeReady{false};
};

TEST(Slab, TheSinkHearsOnceThatEveryDeviceIsSetUp) {
  const Geometry g = circularScan();
  const Image projections = phantomScan(g);
  const VolumeGrid grid = smallGrid(37);
  FdkOptions options = slabTestOptions("cpu", 0, "");
  const Image whole = reconstructFdk(g, projections, grid, options);
  const auto runInto = [&](const FdkOptions& o, const std::string& what) {
    auto source = memorySource(projections, "projections");
    ReadyCountingSink sink(grid);
    FdkReconstructor reconstructor(planFdk(g, grid, o, *source));
    const FdkReport report = reconstructor.run(*source, sink);
    EXPECT_EQ(sink.ready.load(), 1) << what;
    // One device: told before its work begins. Several: a device may finish a slab before the last one is set up
    // (the sink then makes the volume when asked), so there only "once" is certain.
    if (o.gpus.size() < 2) EXPECT_FALSE(sink.askedBeforeReady.load()) << what << ": the volume was asked for before the device was set up";
    expectBitIdentical(sink.inner.take(), whole, what);
    return report.slabs;
  };
  EXPECT_EQ(runInto(options, "one block"), 1);  // a report counts the one block as a slab
  options.gpus = {0, 0};
  options.gpuMemory = rowBytes(grid) * 16;
  EXPECT_EQ(runInto(options, "3 slabs on 2 devices"), 3);  // once, not once per device
  // Never told (a run that failed before its devices were set up, or another caller): made when first asked for.
  ImageSink untold(grid);
  const std::size_t rowFloats = static_cast<std::size_t>(grid.size[0]) * grid.size[2];
  for (const auto [first, count] : {std::pair{16, 21}, std::pair{0, 16}}) {  // two blocks of rows, the later first
    std::vector<float> block(rowFloats * count);
    moveSlabRows(grid.size, first, count, whole.data.data(), block.data(), /*toBlock=*/true);
    untold.writeRows(first, count, block.data());
  }
  expectBitIdentical(untold.take(), whole, "an ImageSink never told that the devices were ready");
}

TEST(Slab, ScratchFileHoldsTheFilteredProjections) {
  const Geometry g = circularScan();
  const Image projections = phantomScan(g);
  const VolumeGrid grid = smallGrid(37);
  FdkOptions options;
  options.backend = test::backendOf("cpu");
  const Image whole = reconstructFdk(g, projections, grid, options);
  options.gpuMemory = rowBytes(grid) * 16;
  options.scratch = test::scratchDir().string();
  FdkReport report;
  const Image slabbed = reconstructFdk(g, projections, grid, options, &report);
  EXPECT_TRUE(report.scratchFile);
  expectBitIdentical(slabbed, whole, "scratch");
  options.scratch = (test::scratchDir() / "no-such-dir").string();
  test::expectError<InputError>([&] { reconstructFdk(g, projections, grid, options); }, {"no-such-dir", "scratch"});
}

TEST(Slab, VolumeFileWriterWritesWhatWriteImageWrites) {
  const fs::path dir = test::scratchDir() / "slab-writer";
  fs::remove_all(dir);
  fs::create_directories(dir);
  Image volume(VolumeGrid{{7, 37, 5}, {0.5, 0.25, 2.0}, {-1.0, 3.5, 7.0}});
  for (std::size_t i = 0; i < volume.data.size(); ++i) volume.data[i] = std::sin(0.37 * i) * 1e3f;
  for (const std::string name : {"v.mha", "v.mhd", "v.tif"}) {
    fs::create_directories(dir / "ref");
    writeImage((dir / "ref" / name).string(), volume, false);
    {
      VolumeFileWriter writer((dir / name).string(), VolumeGrid{volume.size, {0.5, 0.25, 2.0}, {-1.0, 3.5, 7.0}}, false);
      // Out of order, an uneven last slab.
      for (const auto& [first, rows] : {std::pair{32, 5}, std::pair{0, 16}, std::pair{16, 16}}) {
        std::vector<float> slab(7 * rows * 5);
        for (int k = 0; k < 5; ++k)
          std::copy_n(volume.data.begin() + (k * 37 + first) * 7, 7 * rows, slab.begin() + k * 7 * rows);
        writer.writeRows(first, rows, slab.data());
      }
      EXPECT_FALSE(fs::exists(dir / name)) << "visible before commit";
      writer.commit();
    }
    EXPECT_EQ(test::readText(dir / name), test::readText(dir / "ref" / name)) << name;
    if (name == "v.mhd") EXPECT_EQ(test::readText(dir / "v.raw"), test::readText(dir / "ref" / "v.raw"));
  }
  {
    VolumeFileWriter abandoned((dir / "gone.mha").string(), VolumeGrid{volume.size, {1, 1, 1}, {0, 0, 0}}, false);
  }
  for (const auto& entry : fs::directory_iterator(dir)) EXPECT_EQ(entry.path().filename().string().find("gone"), std::string::npos);
  test::expectError<InputError>([&] { VolumeFileWriter((dir / "v.mha").string(), VolumeGrid{volume.size, {1, 1, 1}, {0, 0, 0}}, false); },
                          {"v.mha"});
}

// The one-block fdk path: the file's pages prepared by background threads, then the whole volume copied in through
// the mapping. Same bytes as writeImage for every format, the header untouched by the page-touching threads
// (it shares the first data page), whatever the thread split; released to pwrite for slabs.
// Two block buffers per device (drainBeside): 4:1 slabs where two buffers of the large one fit, else even slabs in
// buffers of half the room, at least two per device; where not even a granule fits twice, the plain plan.
TEST(Slab, DrainBesidePlansLargeThenSmallSlabsOrEvenOnesInHalfTheRoom) {
  const VolumeGrid grid{{4, 100, 4}, {1, 1, 1}, {0, 0, 0}};
  const SlabCost cost{1000, 10, 8};
  const auto budget = [&](int rows) { return cost.fixedBytes + (cost.bytesPerRow + cost.volumeBytesPerRow) * rows; };
  const auto heights = [](const SlabPlan& plan) {
    std::vector<int> h;
    int next = 0;
    for (const auto& [first, rows] : plan.slabs) {
      EXPECT_EQ(first, next) << "slabs in order, contiguous";
      next = first + rows;
      h.push_back(rows);
    }
    EXPECT_EQ(next, 100) << "every row";
    return h;
  };
  const SlabPlan tapered = planSlabs(grid, cost, budget(48), "cap", 2, 2, true);
  EXPECT_TRUE(tapered.drainBeside);
  EXPECT_EQ(tapered.rowsPerSlab, 48);
  EXPECT_EQ(heights(tapered), (std::vector<int>{32, 48, 16, 4}));  // shares of 3 and 4 granules: 2 + 1, 3 + 1
  const SlabPlan even = planSlabs(grid, cost, budget(47), "cap", 2, 2, true);
  EXPECT_TRUE(even.drainBeside);
  EXPECT_EQ(even.rowsPerSlab, 32);
  EXPECT_EQ(heights(even), (std::vector<int>{16, 32, 32, 20}));  // 4 slabs, two per device, within a granule
  const SlabPlan one = planSlabs(grid, cost, budget(1000), "cap", 1, 1, true);
  EXPECT_TRUE(one.drainBeside);
  EXPECT_EQ(heights(one), (std::vector<int>{96, 4}));  // 7 granules: 6 + 1
  const SlabPlan plain = planSlabs(grid, cost, budget(15), "cap", 2, 2, true);  // 15 rows twice; 27 once
  EXPECT_FALSE(plain.drainBeside);
  EXPECT_EQ(heights(plain), (std::vector<int>{16, 16, 16, 16, 16, 16, 4}));
  EXPECT_FALSE(planSlabs(grid, cost, budget(1000), "cap", 2, 2, false).drainBeside);
}

TEST(Slab, SlabsReadBackBesideTheNextEqualOneBlockBitForBit) { test::drainedSlabsEqualOneBlock("cpu", 8); }

TEST(Slab, PreparedWholeVolumeWriteWritesWhatWriteImageWrites) {
  const fs::path dir = test::scratchDir() / "prepared-writer";
  fs::remove_all(dir);
  fs::create_directories(dir / "ref");
  const VolumeGrid grid{{64, 37, 50}, {0.5, 0.25, 2.0}, {-1.0, 3.5, 7.0}};  // 473,600 bytes: 116 pages, uneven shares
  Image volume(grid);
  for (std::size_t i = 0; i < volume.data.size(); ++i) volume.data[i] = std::sin(0.37 * i) * 1e3f + 1.0f;  // few zeros
  for (const std::string name : {"v.mha", "v.mhd", "v.tif"}) {
    writeImage((dir / "ref" / name).string(), volume, false);
    for (const int threads : {1, 3, 7}) {
      fs::remove(dir / name);
      fs::remove(dir / "v.raw");
      VolumeFileWriter writer((dir / name).string(), grid, false);
      writer.preparePages(threads);
      ASSERT_TRUE(writer.mapped()) << name;
      if (threads == 3) {
        // Written in place, as fdk's readback does: the headers keep the voxels float-aligned.
        float* voxels = writer.mappedVolume();
        ASSERT_NE(voxels, nullptr) << name;
        std::copy(volume.data.begin(), volume.data.end(), voxels);
      } else {
        writer.writeVolume(volume.data.data(), threads);
      }
      EXPECT_FALSE(fs::exists(dir / name)) << "visible before commit";
      writer.commit();
      EXPECT_EQ(test::readText(dir / name), test::readText(dir / "ref" / name)) << name << ", " << threads << " threads";
      if (name == "v.mhd") EXPECT_EQ(test::readText(dir / "v.raw"), test::readText(dir / "ref" / "v.raw")) << threads << " threads";
    }
  }
  // Mapped, its pages maybe still being prepared, then rows written with pwrite (a slab run whose backend reads slabs
  // back only whole): they land in the same file, after the preparing threads' zeros, not under them.
  fs::remove(dir / "v.mha");
  {
    VolumeFileWriter writer((dir / "v.mha").string(), grid, false);
    writer.preparePages(2);
    for (const auto& [first, rows] : {std::pair{0, 20}, std::pair{20, 17}}) {
      std::vector<float> slab(64 * rows * 50);
      for (int k = 0; k < 50; ++k) std::copy_n(volume.data.begin() + (k * 37 + first) * 64, 64 * rows, slab.begin() + k * 64 * rows);
      writer.writeRows(first, rows, slab.data());
    }
    writer.commit();
  }
  EXPECT_EQ(test::readText(dir / "v.mha"), test::readText(dir / "ref" / "v.mha")) << "mapped, then written in rows";
  // Several slab workers ask for the mapping at once, its pages maybe still being prepared (each slab is read back in
  // place): one mapping for all, and its preparing threads joined once (two joins of one thread hung fdk --gpu 0,0).
  fs::remove(dir / "v.mha");
  for (int round = 0; round < 20; ++round) {
    VolumeFileWriter writer((dir / "v.mha").string(), grid, true);
    writer.preparePages(4);
    std::vector<float*> seen(4, nullptr);
    {
      std::vector<std::jthread> askers;
      for (int t = 0; t < 4; ++t) askers.emplace_back([&, t] { seen[t] = writer.mappedVolume(); });
    }
    for (float* p : seen) EXPECT_EQ(p, seen[0]) << "round " << round;
    ASSERT_NE(seen[0], nullptr);
    std::copy(volume.data.begin(), volume.data.end(), seen[0]);
    writer.commit();
  }
  EXPECT_EQ(test::readText(dir / "v.mha"), test::readText(dir / "ref" / "v.mha")) << "mapped, asked for from 4 threads";
  // Abandoned while its pages are being prepared: nothing left, no thread left running.
  {
    VolumeFileWriter abandoned((dir / "gone.mha").string(), grid, false);
    abandoned.preparePages(4);
  }
  for (const auto& entry : fs::directory_iterator(dir)) EXPECT_EQ(entry.path().filename().string().find("gone"), std::string::npos);
}

// A cluster's rank 0 maps its file on disk where every rank runs on its host; the other ranks write their rows through
// descriptors of their own, maybe before rank 0's preparing threads reach those pages. Prepared with othersWrite, the
// pages are made present without a write, so the rows stay: without it each page would get a zero written over the
// rows already there (the volume has few zeros, so that shows). Rank 0's own rows go in place, as its slabs do.
TEST(Slab, RowsAnotherRankWroteStayWhileRankZeroPreparesItsPages) {
  const fs::path dir = test::scratchDir() / "joined-on-disk";
  fs::remove_all(dir);
  fs::create_directories(dir / "ref");
  const VolumeGrid grid{{64, 37, 50}, {0.5, 0.25, 2.0}, {-1.0, 3.5, 7.0}};  // 116 pages: each has rows of both ranks
  Image volume(grid);
  for (std::size_t i = 0; i < volume.data.size(); ++i) volume.data[i] = std::sin(0.37 * i) * 1e3f + 1.0f;
  writeImage((dir / "ref" / "v.mha").string(), volume, false);
  const auto rowsOf = [&](int first, int rows) {
    std::vector<float> slab(static_cast<std::size_t>(64) * rows * 50);
    for (int k = 0; k < 50; ++k) std::copy_n(volume.data.begin() + (k * 37 + first) * 64, 64 * rows, slab.begin() + k * 64 * rows);
    return slab;
  };
  {
    VolumeFileWriter rankZero((dir / "v.mha").string(), grid, false);
    VolumeFileWriter other((dir / "v.mha").string(), grid, VolumeFileWriter::JoinedFile{rankZero.temporaryData()});
    other.writeRows(20, 17, rowsOf(20, 17).data());  // before rank 0's threads run
    rankZero.preparePages(3, /*othersWrite=*/true);
    ASSERT_TRUE(rankZero.mapped());
    float* voxels = rankZero.mappedVolume();
    ASSERT_NE(voxels, nullptr);
    for (int k = 0; k < 50; ++k) std::copy_n(volume.data.begin() + k * 37 * 64, 64 * 20, voxels + k * 37 * 64);  // rows 0-19 in place
    other.commit();
    rankZero.commit();
  }
  EXPECT_TRUE(test::readText(dir / "v.mha") == test::readText(dir / "ref" / "v.mha")) << "the rows rank 0 or the other rank wrote are not all there";
}

// A volume file in memory (tmpfs, /dev/shm): mapped, its pages populated without writing them, and rows written
// through mappings (pwrite queues behind the file's lock there), by one process's slab workers at once and by another
// rank's writer joining the file; the bytes are writeImage's.
TEST(Slab, VolumeFileInMemoryIsWrittenThroughMappings) {
  const fs::path shm = "/dev/shm";
  if (!fs::is_directory(shm)) GTEST_SKIP() << "no /dev/shm here";
  const fs::path dir = shm / ("glrecon-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct Removed {
    fs::path dir;
    ~Removed() { fs::remove_all(dir); }
  } removed{dir};
  const VolumeGrid grid{{64, 37, 50}, {0.5, 0.25, 2.0}, {-1.0, 3.5, 7.0}};
  Image volume(grid);
  for (std::size_t i = 0; i < volume.data.size(); ++i) volume.data[i] = std::sin(0.37 * i) * 1e3f + 1.0f;
  const auto slabOf = [&](int first, int rows) {
    std::vector<float> slab(64 * rows * 50);
    for (int k = 0; k < 50; ++k) std::copy_n(volume.data.begin() + (k * 37 + first) * 64, 64 * rows, slab.begin() + k * 64 * rows);
    return slab;
  };
  const std::vector<float> low = slabOf(0, 20), high = slabOf(20, 17);
  for (const std::string name : {"v.mha", "v.tif"}) {
    writeImage((dir / ("ref-" + name)).string(), volume, false);
    const std::string reference = test::readText(dir / ("ref-" + name));
    {
      VolumeFileWriter writer((dir / name).string(), grid, false);
      if (!writer.inMemory()) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
      writer.preparePages(3);
      ASSERT_TRUE(writer.mapped()) << name;
      float* voxels = writer.mappedVolume();
      ASSERT_NE(voxels, nullptr) << name;
      std::copy(volume.data.begin(), volume.data.end(), voxels);
      writer.commit();
    }
    EXPECT_EQ(test::readText(dir / name), reference) << name << ": prepared and written in place";
    fs::remove(dir / name);
    {
      // Two slab workers' rows at once, with no mapping prepared (writeRows maps the file itself).
      VolumeFileWriter writer((dir / name).string(), grid, false);
      std::jthread other([&] { writer.writeRows(20, 17, high.data()); });
      writer.writeRows(0, 20, low.data());
      other.join();
      EXPECT_FALSE(fs::exists(dir / name)) << "visible before commit";
      writer.commit();
    }
    EXPECT_EQ(test::readText(dir / name), reference) << name << ": rows from two threads";
    fs::remove(dir / name);
    {
      // A cluster: rank 0 prepares its mapping and reads its slab in place; another rank's writer joins the file.
      VolumeFileWriter rank0((dir / name).string(), grid, false);
      rank0.preparePages(2);
      VolumeFileWriter rank1((dir / name).string(), grid, VolumeFileWriter::JoinedFile{rank0.temporaryData()});
      ASSERT_TRUE(rank1.inMemory());
      rank1.writeRows(20, 17, high.data());
      // Its own mapping is for its rows only (never handed out: its pages are populated only as rows come).
      EXPECT_FALSE(rank1.mapped());
      EXPECT_EQ(rank1.mappedVolume(), nullptr);
      float* voxels = rank0.mappedVolume();
      ASSERT_NE(voxels, nullptr);
      for (int k = 0; k < 50; ++k) std::copy_n(low.begin() + k * 64 * 20, 64 * 20, voxels + k * 64 * 37);
      rank1.commit();
      rank0.commit();
    }
    EXPECT_EQ(test::readText(dir / name), reference) << name << ": two ranks' rows";
  }
}

// A file system in memory too small for the volume: refused before the reconstruction with an error naming the file
// and the room (a write through the mapping would have been a SIGBUS), and nothing is left. A tmpfs of 1 MiB is mounted
// in a namespace of the test's own (unshare: skipped where the system allows none).
TEST(Cli, FdkIntoAFullMemoryFileSystemSaysSoAndLeavesNothing) {
  const fs::path dir = test::scratchDir();
  if (std::system(("cd '" + dir.string() + "' && mkdir full && unshare -rm sh -c 'mount -t tmpfs -o size=1m tmpfs full' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "no mount namespace with a tmpfs here (unshare -rm)";
  ASSERT_EQ(test::runCli(dir, "phantom -o scan --projections 24 --detector 32 --detector-spacing 16 -q").exitCode, 0);
  // 64^3 floats are 1 MiB and the header more: one page past the file system's room.
  const std::string fdk = std::string("'") + GLRECON_CLI_PATH +
                          "' fdk -g scan/geometry.xml -p scan/projections.mha --size 64 --spacing 4 -q --backend cpu -o full/v.mha";
  const std::string command = "cd '" + dir.string() + "' && unshare -rm sh -c \"mount -t tmpfs -o size=1m tmpfs full && " + fdk +
                              " > log.txt 2>&1; echo exit \\$? >> log.txt; ls -A full >> log.txt\"";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string log = test::readText(dir / "log.txt");
  const std::size_t exitLine = log.rfind("exit ");
  ASSERT_NE(exitLine, std::string::npos) << log;
  EXPECT_TRUE(test::contains(log.substr(0, exitLine), "full/v.mha")) << log;
  EXPECT_TRUE(test::contains(log.substr(0, exitLine), "room for")) << log;
  EXPECT_TRUE(test::contains(log.substr(0, exitLine), "bytes free")) << log;  // refused before the reconstruction
  EXPECT_NE(log.substr(exitLine), "exit 0\n") << "no error:\n" << log;
  // `ls -A full` printed nothing after the exit line: no file, not even a temporary.
  EXPECT_EQ(log.find('\n', exitLine), log.size() - 1) << log;
}

TEST(Cli, FdkInSlabsWritesTheOneBlockFile) {
  const fs::path dir = test::scratchDir() / "cli-slabs";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(test::runCli(dir, "phantom -o scan --projections 30 --detector 48 --detector-spacing 6 -q").exitCode, 0);
  const std::string fdk = "fdk -g scan/geometry.xml -p scan/projections.mha --size 40,70,36 --spacing 5 --backend cpu ";
  ASSERT_EQ(test::runCli(dir, fdk + "-o one.mha -q").exitCode, 0);
  // 40 x 36 x 4 bytes = 5760 per row: 100K holds 17 rows -> 16-row slabs, 5 of them.
  const test::CliRun slabs = test::runCli(dir, fdk + "-o slabs.mha --gpu-memory 100K --slices png");
  ASSERT_EQ(slabs.exitCode, 0) << slabs.output;
  EXPECT_TRUE(test::contains(slabs.output, "slabs: 5 of 16 rows of y")) << slabs.output;
  EXPECT_EQ(test::readText(dir / "slabs.mha"), test::readText(dir / "one.mha"));
  EXPECT_TRUE(fs::exists(dir / "png" / "slabs_axial.png"));
  const test::CliRun two = test::runCli(dir, fdk + "-o two.tif --gpu 0,0 -q");
  ASSERT_EQ(two.exitCode, 0) << two.output;
  ASSERT_EQ(test::runCli(dir, fdk + "-o one.tif -q").exitCode, 0);
  EXPECT_EQ(test::readText(dir / "two.tif"), test::readText(dir / "one.tif"));

  // Too small for one slab: the figure, the budget, no output.
  const test::CliRun small = test::runCli(dir, fdk + "-o small.mha --gpu-memory 50K");
  EXPECT_NE(small.exitCode, 0);
  EXPECT_TRUE(test::contains(small.output, "--gpu-memory 51200 bytes")) << small.output;
  EXPECT_TRUE(test::contains(small.output, "GPU memory for one slab")) << small.output;
  EXPECT_FALSE(fs::exists(dir / "small.mha"));
  const test::CliRun stream = test::runCli(dir, fdk + "-o s.mha --gpu-memory 100K --stream");
  EXPECT_EQ(stream.exitCode, 2);
  EXPECT_TRUE(test::contains(stream.output, "--stream: expected the whole volume on one GPU")) << stream.output;
  for (const char* bad : {"--gpu 0,,1", "--gpu x", "--gpu -1", "--gpu-memory 12Q"}) {
    const test::CliRun r = test::runCli(dir, fdk + "-o bad.mha " + bad);
    EXPECT_EQ(r.exitCode, 2) << bad << ": " << r.output;
    EXPECT_FALSE(fs::exists(dir / "bad.mha"));
  }
}

}  // namespace
}  // namespace glrecon
