#include "glrecon/phantom.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"
#include "glrecon/validate.h"

namespace glrecon {

Phantom::Phantom(std::vector<Ellipsoid> ellipsoids) : ellipsoids_(std::move(ellipsoids)) {
  for (const Ellipsoid& e : ellipsoids_) {
    if (!(e.semiAxes.x > 0.0 && e.semiAxes.y > 0.0 && e.semiAxes.z > 0.0))
      throw InputError("phantom: ellipsoid semi-axes: expected positive lengths");
    const double a = e.angleY * std::numbers::pi / 180.0, c = std::cos(a), s = std::sin(a);
    prepared_.push_back(Prepared{e.center, glm::dvec3(c, 0.0, s) / e.semiAxes.x, glm::dvec3(0.0, 1.0, 0.0) / e.semiAxes.y,
                                 glm::dvec3(-s, 0.0, c) / e.semiAxes.z, e.density});
  }
}

Phantom Phantom::sheppLogan(SheppLoganVariant variant, double scale) {
  checkValue("phantomScale", scale);
  // RTK's table (rtkSheppLoganPhantom.cxx): semi-axes, centre, angle about y, density; in units of `scale`.
  struct Row {
    double ax, ay, az, cx, cy, cz, angle, density, modified;
  };
  static const Row table[] = {
      {0.69, 0.90, 0.92, 0.0, 0.0, 0.0, 0.0, 2.0, 1.0},
      {0.6624, 0.880, 0.874, 0.0, 0.0, 0.0, 0.0, -0.98, -0.8},
      {0.41, 0.21, 0.16, -0.22, -0.25, 0.0, 108.0, -0.02, -0.2},
      {0.31, 0.22, 0.11, 0.22, -0.25, 0.0, 72.0, -0.02, -0.2},
      {0.21, 0.50, 0.25, 0.0, -0.25, 0.35, 0.0, 0.02, 0.2},
      {0.046, 0.046, 0.046, 0.0, -0.25, 0.10, 0.0, 0.02, 0.2},
      {0.046, 0.02, 0.023, -0.08, -0.25, -0.65, 0.0, 0.01, 0.1},
      {0.046, 0.02, 0.023, 0.06, -0.25, -0.65, 90.0, 0.01, 0.1},
      {0.056, 0.1, 0.04, 0.06, 0.625, -0.105, 90.0, 0.02, 0.2},
      {0.056, 0.1, 0.056, 0.0, 0.625, 0.1, 0.0, -0.02, -0.2},
  };
  std::vector<Ellipsoid> ellipsoids;
  for (const Row& r : table)
    ellipsoids.push_back(Ellipsoid{scale * glm::dvec3(r.cx, r.cy, r.cz), scale * glm::dvec3(r.ax, r.ay, r.az), r.angle,
                                   variant == SheppLoganVariant::Rtk ? r.density : r.modified});
  return Phantom(std::move(ellipsoids));
}

SheppLoganVariant parseSheppLoganVariant(const std::string& name) {
  if (name == "shepp-logan" || name == "rtk") return SheppLoganVariant::Rtk;
  if (name == "modified" || name == "modified-shepp-logan") return SheppLoganVariant::Modified;
  throw UsageError(field("phantom") + ": expected shepp-logan or modified, found '" + name + "'");
}

void Phantom::scaleDensities(double factor) {
  checkValue("densityScale", factor);
  for (Ellipsoid& e : ellipsoids_) e.density *= factor;
  for (Prepared& p : prepared_) p.density *= factor;
}

double Phantom::densityAt(const glm::dvec3& p) const {
  double sum = 0.0;
  for (const Prepared& e : prepared_) {
    const glm::dvec3 d = p - e.center;
    const double x = glm::dot(e.rowX, d), y = glm::dot(e.rowY, d), z = glm::dot(e.rowZ, d);
    if (x * x + y * y + z * z <= 1.0) sum += e.density;
  }
  return sum;
}

double Phantom::lineIntegral(const glm::dvec3& a, const glm::dvec3& b) const { return integral(a, b, 1.0); }

double Phantom::rayIntegral(const glm::dvec3& source, const glm::dvec3& through) const { return integral(source, through, HUGE_VAL); }

double Phantom::parallelRayIntegral(const glm::dvec3& through, const glm::dvec3& direction) const {
  return integral(through, through + direction, HUGE_VAL, -HUGE_VAL);
}

// Along a + t (b - a) for t in [lower, upper].
double Phantom::integral(const glm::dvec3& a, const glm::dvec3& b, double upper, double lower) const {
  const glm::dvec3 d = b - a;
  const double length = glm::length(d);
  double sum = 0.0;
  for (const Prepared& e : prepared_) {
    // In the ellipsoid's unit-sphere coordinates the line is q0 + t q1; solve |q|^2 = 1.
    const glm::dvec3 r = a - e.center;
    const glm::dvec3 q0(glm::dot(e.rowX, r), glm::dot(e.rowY, r), glm::dot(e.rowZ, r));
    const glm::dvec3 q1(glm::dot(e.rowX, d), glm::dot(e.rowY, d), glm::dot(e.rowZ, d));
    const double qa = glm::dot(q1, q1);
    // The squared distance of the line from the centre is |q0 x q1|^2 / qa and the chord is centred on the closest point
    // t* = -(q0.q1)/qa: the textbook discriminant qb^2 - qa qc cancels at eps (|a - centre| / semi-axis)^2 (a 1e-6 mm
    // phantom seen from 1000 mm projected 345 times its diameter); the cross product keeps eps |a - centre| / semi-axis,
    // and is exact for rays along an axis.
    const glm::dvec3 normal = glm::cross(q0, q1);
    const double inside = 1.0 - glm::dot(normal, normal) / qa;
    const double closest = -glm::dot(q0, q1) / qa;
    // An ellipsoid too small for double next to the ray's length (scale=1e-300: qa overflows) gives NaN, which max/min
    // turned into the whole segment; what it holds is far below float's precision: skipped.
    if (!(inside > 0.0) || !std::isfinite(inside) || !std::isfinite(qa) || !std::isfinite(closest)) continue;
    const double halfChord = std::sqrt(inside / qa);
    const double t0 = closest - halfChord, t1 = closest + halfChord;
    // Unclipped, the chord is 2 halfChord: t1 - t0 would lose eps |t*| of a long ray.
    const double chord = (t0 >= lower && t1 <= upper) ? 2.0 * halfChord : std::min(upper, t1) - std::max(lower, t0);
    if (chord > 0.0) sum += e.density * chord * length;
  }
  return sum;
}

namespace {
// The command line's bounds (glrecon/limits.h), for every caller: a noise_i0 of 1e200 from Python hung in the Poisson
// sampler, a supersample of 100000 ran for hours.
void checkProjectionOptions(const ProjectionOptions& options) {
  checkValue("supersample", options.supersample);
  checkValue("noiseI0", options.noiseI0);
  checkValue("threads", options.threads);
}
}  // namespace

Image projectPhantom(const Phantom& phantom, const Geometry& geometry, const ProjectionOptions& options) {
  geometry.validate("phantom projection");
  checkProjectionOptions(options);
  checkHostMemory("phantom", std::to_string(geometry.size()) + " projections of " + std::to_string(geometry.detector.nu) + " x " +
                                 std::to_string(geometry.detector.nv),
                  std::uint64_t{4} * geometry.detector.nu * geometry.detector.nv * geometry.size());
  const DetectorLayout& d = geometry.detector;
  Image projections({d.nu, d.nv, static_cast<int>(geometry.size())}, {d.spacingU, d.spacingV, 1.0},
                    {d.originU, d.originV, 0.0});
  const int n = options.supersample;
  const std::size_t rows = geometry.size() * static_cast<std::size_t>(d.nv);
  parallelFor(rows, 4, options.threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const std::size_t view = row / d.nv;
      const int v = static_cast<int>(row % d.nv);
      const ProjectionVectors& pv = geometry.views[view];
      float* out = projections.slice(static_cast<int>(view)) + static_cast<std::size_t>(v) * d.nu;
      // One generator per detector row, seeded from (seed, row): results do not depend on the thread count.
      std::mt19937_64 rng(options.seed * 0x9E3779B97F4A7C15ull + row);
      for (int u = 0; u < d.nu; ++u) {
        double sum = 0.0;
        for (int sv = 0; sv < n; ++sv)
          for (int su = 0; su < n; ++su) {
            const double du = (su + 0.5) / n - 0.5, dv = (sv + 0.5) / n - 0.5;
            sum += pv.parallel() ? phantom.parallelRayIntegral(pv.detectorPoint(u + du, v + dv), pv.ray)
                                 : phantom.rayIntegral(pv.source, pv.detectorPoint(u + du, v + dv));
          }
        double value = sum / (n * n);
        if (options.noiseI0 > 0.0) {
          // Poisson counts of noiseI0 exp(-p) photons need p >= 0: a negative density (a negative density scale) made
          // the mean astronomically large or infinite and the sampler ran for ever. Below -1e-9 it is no rounding of
          // nested chords (~10 chords of <= 1e3 mm x density ~1 in double: ~1e-12).
          if (value < -1e-9)
            throwInputError("phantom", "simulated projection " + std::to_string(view) + " pixel (" + std::to_string(u) + ", " + std::to_string(v) + ")",
                            "a non-negative line integral under Poisson noise (" + field("noiseI0") +
                                " counts the unattenuated photons; negative densities brighten the beam)",
                            std::to_string(value));
          std::poisson_distribution<long long> counts(options.noiseI0 * std::exp(-value));
          // A zero count is read as one photon so the line integral stays finite (as a detector offset would).
          value = -std::log(std::max<long long>(counts(rng), 1) / options.noiseI0);
        }
        out[u] = static_cast<float>(value);
      }
    }
  });
  return projections;
}

