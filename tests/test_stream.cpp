// The scheduler in its streaming configuration: order, back-pressure, cancellation, errors, and equality with the batch
// result.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "glrecon/errors.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/fdk.h"
#include "test_support.h"

namespace glrecon {
namespace {

Geometry smallScan(int projections = 40) {
  CircularScanSpec spec;
  spec.projections = projections;
  spec.nu = spec.nv = 48;
  spec.spacingU = spec.spacingV = 512.0 / 48;
  return makeCircularScan(spec);
}
const VolumeGrid kGrid = VolumeGrid::centred({24, 24, 24}, glm::dvec3(256.0 / 24));

FdkOptions streamed(const FdkOptions& fdk = {}) {
  FdkOptions options = fdk;
  options.streaming = true;
  return options;
}

// planFdk and one run of the scheduler from `source` into memory; on `op` where given (a recording stand-in).
Image reconstructStreaming(ProjectionSource& source, const Geometry& g, const VolumeGrid& grid, const FdkOptions& options,
                           FdkReport* report = nullptr, ConeBeamOperator* op = nullptr) {
  const FdkPlan plan = planFdk(g, grid, options, source);
  std::unique_ptr<FdkReconstructor> reconstructor =
      op ? std::make_unique<FdkReconstructor>(plan, *op) : std::make_unique<FdkReconstructor>(plan);
  ImageSink sink(grid);
  const FdkReport done = reconstructor->run(source, sink);
  if (report) *report = done;
  return sink.take();
}

// Records what reaches the operator, and can be slow (a stand-in for a busy GPU).
class Recorder final : public ConeBeamOperator {
 public:
  Recorder(const Geometry& geometry, const VolumeGrid& grid, int delayMs = 0)
      : ConeBeamOperator(Backend::Cpu, geometry, grid, {}), delayMs_(delayMs) {}
  std::string description() const override { return "recorder"; }
  void back(const float*, const std::size_t* views, std::size_t count, Weighting) override {
    order.insert(order.end(), views, views + count);
    if (delayMs_) std::this_thread::sleep_for(std::chrono::milliseconds(delayMs_));
  }
  void readVolume(float* destination) override { std::fill_n(destination, blockVoxels(), 0.0f); }
  void reset() override {}
  void moveBlock(int, int) override {}
  void setVolume(const float*) override {}
  void forward(const std::size_t*, std::size_t, float*) override {}
  void setUpdateMask(const std::uint8_t*) override {}
  void updateSubset(const float*, const std::size_t*, std::size_t, const SubsetRule&, const float*) override {}
  void setRegion(const RegionOfInterest&) override {}
  std::vector<std::uint8_t> activeMask() override { return {}; }
  double culledFraction() const override { return 0; }
  std::vector<std::size_t> order;

