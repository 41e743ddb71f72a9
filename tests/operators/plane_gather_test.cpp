// The matched pair in plane form (src/operators/plane_gather.h), run on the host through the same loops the cuda
// kernels run: its forward and its gathered transpose against the cpu backend's matched pair, and against each other.
// Runs everywhere (no GPU): the cuda kernels are these functions with a thread per ray or per voxel run.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "glrecon/operator.h"
#include "operators/plane_gather.h"
#include "operators/projector_views.h"
#include "projector_support.h"
#include "test_support.h"

namespace glrecon {
namespace {

constexpr int kRun = 8;  // the kernel's run of rows (any run gives the same sums; 8 as planeGatherKernel)

struct PlanePair {
  Geometry geometry;
  VolumeGrid grid;
  std::vector<detail::ProjectorView> views;
  float spacing[3];
  int size[3];

  PlanePair(const Geometry& g, const VolumeGrid& gr) : geometry(g), grid(gr), views(detail::projectorViews(g, gr)) {
    for (int a = 0; a < 3; ++a) {
      spacing[a] = static_cast<float>(gr.spacing[a]);
      size[a] = gr.size[a];
    }
  }
  bool gatherable(std::size_t p) const { return detail::planeGatherable(views[p], spacing, size, geometry.detector.nu, geometry.detector.nv); }
  // planeForwardKernel's work for every pixel of view p, rows [y0, y1) of x (a whole-grid volume).
  void forward(std::size_t p, const std::vector<float>& x, int y0, int y1, float* out) const {
    const detail::PlaneView view = detail::planeViewOf(views[p], spacing);
    const auto voxel = [&](int i, int j, int k) { return x[(static_cast<std::size_t>(k) * size[1] + j) * size[0] + i]; };
    for (int v = 0; v < geometry.detector.nv; ++v)
      for (int u = 0; u < geometry.detector.nu; ++u)
        out[static_cast<std::size_t>(v) * geometry.detector.nu + u] = detail::planeForward(view, u, v, size[0], size[2], y0, y1, voxel);
  }
  // Every view's gather as the kernels and the cpu backend order it: per run of rows the sums over all views, added
  // once (distance-driven).
  void ddGatherViews(const float* projections, int y0, int y1, std::vector<float>& volume) const {
    const int nu = geometry.detector.nu, nv = geometry.detector.nv;
    const std::size_t pixels = static_cast<std::size_t>(nu) * nv;
    std::vector<float> weighted(projections, projections + geometry.size() * pixels);
    for (std::size_t p = 0; p < geometry.size(); ++p) {
      const detail::PlaneView view = detail::planeViewOf(views[p], spacing);
      for (int v = 0; v < nv; ++v)
        for (int u = 0; u < nu; ++u) {
          float& w = weighted[p * pixels + static_cast<std::size_t>(v) * nu + u];
          w = detail::planeWeighted(view, u, v, w);
        }
    }
    for (int k = 0; k < size[2]; ++k)
      for (int i = 0; i < size[0]; ++i)
        for (int j0 = y0; j0 < y1; j0 += kRun) {
          float sums[kRun] = {};
          const auto add = [&](int r, float x) { sums[r] += x; };
          for (std::size_t p = 0; p < geometry.size(); ++p) {
            const detail::PlaneView view = detail::planeViewOf(views[p], spacing);
            const float* own = weighted.data() + p * pixels;
            const auto pixel = [&](int u, int v) { return own[static_cast<std::size_t>(v) * nu + u]; };
            detail::ddGather<kRun>(view, nu, nv, view.m == 0 ? i : k, view.m == 0 ? k : i, j0, pixel, add);
          }
          for (int r = 0; r < kRun && j0 + r < y1; ++r) volume[(static_cast<std::size_t>(k) * size[1] + j0 + r) * size[0] + i] += sums[r];
        }
  }
  // The distance-driven pair's forward (ddForward) for every pixel of view p.
  void ddForwardView(std::size_t p, const std::vector<float>& x, int y0, int y1, float* out) const {
    const detail::PlaneView view = detail::planeViewOf(views[p], spacing);
    const auto voxel = [&](int i, int j, int k) { return x[(static_cast<std::size_t>(k) * size[1] + j) * size[0] + i]; };
    for (int v = 0; v < geometry.detector.nv; ++v)
      for (int u = 0; u < geometry.detector.nu; ++u)
        out[static_cast<std::size_t>(v) * geometry.detector.nu + u] = detail::ddForward(view, u, v, size[0], size[2], y0, y1, voxel);
  }
  // planeGatherKernel's work: every (x, z) column and run of rows in [y0, y1) adds view p's pixels (`dd`: ddGather).
  void gather(std::size_t p, const float* projection, int y0, int y1, std::vector<float>& volume, bool dd = false) const {
    const detail::PlaneView view = detail::planeViewOf(views[p], spacing);
    const int nu = geometry.detector.nu, nv = geometry.detector.nv;
    // planeWeightKernel's work first: each pixel times its ray's length.
    std::vector<float> weighted(projection, projection + static_cast<std::size_t>(nu) * nv);
    for (int v = 0; v < nv; ++v)
      for (int u = 0; u < nu; ++u) weighted[static_cast<std::size_t>(v) * nu + u] = detail::planeWeighted(view, u, v, weighted[static_cast<std::size_t>(v) * nu + u]);
    const auto pixel = [&](int u, int v) { return weighted[static_cast<std::size_t>(v) * nu + u]; };
    for (int k = 0; k < size[2]; ++k)
      for (int i = 0; i < size[0]; ++i)
        for (int j0 = y0; j0 < y1; j0 += kRun) {
          float sums[kRun] = {};
          const auto add = [&](int r, float x) { sums[r] += x; };
          const int plane = view.m == 0 ? i : k, across = view.m == 0 ? k : i;
          if (dd)
            detail::ddGather<kRun>(view, nu, nv, plane, across, j0, pixel, add);
          else
            detail::planeGather<kRun>(view, nu, nv, plane, across, j0, pixel, add);
          for (int r = 0; r < kRun && j0 + r < y1; ++r) volume[(static_cast<std::size_t>(k) * size[1] + j0 + r) * size[0] + i] += sums[r];
        }
  }
};

std::vector<float> centredRandom(std::size_t n, unsigned seed) { return test::uniformValues(n, seed, -0.5f, 0.5f); }

// The largest |top + bottom - whole| (a forward projection of two blocks of rows against the whole grid's) over the
// largest |whole|.
double partsGap(const std::vector<float>& whole, const std::vector<float>& top, const std::vector<float>& bottom) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(top[i]) + bottom[i] - whole[i]));
    scale = std::max(scale, static_cast<double>(std::abs(whole[i])));
  }
  return worst / scale;
}

