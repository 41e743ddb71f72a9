// The GL operators (graphics AG-GPU and MP-GPU, compute) against the CPU one, voxel by voxel within a derived
// bound; the automatic window; limits, device and shader errors; a window's context. On the GL fixture.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <vector>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "device/gl/objects.h"
#include "device/gl/shader.h"
#include "device/cuda/device.h"
#include "operators/gl/gl_operator.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "viewer/window.h"
#include "operator_support.h"

namespace glrecon {
namespace {

using Graphics = test::GlTest;
using namespace test;  // operator_support.h
using test::kFloatRoundoff;
using test::smoothProjections;

TEST_F(Graphics, MatchesCpuOnNonCubicAnisotropicVolume) {
  CircularScanSpec spec;
  spec.projections = 50;  // more than the largest window (42 on Mesa, 41 on NVIDIA), so W = max is the varyings' limit
  spec.nu = 72;
  spec.nv = 56;
  spec.spacingU = spec.spacingV = 5.0;
  VolumeGrid grid;
  grid.size = {36, 28, 20};
  grid.spacing = {5.0, 6.5, 8.0};
  grid.origin = {-90, -85, -70};
  compareBackends(makeCircularScan(spec), grid, "anisotropic");
}

TEST_F(Graphics, MatchesCpuWithOffsetDetectorTiltAndRoll) {
  CircularScanSpec spec;
  spec.projections = 17;
  spec.arc = 250;
  spec.nu = 48;
  spec.nv = 40;
  spec.spacingU = 5.0;
  spec.spacingV = 4.0;
  spec.projectionOffsetX = 70;  // a third of the volume falls off the detector
  spec.sourceOffsetY = -12;
  spec.outOfPlaneAngle = 9;
  spec.inPlaneAngle = 4;
  compareBackends(makeCircularScan(spec), VolumeGrid::centred({30, 26, 22}, glm::dvec3(6.0)), "offset");
}

TEST_F(Graphics, MatchesCpuOnANonCircularTrajectory) {
  // A saddle: the source rises and falls twice per turn; the detector follows, rolled by a varying angle.
  Geometry g;
  g.detector = DetectorLayout::centred(64, 48, 5.0, 5.0);
  for (int p = 0; p < 19; ++p) {
    const double a = 2 * std::numbers::pi * p / 19, roll = 0.1 * std::sin(3 * a);
    const glm::dvec3 forward(-std::sin(a), -0.03 * std::cos(2 * a), -std::cos(a));
    const glm::dvec3 source = glm::dvec3(900 * std::sin(a), 60 * std::sin(2 * a), 900 * std::cos(a));
    const glm::dvec3 right0 = glm::normalize(glm::cross(forward, glm::dvec3(0, 1, 0)));
    const glm::dvec3 up0 = glm::normalize(glm::cross(right0, forward));
    const glm::dvec3 right = std::cos(roll) * right0 + std::sin(roll) * up0, up = -std::sin(roll) * right0 + std::cos(roll) * up0;
    const glm::dvec3 centre = source + 1400.0 * glm::normalize(forward);
    ProjectionVectors v;
    v.source = source;
    v.uStep = 5.0 * right;
    v.vStep = 5.0 * up;
    v.pixel00 = centre - 31.5 * v.uStep - 23.5 * v.vStep;
    g.views.push_back(v);
  }
  g.validate("saddle");
  compareBackends(g, VolumeGrid::centred({32, 24, 28}, glm::dvec3(5.0)), "saddle");
}

TEST_F(Graphics, AutomaticWindowMeasuresAndKeepsTheFastest) {
  CircularScanSpec spec;
  spec.projections = 260;  // the search takes 2 x (1 + 2 + 4 + 8 + 16 + 32 + 42) = 210
  spec.nu = spec.nv = 32;
  spec.spacingU = spec.spacingV = 8.0;
  const Geometry g = makeCircularScan(spec);
  const VolumeGrid grid = VolumeGrid::centred({24, 24, 24}, glm::dvec3(8.0));
  auto made = makeOperator(Backend::Graphics, g, grid);  // window 0: automatic
  GlOperator& gpu = dynamic_cast<GlOperator&>(*made);
  const std::vector<float> q = smoothProjections(g);
  const Image result = run(gpu, g, q, 32);
  const auto& timings = gpu.windowTimings();
  ASSERT_GE(timings.size(), 4u);
  EXPECT_EQ(timings.front().first, 1);
  EXPECT_EQ(timings.back().first, gpu.maxWindow());
  const auto fastest = std::min_element(timings.begin(), timings.end(), [](auto& a, auto& b) { return a.second < b.second; });
  EXPECT_EQ(gpu.window(), fastest->first);
  for (const auto& [w, seconds] : timings) std::printf("window %2d: %.3g ms per projection\n", w, seconds * 1e3);
  // Every projection went in exactly once, whatever the windows were.
  auto cpuOperator = makeOperator(Backend::Cpu, g, grid);
  const Image cpu = run(*cpuOperator, g, q, g.size());
  expectAgree(cpu, result, tolerance(g, grid, cpu), "auto window");
}

// blockLargestMagnitude on the GL backends: the largest |voxel| exactly (a pass on the GPU, so that the scheduler skips
// the host's scan), infinity, and NaN where any voxel is NaN, so that the host's check runs and names it; in a block of
// rows too (only the rows it holds).
TEST_F(Graphics, BlockLargestMagnitudeFindsTheLargestAndNaN) {
  const Geometry g = test::circularScan(4, 8);
  const VolumeGrid grid = VolumeGrid::centred({300, 7, 21}, glm::dvec3(4.0));  // 300: two work groups along x, 21: two runs of z
  for (const Backend backend : {Backend::Compute, Backend::Graphics, Backend::GraphicsMp}) {
    const std::string name = backendInfo(backend).name;
    auto op = makeOperator(backend, g, grid, {});
    std::vector<float> voxels(grid.voxelCount());
    for (std::size_t i = 0; i < voxels.size(); ++i) voxels[i] = std::sin(0.37f * static_cast<float>(i));
    voxels[voxels.size() - 1] = -7.5f;  // the last voxel: the last x, row and slice
    op->setVolume(voxels.data());
    std::optional<float> largest = op->blockLargestMagnitude();
    ASSERT_TRUE(largest.has_value()) << name;
    EXPECT_EQ(*largest, 7.5f) << name;
    voxels[200] = std::numeric_limits<float>::infinity();
    op->setVolume(voxels.data());
    EXPECT_EQ(*op->blockLargestMagnitude(), std::numeric_limits<float>::infinity()) << name;
    voxels[17] = std::numeric_limits<float>::quiet_NaN();
    op->setVolume(voxels.data());
    EXPECT_TRUE(std::isnan(*op->blockLargestMagnitude())) << name;
  }
  // Blocks of a 40-row grid: 32 rows, then the last 8: the texture's rows beyond those the block holds do not count.
  const VolumeGrid tall = VolumeGrid::centred({40, 40, 9}, glm::dvec3(4.0));
  OperatorOptions options;
  options.blockRows = 32;
  auto op = makeOperator(Backend::Compute, g, tall, options);
  op->moveBlock(0, 32);
  std::vector<float> block(static_cast<std::size_t>(40) * 32 * 9, 1.0f);
  block[5] = 900.0f;
  op->setVolume(block.data());
  EXPECT_EQ(*op->blockLargestMagnitude(), 900.0f);
  op->moveBlock(32, 8);  // zeroes the texture; it holds 8 rows now
  std::vector<float> shorter(static_cast<std::size_t>(40) * 8 * 9, -2.0f);
  op->setVolume(shorter.data());
  EXPECT_EQ(*op->blockLargestMagnitude(), 2.0f);
}

TEST_F(Graphics, LimitsAndFailuresAreReportedClearly) {
  CircularScanSpec spec;
  spec.projections = 4;
  const Geometry g = makeCircularScan(spec);
  // More slices than a texture array has layers.
  GLint layers = 0;
  {
    auto context = gl::Context::headless(0);
    glGetIntegerv(GL_MAX_ARRAY_TEXTURE_LAYERS, &layers);
  }
  VolumeGrid tall = VolumeGrid::centred({2, 2, layers + 1}, glm::dvec3(0.1));
  test::expectError<InputError>([&] { makeOperator(Backend::Graphics, g, tall); },
                                {"volume size z", "at most " + std::to_string(layers), std::to_string(layers + 1)});
  // A device that does not exist.
  test::expectError<gl::GlError>([] { gl::Context::headless(7); }, {"gpu 7", "EGL device"});
  // A window beyond what the varyings allow.
  OperatorOptions o;
  o.window = 1000;
  test::expectError<UsageError>([&] { makeOperator(Backend::Graphics, g, VolumeGrid::centred({8, 8, 8}, glm::dvec3(8.0)), o); }, {"window"});
}

TEST_F(Graphics, ShaderErrorsNameStageFileAndLog) {
  auto context = gl::Context::headless(0);
  test::expectError<gl::ShaderError>(
      [] {
        gl::buildProgramFromSources({{{GL_VERTEX_SHADER, "ok.vert"}, "void main() { gl_Position = vec4(0.0); }"},
                                     {{GL_FRAGMENT_SHADER, "broken.frag"}, "out vec4 c;\nvoid main() { c = undefined_name; }"}});
      },
      {"broken.frag", "fragment stage", "failed to compile", "undefined_name"});
  test::expectError<gl::ShaderError>([] { gl::shaderSource("missing.frag"); }, {"missing.frag"});
  EXPECT_NE(gl::shaderSource("backproject_ag.vert").find("noperspective"), std::string::npos);
  EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR));
}