 private:
  int delayMs_;
};

TEST(Stream, OrderIsPreservedThroughTheFilterPool) {
  const Geometry g = smallScan(60);
  const Phantom phantom = Phantom::sheppLogan();
  auto source = simulatedScanner(phantom, g, 0);
  FdkOptions options = streamed();
  options.filterThreads = 4;  // more filters than cores: they finish out of order
  options.batch = 7;
  Recorder recorder(g, kGrid);
  reconstructStreaming(*source, g, kGrid, options, nullptr, &recorder);
  ASSERT_EQ(recorder.order.size(), g.size());
  for (std::size_t i = 0; i < recorder.order.size(); ++i) EXPECT_EQ(recorder.order[i], i);
}

TEST(Stream, BackPressureBoundsWhatIsHeld) {
  const Geometry g = smallScan(60);
  const Phantom phantom = Phantom::sheppLogan();
  auto source = simulatedScanner(phantom, g, 0);  // as fast as it can
  FdkOptions options = streamed();
  options.queueDepth = 5;
  options.batch = 1;
  Recorder slow(g, kGrid, 5);  // a slow consumer
  FdkReport report;
  reconstructStreaming(*source, g, kGrid, options, &report, &slow);
  EXPECT_LE(report.peakQueued, 5u);
  EXPECT_GE(report.peakQueued, 3u);  // the queue did fill: the bound was exercised
  EXPECT_EQ(slow.order.size(), g.size());
}

TEST(Stream, CancellationMidScanStopsEveryThread) {
  const Geometry g = smallScan(400);
  const Phantom phantom = Phantom::sheppLogan();
  auto source = simulatedScanner(phantom, g, 200);  // 2 s for the whole scan
  std::atomic<bool> cancel{false};
  FdkOptions options = streamed();
  options.backend = test::backendOf("cpu");
  options.batch = 1;
  const FdkPlan plan = planFdk(g, kGrid, options, *source);
  FdkReconstructor reconstructor(plan);
  ImageSink sink(kGrid);
  const auto start = std::chrono::steady_clock::now();
  test::expectError<Cancelled>(
      [&] {
        reconstructor.start(*source, sink, &cancel);
        while (reconstructor.step(std::chrono::milliseconds(5)))
          if (reconstructor.done() >= 20) cancel = true;
      },
      {"cancelled after"});
  // Stopped within a few polling intervals of the request, well before the 2 s the scan would take.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(Stream, AnUnreadableProjectionIsReportedWithItsIndex) {
  const auto dir = test::scratchDir();
  const Geometry g = smallScan(12);
  const Image stack = projectPhantom(Phantom::sheppLogan(), g, {});
  std::vector<std::string> files;
  for (int p = 0; p < 12; ++p) {
    Image one({48, 48, 1}, stack.spacing, stack.origin);
    std::copy(stack.slice(p), stack.slice(p) + stack.sliceStride(), one.data.begin());
    files.push_back((dir / ("p_" + std::to_string(p) + ".mha")).string());
    writeMetaImage(files.back(), one, false);
  }
  std::filesystem::resize_file(files[7], std::filesystem::file_size(files[7]) - 100);
  auto source = openProjectionFiles(files);
  EXPECT_EQ(source->detector().nu, g.detector.nu);
  FdkOptions options = streamed();
  options.backend = test::backendOf("cpu");
  test::expectError<InputError>([&] { reconstructStreaming(*source, g, kGrid, options); }, {"projection 7", "p_7.mha", "truncated"});
}

TEST(Stream, StreamedEqualsBatchOnTheCpu) {
  const Geometry g = smallScan(50);
  const Phantom phantom = Phantom::sheppLogan();
  const Image projections = projectPhantom(phantom, g, {});
  FdkOptions fdk;
  fdk.backend = test::backendOf("cpu");
  const Image batch = reconstructFdk(g, projections, kGrid, fdk);
  auto source = simulatedScanner(phantom, g, 0);
  FdkOptions options = streamed(fdk);
  options.batch = 3;
  FdkReport report;
  const Image stream = reconstructStreaming(*source, g, kGrid, options, &report);
  // Same filter, and every voxel adds the projections in the same order: the same bits.
  EXPECT_EQ(batch.data, stream.data);
  EXPECT_GT(report.latencySeconds, 0.0);
}

TEST(StreamGl, StreamedEqualsBatchOnTheGpuBackends) {
  try {
    gl::Context::headless(0);
  } catch (const gl::GlError& e) {
    GTEST_SKIP() << e.what();
  }
  const Geometry g = smallScan(50);
  const Phantom phantom = Phantom::sheppLogan();
  const Image projections = projectPhantom(phantom, g, {});
  for (const char* backend : {"graphics", "compute"}) {
    FdkOptions fdk;
    fdk.backend = test::backendOf(backend);
    fdk.window = 8;
    fdk.filterOn = FilterPlace::Cpu;  // as the stream filters (on a hardware GPU the batch would filter on the device)
    const Image batch = reconstructFdk(g, projections, kGrid, fdk);
    auto source = simulatedScanner(phantom, g, 0);
    FdkOptions options = streamed(fdk);
    options.batch = 3;
    const Image stream = reconstructStreaming(*source, g, kGrid, options);
    // The backends group projections into windows of 8 whatever the batches, so the sums are formed alike;
    // equality is expected, and at most one float rounding per projection (50 eps of the value) allowed.
    double worst = 0;
    for (std::size_t i = 0; i < batch.data.size(); ++i)
      worst = std::max(worst, std::abs(double(batch.data[i]) - stream.data[i]) / (std::abs(batch.data[i]) + 1e-6));
    EXPECT_LE(worst, 50 * test::kFloatRoundoff) << backend;
    // The filter on the GPU (forced: llvmpipe's auto filters on the CPU): the stream hands raw projections to the
    // same kernels in other groupings; each row is filtered alone and the windows are the same, so the same bits.
    fdk.filterOn = FilterPlace::Gpu;
    options.filterOn = FilterPlace::Gpu;
    FdkReport batchReport;
    const Image batchGpu = reconstructFdk(g, projections, kGrid, fdk, &batchReport);
    source = simulatedScanner(phantom, g, 0);
    FdkReport report;
    const Image streamedGpu = reconstructStreaming(*source, g, kGrid, options, &report);
    EXPECT_TRUE(batchReport.filteredOnGpu && report.filteredOnGpu) << backend;
    EXPECT_EQ(streamedGpu.data, batchGpu.data) << backend;
  }
}

}  // namespace
}  // namespace glrecon