Image voxelizePhantom(const Phantom& phantom, const VolumeGrid& grid, int supersample, int threads) {
  grid.validate("phantom voxelization");
  // The command line's bounds (glrecon/limits.h): supersample=1000 from Python ran for hours, threads=100000 started
  // as many threads.
  checkValue("supersample", supersample);
  checkValue("threads", threads);
  checkGridBounds(grid, field("size") + "/" + field("spacing") + "/" + field("origin"));
  checkHostMemory("phantom", field("size") + " " + std::to_string(grid.size[0]) + "," + std::to_string(grid.size[1]) + "," +
                                 std::to_string(grid.size[2]),
                  std::uint64_t{4} * grid.voxelCount());
  Image volume(grid);
  const int n = supersample;
  const std::size_t rows = static_cast<std::size_t>(grid.size[1]) * grid.size[2];
  parallelFor(rows, 8, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const int j = static_cast<int>(row % grid.size[1]), k = static_cast<int>(row / grid.size[1]);
      for (int i = 0; i < grid.size[0]; ++i) {
        double sum = 0.0;
        for (int a = 0; a < n; ++a)
          for (int b = 0; b < n; ++b)
            for (int c = 0; c < n; ++c)
              sum += phantom.densityAt(grid.worldOf(i + (c + 0.5) / n - 0.5, j + (b + 0.5) / n - 0.5, k + (a + 0.5) / n - 0.5));
        volume.at(i, j, k) = static_cast<float>(sum / (n * n * n));
      }
    }
  });
  return volume;
}