// The plane form is the cpu backend's matched pair up to where positions round (c - s_m)·R against first + k·delta:
// a few ulp of positions ~30 voxels from the origin, expectClose's software bound (RMS 1e-5, max 1e-4 of the
// largest value). And its gather is its transpose: every weight is computed to the same bits on both sides, so
// <Ax, y> and <x, A^T y> differ only by the sums' rounding, ~1e-7 of |Ax| |y| at most in float (as
// matchedPairMatchesCpu's bound).
void planePairMatchesCpu(const Geometry& g, const VolumeGrid& grid) {
  const PlanePair pair(g, grid);
  std::vector<std::size_t> views(g.size());
  std::iota(views.begin(), views.end(), std::size_t{0});
  for (std::size_t p : views) ASSERT_TRUE(pair.gatherable(p)) << "view " << p << " of a circular scan about y is in plane form";
  OperatorOptions o;
  o.pair = ProjectorPair::Matched;
  auto cpu = makeOperator(Backend::Cpu, g, grid, o);
  const std::vector<float> x = centredRandom(grid.voxelCount(), 3);
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  const std::vector<float> y = centredRandom(views.size() * pixels, 4);
  std::vector<float> cpuA(views.size() * pixels), planeA(views.size() * pixels);
  test::forwardOf(*cpu, x.data(), views.data(), views.size(), cpuA.data());
  for (std::size_t p : views) pair.forward(p, x, 0, grid.size[1], planeA.data() + p * pixels);
  test::expectClose(planeA, cpuA, "plane-form forward", true);
  std::vector<float> cpuB(grid.voxelCount()), planeB(grid.voxelCount(), 0.0f);
  test::backOf(*cpu, y.data(), views.data(), views.size(), cpuB.data());
  for (std::size_t p : views) pair.gather(p, y.data() + p * pixels, 0, grid.size[1], planeB);
  test::expectClose(planeB, cpuB, "plane-form gathered transpose", true);
  const auto dot = test::dotInDouble;
  const double gap = std::abs(dot(planeA, y) - dot(x, planeB)) / std::sqrt(dot(planeA, planeA) * dot(y, y));
  std::printf("plane-form adjoint gap / (|Ax| |y|): %.3e\n", gap);
  EXPECT_LT(gap, 1e-7);
}

