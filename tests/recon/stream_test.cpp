// The scheduler in its streaming configuration: order, back-pressure, cancellation, errors, and equality with the batch
// result on the cpu backend.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "glrecon/errors.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/fdk.h"
#include "test_support.h"
#include "stream_support.h"

namespace glrecon {
namespace {

using namespace test;  // stream_support.h

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

// The simulated scanner keeps its own phantom and geometry: the caller's may change or go before the reads (the app
// moved its Geometry after making the source, which then read garbage detector sizes). Here both are gone, the
// geometry emptied first, so a reference left behind would read no views at all (or freed memory, under ASan).
TEST(Stream, SimulatedScannerKeepsItsOwnPhantomAndGeometry) {
  std::unique_ptr<ProjectionSource> source;
  Image expected;
  {
    Geometry g = smallScan(3);
    Phantom phantom = Phantom::sheppLogan();
    source = simulatedScanner(phantom, g, 0);
    expected = projectPhantom(phantom, g, {});
    g.views.clear();
    g.detector = DetectorLayout{};
    phantom = Phantom();
  }
  ASSERT_EQ(source->count(), 3u);
  std::vector<float> read(expected.data.size());
  source->read(0, 3, read.data());
  EXPECT_EQ(read, test::values(expected.data));
}

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

}  // namespace
}  // namespace glrecon
