#pragma once
// The analytic phantom's scan, the metrics against it and their bounds, shared by the FDK tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"
#include "glrecon/phantom.h"
#include "test_support.h"

namespace glrecon::test {

struct Scan {
  Geometry geometry;
  Image projections;
};

// A C-arm-like scan: 1000 mm to the isocentre, 1536 mm to a 512 mm detector.
inline Scan simulate(const Phantom& phantom, int projections, double arc, int detectorPixels) {
  CircularScanSpec spec;
  spec.projections = projections;
  spec.arc = arc;
  spec.nu = spec.nv = detectorPixels;
  spec.spacingU = spec.spacingV = 512.0 / detectorPixels;
  Scan scan{makeCircularScan(spec), {}};
  scan.projections = projectPhantom(phantom, scan.geometry, {});
  return scan;
}

// A parallel-beam scan (ASTRA's parallel3d) of the phantom: `projections` over `arc` degrees ([0, 180) by default) on a
// 256 mm detector, exact parallel projections.
inline Scan simulateParallel(const Phantom& phantom, int projections, int detectorPixels, double arc = 180.0) {
  Scan scan{parallelScan(projections, detectorPixels, 256.0, arc), {}};
  scan.projections = projectPhantom(phantom, scan.geometry, {});
  return scan;
}

// Masks built from the phantom's own table, shrunk (or grown) by a margin so the FDK's edge blur of a voxel
// or two stays out of the regions whose mean density is checked.
inline bool insideScaled(const Ellipsoid& e, const glm::dvec3& p, double margin) {
  const double a = e.angleY * M_PI / 180, c = std::cos(a), s = std::sin(a);
  const glm::dvec3 d = p - e.center;
  const glm::dvec3 local(c * d.x + s * d.z, d.y, -s * d.x + c * d.z);
  const glm::dvec3 axes = e.semiAxes + margin;
  if (axes.x <= 0 || axes.y <= 0 || axes.z <= 0) return false;
  const glm::dvec3 q = local / axes;
  return glm::dot(q, q) <= 1.0;
}

struct Metrics {
  double rmse = 0;
  std::size_t fovVoxels = 0;
  double mean[3] = {0, 0, 0};  // brain (e2), ellipsoid 5, ellipsoid 3
  std::size_t count[3] = {0, 0, 0};
};

// RMSE over the central field of view (a cylinder of 0.9 x the radius every projection sees, over the
// central 80% of the detector's height at the isocentre), and mean densities in three eroded regions.
inline Metrics evaluate(const Image& recon, const Image& truth, const Phantom& phantom, const Geometry& g, double margin) {
  const ProjectionVectors& v = g.views[0];
  const double halfWidth = 0.5 * g.detector.nu * std::abs(g.detector.spacingU);
  double fovRadius = 0.9 * halfWidth, halfHeight = 0.8 * 0.5 * g.detector.nv * std::abs(g.detector.spacingV);  // parallel beam
  if (!g.parallel()) {
    const double sid = v.sourceToIsocentre(), sdd = v.sourceToDetector();
    fovRadius = 0.9 * sid * std::sin(std::atan(halfWidth / sdd));
    halfHeight *= sid / sdd * (1 - fovRadius / sid);
  }
  const auto& e = phantom.ellipsoids();
  const int regionEllipsoid[3] = {1, 4, 2};
  Metrics m;
  double sq = 0;
  const VolumeGrid grid = recon.grid();
  for (int k = 0; k < grid.size[2]; ++k)
    for (int j = 0; j < grid.size[1]; ++j)
      for (int i = 0; i < grid.size[0]; ++i) {
        const glm::dvec3 p = grid.worldOf(i, j, k);
        const float r = recon.at(i, j, k);
        if (p.x * p.x + p.z * p.z <= fovRadius * fovRadius && std::abs(p.y) <= halfHeight) {
          const double d = r - truth.at(i, j, k);
          sq += d * d;
          ++m.fovVoxels;
        }
        for (int region = 0; region < 3; ++region) {
          const int own = regionEllipsoid[region];
          if (!insideScaled(e[own], p, -margin)) continue;
          bool clear = true;
          for (std::size_t o = 2; o < e.size(); ++o)
            if (static_cast<int>(o) != own && insideScaled(e[o], p, margin)) clear = false;
          if (!clear) continue;
          m.mean[region] += r;
          ++m.count[region];
        }
      }
  m.rmse = std::sqrt(sq / m.fovVoxels);
  for (int region = 0; region < 3; ++region) m.mean[region] /= std::max<std::size_t>(1, m.count[region]);
  std::printf("RMSE %.5f over %zu FOV voxels; means: brain %.5f (%zu), ellipsoid 5 %.5f (%zu), ellipsoid 3 %.5f (%zu)\n",
              m.rmse, m.fovVoxels, m.mean[0], m.count[0], m.mean[1], m.count[1], m.mean[2], m.count[2]);
  return m;
}

// RMSE bounds: the first honest run of each test, rounded up by less than 10%. The margin allows for
// legitimate changes of interpolation detail, not for a wrong constant: scaling the FDK constant by 1.02
// was tried and raises the 64^3 RMSE to 0.0351, past its bound, and a missing weight moves the RMSE
// several-fold (see the short scan without Parker below).
constexpr double kRmse64 = 0.035;       // first run: 0.03213 (360 projections of 128^2, 4 mm voxels)
// Parallel beam, 180 views over [0, 180) of 128^2 pixels of 2 mm: no cone-beam error (the densities come back to 2e-5),
// over a larger field of view than the cone's (radius 115 mm, |y| < 102 mm: more of the skull's edges).
constexpr double kRmse64Parallel = 0.046;  // first run: 0.04253

// The phantom's densities in those regions: brain 2 - 0.98, ellipsoid 5 adds 0.02, ellipsoid 3 -0.02.
constexpr double kTrue[3] = {1.02, 1.04, 1.00};

// The issue asks for the three largest ellipsoids; the largest (the skull) is a shell 2.6 to 5.9 mm thick,
// thinner than two voxels at these sizes, so it has no interior to average. Ellipsoids 2 and 5 are the
// next largest, ellipsoid 3 the one after.
inline void expectDensities(const Metrics& m, double tolerance) {
  for (int region = 0; region < 3; ++region) {
    EXPECT_GT(m.count[region], 8u) << "region " << region << " too small to average";
    EXPECT_NEAR(m.mean[region], kTrue[region], tolerance * kTrue[region]) << "region " << region;
  }
}

// A GPU backend's backprojection against the cpu backend's on `scan`, both filtered by the CPU's FFTW (so the inputs
// are the same floats), within a bound derived from how texture units sample: GPUs weigh a bilinear sample with
// fractions of 8 bits (NVIDIA; llvmpipe interpolates floats), so each weight is off by at most 2^-9 of a pixel step and
// a sample by at most 2^-9 (|q(i+1, j) - q(i, j)| + |q(i, j+1) - q(i, j)|) plus 2^-18 times the four values (the
// weights' product); summed over the views, with float rounding of the coordinates and sums (2^-20 of the largest sum,
// a wide margin over a few hundred terms of relative error 2^-24) on top. For parallel beam (w exactly 1: no 1/w^2
// error). A sample half a pixel off, a wrong matrix or a lost view is hundreds of times the bound.
inline void expectBackprojectionMatchesCpu(const Scan& scan, const VolumeGrid& grid, FdkOptions options, const std::string& name) {
  options.filterOn = FilterPlace::Cpu;
  const Image gpu = reconstructFdk(scan.geometry, scan.projections, grid, options);
  FdkOptions cpuOptions;
  cpuOptions.backend = Backend::Cpu;
  const Image cpu = reconstructFdk(scan.geometry, scan.projections, grid, cpuOptions);
  const FdkFilter filter(scan.geometry, FilterOptions{});
  const int nu = scan.geometry.detector.nu, nv = scan.geometry.detector.nv;
  const std::size_t pixels = static_cast<std::size_t>(nu) * nv;
  double bound = 0, largestSum = 0;
  std::vector<float> q(pixels);
  for (std::size_t view = 0; view < scan.geometry.size(); ++view) {
    std::copy_n(scan.projections.data.begin() + static_cast<std::ptrdiff_t>(view * pixels), pixels, q.begin());
    filter.apply(view, q.data());
    double du = 0, dv = 0, top = 0;
    for (int v = 0; v < nv; ++v)
      for (int u = 0; u < nu; ++u) {
        const double here = q[static_cast<std::size_t>(v) * nu + u];
        top = std::max(top, std::abs(here));
        if (u + 1 < nu) du = std::max(du, std::abs(q[static_cast<std::size_t>(v) * nu + u + 1] - here));
        if (v + 1 < nv) dv = std::max(dv, std::abs(q[static_cast<std::size_t>(v + 1) * nu + u] - here));
      }
    bound += std::ldexp(du + dv, -9) + std::ldexp(4 * top, -18);
    largestSum += top;
  }
  bound += std::ldexp(largestSum, -20);
  float worst = 0;
  for (std::size_t i = 0; i < cpu.data.size(); ++i) worst = std::max(worst, std::abs(gpu.data[i] - cpu.data[i]));
  std::printf("%s backprojection against cpu: largest |difference| %.3g, bound %.3g\n", name.c_str(), worst, bound);
  EXPECT_LE(worst, bound) << name;
}

}  // namespace glrecon::test