Image simulateScan(const Phantom& phantom, const Geometry& geometry, const ProjectionOptions& options, bool progress) {
  geometry.validate("phantom projection");
  checkProjectionOptions(options);
  checkScanBounds(geometry, "phantom");
  checkHostMemory("phantom", std::to_string(geometry.size()) + " projections of " + std::to_string(geometry.detector.nu) + " x " +
                                 std::to_string(geometry.detector.nv),
                  std::uint64_t{4} * geometry.detector.nu * geometry.detector.nv * geometry.size());
  Image projections({geometry.detector.nu, geometry.detector.nv, static_cast<int>(geometry.size())},
                    {geometry.detector.spacingU, geometry.detector.spacingV, 1.0}, {geometry.detector.originU, geometry.detector.originV, 0.0});
  Progress line("phantom", geometry.size(), "proj", progress);
  constexpr std::size_t kBatch = 16;  // views per batch: long simulations show progress
  for (std::size_t first = 0; first < geometry.size(); first += kBatch) {
    const std::size_t last = std::min(geometry.size(), first + kBatch);
    Geometry part;
    part.detector = geometry.detector;
    part.views.assign(geometry.views.begin() + static_cast<std::ptrdiff_t>(first), geometry.views.begin() + static_cast<std::ptrdiff_t>(last));
    ProjectionOptions partOptions = options;
    partOptions.seed = options.seed + first;  // distinct noise per batch, reproducible
    const Image simulated = projectPhantom(phantom, part, partOptions);
    std::copy(simulated.data.begin(), simulated.data.end(), projections.slice(static_cast<int>(first)));
    line.update(last);
  }
  line.finish();
  return projections;
}

}  // namespace glrecon
