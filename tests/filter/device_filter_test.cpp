// The FDK filter on the GPU (DeviceFilter and its device twins): its host form equals the CPU's FFT filter within a
// bound derived from float rounding; where a device filter does not apply; the --filter-on option's errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "glrecon/operator.h"
#include "device/cuda/device.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"
#include "device/gl/context.h"
#include "glrecon/slab.h"
#include "test_support.h"
#include "device_filter_support.h"

namespace glrecon {
namespace {

using namespace test;  // device_filter_support.h

TEST(DeviceFilter, HostFormEqualsTheFftFilterWithinRounding) {
  for (const bool shortScan : {false, true})
    for (const RampWindow window : {RampWindow::RamLak, RampWindow::Hann}) {
      SCOPED_TRACE(std::string(shortScan ? "short scan, " : "full scan, ") + rampWindowName(window));
      const Geometry g = scan(shortScan);
      const FdkFilter filter(g, {window, window == RampWindow::Hann ? 0.8 : 1.0, true});
      ASSERT_EQ(filter.isShortScan(), shortScan);
      const DeviceFilter* device = filter.deviceFilter();
      ASSERT_TRUE(device);
      ASSERT_EQ(device->taps.size(), 130u);
      const RampFilter ramp(g.detector.nu, window, window == RampWindow::Hann ? 0.8 : 1.0);
      const std::vector<float> raw = test::randomProjections(g, 99);
      const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
      double worstRatio = 0.0, largest = 0.0;
      for (std::size_t view = 0; view < g.size(); ++view) {
        std::vector<float> cpu(raw.begin() + view * pixels, raw.begin() + (view + 1) * pixels), host = cpu;
        filter.apply(view, cpu.data());
        applyDeviceFilter(*device, view, host.data());
        const double bound = filterBound(*device, ramp, view, raw.data() + view * pixels, false);
        for (std::size_t i = 0; i < pixels; ++i) {
          ASSERT_LE(std::abs(cpu[i] - host[i]), bound) << "view " << view << " pixel " << i;
          worstRatio = std::max(worstRatio, std::abs(cpu[i] - host[i]) / bound);
          largest = std::max(largest, std::abs(static_cast<double>(cpu[i])));
        }
        // Not vacuous: the bound is far below the values (a wrong weight or tap by 1e-4 would exceed it).
        EXPECT_LT(bound, 1e-4 * largest);
      }
      std::printf("device filter vs FFT: largest difference %.3g of the bound\n", worstRatio);
    }
}

TEST(DeviceFilter, NoneWhereViewsNeedTheirOwnCosineTable) {
  std::vector<CircularParams> params(4);
  for (int p = 0; p < 4; ++p) {
    params[p].gantryAngle = 90.0 * p;
    params[p].projectionOffsetX = 10.0 * p;  // the detector moves relative to the source from view to view
  }
  const Geometry tilted = Geometry::fromCircular(std::move(params), DetectorLayout::centred(16, 8, 3.0, 3.0));
  EXPECT_FALSE(FdkFilter(tilted, {}).deviceFilter());
  const Geometry circular = scan(false);
  const FdkFilter circularFilter(circular, {});
  const DeviceFilter* device = circularFilter.deviceFilter();
  EXPECT_EQ(circularFilter.deviceFilter(), device) << "made once";
  ASSERT_TRUE(device);
  EXPECT_EQ(device->cosine.size(), 130u * 7);
  EXPECT_EQ(device->viewWeights.size(), 130u * 12);
}

TEST(Cli, FilterOnGpuRefusesWhatCannotFilterThere) {
  const auto dir = test::scratchDir() / "filter_on";
  std::filesystem::create_directories(dir);
  ASSERT_EQ(test::runCli(dir, "phantom -o scan --projections 12 --detector 24 --detector-spacing 16 -q").exitCode, 0);
  const std::string fdk = "fdk -g scan/geometry.xml -p scan/projections.mha -q --overwrite ";
  const auto cpu = test::runCli(dir, fdk + "-o v.mha --size 8 --spacing 16 --backend cpu --filter-on gpu");
  EXPECT_EQ(cpu.exitCode, 2) << cpu.output;
  EXPECT_TRUE(test::contains(cpu.output, "--filter-on gpu")) << cpu.output;
  EXPECT_TRUE(test::contains(cpu.output, "the cpu backend")) << cpu.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "v.mha"));
  const auto stream = test::runCli(dir, fdk + "-o v.mha --size 8 --spacing 16 --backend cpu --filter-on gpu --stream");
  EXPECT_EQ(stream.exitCode, 2) << stream.output;  // the stream filters on the GPU too, but not with the cpu backend
  EXPECT_TRUE(test::contains(stream.output, "the cpu backend")) << stream.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "v.mha"));
  const auto slabs = test::runCli(dir, fdk + "-o v.mha --backend cpu --filter-on gpu --size 32 --spacing 4 --gpu-memory 100K");
  EXPECT_EQ(slabs.exitCode, 2) << slabs.output;
  EXPECT_TRUE(test::contains(slabs.output, "--filter-on gpu")) << slabs.output;
  EXPECT_TRUE(test::contains(slabs.output, "the cpu backend")) << slabs.output;
  const auto bad = test::runCli(dir, fdk + "-o v.mha --size 8 --spacing 16 --filter-on fpga");
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_TRUE(test::contains(bad.output, "expected auto, cpu or gpu, found 'fpga'")) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "v.mha"));
}

}  // namespace
}  // namespace glrecon
