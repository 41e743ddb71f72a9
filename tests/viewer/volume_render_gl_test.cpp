// The 3D view (viewer/volume_renderer.h) against its CPU reference, headless: the Shepp-Logan phantom's MIP bit for
// bit from several cameras, DVR within the bound derived below, an axis-aligned ray against the volume's own column
// maximum (an oracle outside the model's code), and a wrong camera or transfer function detected.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "device/gl/objects.h"
#include "device/gl/state_scope.h"
#include "device_fixtures.h"
#include "glrecon/errors.h"
#include "glrecon/phantom.h"
#include "test_support.h"
#include "viewer/volume_renderer.h"

namespace glrecon {
namespace {

using VolumeView3d = test::GlTest;
using viewer::OrbitCamera;
using viewer::VolumeMode;
using viewer::VolumeStyle;

// The phantom on an anisotropic grid (every axis its own size and spacing, so a mix-up of axes shows), and its
// texture as the viewer gets it from an operator: a 2D array of r32f, layer z.
struct Scene {
  std::unique_ptr<gl::Context> context = gl::Context::headless(0);
  VolumeGrid grid = VolumeGrid::centred({48, 50, 44}, {5.5, 5.0, 6.0});
  Image volume = voxelizePhantom(Phantom::sheppLogan(), grid, 2);
  gl::Texture texture = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  Scene() {
    glTextureStorage3D(texture.id(), 1, GL_R32F, grid.size[0], grid.size[1], grid.size[2]);
    gl::StateScope keep;
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glTextureSubImage3D(texture.id(), 0, 0, 0, 0, grid.size[0], grid.size[1], grid.size[2], GL_RED, GL_FLOAT, volume.data.data());
  }
};

struct Comparison {
  std::size_t differing = 0, hit = 0;
  double maxDifference = 0;
};

Comparison compare(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  Comparison c;
  for (std::size_t i = 0; i < gpu.size(); i += 4) {
    double d = 0;
    for (int j = 0; j < 4; ++j) d = std::max(d, std::fabs(static_cast<double>(gpu[i + j]) - cpu[i + j]));
    c.differing += d > 0;
    c.maxDifference = std::max(c.maxDifference, d);
    c.hit += cpu[i + 1] > 0;
  }
  return c;
}

constexpr int kWidth = 97, kHeight = 73;  // odd: one pixel's ray is the view axis itself

std::vector<OrbitCamera> cameras() {
  std::vector<OrbitCamera> list;
  for (const auto& [yaw, pitch, zoom] : {std::tuple{0.0, 0.0, 1.0}, {0.6, 0.35, 1.0}, {-2.2, -0.9, 1.7}, {1.5707963267948966, 0.0, 0.8}}) {
    OrbitCamera c;
    c.yaw = yaw;
    c.pitch = pitch;
    c.zoom = zoom;
    list.push_back(c);
  }
  return list;
}

// A transfer function for the phantom: air clear, brain (1.02) a faint orange haze, skull (2.0) opaque white.
std::vector<viewer::TransferPoint> skullAndBrain() {
  return {{0.9f, 0, 0, 0, 0}, {1.02f, 0.9f, 0.5f, 0.2f, 0.01f}, {1.9f, 1, 1, 1, 0.3f}, {2.1f, 1, 1, 1, 0.6f}};
}

// MIP: the maximum of the same voxels' values (shaders/volume_view.frag says why they are the same voxels) is the same
// float, so the images are equal bit for bit: raw maxima and the grey window applied to them. The front and side
// views look along axes, where sample planes fall on voxel boundaries: the cases a rounding difference would show.
TEST_F(VolumeView3d, MipOfThePhantomEqualsTheCpuReferenceExactly) {
  Scene s;
  viewer::VolumeRenderer renderer;
  for (const bool raw : {true, false}) {
    VolumeStyle style;
    style.raw = raw;
    style.low = 0.95;
    style.high = 1.1;
    for (const OrbitCamera& camera : cameras()) {
      renderer.render(s.texture.id(), s.grid, 1.0f, camera, style, kWidth, kHeight);
      const std::vector<float> gpu = renderer.read();
      ASSERT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
      const Comparison c = compare(gpu, viewer::renderVolumeCpu(s.volume.data.data(), s.grid, 1.0f, camera, style, kWidth, kHeight));
      EXPECT_EQ(c.differing, 0u) << "yaw " << camera.yaw << " raw " << raw << ": max difference " << c.maxDifference;
      if (raw) EXPECT_GT(c.hit, static_cast<std::size_t>(kWidth * kHeight / 10)) << "the volume is in view";
    }
  }
  // The scale (FDK's projections in the scan over those so far) multiplies every voxel: same on both sides.
  VolumeStyle style;
  style.raw = true;
  renderer.render(s.texture.id(), s.grid, 2.75f, cameras()[1], style, kWidth, kHeight);
  EXPECT_EQ(compare(renderer.read(), viewer::renderVolumeCpu(s.volume.data.data(), s.grid, 2.75f, cameras()[1], style, kWidth, kHeight)).differing, 0u);
}

// An oracle outside the model's code: from yaw 0, pitch 0 the central pixel of an odd-sized view looks straight down
// -z through voxel column (24, 25, k) (the grid's centre is on voxel boundaries in x and y: voxel coordinates 24 and
// 25 exactly). With planes 2.5 mm apart every 6 mm voxel along z is sampled, so the pixel is the column's maximum.
TEST_F(VolumeView3d, AxialRayFindsItsColumnsMaximum) {
  Scene s;
  viewer::VolumeRenderer renderer;
  VolumeStyle style;
  style.raw = true;
  style.stepVoxels = 0.5;  // 2.5 mm planes: every 6 mm voxel along z gets at least two samples
  OrbitCamera camera;
  camera.yaw = 0.0;
  camera.pitch = 0.0;
  renderer.render(s.texture.id(), s.grid, 1.0f, camera, style, kWidth, kHeight);
  const std::vector<float> gpu = renderer.read();
  const std::size_t centre = (static_cast<std::size_t>(kHeight / 2) * kWidth + kWidth / 2) * 4;
  // The view axis passes through voxel coordinates (24, 25): voxel column (24, 25, k).
  float columnMax = -INFINITY;
  for (int k = 0; k < s.grid.size[2]; ++k) columnMax = std::max(columnMax, s.volume.at(24, 25, k));
  EXPECT_EQ(gpu[centre], columnMax);
  EXPECT_EQ(gpu[centre + 1], 1.0f);
}

// DVR composites front to back in the same operations and order as the reference (transfer function lookups are
// products and sums of the same uploaded floats; `precise` everywhere). The one latitude GLSL leaves is flushing
// subnormal results to zero: each flushed value is below 2^-126 and enters the pixel through at most one product
// with factors <= 1 per sample, so over S samples a channel moves by at most S * 2^-126 (plus the early stop at
// opacity 0.99 can only move where such a flush changes the comparison, which the same bound covers as the flushed
// terms are what differ). S is at most the frame's plane count.
TEST_F(VolumeView3d, DvrMatchesTheCpuReferenceWithinTheSubnormalBound) {
  Scene s;
  viewer::VolumeRenderer renderer;
  VolumeStyle style;
  style.mode = VolumeMode::Dvr;
  style.transfer = skullAndBrain();
  std::size_t differing = 0;
  for (const OrbitCamera& camera : cameras()) {
    renderer.render(s.texture.id(), s.grid, 1.0f, camera, style, kWidth, kHeight);
    const std::vector<float> gpu = renderer.read();
    const viewer::RayFrame frame = viewer::rayFrame(s.grid, camera, style, kWidth, kHeight);
    const double bound = frame.samples * std::ldexp(1.0, -126);
    const Comparison c = compare(gpu, viewer::renderVolumeCpu(s.volume.data.data(), s.grid, 1.0f, camera, style, kWidth, kHeight));
    EXPECT_LE(c.maxDifference, bound) << "yaw " << camera.yaw << ": " << c.differing << " pixels differ";
    differing += c.differing;
    // Not a blank image: the skull (2.0) is opaque enough to show.
    double brightest = 0;
    for (std::size_t i = 0; i < gpu.size(); i += 4) brightest = std::max(brightest, static_cast<double>(gpu[i]));
    EXPECT_GT(brightest, 0.5);
  }
  // On llvmpipe (no flushing on this path) none differ at all; recorded, not required.
  RecordProperty("dvr_pixels_differing", static_cast<int>(differing));
}

// The comparison can fail: a camera 0.01 rad off, a view upside down, or a transfer function with one colour changed
// renders differently from what the GPU drew.
TEST_F(VolumeView3d, AWrongCameraOrTransferFunctionIsDetected) {
  Scene s;
  viewer::VolumeRenderer renderer;
  VolumeStyle style;
  style.mode = VolumeMode::Dvr;
  style.transfer = skullAndBrain();
  const OrbitCamera camera = cameras()[1];
  renderer.render(s.texture.id(), s.grid, 1.0f, camera, style, kWidth, kHeight);
  const std::vector<float> gpu = renderer.read();
  const auto differing = [&](const OrbitCamera& c, const VolumeStyle& st) {
    return compare(gpu, viewer::renderVolumeCpu(s.volume.data.data(), s.grid, 1.0f, c, st, kWidth, kHeight));
  };
  OrbitCamera turned = camera;
  turned.yaw += 0.01;
  EXPECT_GT(differing(turned, style).differing, 50u);
  OrbitCamera flipped = camera;
  flipped.pitch = -camera.pitch;
  EXPECT_GT(differing(flipped, style).maxDifference, 0.1);
  VolumeStyle recoloured = style;
  recoloured.transfer[2].g = 0.5f;  // bone no longer white
  recoloured.transfer[3].g = 0.5f;
  EXPECT_GT(differing(camera, recoloured).maxDifference, 0.1);
}

// Bad transfer functions are refused before drawing, naming the point.
TEST(VolumeModel, TransferFunctionErrorsNameThePoint) {
  VolumeStyle style;
  style.transfer = {{1.0f, 1, 1, 1, 0.1f}, {1.0f, 1, 1, 1, 0.2f}};
  test::expectError<UsageError>([&] { viewer::rayFrame(VolumeGrid::centred({4, 4, 4}, {1, 1, 1}), {}, style, 8, 8); },
                                {"control point 1", "expected a density above 1", "found 1"});
  style.transfer.clear();
  test::expectError<UsageError>([&] { viewer::rayFrame(VolumeGrid::centred({4, 4, 4}, {1, 1, 1}), {}, style, 8, 8); },
                                {"expected 1 to 8 control points, found 0"});
}

}  // namespace
}  // namespace glrecon