TEST_F(Graphics, WindowContextRunsTheSamePath) {
  if (!std::getenv("DISPLAY")) GTEST_SKIP() << "no X display: run the tests under xvfb-run (./quickstart.sh test does)";
  std::unique_ptr<viewer::ViewWindow> view;
  try {
    view = std::make_unique<viewer::ViewWindow>(64, 64, "glrecon test", false, false, 0);
  } catch (const gl::GlError& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_FALSE(view->offscreen());
  gl::Context* window = &view->context();
  CircularScanSpec spec;
  spec.projections = 12;
  spec.nu = spec.nv = 40;
  spec.spacingU = spec.spacingV = 6.0;
  const Geometry g = makeCircularScan(spec);
  const VolumeGrid grid = VolumeGrid::centred({20, 18, 16}, glm::dvec3(8.0));
  const std::vector<float> q = smoothProjections(g);
  auto cpuOperator = makeOperator(Backend::Cpu, g, grid);
  const Image cpu = run(*cpuOperator, g, q, g.size());
  OperatorOptions o;
  o.window = 5;
  o.context = window;
  auto gpu = makeOperator(Backend::Graphics, g, grid, o);
  EXPECT_NE(gpu->description().find(window->info().renderer), std::string::npos);
  expectAgree(cpu, run(*gpu, g, q, 7), tolerance(g, grid, cpu), "window context");
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// Parallel beam: the FDK back projection (an affine matrix, w = 1) on every GL backend and window against cpu, within
// the cone's derived bound (it holds for w = 1 as it is: 1/w^2 = 1).
TEST_F(Graphics, MatchesCpuOnParallelBeamScans) {
  test::compareBackends(test::parallelScan(50, 60, 300.0), VolumeGrid::centred({36, 28, 20}, {5.0, 6.5, 8.0}), "parallel3d");
  test::compareBackends(test::tiltedParallelScan(17, 56, 44, 5.0), VolumeGrid::centred({30, 26, 22}, glm::dvec3(6.0)), "parallel3d_vec");
}

}  // namespace
}  // namespace glrecon
