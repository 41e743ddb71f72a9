// `glrecon app` as a script runs it: offscreen (no display) and in a window under Xvfb. Its 3D series' first frame
// against the CPU reference rendering of the volume it wrote, the series turning, a scan opened from files (and
// remembered), closing mid-scan writing nothing, and bad input named.
#include <gtest/gtest.h>

#include <filesystem>


#include "../app/cli_support.h"
#include "device_fixtures.h"
#include "glrecon/io.h"
#include "test_support.h"
#include "png_support.h"
#include "viewer/volume_renderer.h"

namespace glrecon {
namespace {

using App = test::GlTest;
using namespace test;
namespace fs = std::filesystem;


fs::path freshDir(const std::string& name) {
  const fs::path dir = test::scratchDir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The recent-scans cache goes to the test's own folder, not the user's.
std::string cacheIn(const fs::path& dir) { return "XDG_CACHE_HOME='" + (dir / "cache").string() + "'"; }

// The series' first frame is the 3D view from the default camera: MIP through the grey window given, of the volume
// the app wrote (the cpu backend draws exactly the volume it writes: its texture is that volume uploaded). The CPU
// reference renders the same floats (volume_render_gl_test.cpp says why), and both are turned into bytes by the
// same rounding, so the frame is equal byte for byte.
TEST_F(App, OffscreenRunSavesVolumeScreenshotAndA3dSeriesMatchingTheCpuReference) {
  const fs::path dir = freshDir("app-offscreen");
  const CliRun r = runCli(dir,
                          "app --offscreen --start --simulate 0 --size 32 --spacing 8 --backend cpu --mip --range 0.9:2.1 --resolution 900x600 "
                          "-o v.mha --screenshot shot.png --series turn --series-frames 3",
                          cacheIn(dir));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "frames/s")) << r.output;
  const Png shot = readPng(dir / "shot.png");
  EXPECT_EQ(shot.width, 900);
  EXPECT_EQ(shot.height, 600);
  const Image v = readMetaImage((dir / "v.mha").string());
  VolumeGrid grid;
  grid.size = v.size;
  grid.spacing = {v.spacing[0], v.spacing[1], v.spacing[2]};
  grid.origin = {v.origin[0], v.origin[1], v.origin[2]};
  const Png first = readPng(dir / "turn" / "view3d_0000.png");
  ASSERT_GT(first.width, 100) << r.output;
  viewer::VolumeStyle style;
  style.mode = viewer::VolumeMode::Mip;
  style.low = 0.9;
  style.high = 2.1;
  const std::vector<float> cpu = viewer::renderVolumeCpu(v.data.data(), grid, 1.0f, viewer::OrbitCamera{}, style, first.width, first.height);
  std::size_t off = 0, bright = 0;
  for (int y = 0; y < first.height; ++y)
    for (int x = 0; x < first.width; ++x)
      for (int c = 0; c < 3; ++c) {
        const float value = cpu[(static_cast<std::size_t>(first.height - 1 - y) * first.width + x) * 4 + c];
        const auto expected = static_cast<unsigned char>(std::clamp(value, 0.0f, 1.0f) * 255.0f + 0.5f);
        const unsigned char shown = first.rgb[(static_cast<std::size_t>(y) * first.width + x) * 3 + c];
        off += shown != expected;
        bright += shown > 200;
      }
  EXPECT_EQ(off, 0u) << "of " << first.width * first.height * 3 << " bytes";
  EXPECT_GT(bright, 1000u) << "the skull shows";
  // The series turns: a third of a turn later the view differs.
  const Png second = readPng(dir / "turn" / "view3d_0001.png");
  EXPECT_EQ(second.width, first.width);
  EXPECT_NE(second.rgb, first.rgb);
  EXPECT_TRUE(fs::exists(dir / "turn" / "view3d_0002.png"));
}

// --measure: each round the same reconstruction without frames, then the app's, and a line comparing them; then the
// medians against the goals. (The figures themselves are the GPU's to judge: here only that they are there.)
TEST_F(App, MeasureComparesTheAppWithTheReconstructionWithoutFrames) {
  const fs::path dir = freshDir("app-measure");
  const CliRun r = runCli(dir, "app --offscreen --start --simulate 0 --size 24 --spacing 10 --backend compute --resolution 800x600 --measure 2",
                          cacheIn(dir));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "app measure: without frames: compute")) << r.output;
  EXPECT_TRUE(contains(r.output, "app measure 1/2: the app ")) << r.output;
  EXPECT_TRUE(contains(r.output, "app measure 2/2: the app ")) << r.output;
  EXPECT_TRUE(contains(r.output, "app measure: medians of 2 rounds")) << r.output;
  EXPECT_TRUE(contains(r.output, "frames/s while projections arrived (goal >= 60: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "ms GPU each")) << r.output;
  const CliRun bad = runCli(dir, "app --offscreen --start --simulate 0 --measure 1 --close-after 5", cacheIn(dir));
  EXPECT_EQ(bad.exitCode, 2) << bad.output;
  EXPECT_TRUE(contains(bad.output, "--measure: expected without --close-after")) << bad.output;
}

// Closing mid-scan (as a user closing the window would, after 50 of 360): a clean stop, nothing written.
TEST_F(App, ClosingMidScanCancelsAndWritesNothing) {
  const fs::path dir = freshDir("app-close");
  const CliRun r = runCli(dir, "app --offscreen --start --simulate 0 --size 32 --spacing 8 --backend compute --close-after 50 -o w.mha --screenshot w.png",
                          cacheIn(dir));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "closed after 50 of 360 projections: reconstruction cancelled, nothing written")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "w.mha"));
  EXPECT_FALSE(fs::exists(dir / "w.png"));
}