TEST(PlaneGather, ForwardAndGatheredTransposeMatchCpuAndEachOther) {
  // Anisotropic, non-cubic: the axes kept apart (x-main and z-main views both occur over the circle).
  planePairMatchesCpu(test::circularScan(12, 40), VolumeGrid::centred({32, 28, 24}, {7.0, 8.0, 9.0}));
}

TEST(PlaneGather, ShiftedDetectorAndOddRowsMatchCpu) {
  // A detector offset (e0 along u and v not centred) and a grid whose rows are not a multiple of the run.
  CircularScanSpec spec;
  spec.projections = 10;
  spec.nu = 36;
  spec.nv = 30;
  spec.spacingU = spec.spacingV = 12.0;
  spec.projectionOffsetX = 20.0;
  spec.projectionOffsetY = -15.0;
  planePairMatchesCpu(makeCircularScan(spec), VolumeGrid::centred({20, 13, 22}, {9.0, 10.0, 8.0}));
}

// A block of rows (the slabs' operators): the forward reads only the rows [y0, y1), the gather writes only them, and
// the two blocks' sums add to the whole grid's (each weight belongs to one row).
TEST(PlaneGather, BlocksOfRowsAddToTheWholeGrid) {
  const Geometry g = test::circularScan(8, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 20, 24}, {8.0, 8.0, 8.0});
  const PlanePair pair(g, grid);
  const std::vector<float> x = centredRandom(grid.voxelCount(), 5);
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  std::vector<float> whole(pixels), top(pixels), bottom(pixels);
  pair.forward(3, x, 0, 20, whole.data());
  pair.forward(3, x, 0, 9, top.data());
  pair.forward(3, x, 9, 20, bottom.data());
  // The same products summed in two parts: float sums of ~100 terms of |x| <= 0.5 (1e-5 of the largest).
  EXPECT_LT(partsGap(whole, top, bottom), 1e-5);
  const std::vector<float> y = centredRandom(pixels, 6);
  std::vector<float> wholeB(grid.voxelCount(), 0.0f), blocksB(grid.voxelCount(), 0.0f);
  pair.gather(3, y.data(), 0, 20, wholeB);
  pair.gather(3, y.data(), 0, 9, blocksB);
  pair.gather(3, y.data(), 9, 20, blocksB);
  // Each voxel's sum is over the same pixels in the same order whatever its run: equal to the bit.
  EXPECT_EQ(wholeB, blocksB);
}

// The distance-driven pair: its gather is its forward's transpose (every shadow and overlap computed to the same
// bits on both sides: only the sums round, ~1e-7 of |Ax| |y| at most in float), and a block of rows adds to the whole.
TEST(PlaneGather, DistanceDrivenGatherIsTheTranspose) {
  const Geometry g = test::circularScan(12, 40);
  const VolumeGrid grid = VolumeGrid::centred({32, 28, 24}, {7.0, 8.0, 9.0});
  const PlanePair pair(g, grid);
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  const std::vector<float> x = centredRandom(grid.voxelCount(), 7), y = centredRandom(g.size() * pixels, 8);
  std::vector<float> a(g.size() * pixels), b(grid.voxelCount(), 0.0f);
  for (std::size_t p = 0; p < g.size(); ++p) {
    pair.ddForwardView(p, x, 0, grid.size[1], a.data() + p * pixels);
    pair.gather(p, y.data() + p * pixels, 0, grid.size[1], b, /*dd=*/true);
  }
  const auto dot = test::dotInDouble;
  const double gap = std::abs(dot(a, y) - dot(x, b)) / std::sqrt(dot(a, a) * dot(y, y));
  std::printf("distance-driven adjoint gap / (|Ax| |y|): %.3e\n", gap);
  EXPECT_LT(gap, 1e-7);
  EXPECT_GT(dot(a, a), 0.0);
  std::vector<float> top(pixels), bottom(pixels), whole(pixels);
  pair.ddForwardView(5, x, 0, 28, whole.data());
  pair.ddForwardView(5, x, 0, 11, top.data());
  pair.ddForwardView(5, x, 11, 28, bottom.data());
  EXPECT_LT(partsGap(whole, top, bottom), 1e-5);  // as BlocksOfRowsAddToTheWholeGrid's
}

