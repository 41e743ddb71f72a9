// The app's set-up panel as a script drives it, offscreen: the iterative methods (the same volume as their commands
// write), the ROI passed to the reconstruction, and the preview of the volume grid (and the ROI) drawn over the first
// projection, read back from the set-up frame's pixels against the corners projected here on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <sstream>

#include <glm/geometric.hpp>
#include <glm/vec2.hpp>

#include "../app/cli_support.h"
#include "device_fixtures.h"
#include "glrecon/fdk.h"
#include "glrecon/io.h"
#include "png_support.h"
#include "test_support.h"

namespace glrecon {
namespace {

using AppSetup = test::GlTest;
using namespace test;
namespace fs = std::filesystem;

fs::path freshDir(const std::string& name) {
  const fs::path dir = scratchDir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The recent-scans cache goes to the test's own folder, not the user's.
std::string cacheIn(const fs::path& dir) { return "XDG_CACHE_HOME='" + (dir / "cache").string() + "'"; }

bool sameBytes(const fs::path& a, const fs::path& b) { return readText(a) == readText(b) && !readText(a).empty(); }

// Each iterative method in the app (its panel's method, iterations, subsets, projector pair and ROI, set by the command
// line) writes the volume its own command writes from the same scan, bit for bit: the same reconstructor, operator and
// options, stepped by the app's loop between frames instead of run through. On cpu, and on compute, whose subset
// methods the app draws from the operator's own volume.
TEST_F(AppSetup, IterativeMethodsWriteWhatTheirCommandsWrite) {
  const fs::path dir = freshDir("app-iterative");
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string scan = " -g scan/geometry.xml -p scan/projections.mha --size 24 --spacing 10 ";
  struct Case {
    std::string backend, method, options;
  };
  const Case cases[] = {{"cpu", "sart", "--subsets 6 --iterations 2"},
                        {"cpu", "cgls", "--iterations 3"},
                        {"cpu", "sirt", "--iterations 2 --roi sphere:10,0,-20,70"},
                        {"cpu", "pdhg-tv", "--iterations 4"},  // matched by default, in both
                        {"cpu", "osem", "--iterations 2 --projector matched"},
                        {"cpu", "asd-pocs", "--iterations 2 --projector distance-driven"},
                        {"compute", "sart", "--subsets 6 --iterations 2"}};
  for (const Case& c : cases) {
    const std::string name = c.backend + "-" + c.method;
    const CliRun app = runCli(dir, "app --offscreen --start" + scan + "--backend " + c.backend + " --method " + c.method + " " + c.options + " -o app-" + name +
                                       ".mha --resolution 800x600",
                              cacheIn(dir));
    ASSERT_EQ(app.exitCode, 0) << app.output;
    EXPECT_TRUE(contains(app.output, "app: " + c.method + " iteration 1/")) << app.output;
    EXPECT_TRUE(contains(app.output, "app: " + c.method + " on " + c.backend)) << app.output;
    EXPECT_TRUE(contains(app.output, "final residual")) << app.output;
    const CliRun command = runCli(dir, c.method + scan + "--backend " + c.backend + " " + c.options + " -q -o cmd-" + name + ".mha");
    ASSERT_EQ(command.exitCode, 0) << command.output;
    EXPECT_TRUE(sameBytes(dir / ("app-" + name + ".mha"), dir / ("cmd-" + name + ".mha"))) << name;
  }
  // SART's subsets are what its steps count: 6 a iteration, 12 in all; CGLS's steps are its iterations.
  const CliRun sart = runCli(dir, "app --offscreen --start" + scan + "--backend cpu --method sart --subsets 6 --iterations 2", cacheIn(dir));
  EXPECT_TRUE(contains(sart.output, "2 iterations (12 subsets)")) << sart.output;
  const CliRun closed = runCli(dir, "app --offscreen --start" + scan + "--backend cpu --method sart --subsets 6 --iterations 2 --close-after 5 -o x.mha",
                               cacheIn(dir));
  EXPECT_EQ(closed.exitCode, 0) << closed.output;
  EXPECT_TRUE(contains(closed.output, "closed after 5 of 12 subsets: reconstruction cancelled, nothing written")) << closed.output;
  EXPECT_FALSE(fs::exists(dir / "x.mha"));
}

// The ROI reaches FDK: inside it the voxels are those of the whole volume's reconstruction bit for bit (glrecon/roi.h),
// outside they are 0.
TEST_F(AppSetup, RegionOfInterestReachesFdk) {
  const fs::path dir = freshDir("app-roi");
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string run = "app --offscreen --start -g scan/geometry.xml -p scan/projections.mha --size 24 --spacing 10 --backend cpu -q ";
  ASSERT_EQ(runCli(dir, run + "-o whole.mha", cacheIn(dir)).exitCode, 0);
  const CliRun r = runCli(dir, run + "--roi sphere:10,0,-20,70 -o region.mha", cacheIn(dir));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const Image whole = readMetaImage((dir / "whole.mha").string()), region = readMetaImage((dir / "region.mha").string());
  ASSERT_EQ(whole.size, region.size);
  const VolumeGrid grid = VolumeGrid::centred(whole.size, glm::dvec3(10.0));
  std::size_t inside = 0, differing = 0, nonZeroOutside = 0;
  for (int k = 0; k < 24; ++k)
    for (int j = 0; j < 24; ++j)
      for (int i = 0; i < 24; ++i) {
        const bool in = glm::length(grid.worldOf(i, j, k) - glm::dvec3(10, 0, -20)) <= 70.0;
        if (in) {
          ++inside;
          differing += region.at(i, j, k) != whole.at(i, j, k);
        } else {
          nonZeroOutside += region.at(i, j, k) != 0.0f;
        }
      }
  EXPECT_GT(inside, 1000u);  // 4/3 pi 7^3 voxels of 10 mm: about 1437
  EXPECT_EQ(differing, 0u) << "of " << inside << " voxels inside";
  EXPECT_EQ(nonZeroOutside, 0u);
}

// ---- the preview ----

struct Rect {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// The widget map's rectangle `name` (viewer/app.cpp writes "widget NAME|x0 y0 x1 y1").
std::optional<Rect> widget(const fs::path& map, const std::string& name) {
  std::istringstream in(readText(map));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("widget " + name + "|", 0) == 0) {
      Rect r;
      std::istringstream(line.substr(line.find('|') + 1)) >> r.x0 >> r.y0 >> r.x1 >> r.y1;
      return r;
    }
  return std::nullopt;
}

struct Segment {
  glm::dvec2 a, b;
};

double distance(const glm::dvec2& p, const Segment& s) {
  const glm::dvec2 d = s.b - s.a;
  const double t = std::clamp(glm::dot(p - s.a, d) / std::max(glm::dot(d, d), 1e-300), 0.0, 1.0);
  return glm::length(p - (s.a + t * d));
}

// The set-up frame of `arguments` (offscreen, no --start): its screenshot, the detector's and the canvas's rectangles.
struct SetupFrame {
  Png shot;
  Rect detector, canvas;
};

SetupFrame setupFrame(const fs::path& dir, const std::string& arguments, const std::string& name) {
  const CliRun r = runCli(dir, "app --offscreen --resolution 1024x800 --widget-map " + name + ".txt --screenshot " + name + ".png " + arguments, cacheIn(dir));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  SetupFrame f;
  f.shot = readPng(dir / (name + ".png"));
  const auto detector = widget(dir / (name + ".txt"), "preview"), canvas = widget(dir / (name + ".txt"), "preview canvas");
  EXPECT_TRUE(detector && canvas) << readText(dir / (name + ".txt"));
  if (detector) f.detector = *detector;
  if (canvas) f.canvas = *canvas;
  return f;
}

// Where the preview shows detector point (u, v) (pixel centres at integers): the detector's rectangle spans u and v
// from -0.5 to n - 0.5, v upwards (the world's y).
glm::dvec2 onScreen(const SetupFrame& f, const DetectorLayout& d, double u, double v) {
  return {f.detector.x0 + (u + 0.5) / d.nu * (f.detector.x1 - f.detector.x0), f.detector.y1 - (v + 0.5) / d.nv * (f.detector.y1 - f.detector.y0)};
}

// The box from world corner `a` to `b` on the screen: its 12 edges through the first view's matrix, computed here on the
// CPU (a grid whose voxel indices are world millimetres).
std::vector<Segment> projectedBox(const SetupFrame& f, const Geometry& g, const glm::dvec3& a, const glm::dvec3& b) {
  VolumeGrid world;
  world.size = {1, 1, 1};
  const ProjectionMatrix p = g.matrix(0, world);
  const auto corner = [&](int c) {
    const glm::dvec3 h = p.apply(glm::dvec4(c & 1 ? b.x : a.x, c & 2 ? b.y : a.y, c & 4 ? b.z : a.z, 1.0));
    return onScreen(f, g.detector, h.x / h.z, h.y / h.z);
  };
  std::vector<Segment> edges;
  for (int c = 0; c < 8; ++c)
    for (int axis = 0; axis < 3; ++axis)
      if (!(c & (1 << axis))) edges.push_back({corner(c), corner(c | (1 << axis))});
  return edges;
}

// How the drawn outline (the pixels `isOutline` takes: its colour leading the other channels by 60 levels or more)
// matches `edges`. Dear ImGui 1.86 strokes a 1-pixel anti-aliased line with a cover a falling off linearly from 1 on
// the line to 0 at 1 px from it (untextured: a 1 px fringe; textured: one opaque texel between two clear ones, filtered
// linearly across a quad 3 px wide), over which the colour is blended; where strokes overlap their covers compound to
// 1 - (1 - a)^k, k at most 3 (the edges meeting at a corner of a box; two where edges cross). The colour leads by 60
// levels only where that cover is 59.5 / 255 = 0.2333 or more: a >= 1 - 0.7667^(1/3) = 0.0847, so the pixel's centre is
// within 0.915 px of an edge, plus 0.004 for a texture unit's 8-bit filtering weights and 0.001 for the float vertices
// (each within 1.3e-4 px below 2048): 0.92. (A line half a pixel off, as Dear ImGui's own +0.5 offset would put it,
// strays 1.41 px.) Conversely every point of an edge has a pixel centre within 0.71 px of it, covered by at least 0.29
// (74 levels): so each sample of an edge inside the canvas (2 px in from its border, where the clip cuts lines) has an
// outline pixel whose centre is within 1 px of it.
constexpr double kOutlineReach = 0.92;

struct OutlineMatch {
  std::size_t pixels = 0, strays = 0, samples = 0, missed = 0;
  double worstStray = 0;
};

template <typename IsOutline>
OutlineMatch matchOutline(const SetupFrame& f, const std::vector<Segment>& edges, IsOutline isOutline) {
  OutlineMatch m;
  const Png& shot = f.shot;
  const auto outlineAt = [&](int x, int y) { return x >= 0 && y >= 0 && x < shot.width && y < shot.height && isOutline(shot.at(x, y)); };
  for (int y = static_cast<int>(f.canvas.y0); y < static_cast<int>(std::ceil(f.canvas.y1)); ++y)
    for (int x = static_cast<int>(f.canvas.x0); x < static_cast<int>(std::ceil(f.canvas.x1)); ++x) {
      if (!outlineAt(x, y)) continue;
      ++m.pixels;
      double nearest = 1e300;
      for (const Segment& s : edges) nearest = std::min(nearest, distance({x + 0.5, y + 0.5}, s));
      m.worstStray = std::max(m.worstStray, nearest);
      m.strays += nearest > kOutlineReach;
    }
  for (const Segment& s : edges) {
    const int n = static_cast<int>(std::ceil(2.0 * glm::length(s.b - s.a))) + 1;
    for (int i = 0; i <= n; ++i) {
      const glm::dvec2 p = s.a + (s.b - s.a) * (static_cast<double>(i) / n);
      if (p.x < f.canvas.x0 + 2 || p.x > f.canvas.x1 - 2 || p.y < f.canvas.y0 + 2 || p.y > f.canvas.y1 - 2) continue;
      ++m.samples;
      bool found = false;
      for (int y = static_cast<int>(p.y) - 2; y <= static_cast<int>(p.y) + 2 && !found; ++y)
        for (int x = static_cast<int>(p.x) - 2; x <= static_cast<int>(p.x) + 2 && !found; ++x)
          found = outlineAt(x, y) && glm::length(glm::dvec2(x + 0.5, y + 0.5) - p) <= 1.0;
      m.missed += !found;
    }
  }
  return m;
}

bool green(const unsigned char* p) { return p[1] - std::max(p[0], p[2]) >= 60; }
bool magenta(const unsigned char* p) { return std::min(p[0], p[2]) - p[1] >= 60; }

// The scan's geometry as the app reads it: the RTK file on the stack's detector.
Geometry fileGeometry(const fs::path& dir) {
  return Geometry::fromCircular(readRtkGeometry((dir / "scan" / "geometry.xml").string()),
                                detectorLayoutOf(readMetaImage((dir / "scan" / "projections.mha").string())));
}

// The set-up panel, before Start: the first projection of the scan, each of its pixels as the grey it has between the
// projection's lowest and highest value, and over it the grid's box. Two grids: one the detector holds, and one whose
// near face reaches beyond it (the canvas then reaches beyond the detector, so the box shows whole).
TEST_F(AppSetup, PreviewDrawsTheGridsBoxOverTheFirstProjection) {
  const fs::path dir = freshDir("app-preview");
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const Geometry g = fileGeometry(dir);
  const Image stack = readMetaImage((dir / "scan" / "projections.mha").string());
  const DetectorLayout& d = g.detector;
  for (const auto& [size, spacing] : {std::pair{32, 8.0}, std::pair{40, 10.0}}) {
    SCOPED_TRACE("grid " + std::to_string(size) + " at " + std::to_string(spacing) + " mm");
    const std::string name = "grid" + std::to_string(size);
    const SetupFrame f = setupFrame(dir,
                                    "-g scan/geometry.xml -p scan/projections.mha --size " + std::to_string(size) + " --spacing " + std::to_string(spacing),
                                    name);
    ASSERT_GT(f.shot.width, 0);
    ASSERT_GT(f.detector.x1 - f.detector.x0, 50.0) << "the preview is too small to judge";
    const VolumeGrid grid = VolumeGrid::centred({size, size, size}, glm::dvec3(spacing));
    const std::vector<Segment> box =
        projectedBox(f, g, grid.worldOf(-0.5, -0.5, -0.5), grid.worldOf(size - 0.5, size - 0.5, size - 0.5));
    const OutlineMatch m = matchOutline(f, box, green);
    EXPECT_GT(m.pixels, 400u);
    EXPECT_EQ(m.strays, 0u) << "of " << m.pixels << " outline pixels; the farthest " << m.worstStray << " px from an edge";
    EXPECT_GT(m.samples, 400u);
    EXPECT_EQ(m.missed, 0u) << "of " << m.samples << " points along the edges";
    if (size == 40) EXPECT_LT(f.canvas.y0, f.detector.y0 - 5) << "the canvas reaches beyond the detector where the box does";

    // The projection under it, pixel for pixel (nearest texels): the screen pixels whose centres lie inside a detector
    // pixel's block, 0.05 px in from its edges, away from the outline. Its grey: (p - low) / (high - low) in float,
    // rounded to 255 levels, as the app computes it. The first projection is not symmetric, so a flip is seen.
    const float* first = stack.data.data();
    const std::size_t pixels = static_cast<std::size_t>(d.nu) * d.nv;
    const auto [lo, hi] = std::minmax_element(first, first + pixels);
    const float low = *lo, range = std::max(*hi - *lo, 1e-20f);
    const auto grey = [&](int u, int v) {
      return static_cast<int>(std::lround(std::clamp((first[static_cast<std::size_t>(v) * d.nu + u] - low) / range, 0.0f, 1.0f) * 255.0f));
    };
    int asymmetric = 0;
    for (int v = 0; v < d.nv; ++v)
      for (int u = 0; u < d.nu; ++u) asymmetric += grey(u, v) != grey(u, d.nv - 1 - v) || grey(u, v) != grey(d.nu - 1 - u, v);
    ASSERT_GT(asymmetric, 50) << "a flipped preview would look the same";
    const double su = (f.detector.x1 - f.detector.x0) / d.nu, sv = (f.detector.y1 - f.detector.y0) / d.nv;
    int compared = 0, wrong = 0;
    for (int y = static_cast<int>(f.detector.y0); y < f.detector.y1; ++y)
      for (int x = static_cast<int>(f.detector.x0); x < f.detector.x1; ++x) {
        const double fu = (x + 0.5 - f.detector.x0) / su, fv = (f.detector.y1 - (y + 0.5)) / sv;  // in pixel blocks from the corner
        if (fu - std::floor(fu) < 0.05 / su || std::ceil(fu) - fu < 0.05 / su || fv - std::floor(fv) < 0.05 / sv || std::ceil(fv) - fv < 0.05 / sv) continue;
        const int u = static_cast<int>(fu), v = static_cast<int>(fv);
        if (u < 0 || v < 0 || u >= d.nu || v >= d.nv) continue;
        bool nearOutline = false;
        for (const Segment& s : box) nearOutline |= distance({x + 0.5, y + 0.5}, s) <= 1.6;
        if (nearOutline) continue;
        ++compared;
        const unsigned char* p = f.shot.at(x, y);
        wrong += p[0] != grey(u, v) || p[1] != grey(u, v) || p[2] != grey(u, v);
      }
    EXPECT_GT(compared, 2000);
    EXPECT_EQ(wrong, 0) << "of " << compared << " screen pixels";
  }
}

// The ROI drawn in the preview (magenta): a box's 12 edges as the grid's are checked; a sphere's silhouette, where each
// outline pixel's ray from the source grazes the sphere.
TEST_F(AppSetup, PreviewDrawsTheRegionOfInterest) {
  const fs::path dir = freshDir("app-preview-roi");
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const Geometry g = fileGeometry(dir);
  const std::string scan = "-g scan/geometry.xml -p scan/projections.mha --size 32 --spacing 8 ";
  {
    const SetupFrame f = setupFrame(dir, scan + "--roi box:-60,-40,-20,50,30,70", "box");
    const OutlineMatch m = matchOutline(f, projectedBox(f, g, {-60, -40, -20}, {50, 30, 70}), magenta);
    EXPECT_GT(m.pixels, 200u);
    EXPECT_EQ(m.strays, 0u) << "of " << m.pixels << " outline pixels; the farthest " << m.worstStray << " px from an edge";
    EXPECT_GT(m.samples, 200u);
    EXPECT_EQ(m.missed, 0u) << "of " << m.samples << " points along the edges";
  }
  // The sphere: a pixel of the outline lies within kOutlineReach px of the drawn line (above), which moves its detector
  // point by kOutlineReach mm-per-screen-pixel millimetres, turning its ray about the source by at most that over the
  // source's distance to the detector (SDD), and so the ray's distance to the centre C by at most |C - S| times that
  // angle; the polyline's chords (72 to the circle) lie inside the silhouette by r (1 - cos(pi / 72)) at most.
  const glm::dvec3 c(30, -20, 10);
  const double r = 60;
  const SetupFrame f = setupFrame(dir, scan + "--roi sphere:30,-20,10,60", "sphere");
  const ProjectionVectors& view = g.views[0];
  const double mmPerScreenPixel = std::max(g.detector.spacingU * g.detector.nu / (f.detector.x1 - f.detector.x0),
                                           g.detector.spacingV * g.detector.nv / (f.detector.y1 - f.detector.y0));
  const double bound = kOutlineReach * mmPerScreenPixel * glm::length(c - view.source) / view.sourceToDetector() + r * (1 - std::cos(std::numbers::pi / 72));
  double worst = 0;
  std::size_t pixels = 0;
  std::array<int, 12> sectors{};  // the outline all round: pixels in every 30 degrees about the sphere's centre
  const glm::dvec3 h = g.matrix(0, [] {
                          VolumeGrid world;
                          world.size = {1, 1, 1};
                          return world;
                        }())
                           .apply(glm::dvec4(c, 1.0));
  const glm::dvec2 centre = onScreen(f, g.detector, h.x / h.z, h.y / h.z);
  for (int y = static_cast<int>(f.canvas.y0); y < f.canvas.y1; ++y)
    for (int x = static_cast<int>(f.canvas.x0); x < f.canvas.x1; ++x) {
      if (!magenta(f.shot.at(x, y))) continue;
      ++pixels;
      const double u = (x + 0.5 - f.detector.x0) / (f.detector.x1 - f.detector.x0) * g.detector.nu - 0.5;
      const double v = (f.detector.y1 - (y + 0.5)) / (f.detector.y1 - f.detector.y0) * g.detector.nv - 0.5;
      const glm::dvec3 ray = glm::normalize(view.detectorPoint(u, v) - view.source);
      const glm::dvec3 toCentre = c - view.source;
      const double graze = glm::length(toCentre - glm::dot(toCentre, ray) * ray);
      worst = std::max(worst, std::abs(graze - r));
      const double angle = std::atan2(y + 0.5 - centre.y, x + 0.5 - centre.x) + std::numbers::pi;
      ++sectors[std::min(11, static_cast<int>(angle / (std::numbers::pi / 6)))];
    }
  EXPECT_GT(pixels, 100u);
  EXPECT_LE(worst, bound) << "mm from grazing the sphere, over " << pixels << " outline pixels";
  for (int s = 0; s < 12; ++s) EXPECT_GT(sectors[s], 0) << "no outline in sector " << s;
}

// Bad choices of the set-up, named by their option before anything is written.
TEST_F(AppSetup, BadChoicesAreNamed) {
  const fs::path dir = freshDir("app-setup-bad");
  const struct {
    std::string arguments, expected;
  } cases[] = {
      {"--method kaczmarz", "--method: expected fdk, sart, sirt, cgls, osem, asd-pocs or pdhg-tv, found 'kaczmarz'"},
      {"--iterations 5", "--iterations: expected with an iterative --method"},
      {"--method sirt --subsets 4", "--subsets: expected with sart, osem or asd-pocs"},
      {"--method sirt --measure 1", "--measure: expected with --method fdk"},
      {"--method sart --iterations 0", "--iterations"},
      {"--roi sphere:0,0,0", "--roi: expected 4 numbers after the shape name, found 'sphere:0,0,0'"},
      {"--method cgls --roi sphere:900,0,0,10", "--roi: expected a region holding at least one voxel centre of the volume"},
  };
  for (const auto& c : cases) {
    const CliRun r = runCli(dir, "app --offscreen --start --simulate 0 --size 16 --spacing 16 -o v.mha " + c.arguments, cacheIn(dir));
    EXPECT_EQ(r.exitCode, 2) << c.arguments << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.expected)) << c.arguments << ": " << r.output;
  }
  const CliRun r = runCli(dir, "app --offscreen --simulate 0 -o v.mha --screenshot s.png", cacheIn(dir));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--offscreen: expected with --start (nothing can press Start offscreen), or without it with --screenshot alone"))
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
  EXPECT_FALSE(fs::exists(dir / "s.png"));
  // The set-up frame of a scan that cannot be opened: the command fails naming the file, and no frame is saved.
  const CliRun missing = runCli(dir, "app --offscreen --screenshot s.png -g missing.xml -p missing.mha", cacheIn(dir));
  EXPECT_NE(missing.exitCode, 0) << missing.output;
  EXPECT_TRUE(contains(missing.output, "missing.mha: projections: expected an existing file")) << missing.output;
  EXPECT_FALSE(fs::exists(dir / "s.png"));
}

}  // namespace
}  // namespace glrecon
