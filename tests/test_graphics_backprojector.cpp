// The graphics-pipeline backprojectors (AG-GPU and MP-GPU) against the CPU reference, headless on whatever
// OpenGL 4.5 device EGL offers (Mesa's llvmpipe in CI). Skipped, with the reason, where there is none.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "device/gl/objects.h"
#include "device/gl/shader.h"
#include "device/cuda/device.h"
#include "operators/gl/gl_operator.h"
#include "test_support.h"
#include "viewer/window.h"

namespace glrecon {
namespace {

using test::kFloatRoundoff;

constexpr double kMaxQ = test::kTestMaxQ, kSlopeU = test::kTestSlopeU, kSlopeV = test::kTestSlopeV;
using test::smoothProjections;

// Backprojects in batches, asserting no GL error after each call and after the readback.
Image run(ConeBeamOperator& b, const Geometry& g, const std::vector<float>& q, std::size_t batch) {
  return test::backprojectInBatches(b, g, q, batch, [] { EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR)); });
}

// How far a GPU result may lie from the CPU one, per voxel, summed over projections:
//  - bilinear weights: GPUs may quantize the sub-texel fraction to 8 bits (NVIDIA, AMD), an error of up to
//    2^-8 in each of the two weights; each multiplies a neighbour difference, bounded by the projection's
//    slope (or by kMaxQ within a pixel of the detector edge, where the border's 0 begins);
//  - coordinates: both backends form u = U / W in float from float-rounded matrix terms, in different orders
//    (the GPU interpolates corner values in the rasterizer): 16 roundings of the terms' magnitudes
//    (|U0| + |i dU| + |u| (|W0| + |i dW|)) / |W| covers both, times the slope;
//  - the 1/w^2 weight and the interpolation arithmetic: 16 roundings of kMaxQ;
//  - the accumulation over N projections: N roundings of the running sum in each backend.
std::vector<double> tolerance(const Geometry& g, const VolumeGrid& grid, const Image& cpu) {
  std::vector<double> bound(grid.voxelCount(), 0.0);
  const double eps = kFloatRoundoff;
  const int nu = g.detector.nu, nv = g.detector.nv;
  for (std::size_t p = 0; p < g.size(); ++p) {
    const ProjectionMatrix m = g.matrix(p, grid);
    for (int k = 0; k < grid.size[2]; ++k)
      for (int j = 0; j < grid.size[1]; ++j)
        for (int i = 0; i < grid.size[0]; ++i) {
          const glm::dvec4 x(i, j, k, 1.0);
          const glm::dvec3 h = m.apply(x);
          const double u = h.x / h.z, v = h.y / h.z, w = h.z;
          if (!(u > -1 && v > -1 && u < nu && v < nv)) continue;
          auto terms = [&](int r) { return std::abs(m.m[r][0] * i) + std::abs(m.m[r][1] * j) + std::abs(m.m[r][2] * k) + std::abs(m.m[r][3]); };
          const double du = 16 * eps * (terms(0) + std::abs(u) * terms(2)) / std::abs(w);
          const double dv = 16 * eps * (terms(1) + std::abs(v) * terms(2)) / std::abs(w);
          const double slopeU = (u < 0 || u > nu - 1) ? kMaxQ : kSlopeU, slopeV = (v < 0 || v > nv - 1) ? kMaxQ : kSlopeV;
          const double edge = std::max(slopeU, slopeV);
          bound[cpu.index(i, j, k)] +=
              (1 / (w * w)) * (2 * std::pow(2.0, -8) * edge * 2 + slopeU * du + slopeV * dv + 16 * eps * kMaxQ);
        }
  }
  for (std::size_t i = 0; i < bound.size(); ++i) bound[i] += 2 * g.size() * eps * std::abs(cpu.data[i]);
  return bound;
}

void expectAgree(const Image& cpu, const Image& gpu, const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(cpu.data.size(), gpu.data.size());
  std::size_t failures = 0;
  double worst = 0, worstRatio = 0;
  for (std::size_t i = 0; i < cpu.data.size(); ++i) {
    const double d = std::abs(double(cpu.data[i]) - gpu.data[i]);
    worst = std::max(worst, d);
    worstRatio = std::max(worstRatio, d / (bound[i] + 1e-300));
    if (!(d <= bound[i])) ++failures;
  }
  EXPECT_EQ(failures, 0u) << what << ": largest |difference| " << worst << ", largest difference / bound " << worstRatio;
  std::printf("%s: largest |gpu - cpu| %.3g (%.3g of its bound)\n", what.c_str(), worst, worstRatio);
}

void compareBackends(const Geometry& g, const VolumeGrid& grid, const std::string& label,
                     const std::vector<std::string>& backends = {"graphics", "graphics-mp", "compute"}) {
  const std::vector<float> q = smoothProjections(g);
  auto cpuOperator = makeOperator(Backend::Cpu, g, grid);
  const Image cpu = run(*cpuOperator, g, q, g.size());
  const std::vector<double> bound = tolerance(g, grid, cpu);
  std::size_t nonzero = 0;
  for (float x : cpu.data) nonzero += x != 0.0f;
  ASSERT_GT(nonzero, cpu.data.size() / 2);
  // The same test body for every OpenGL backend; "max" is each device's and backend's own limit.
  for (const std::string& backend : backends) {
    for (const int w : {1, 3, 8, kMaximumWindow}) {
      OperatorOptions o;
      o.window = w;
      auto gpu = test::makeNamed(backend, g, grid, o);
      // Batches of 5 do not divide the windows: partial windows carry over between calls.
      expectAgree(cpu, run(*gpu, g, q, 5), bound, label + " " + gpu->description());
    }
  }
}

TEST(Graphics, MatchesCpuOnNonCubicAnisotropicVolume) {
  GLRECON_SKIP_WITHOUT_GL();
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

TEST(Graphics, MatchesCpuWithOffsetDetectorTiltAndRoll) {
  GLRECON_SKIP_WITHOUT_GL();
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

TEST(Graphics, MatchesCpuOnANonCircularTrajectory) {
  GLRECON_SKIP_WITHOUT_GL();
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

TEST(Graphics, AutomaticWindowMeasuresAndKeepsTheFastest) {
  GLRECON_SKIP_WITHOUT_GL();
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

TEST(Graphics, LimitsAndFailuresAreReportedClearly) {
  GLRECON_SKIP_WITHOUT_GL();
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

TEST(Graphics, ShaderErrorsNameStageFileAndLog) {
  GLRECON_SKIP_WITHOUT_GL();
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

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

TEST(Graphics, WindowContextRunsTheSamePath) {
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

// The CUDA backend runs the same test body; it is compiled in CI and runs where a CUDA device exists.
TEST(Cuda, MatchesCpuOnTheSameGeometries) {
  if (!cuda::built()) GTEST_SKIP() << "this build has no CUDA backend (no CUDA compiler found)";
  CircularScanSpec spec;
  spec.projections = 70;  // more than its largest window (64)
  spec.nu = 72;
  spec.nv = 56;
  spec.spacingU = spec.spacingV = 5.0;
  spec.projectionOffsetX = 30;
  spec.outOfPlaneAngle = 6;
  const Geometry g = makeCircularScan(spec);
  VolumeGrid grid;
  grid.size = {36, 28, 20};
  grid.spacing = {5.0, 6.5, 8.0};
  grid.origin = {-90, -85, -70};
  try {
    makeOperator(Backend::Cuda, g, grid);
  } catch (const CudaError& e) {
    GTEST_SKIP() << e.what();
  }
  compareBackends(g, grid, "cuda", {"cuda"});
}

}  // namespace
}  // namespace glrecon