// What distance-driven models: a pixel's value is the mean of the piecewise-constant volume over the pixel's shadow on
// each plane, integrated along the ray. Reference: the same planes sampled by S x S sub-rays spread over the pixel,
// each the true ray through its point of the pixel, reading the voxel its position falls in (box voxels), averaged,
// times the centre ray's length. (The pair takes the shadow along y through the centre column; the sub-rays' own
// columns differ from it by a pixel's width over the source's distance, 1e-2 of a shadow at most here.) On each plane
// the sub-rays' mean differs from the shadow's mean by at most the fraction of the shadow the sub-rays' grid
// misplaces, 1/S per axis, times the largest voxel difference (1 here): 2/S = 6% of the largest value per plane, so
// the pixels' RMS difference, over planes whose errors do not all align, stays below 2/S of the values' RMS. The
// pencil-ray pair (one sample per plane at the centre) is held to the same reference to show the bound can fail:
// with pixels twice the voxels' size its RMS difference is several times that.
TEST(PlaneGather, DistanceDrivenAveragesTheVolumeOverEachPixelsShadow) {
  CircularScanSpec spec;
  spec.projections = 3;
  spec.nu = spec.nv = 12;
  spec.spacingU = spec.spacingV = 32.0;  // ~2.7 voxels of 8 mm at the isocentre (sdd / sid = 1.536)
  const Geometry g = makeCircularScan(spec);
  const VolumeGrid grid = VolumeGrid::centred({24, 24, 24}, {8.0, 8.0, 8.0});
  const PlanePair pair(g, grid);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> x(grid.voxelCount());
  for (float& v : x) v = unit(rng);
  const int S = 32;
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  double ddSquares = 0, pencilSquares = 0, refSquares = 0;
  for (std::size_t p = 0; p < g.size(); ++p) {
    std::vector<float> dd(pixels), pencil(pixels);
    pair.ddForwardView(p, x, 0, 24, dd.data());
    pair.forward(p, x, 0, 24, pencil.data());
    const detail::PlaneView view = detail::planeViewOf(pair.views[p], pair.spacing);
    for (int v = 0; v < g.detector.nv; ++v)
      for (int u = 0; u < g.detector.nu; ++u) {
        const detail::PlaneColumn centre = detail::planeColumn(view, static_cast<float>(u));
        double sum = 0;
        for (int plane = 0; plane < 24; ++plane) {
          const float cs = static_cast<float>(plane) - view.sm;
          double mean = 0;
          for (int a = 0; a < S; ++a)
            for (int b = 0; b < S; ++b) {
              const float su = static_cast<float>(u) - 0.5f + (a + 0.5f) / S, sv = static_cast<float>(v) - 0.5f + (b + 0.5f) / S;
              const detail::PlaneColumn col = detail::planeColumn(view, su);
              const float n = detail::planePosition(view.sn, cs, col.rn);
              const float y = detail::planePosition(view.sy, cs, detail::planeRy(view, col, detail::planeDy(view, sv)));
              const int k = static_cast<int>(std::floor(n + 0.5f)), j = static_cast<int>(std::floor(y + 0.5f));
              if (k < 0 || k >= 24 || j < 0 || j >= 24) continue;
              mean += view.m == 0 ? x[(static_cast<std::size_t>(k) * 24 + j) * 24 + plane] : x[(static_cast<std::size_t>(plane) * 24 + j) * 24 + k];
            }
          sum += mean / (S * S);
        }
        const double reference = sum * detail::planeLength(view, centre, detail::planeDy(view, static_cast<float>(v)));
        const std::size_t i = static_cast<std::size_t>(v) * g.detector.nu + u;
        ddSquares += (dd[i] - reference) * (dd[i] - reference);
        pencilSquares += (pencil[i] - reference) * (pencil[i] - reference);
        refSquares += reference * reference;
      }
  }
  const double ddError = std::sqrt(ddSquares / refSquares), pencilError = std::sqrt(pencilSquares / refSquares);
  std::printf("relative RMS against the shadow's mean: distance-driven %.3e, pencil rays %.3e\n", ddError, pencilError);
  EXPECT_LT(ddError, 2.0 / S);
  EXPECT_GT(pencilError, 2.0 / S);
}

