// The streaming configuration on the GL backends equals their batch result. On the GL fixture.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "glrecon/errors.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/fdk.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "stream_support.h"

namespace glrecon {
namespace {

using StreamGl = test::GlTest;
using namespace test;  // stream_support.h

TEST_F(StreamGl, StreamedEqualsBatchOnTheGpuBackends) {
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