// A screenshot mid-scan (--screenshot-at, the README's picture): taken at the first frame once 120 of the 360
// projections are in, said with the count it shows, and the run goes on to the end (the volume is written).
TEST_F(App, ScreenshotAtTakesItMidScanAndTheRunGoesOn) {
  const fs::path dir = freshDir("app-midscan");
  const CliRun r = runCli(dir, "app --offscreen --start --simulate 0 --size 32 --spacing 8 --backend compute --resolution 640x480 "
                               "--screenshot-at 120 --screenshot mid.png -o v.mha", cacheIn(dir));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::size_t at = r.output.find("screenshot at ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const int shown = std::stoi(r.output.substr(at + 14));
  EXPECT_GE(shown, 120) << r.output;
  EXPECT_LT(shown, 360) << "taken at the end, not mid-scan: " << r.output;
  EXPECT_TRUE(contains(r.output, "of 360 projections: mid.png")) << r.output;
  EXPECT_EQ(readPng(dir / "mid.png").width, 640);
  EXPECT_TRUE(fs::exists(dir / "v.mha")) << "the run went on to the end";
  for (const auto& [options, message] :
       {std::pair{"--screenshot-at 5", "--screenshot-at: expected with --screenshot and --start"},
        std::pair{"--screenshot-at 5 --screenshot s.png --close-after 9", "--screenshot-at: expected without --close-after"}}) {
    const CliRun bad = runCli(dir, std::string("app --offscreen --start --simulate 0 --size 32 --spacing 8 ") + options, cacheIn(dir));
    EXPECT_EQ(bad.exitCode, 2) << options << ": " << bad.output;
    EXPECT_TRUE(contains(bad.output, message)) << bad.output;
    EXPECT_FALSE(fs::exists(dir / "s.png"));
  }
}

// A scan from files (RTK XML and a MetaImage stack) in a window under Xvfb, on a GL backend; the scan is remembered
// among the recent ones in the user cache.
TEST_F(App, WindowOpensAFileScanAndRemembersIt) {
  if (!std::getenv("DISPLAY")) GTEST_SKIP() << "no X display: run under xvfb-run (./quickstart.sh test does)";
  const fs::path dir = freshDir("app-window");
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const CliRun r = runCli(dir,
                          "app -g scan/geometry.xml -p scan/projections.mha --size 32 --spacing 8 --backend graphics --start "
                          "--resolution 1024x700 --screenshot shot.png -o v.mha",
                          cacheIn(dir));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const Png shot = readPng(dir / "shot.png");
  EXPECT_EQ(shot.width, 1024);
  EXPECT_EQ(shot.height, 700);
  EXPECT_TRUE(fs::exists(dir / "v.mha"));
  const std::string recent = readText(dir / "cache" / "glrecon" / "recent_scans.txt");
  EXPECT_TRUE(contains(recent, "scan/geometry.xml ; scan/projections.mha")) << recent;
}

// Bad input: what is wrong, named by its option or file, before any window opens; nothing written.
TEST_F(App, BadInputIsNamed) {
  const fs::path dir = freshDir("app-bad");
  CliRun r = runCli(dir, "app --offscreen --start --resolution 100x80", cacheIn(dir));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--resolution: expected WIDTHxHEIGHT of at least 320x240, found '100x80'")) << r.output;
  r = runCli(dir, "app --offscreen -o v.mha", cacheIn(dir));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--offscreen: expected with --start")) << r.output;
  r = runCli(dir, "app --offscreen --start -g missing.xml", cacheIn(dir));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "expected --geometry and --projections together")) << r.output;
  r = runCli(dir, "app --offscreen --start -g missing.xml -p missing.mha -o v.mha --size 16 --spacing 16", cacheIn(dir));
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "missing")) << r.output;
  r = runCli(dir, "app --offscreen --start --simulate 0 --backend cuda", cacheIn(dir));
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "cuda")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
}

}  // namespace
}  // namespace glrecon