// The cpu backend's distance-driven pair runs the same functions in the same order as the loops above (and the cuda
// kernels): equal to the bit, forward and back, for the whole grid and for a block of rows.
TEST(PlaneGather, CpuDistanceDrivenPairIsTheseLoops) {
  const Geometry g = test::circularScan(9, 36);
  const VolumeGrid grid = VolumeGrid::centred({26, 21, 23}, {8.0, 9.0, 7.0});
  const PlanePair pair(g, grid);
  OperatorOptions o;
  o.pair = ProjectorPair::DistanceDriven;
  o.threads = 2;
  auto cpu = makeOperator(Backend::Cpu, g, grid, o);
  std::vector<std::size_t> views(g.size());
  std::iota(views.begin(), views.end(), std::size_t{0});
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  const std::vector<float> x = centredRandom(grid.voxelCount(), 11), y = centredRandom(g.size() * pixels, 12);
  std::vector<float> a(g.size() * pixels), loopsA(g.size() * pixels), b(grid.voxelCount()), loopsB(grid.voxelCount(), 0.0f);
  test::forwardOf(*cpu, x.data(), views.data(), views.size(), a.data());
  test::backOf(*cpu, y.data(), views.data(), views.size(), b.data());
  for (std::size_t p : views) pair.ddForwardView(p, x, 0, grid.size[1], loopsA.data() + p * pixels);
  pair.ddGatherViews(y.data(), 0, grid.size[1], loopsB);
  EXPECT_EQ(a, loopsA);
  EXPECT_EQ(b, loopsB);
}

// Where the distance-driven pair cannot run: on graphics-mp (an FDK backprojector), with a step, on a view outside the
// plane form.
TEST(PlaneGather, DistanceDrivenIsRefusedWhereItCannotRun) {
  const VolumeGrid grid = VolumeGrid::centred({16, 16, 16}, {4.0, 4.0, 4.0});
  OperatorOptions o;
  o.pair = ProjectorPair::DistanceDriven;
  const Geometry plain = test::circularScan(4, 16);
  try {
    makeOperator(Backend::GraphicsMp, plain, grid, o);
    ADD_FAILURE() << "graphics-mp took the distance-driven pair";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("distance-driven: expected cpu, graphics, compute or cuda, found graphics-mp"), std::string::npos)
        << e.what();
  }
  Geometry tilted = plain;
  tilted.views[2].vStep = glm::dvec3(0.0, 32.0, 3.0);
  try {
    makeOperator(Backend::Cpu, tilted, grid, o);
    ADD_FAILURE() << "a tilted view was taken";
  } catch (const GeometryError& e) {
    EXPECT_NE(std::string(e.what()).find("projection 2 (projector distance-driven)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a tilted detector"), std::string::npos) << e.what();
  }
  o.step = 2.0;
  EXPECT_THROW(makeOperator(Backend::Cpu, plain, grid, o), UsageError);
  EXPECT_EQ(parseProjectorPair("distance-driven"), ProjectorPair::DistanceDriven);
  EXPECT_THROW(parseProjectorPair("footprint"), UsageError);
}

