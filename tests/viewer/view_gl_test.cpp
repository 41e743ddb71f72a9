// The viewer as a user runs it: `glrecon view` in a window under Xvfb (its axial panel pixel for pixel against the
// written volume; closing mid-scan cancels) and --offscreen on every backend it takes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>

#include "glrecon/io.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "png_support.h"


namespace glrecon {
namespace {

using GraphicsView = test::GlTest;
using namespace test;
namespace fs = std::filesystem;

// The viewer under Xvfb: its axial panel shows the final volume's central axial slice through the same
// window/level, pixel for pixel (within one grey level for rounding), and closing mid-scan ends cleanly.
// How many of the axial panel's 32 x 32 voxels (y = 16) the screenshot shows other than the written volume in the
// grey range 0.9..1.2, beyond 8-bit rounding. Layout (viewer.cpp): panels of 360 px side by side above a 12 px
// progress bar; the axial panel first, x across and z up, each voxel a zoom x zoom block, zoom = 360 / 32 = 11.
std::size_t voxelsShownWrongly(const fs::path& screenshot, const Image& v) {
  const Png png = readPng(screenshot);
  if (png.width == 0) return SIZE_MAX;
  const int zoom = 11, bar = 12, height = png.height, j = 16;
  std::size_t off = 0;
  for (int k = 0; k < 32; ++k)
    for (int i = 0; i < 32; ++i) {
      const int px = i * zoom + zoom / 2, glY = bar + k * zoom + zoom / 2, row = height - 1 - glY;
      const int shown = png.at(px, row)[0];
      const double t = std::clamp((v.at(i, j, k) - 0.9) / (1.2 - 0.9), 0.0, 1.0);
      off += std::abs(shown - static_cast<int>(std::lround(t * 255))) > 1;
    }
  return off;
}

TEST_F(GraphicsView, ScreenshotShowsTheReconstructedSliceAndClosingCancels) {
  if (!std::getenv("DISPLAY")) GTEST_SKIP() << "no X display: run under xvfb-run (./quickstart.sh test does)";
  const auto dir = test::scratchDir();
  CliRun r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --backend graphics --window 8 --slice-range 0.9:1.2 "
                          "--screenshot shot.png -o v.mha");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "frames/s")) << r.output;
  EXPECT_EQ(voxelsShownWrongly(dir / "shot.png", readMetaImage((dir / "v.mha").string())), 0u) << "of 1024 voxels";
  // Closing the window mid-scan (as a user would, after 50 of 360): a clean stop, nothing written.
  const auto start = std::chrono::steady_clock::now();
  r = runCli(dir, "view --simulate 100 --size 32 --spacing 8 --backend graphics --close-after 50 -o w.mha");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "cancelled")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "w.mha"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);  // 360 at 100/s would take 3.6 s
}

// --offscreen draws the window's frames on a headless context (no display needed): the same pixels as a window
// for every backend the viewer takes, the frame rate reported, and the same clean stop mid-scan.
TEST_F(GraphicsView, OffscreenFramesShowTheReconstructedSliceOnEveryBackend) {
  const auto dir = test::scratchDir() / "offscreen";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string backend : {"graphics", "graphics-mp", "compute", "cpu"}) {
    const CliRun r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --backend " + backend +
                                     " --window 8 --slice-range 0.9:1.2 --offscreen --screenshot " + backend + ".png -o " + backend + ".mha");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frames/s")) << r.output;
    EXPECT_EQ(voxelsShownWrongly(dir / (backend + ".png"), readMetaImage((dir / (backend + ".mha")).string())), 0u)
        << backend << ": of 1024 voxels";
  }
  CliRun r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --backend compute --offscreen --close-after 50 -o w.mha");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "offscreen frames closed after")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "w.mha"));
  r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --offscreen --headless -o x.mha");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--offscreen: expected without --headless")) << r.output;
  r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --offscreen --method sart -o x.mha");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--offscreen: expected with --method fdk, found 'sart'")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.mha"));
}

}  // namespace
}  // namespace glrecon
