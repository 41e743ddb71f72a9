// The FDK filter on the GL backends: each filtering raw projections gives the volume it gives from host-filtered
// ones, within the filter's bound carried through the backprojection; the whole FDK and slabs with --filter-on gpu
// against the CPU pool. On the GL fixture (headless; llvmpipe in CI).
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
#include "device_fixtures.h"
#include "test_support.h"
#include "device_filter_support.h"

namespace glrecon {
namespace {

using GraphicsDeviceFilter = test::GlTest;
using namespace test;  // device_filter_support.h

TEST_F(GraphicsDeviceFilter, EveryGlBackendFiltersLikeTheHost) {
  for (const char* backend : {"compute", "graphics", "graphics-mp"}) expectDeviceFilterMatchesHost(backend);
}

// The whole FDK through runFdk's device path against its CPU pool, on compute (forced on a software renderer):
// the filters differ by at most the full filterBound per pixel, carried through the backprojection as above.
TEST_F(GraphicsDeviceFilter, WholeFdkFilteredOnTheGpuMatchesTheCpuPool) {
  const Geometry g = scan(true, 70, 9, 24);  // short scan: Parker weights on the device too
  const VolumeGrid grid = VolumeGrid::centred({16, 10, 16}, glm::dvec3(6.0));
  const std::vector<float> raw = test::randomProjections(g, 7);
  Image projections(VolumeGrid{{g.detector.nu, g.detector.nv, static_cast<int>(g.size())}, glm::dvec3(1.0), glm::dvec3(0.0)});
  projections.data.assign(raw.begin(), raw.end());
  FdkOptions options;
  options.backend = test::backendOf("compute");
  options.window = 8;
  options.batch = 5;
  options.filterOn = FilterPlace::Gpu;
  FdkReport gpuReport, cpuReport;
  const Image gpu = reconstructFdk(g, projections, grid, options, &gpuReport);
  EXPECT_TRUE(gpuReport.filteredOnGpu);
  options.filterOn = FilterPlace::Cpu;
  const Image cpu = reconstructFdk(g, projections, grid, options, &cpuReport);
  EXPECT_FALSE(cpuReport.filteredOnGpu);
  // Auto leaves the filter on the CPU on a software renderer (the FFTs are far faster there).
  options.filterOn = FilterPlace::Auto;
  FdkReport autoReport;
  reconstructFdk(g, projections, grid, options, &autoReport);
  EXPECT_EQ(autoReport.filteredOnGpu, !gl::isSoftwareRenderer(gpuReport.backend)) << gpuReport.backend;

  const FdkFilter filter(g, {});
  const DeviceFilter device = *filter.deviceFilter();
  const RampFilter ramp(g.detector.nu);
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  double delta = 0.0, maxQ = 0.0;
  for (std::size_t view = 0; view < g.size(); ++view) {
    delta = std::max(delta, filterBound(device, ramp, view, raw.data() + view * pixels, false));
    std::vector<float> q(raw.begin() + view * pixels, raw.begin() + (view + 1) * pixels);
    filter.apply(view, q.data());
    for (float x : q) maxQ = std::max(maxQ, std::abs(static_cast<double>(x)));
  }
  OperatorOptions o;
  o.window = 8;
  auto b = test::makeNamed("compute", g, grid, o);
  const Image ones = test::backprojectInBatches(*b, g, std::vector<float>(raw.size(), 1.0f), 5);
  double largest = 0.0;
  for (std::size_t i = 0; i < gpu.data.size(); ++i) {
    ASSERT_LE(std::abs(gpu.data[i] - cpu.data[i]), ones.data[i] * (delta + 2.0 * (g.size() + 2) * kU * maxQ)) << "voxel " << i;
    largest = std::max(largest, std::abs(static_cast<double>(cpu.data[i])));
  }
  EXPECT_GT(largest, 0.01);
}

TEST_F(GraphicsDeviceFilter, SlabsFilterOnTheGpuLikeOneBlock) {
  for (const char* backend : {"compute", "graphics"}) slabsFilterLikeOneBlock(backend);
}

}  // namespace
}  // namespace glrecon
