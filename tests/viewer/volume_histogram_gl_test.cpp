// The viewer's default grey window (viewer/volume_histogram.h): the GPU histogram against the CPU's, count for count,
// and the window it gives on a reconstructed Shepp-Logan phantom showing the inner structures (1.00 to 1.03).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "device/gl/objects.h"
#include "device/gl/state_scope.h"
#include "device_fixtures.h"
#include "glrecon/fdk.h"
#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "test_support.h"
#include "viewer/volume_histogram.h"

namespace glrecon {
namespace {

using GreyWindow = test::GlTest;

gl::Texture textureOf(const Image& v) {
  gl::Texture t = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(t.id(), 1, GL_R32F, v.size[0], v.size[1], v.size[2]);
  gl::StateScope keep;
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glTextureSubImage3D(t.id(), 0, 0, 0, 0, v.size[0], v.size[1], v.size[2], GL_RED, GL_FLOAT, v.data.data());
  return t;
}

// Every sampled voxel's bin is (v * scale - low) * binsPerUnit, truncated, in correctly rounded float steps on both
// sides (`precise` in the shader), so the counts are equal, not close; the range's min and max are the same floats.
TEST_F(GreyWindow, GpuHistogramEqualsTheCpuCountForCount) {
  const auto context = gl::Context::headless(0);
  const VolumeGrid grid = VolumeGrid::centred({70, 64, 66}, {4.0, 4.2, 4.1});  // 295,680 voxels: stride 2
  const Image v = voxelizePhantom(Phantom::sheppLogan(), grid, 2);
  const gl::Texture t = textureOf(v);
  const int stride = viewer::histogramStride(v.size);
  ASSERT_EQ(stride, 2);
  viewer::VolumeHistogram gpu(512);
  const float scale = 1.37f;
  const auto [low, high] = gpu.range(t.id(), v.size, scale, stride);
  EXPECT_EQ(low, 0.0f);
  EXPECT_EQ(high, 2.0f * scale);  // the skull, 2.0, multiplied in float: 2.74 rounded once
  for (const auto& [from, to] : {std::pair{low, high}, {0.9f, 1.2f}}) {
    const viewer::Histogram g = gpu.counts(t.id(), v.size, scale, stride, from, to);
    const viewer::Histogram c = viewer::histogramCpu(v.data.data(), v.size, scale, stride, from, to, 512);
    EXPECT_EQ(g.counts, c.counts) << from << ".." << to;
    EXPECT_EQ(g.below, c.below);
    EXPECT_EQ(g.above, c.above);
    EXPECT_EQ(g.below + g.above + std::accumulate(g.counts.begin(), g.counts.end(), std::uint64_t{0}), 35u * 32u * 33u);
  }
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

// The frame loop's way (begin, then poll until it answers: a pass issued each time the one before is done) gives the
// same histogram as compute(), which waits after each pass; and a constant volume (whose first counts are final) too.
TEST_F(GreyWindow, PassesIssuedAFrameApartGiveTheSameHistogram) {
  const auto context = gl::Context::headless(0);
  const VolumeGrid grid = VolumeGrid::centred({40, 36, 38}, {5.0, 5.5, 5.2});
  Image v = voxelizePhantom(Phantom::sheppLogan(), grid, 2);
  for (int constant = 0; constant < 2; ++constant) {
    if (constant) std::fill(v.data.begin(), v.data.end(), 1.5f);
    const gl::Texture t = textureOf(v);
    viewer::VolumeHistogram histogram(1024);
    const viewer::Histogram waited = histogram.compute(t.id(), v.size, 1.25f);
    histogram.begin(t.id(), v.size, 1.25f);
    EXPECT_TRUE(histogram.busy());
    std::optional<viewer::Histogram> polled;
    int polls = 0;
    while (!polled && polls < 100000) {
      polled = histogram.poll(t.id(), v.size, 1.25f);
      ++polls;
    }
    ASSERT_TRUE(polled.has_value());
    EXPECT_FALSE(histogram.busy());
    EXPECT_EQ(polled->low, waited.low) << "constant " << constant;
    EXPECT_EQ(polled->high, waited.high);
    EXPECT_EQ(polled->counts, waited.counts);
    EXPECT_EQ(polled->below, waited.below);
    EXPECT_EQ(polled->above, waited.above);
    EXPECT_FALSE(histogram.poll(t.id(), v.size, 1.25f).has_value()) << "nothing more once answered";
  }
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

// On an FDK reconstruction of the phantom the window shows its inside: brain (1.02), ventricles (1.00) and the
// denser ellipsoids (1.03, 1.04) fall inside it, and it is narrow enough that 0.02 of contrast spans at least 10% of
// it (25 of 255 grey levels). The old default (0.5 and 99.5 percentiles of every voxel) spans air to skull, 0 to 2,
// where the same contrast is 1% (2-3 levels): the structures the issue found invisible.
TEST_F(GreyWindow, ObjectWindowShowsThePhantomsInside) {
  const Geometry g = test::circularScan(180, 96);
  const Image projections = projectPhantom(Phantom::sheppLogan(), g, {});
  FdkOptions o;
  o.backend = Backend::Cpu;
  const Image v = reconstructFdk(g, projections, VolumeGrid::centred({64, 64, 64}, {4, 4, 4}), o);
  const auto context = gl::Context::headless(0);
  const gl::Texture t = textureOf(v);
  viewer::VolumeHistogram gpu;
  const viewer::Histogram h = gpu.compute(t.id(), v.size, 1.0f);
  const auto window = viewer::objectWindow(h);
  ASSERT_TRUE(window.has_value());
  const auto [low, high] = *window;
  EXPECT_LT(low, 1.0);
  EXPECT_GT(high, 1.03);
  EXPECT_LT(high - low, 0.2) << low << ".." << high;
  const auto [oldLow, oldHigh] = percentileRange(v, 0.5, 99.5);
  EXPECT_GT(oldHigh - oldLow, 1.5) << "the old default, for contrast";
  // The same window from the CPU's histogram of the same bins: the choice itself runs on the host.
  const viewer::Histogram c = viewer::histogramCpu(v.data.data(), v.size, 1.0f, viewer::histogramStride(v.size), h.low, h.high, gpu.bins());
  EXPECT_EQ(viewer::objectWindow(c), window);
  // The cpu backend's volume takes the same three passes on the host: the same histogram, so the same window.
  EXPECT_EQ(viewer::objectWindow(viewer::histogramOnHost(v.data.data(), v.size, 1.0f)), window);
}

// A volume of air only (before the first projection, say) or a constant one: a window of some width, not NaN.
TEST_F(GreyWindow, ConstantVolumeGivesAUsableWindow) {
  const auto context = gl::Context::headless(0);
  Image v(VolumeGrid::centred({8, 8, 8}, {1, 1, 1}));
  const gl::Texture t = textureOf(v);
  viewer::VolumeHistogram gpu;
  const auto window = viewer::objectWindow(gpu.compute(t.id(), v.size, 1.0f));
  ASSERT_TRUE(window.has_value());
  EXPECT_LT(window->first, 0.0);
  EXPECT_GT(window->second, 0.0);
}

}  // namespace
}  // namespace glrecon
