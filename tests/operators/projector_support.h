#pragma once
// The comparison of a GPU backend's forward and back projections with the cpu backend's (projector_gl_test.cpp,
// projector_cuda_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "device/gl/context.h"
#include "glrecon/phantom.h"
#include "glrecon/operator.h"
#include "test_support.h"

namespace glrecon::test {

/// sum a[i] b[i] in double, in order: the adjoint tests' inner products.
inline double dotInDouble(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// ---- GPU backends against the cpu reference ----
// Relative RMS and max differences of GPU results against cpu: the GPU computes the same float expressions, but
// positions round differently (fused multiply-adds, reciprocal division), texture units interpolate with their own
// weight precision (llvmpipe: float; NVIDIA: 8-bit fractions, an error up to 1/512 of a neighbour difference per
// sample), and a ray's sample count can differ by one at the clip box's end (where the interpolant is 0). The
// bounds: RMS 1e-3 and max 1e-2 of the largest cpu value, an order above 8-bit interpolation's worst average.
inline void expectClose(const std::vector<float>& gpu, const std::vector<float>& cpu, const char* what, bool software) {
  double sq = 0, worst = 0, scale = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double d = std::abs(static_cast<double>(gpu[i]) - cpu[i]);
    sq += d * d;
    worst = std::max(worst, d);
    scale = std::max(scale, static_cast<double>(std::abs(cpu[i])));
  }
  const double rms = std::sqrt(sq / cpu.size());
  std::printf("%s: relative RMS %.3e, relative max %.3e\n", what, rms / scale, worst / scale);
  EXPECT_LT(rms, 1e-3 * scale) << what;
  EXPECT_LT(worst, 1e-2 * scale) << what;
  // llvmpipe interpolates in float: only position rounding remains (a few ulp of positions ~100 voxels from the
  // origin, 1e-5 of a voxel, times the largest neighbour difference), so it is held two orders tighter.
  if (software) {
    EXPECT_LT(rms, 1e-5 * scale) << what << " (software renderer)";
    EXPECT_LT(worst, 1e-4 * scale) << what << " (software renderer)";
  }
}

inline void backendMatchesCpu(const std::string& backend) {
  const Geometry g = circularScan(12, 40);
  const VolumeGrid grid = VolumeGrid::centred({32, 28, 24}, {7.0, 8.0, 9.0});  // anisotropic, non-cubic: axes kept apart
  const Image truth = voxelizePhantom(Phantom::sheppLogan(SheppLoganVariant::Modified, 90.0), grid, 2);
  auto cpu = makeOperator(Backend::Cpu, g, grid);
  auto gpu = test::makeNamed(backend, g, grid);
  // A subset of views in a scrambled order: the view index must follow the batch, not the position.
  const std::vector<std::size_t> views = {5, 0, 11, 3};
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  std::vector<float> a(views.size() * pixels), b(views.size() * pixels);
  test::forwardOf(*cpu, truth.data.data(), views.data(), views.size(), a.data());
  test::forwardOf(*gpu, truth.data.data(), views.data(), views.size(), b.data());
  const bool software = gpu->description().find("llvmpipe") != std::string::npos;
  expectClose(b, a, (backend + " forward").c_str(), software);
  std::vector<float> va(grid.voxelCount()), vb(grid.voxelCount());
  test::backOf(*cpu, a.data(), views.data(), views.size(), va.data());
  test::backOf(*gpu, a.data(), views.data(), views.size(), vb.data());
  expectClose(vb, va, (backend + " back").c_str(), software);
  // The detector through the isocentre (sdd = sid): the rays run on past the detector plane through the volume's
  // far half, as on the cpu backend.
  CircularScanSpec spec;
  spec.projections = 12;
  spec.nu = spec.nv = 40;
  spec.sdd = spec.sid;
  spec.spacingU = spec.spacingV = 8.0;
  const Geometry through = makeCircularScan(spec);
  auto cpuThrough = makeOperator(Backend::Cpu, through, grid);
  auto gpuThrough = test::makeNamed(backend, through, grid);
  test::forwardOf(*cpuThrough, truth.data.data(), views.data(), views.size(), a.data());
  test::forwardOf(*gpuThrough, truth.data.data(), views.data(), views.size(), b.data());
  expectClose(b, a, (backend + " forward, detector through the isocentre").c_str(), software);
}

// The matched pair on a GPU backend: A with float trilinear weights read voxel by voxel, A^T its scatter (atomic adds).
// Against cpu's matched pair no texture unit interpolates, so expectClose's software bounds hold (position rounding:
// fused multiply-adds; the order of the atomic sums: float rounding of each voxel's sum, ~1e-7 relative per term).
// Adjoint gap for zero-mean x, y within 1e-7 as on cpu (the same products, summed in other orders; atomics only
// reorder the sums; measured 2e-9 on an H200 and llvmpipe).
inline void matchedPairMatchesCpu(const std::string& backend, const Geometry& g = circularScan(12, 40),
                                  ProjectorPair exactPair = ProjectorPair::Matched) {
  const VolumeGrid grid = VolumeGrid::centred({32, 28, 24}, {7.0, 8.0, 9.0});
  OperatorOptions o;
  o.pair = exactPair;
  auto cpu = makeOperator(Backend::Cpu, g, grid, o);
  auto gpu = makeOperator(*backendNamed(backend), g, grid, o);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> centred(-0.5f, 0.5f);
  std::vector<float> x(grid.voxelCount());
  for (float& v : x) v = centred(rng);
  std::vector<std::size_t> views(g.size());
  std::iota(views.begin(), views.end(), std::size_t{0});
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  std::vector<float> a(views.size() * pixels), b(views.size() * pixels), y(views.size() * pixels);
  for (float& v : y) v = centred(rng);
  test::forwardOf(*cpu, x.data(), views.data(), views.size(), a.data());
  test::forwardOf(*gpu, x.data(), views.data(), views.size(), b.data());
  const std::string name = backend + " " + projectorPairName(exactPair);
  expectClose(b, a, (name + " forward").c_str(), true);
  std::vector<float> va(grid.voxelCount()), vb(grid.voxelCount());
  test::backOf(*cpu, y.data(), views.data(), views.size(), va.data());
  test::backOf(*gpu, y.data(), views.data(), views.size(), vb.data());
  expectClose(vb, va, (name + " back").c_str(), true);
  const auto dot = dotInDouble;
  const double gap = std::abs(dot(b, y) - dot(x, vb)) / std::sqrt(dot(b, b) * dot(y, y));
  std::printf("%s adjoint gap / (|Ax| |y|): %.3e\n", name.c_str(), gap);
  EXPECT_LT(gap, 1e-7);
}

// One sample per voxel plane (the default sampling, src/operators/ray_march.h) integrates the trilinear interpolant
// exactly along the main axis: over a constant c, a ray that crosses all n planes of its main axis while its other
// coordinates stay where all 8 neighbours are voxels (the interpolant's plateau) reads c at each plane and gets
// n c L, L = h_m / |cos| its length per plane: exactly the interpolant's integral (c on [0, n - 1] along the axis,
// linear to 0 at -1 and n: n h_m c). The geometry: rays 20 degrees off x in x-z through an anisotropic box long in z,
// the source far (1000 mm) so the rays nearly parallel. A sample off its plane, a plane missed or taken twice, or a
// wrong length moves a ray by a whole c L (1/16 of it). Bound: every sample is c exactly (plateau: c + f (c - c)),
// the 16 sums of 1 exact, so only L's float arithmetic rounds (the ray's vector, its length, the division, the
// reciprocal: 6 roundings of 2^-24 relative, 3.6e-7): 1e-6 relative.
// With `parallel`, the same rays from a source at infinity: every ray along `along`, exactly parallel (no far-source
// approximation), through the same pixels.
inline void oneSamplePerPlaneIsExact(const std::string& backend, bool parallel = false) {
  const VolumeGrid grid = VolumeGrid::centred({16, 8, 64}, {2.0, 3.0, 1.5});
  const double angle = 20.0 * 3.14159265358979323846 / 180.0;
  const glm::dvec3 along(std::cos(angle), 0.0, std::sin(angle)), across(-std::sin(angle), 0.0, std::cos(angle)), up(0.0, 1.0, 0.0);
  Geometry g;
  g.detector = DetectorLayout::centred(48, 8, 0.5, 0.5);
  ProjectionVectors v;
  v.source = -1000.0 * along;
  v.uStep = 0.5 * across;
  v.vStep = 0.5 * up;
  v.pixel00 = 200.0 * along - 23.5 * v.uStep - 3.5 * v.vStep;
  if (parallel) {
    v.source = glm::dvec3(0.0);
    v.ray = along;
  }
  g.views = {v};
  auto op = test::makeNamed(backend, g, grid);
  ASSERT_EQ(op->step(), 0.0) << "the default sampling is one sample per plane";
  const std::vector<float> ones(grid.voxelCount(), 1.0f);
  const std::size_t view = 0;
  std::vector<float> p(static_cast<std::size_t>(g.detector.nu) * g.detector.nv);
  test::forwardOf(*op, ones.data(), &view, 1, p.data());
  int checked = 0;
  for (int iv = 0; iv < g.detector.nv; ++iv)
    for (int iu = 0; iu < g.detector.nu; ++iu) {
      const glm::dvec3 d = v.rayDirection(iu, iv);
      const glm::dvec3 s = ((parallel ? v.detectorPoint(iu, iv) : v.source) - grid.origin) / grid.spacing, dir = d / grid.spacing;
      // The ray's y and z indices where it crosses the x planes -1 and 16 (the interpolant's support along x).
      bool plateau = true;
      for (double x : {-1.0, 16.0}) {
        const glm::dvec3 q = s + (x - s.x) / dir.x * dir;
        plateau = plateau && q.y >= 0.0 && q.y <= 7.0 && q.z >= 0.0 && q.z <= 63.0;
      }
      if (!plateau) continue;
      ++checked;
      const double expected = 16.0 / std::abs(dir.x);
      EXPECT_NEAR(p[static_cast<std::size_t>(iv) * g.detector.nu + iu], expected, 1e-6 * expected) << backend << " pixel " << iu << ", " << iv;
    }
  EXPECT_GT(checked, 100) << "rays on the plateau";
}

// Parallel beam on a GPU backend against cpu, within expectClose's bounds (the same float expressions; the rays start at
// their pixels instead of one source): forward and the interpolating B on ASTRA's parallel3d circle and on a general
// parallel3d_vec scan (rays tilted off the axial plane and the detector normal, the detector rolled and off the axis),
// a scrambled subset of views; the matched pair where the backend has it.
inline void parallelBeamMatchesCpu(const std::string& backend, bool matched = true) {
  const VolumeGrid grid = VolumeGrid::centred({32, 28, 24}, {7.0, 8.0, 9.0});
  const Image truth = voxelizePhantom(Phantom::sheppLogan(SheppLoganVariant::Modified, 90.0), grid, 2);
  const std::vector<std::size_t> views = {5, 0, 11, 3};
  for (const Geometry& g : {parallelScan(12, 40, 320.0), tiltedParallelScan(12, 44, 36, 8.0)}) {
    auto cpu = makeOperator(Backend::Cpu, g, grid);
    auto gpu = test::makeNamed(backend, g, grid);
    const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
    std::vector<float> a(views.size() * pixels), b(views.size() * pixels);
    test::forwardOf(*cpu, truth.data.data(), views.data(), views.size(), a.data());
    test::forwardOf(*gpu, truth.data.data(), views.data(), views.size(), b.data());
    const bool software = gpu->description().find("llvmpipe") != std::string::npos;
    const std::string what = backend + (g.detector.nu == 40 ? " parallel3d" : " parallel3d_vec, tilted");
    expectClose(b, a, (what + " forward").c_str(), software);
    std::vector<float> va(grid.voxelCount()), vb(grid.voxelCount());
    test::backOf(*cpu, a.data(), views.data(), views.size(), va.data());
    test::backOf(*gpu, a.data(), views.data(), views.size(), vb.data());
    expectClose(vb, va, (what + " back").c_str(), software);
    if (matched) matchedPairMatchesCpu(backend, g);
  }
}

}  // namespace glrecon::test
