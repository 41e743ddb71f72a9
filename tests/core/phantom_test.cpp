// Analytic phantom: exact chords, numerical integration, voxelization, noise.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include <glm/geometric.hpp>

#include "glrecon/phantom.h"
#include "test_support.h"

namespace glrecon {
namespace {

TEST(Phantom, ChordOfOneEllipsoidIsExact) {
  // Rays along the ellipsoid's own (rotated) x axis, offset by (y0, z0) in its local frame: the chord is
  // 2 a sqrt(1 - y0^2/b^2 - z0^2/c^2), worked out independently of the quadric solver.
  const double a = 30, b = 12, c = 20, angle = 27.0, density = 1.7;
  const glm::dvec3 centre(5, -7, 11);
  const Phantom phantom({Ellipsoid{centre, {a, b, c}, angle, density}});
  const double r = angle * std::numbers::pi / 180;
  const glm::dvec3 ex(std::cos(r), 0, std::sin(r)), ey(0, 1, 0), ez(-std::sin(r), 0, std::cos(r));
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> unit(-1, 1);
  for (int s = 0; s < 200; ++s) {
    const double y0 = b * unit(rng), z0 = c * unit(rng);
    const glm::dvec3 through = centre + y0 * ey + z0 * ez;
    const double q = 1 - y0 * y0 / (b * b) - z0 * z0 / (c * c);
    const double expected = q > 0 ? 2 * a * std::sqrt(q) * density : 0.0;
    // Double precision on 100 mm segments: 1e-9 mm is many orders below anything a float pipeline sees.
    EXPECT_NEAR(phantom.lineIntegral(through - 100.0 * ex, through + 100.0 * ex), expected, 1e-9);
  }
  // A segment that ends inside the ellipsoid counts only the part inside.
  EXPECT_NEAR(phantom.lineIntegral(centre - 100.0 * ex, centre), a * density, 1e-9);
}

TEST(Phantom, ChordOfATinyEllipsoidFarAwayKeepsItsPrecision) {
  // A sphere of radius r seen from 1000 mm along a ray passing at h from its centre: chord 2 sqrt(r^2 - h^2). Solved
  // about the source, the quadratic's discriminant cancelled at eps (1000 / r)^2 relative: r = 1e-6 mm gave 345 times
  // the diameter. The rounding left is that of the ray's position next to the sphere, eps |a - centre| / r relative in
  // the distance h, which 1 - h^2/r^2 and the square root carry to the chord amplified by at most h^2/(r^2 - h^2) = 4.3
  // (h = 0.9 r): 16 eps (1000 / r) covers it with the dot products' few roundings. Rays along an axis are exact.
  constexpr double eps = std::numeric_limits<double>::epsilon();
  for (const double radius : {1.0, 1e-3, 1e-5, 1e-7}) {
    const Phantom sphere({Ellipsoid{{0, 0, 0}, {radius, radius, radius}, 0.0, 1.0}});
    for (const double offset : {0.0, 0.5, 0.9}) {
      const double expected = 2 * radius * std::sqrt(1 - offset * offset);
      const glm::dvec3 source(-1000.0, offset * radius, 0.0), end(1000.0, offset * radius, 0.0);
      EXPECT_NEAR(sphere.lineIntegral(source, end), expected, 4 * eps * expected) << radius << " " << offset;
      EXPECT_NEAR(sphere.rayIntegral(source, {0.0, offset * radius, 0.0}), expected, 4 * eps * expected) << radius;
      // Tilted 30 degrees about z, through the same closest point; the far end given 2000 mm away so that the direction
      // b - a holds double's precision (through a + along, b - a lost eps 1000 of a unit vector).
      const glm::dvec3 along(std::cos(0.5236), std::sin(0.5236), 0.0), across(-along.y, along.x, 0.0);
      const glm::dvec3 tiltedSource = offset * radius * across - 1000.0 * along;
      EXPECT_NEAR(sphere.rayIntegral(tiltedSource, tiltedSource + 2000.0 * along), expected, 16 * eps * (1000.0 / radius) * expected)
          << radius << " " << offset;
    }
  }
}

TEST(Phantom, LineIntegralMatchesFineNumericalIntegration) {
  const Phantom phantom = Phantom::sheppLogan();
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> c(-100, 100);
  double absDensities = 0;
  for (const Ellipsoid& e : phantom.ellipsoids()) absDensities += std::abs(e.density);
  for (int s = 0; s < 20; ++s) {
    const glm::dvec3 a(c(rng), c(rng), -300), b(c(rng), c(rng), 300);
    const int steps = 100000;
    const double h = glm::length(b - a) / steps;
    double numeric = 0;
    for (int i = 0; i < steps; ++i) numeric += phantom.densityAt(a + (i + 0.5) / steps * (b - a)) * h;
    // Midpoint sampling of a piecewise-constant integrand errs by at most h at each boundary crossing,
    // and each ellipsoid is crossed at most twice.
    EXPECT_NEAR(phantom.lineIntegral(a, b), numeric, 2 * h * absDensities);
  }
}

TEST(Phantom, LineIntegralMatchesIntegrationThroughTheVoxelizedPhantom) {
  const Phantom sphere({Ellipsoid{{2, -3, 1}, {20, 20, 20}, 0, 1.0}});
  const double h = 0.5;
  const VolumeGrid grid = VolumeGrid::centred({100, 100, 100}, glm::dvec3(h));
  const Image voxels = voxelizePhantom(sphere, grid, 4);
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> c(-10, 10);
  for (int s = 0; s < 10; ++s) {
    const glm::dvec3 a(c(rng), c(rng), -24), b(c(rng), c(rng), 24);
    const int steps = 4800;
    const double step = glm::length(b - a) / steps;
    double sum = 0;
    for (int i = 0; i < steps; ++i) {
      const glm::dvec3 p = a + (i + 0.5) / steps * (b - a);
      const glm::dvec3 idx = glm::round((p - grid.origin) / grid.spacing);
      sum += voxels.at(int(idx.x), int(idx.y), int(idx.z)) * step;
    }
    // Discretization: near each of the two boundary crossings the ray runs through partial voxels whose
    // values differ from the true density over at most one voxel diagonal (sqrt(3) h) of path.
    EXPECT_NEAR(sphere.lineIntegral(a, b), sum, 2 * std::sqrt(3.0) * h);
  }
}

TEST(Phantom, SheppLoganFollowsRtksTable) {
  const Phantom p = Phantom::sheppLogan(SheppLoganVariant::Rtk, 128);
  ASSERT_EQ(p.ellipsoids().size(), 10u);
  EXPECT_DOUBLE_EQ(p.ellipsoids()[0].density, 2.0);
  EXPECT_DOUBLE_EQ(p.ellipsoids()[1].density, -0.98);
  EXPECT_DOUBLE_EQ(p.ellipsoids()[0].semiAxes.z, 0.92 * 128);
  EXPECT_NEAR(p.densityAt({0, 0, 0}), 1.02, 1e-12);           // brain
  EXPECT_NEAR(p.densityAt({0, -32, 44.8}), 1.04, 1e-12);      // ellipsoid 5 centre
  EXPECT_NEAR(p.densityAt({0, 0, 0.91 * 128}), 2.0, 1e-12);   // skull, along z
  EXPECT_NEAR(p.densityAt({0, 0, 0.93 * 128}), 0.0, 1e-12);   // outside
  const Phantom m = Phantom::sheppLogan(SheppLoganVariant::Modified, 128);
  EXPECT_NEAR(m.densityAt({0, 0, 0}), 0.2, 1e-12);
  EXPECT_NEAR(m.densityAt({0, -32, 44.8}), 0.4, 1e-12);
}

TEST(Phantom, VoxelizationAveragesOverTheVoxel) {
  const Phantom slab({Ellipsoid{{0, 0, 0}, {1000, 1000, 1000}, 0, 3.0}});
  const Image inside = voxelizePhantom(slab, VolumeGrid::centred({4, 4, 4}, glm::dvec3(1.0)), 2);
  for (float v : inside.data) EXPECT_FLOAT_EQ(v, 3.0f);
  // A sphere of radius 10 on 1 mm voxels with 4^3 samples: the total is the sphere's volume within the
  // boundary layer's sampling error (surface area x half a sample spacing).
  const Phantom sphere({Ellipsoid{{0.3, 0.1, -0.2}, {10, 10, 10}, 0, 1.0}});
  const Image v = voxelizePhantom(sphere, VolumeGrid::centred({24, 24, 24}, glm::dvec3(1.0)), 4);
  double total = 0;
  for (float x : v.data) total += x;
  const double volume = 4.0 / 3.0 * std::numbers::pi * 1000.0;
  EXPECT_NEAR(total, volume, 4 * std::numbers::pi * 100.0 * 0.125);
}

TEST(Phantom, PoissonNoiseHasTheExpectedVarianceAndIsReproducible) {
  CircularScanSpec spec;
  spec.projections = 4;
  spec.nu = spec.nv = 64;
  const Geometry g = makeCircularScan(spec);
  const Phantom empty({Ellipsoid{{0, 5000, 0}, {1, 1, 1}, 0, 1.0}});  // far outside every ray: p = 0
  ProjectionOptions options;
  options.noiseI0 = 1e4;
  options.seed = 42;
  options.threads = 1;
  const Image a = projectPhantom(empty, g, options);
  options.threads = 2;
  const Image b = projectPhantom(empty, g, options);
  EXPECT_EQ(a.data, b.data);  // the thread count does not change the noise
  double mean = 0, var = 0;
  for (float x : a.data) mean += x;
  mean /= a.data.size();
  for (float x : a.data) var += (x - mean) * (x - mean);
  var /= a.data.size() - 1;
  // -ln(N / I0) with N ~ Poisson(I0): variance 1/I0 to first order. With n = 16384 samples the sample
  // variance has a relative standard deviation sqrt(2/n) = 1.1%; 6% is over five of those.
  EXPECT_NEAR(var, 1.0 / options.noiseI0, 0.06 / options.noiseI0);
  EXPECT_NEAR(mean, 0.0, 5 * std::sqrt(1.0 / options.noiseI0 / a.data.size()) + 1.0 / options.noiseI0);
}

// Poisson noise on negative line integrals (a negative density scale): the sampler's mean noiseI0 exp(-p) was ~1e90 or
// infinite and it ran for ever. Now an error naming the pixel, before any sampling of it; the RTK phantom itself
// (negative ellipsoids nested in positive ones) still simulates with noise.
TEST(Phantom, NoiseOnNegativeLineIntegralsIsRefusedNotAHang) {
  const Geometry g = test::circularScan(2, 16, 16 * 24.0);
  Phantom negative = Phantom::sheppLogan();
  negative.scaleDensities(-1.0);
  ProjectionOptions options;
  options.noiseI0 = 1000.0;
  test::expectError<InputError>([&] { projectPhantom(negative, g, options); },
                                {"simulated projection", "non-negative line integral under Poisson noise", "noiseI0"});
  const Image ok = projectPhantom(Phantom::sheppLogan(), g, options);
  for (float v : ok.data) ASSERT_TRUE(std::isfinite(v));  // (noise makes rays through air slightly negative)
}

}  // namespace
}  // namespace glrecon