// The distance-driven matrix against its transpose, entry by entry, where a pixel's shadow is wider than the grid
// along y (one row, and one-row blocks of six) and than a voxel across: every entry of A (forward of each voxel's unit
// vector) equals B's (the gather of each pixel's unit vector) up to the products' rounding, 1e-6 of the largest; a
// plane A skipped would show as an entry of B with no partner. And the blocks' forward projections add to the grid's.
TEST(PlaneGather, DistanceDrivenMatrixIsItsTransposeOnThinGrids) {
  CircularScanSpec spec;
  spec.projections = 4;
  spec.firstAngle = 10.0;
  spec.nu = spec.nv = 6;
  spec.spacingU = spec.spacingV = 40.0;  // 26 mm at the isocentre: 2.6 voxels across, 2.6 rows
  const Geometry g = makeCircularScan(spec);
  const std::size_t pixels = 36, entries = g.size() * pixels;
  for (const int rows : {1, 6}) {
    const VolumeGrid grid = VolumeGrid::centred({8, rows, 8}, {10.0, 10.0, 10.0});
    const PlanePair pair(g, grid);
    const std::size_t voxels = grid.voxelCount();
    std::vector<double> a(entries * voxels), b(entries * voxels);  // [pixel][voxel]
    for (std::size_t j = 0; j < voxels; ++j) {
      std::vector<float> x(voxels, 0.0f), column(entries);
      x[j] = 1.0f;
      const int row = static_cast<int>(j / 8 % rows);
      for (std::size_t p = 0; p < g.size(); ++p) pair.ddForwardView(p, x, row, row + 1, column.data() + p * pixels);  // its block
      for (std::size_t i = 0; i < entries; ++i) a[i * voxels + j] = column[i];
    }
    for (std::size_t i = 0; i < entries; ++i) {
      std::vector<float> y(entries, 0.0f), back(voxels, 0.0f);
      y[i] = 1.0f;
      for (int row = 0; row < rows; ++row) pair.ddGatherViews(y.data(), row, row + 1, back);  // one-row blocks
      for (std::size_t j = 0; j < voxels; ++j) b[i * voxels + j] = back[j];
    }
    double largest = 0, worst = 0;
    std::size_t nonZero = 0;
    for (std::size_t e = 0; e < a.size(); ++e) {
      largest = std::max(largest, std::abs(a[e]));
      worst = std::max(worst, std::abs(a[e] - b[e]));
      nonZero += a[e] != 0.0;
    }
    EXPECT_GT(nonZero, entries) << rows << " rows";
    EXPECT_LT(worst, 1e-6 * largest) << rows << " rows";
    if (rows == 6) {
      const std::vector<float> x = centredRandom(voxels, 13);
      std::vector<float> whole(pixels), sum(pixels, 0.0f), part(pixels);
      pair.ddForwardView(2, x, 0, 6, whole.data());
      for (int row = 0; row < 6; ++row) {
        pair.ddForwardView(2, x, row, row + 1, part.data());
        for (std::size_t i = 0; i < pixels; ++i) sum[i] += part[i];
      }
      std::vector<float> zero(pixels, 0.0f);
      EXPECT_LT(partsGap(whole, sum, zero), 1e-5);
    }
  }
}

TEST(PlaneGather, ViewsOutsideThePlaneFormAreRefused) {
  const VolumeGrid grid = VolumeGrid::centred({16, 16, 16}, {4.0, 4.0, 4.0});
  const float h[3] = {4.0f, 4.0f, 4.0f};
  const int size[3] = {16, 16, 16};
  Geometry tilted = test::circularScan(4, 16);
  for (ProjectionVectors& v : tilted.views) v.vStep = glm::dvec3(0.0, 32.0, 3.0);  // v no longer along y alone
  const auto tiltedViews = detail::projectorViews(tilted, grid);
  EXPECT_FALSE(detail::planeGatherable(tiltedViews[0], h, size, 16, 16));
  const auto parallel = detail::projectorViews(test::parallelScan(4, 16), grid);
  EXPECT_FALSE(detail::planeGatherable(parallel[0], h, size, 16, 16));
  const auto plain = detail::projectorViews(test::circularScan(4, 16), grid);
  EXPECT_TRUE(detail::planeGatherable(plain[0], h, size, 16, 16));
}

}  // namespace
}  // namespace glrecon
