// Ramp filter, windows, FDK weights, Parker.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <random>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/filter.h"
#include "test_support.h"

namespace glrecon {
namespace {

constexpr double kPi = std::numbers::pi;

std::vector<float> filteredImpulse(int width, int at, RampWindow window = RampWindow::RamLak, double cutoff = 1.0) {
  RampFilter filter(width, window, cutoff);
  std::vector<float> row(width, 0.0f);
  row[at] = 1.0f;
  filter.filterRows(row.data(), 1);
  return row;
}

TEST(RampFilter, ImpulseResponseIsTheDiscreteRamLakKernel) {
  const int width = 100, at = 37;
  const auto row = filteredImpulse(width, at);
  // Zero padding to >= 2 x width makes the circular convolution linear over the row, so the response is
  // the kernel itself. Single-precision FFTs of length N round with an error of about eps * log2(N) times
  // the signal norm (1 here) times the largest gain (|H| <= 1/2): 6e-8 * 8 * 0.5 = 2.4e-7; 1e-6 leaves 4x.
  for (int i = 0; i < width; ++i) EXPECT_NEAR(row[i], RampFilter::ramLakKernel(i - at), 1e-6) << "offset " << i - at;
}

TEST(RampFilter, ConstantRowFiltersToAboutZeroAwayFromTheEdges) {
  const int width = 512;
  RampFilter filter(width);
  std::vector<float> row(width, 1.0f);
  filter.filterRows(row.data(), 1);
  // Exact linear convolution of the truncated constant, in double: what the FFT must reproduce.
  for (int i : {128, 200, 256, 300, 384}) {
    double exact = 0;
    for (int n = 0; n < width; ++n) exact += RampFilter::ramLakKernel(i - n);
    EXPECT_NEAR(row[i], exact, 1e-6);
    // The kernel sums to zero (no DC bias): what is left is its tail beyond the nearer edge,
    // 2 sum_{odd m > d} 1/(pi m)^2 <= 1/(pi^2 (d - 1)), tiny against the impulse peak of 1/4.
    const int d = std::min(i, width - 1 - i);
    EXPECT_LT(std::abs(row[i]), 1.0 / (kPi * kPi * (d - 1)));
  }
  // At the edges the missing neighbours leave a large response: the test above can fail.
  EXPECT_GT(row[0], 0.1f);
}

TEST(RampFilter, PaddedLengthHasSmallPrimeFactors) {
  EXPECT_EQ(RampFilter::fftFriendlyLength(514), 520);  // 2 * 257 (prime) -> 2^3 * 5 * 13
  EXPECT_EQ(RampFilter::fftFriendlyLength(512), 512);
  EXPECT_EQ(RampFilter(257).paddedLength(), 520);
}

TEST(RampFilter, WindowsShapeTheResponseAsDefined) {
  const int width = 128;
  RampFilter ramLak(width);
  const auto& base = ramLak.response();
  const int bins = static_cast<int>(base.size());
  const double n = ramLak.paddedLength();
  struct Case {
    RampWindow window;
    double (*shape)(double);
  } cases[] = {
      {RampWindow::SheppLogan, [](double x) { return x == 0 ? 1.0 : std::sin(kPi * x / 2) / (kPi * x / 2); }},
      {RampWindow::Cosine, [](double x) { return std::cos(kPi * x / 2); }},
      {RampWindow::Hamming, [](double x) { return 0.54 + 0.46 * std::cos(kPi * x); }},
      {RampWindow::Hann, [](double x) { return 0.5 + 0.5 * std::cos(kPi * x); }},
  };
  for (const Case& c : cases)
    for (double cutoff : {1.0, 0.5}) {
      RampFilter f(width, c.window, cutoff);
      for (int k = 1; k < bins; ++k) {
        const double x = (k / n) / (0.5 * cutoff);
        const double expected = x > 1 ? 0.0 : base[k] * c.shape(x);
        EXPECT_NEAR(f.response()[k], expected, 1e-12) << rampWindowName(c.window) << " bin " << k;
      }
    }
  // The ramp itself: near |f| at low frequency, 1/2 at Nyquist (cycles per pixel), no DC.
  EXPECT_NEAR(base[bins - 1], 0.5, 1e-3);
  EXPECT_NEAR(base[0], 0.0, 1.0 / n);
  // Smoother windows lower the impulse peak in the order their shapes bound each other.
  const float rl = filteredImpulse(width, 64)[64];
  const float sl = filteredImpulse(width, 64, RampWindow::SheppLogan)[64];
  const float co = filteredImpulse(width, 64, RampWindow::Cosine)[64];
  const float hm = filteredImpulse(width, 64, RampWindow::Hamming)[64];
  const float hn = filteredImpulse(width, 64, RampWindow::Hann)[64];
  EXPECT_LT(sl, rl);
  EXPECT_LT(co, sl);
  EXPECT_LT(hn, co);
  EXPECT_LT(hn, hm);
  EXPECT_LT(hm, rl);
  EXPECT_THROW(RampFilter(64, RampWindow::Hann, 0.0), UsageError);
  EXPECT_THROW(parseRampWindow("gauss"), UsageError);
}

// A cluster's rank filters only the detector rows of its slab: every row as the whole projection's filter gives it,
// bit for bit (weights per pixel, the ramp per row), on a short scan (Parker's weights per column) with offsets.
TEST(FdkFilter, RowsAloneFilterToTheWholeProjectionsBits) {
  CircularScanSpec spec;
  spec.projections = 12;
  spec.arc = 220;
  spec.nu = 37;
  spec.nv = 23;
  spec.projectionOffsetX = 7;
  spec.projectionOffsetY = -5;
  const Geometry g = makeCircularScan(spec);
  const FdkFilter filter(g, {});
  const std::vector<float> data = test::randomProjections(g);
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  for (std::size_t view : {0u, 5u, 11u}) {
    std::vector<float> whole(data.begin() + view * pixels, data.begin() + (view + 1) * pixels), part = whole;
    filter.apply(view, whole.data());
    filter.applyRows(view, part.data(), 6, 9);
    for (std::size_t i = 0; i < pixels; ++i) {
      const bool inBand = i / g.detector.nu >= 6 && i / g.detector.nu < 15;
      const float expected = inBand ? whole[i] : data[view * pixels + i];  // rows outside the band untouched
      ASSERT_EQ(std::memcmp(&part[i], &expected, sizeof(float)), 0) << "view " << view << " pixel " << i;
    }
  }
}

TEST(FdkFilter, FullScanGapsAndShortScanDetection) {
  CircularScanSpec spec;
  spec.projections = 90;
  const Geometry full = makeCircularScan(spec);
  const FdkFilter f(full, {});
  EXPECT_FALSE(f.isShortScan());
  for (double gap : f.angularGaps()) EXPECT_NEAR(gap, 2 * kPi / 90, 1e-12);

  spec.arc = 220;
  const Geometry shortScan = makeCircularScan(spec);
  const FdkFilter s(shortScan, {});
  EXPECT_TRUE(s.isShortScan());
  EXPECT_NEAR(s.scanRange(), 220.0 / 90 * 89 * kPi / 180, 1e-9);
  EXPECT_NEAR(s.shortScanDelta(), 0.5 * (s.scanRange() - kPi), 1e-12);
  FilterOptions off;
  off.shortScan = false;
  EXPECT_FALSE(FdkFilter(shortScan, off).isShortScan());

  spec.arc = 150;  // less than half a turn: no FDK weighting can fix that
  const Geometry tooShort = makeCircularScan(spec);
  EXPECT_THROW(FdkFilter(tooShort, {}), GeometryError);
}

TEST(Parker, ConjugateRaysWeighToOne) {
  std::mt19937 rng(9);
  for (const double delta : {0.1, 0.25}) {
    std::uniform_real_distribution<double> beta(0, kPi + 2 * delta), gamma(-delta, delta);
    for (int s = 0; s < 2000; ++s) {
      const double b = beta(rng), g = gamma(rng);
      double conjugate = b + kPi + 2 * g;
      if (conjugate > kPi + 2 * delta) conjugate -= 2 * kPi;
      const double w = parkerWeight(b, g, delta);
      EXPECT_GE(w, 0.0);
      EXPECT_LE(w, 1.0);
      // Rays whose conjugate lies outside the scan are measured once and must weigh 1 themselves.
      const double other = conjugate < 0 ? 0.0 : parkerWeight(conjugate, -g, delta);
      EXPECT_NEAR(w + other, 1.0, 1e-12) << "beta " << b << " gamma " << g;
    }
  }
}

TEST(Parker, FanAngleSignPairsRaysOfTheRealGeometry) {
  // For a ray of one view, the source at beta + pi + 2 gamma (gamma from parkerFanAngle) must lie on the
  // same line, and see it at fan angle -gamma: this pins the sign convention to RTK's frame.
  DetectorLayout d = DetectorLayout::centred(101, 5, 2.0, 2.0);
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> angle(0, 360), column(0, 100);
  for (int s = 0; s < 50; ++s) {
    CircularParams p;
    p.gantryAngle = angle(rng);
    const ProjectionVectors a = vectorsFromCircular(p, d);
    const double betaA = p.gantryAngle * kPi / 180;
    const double u = column(rng);
    const double gamma = parkerFanAngle(a, betaA, u);
    CircularParams q = p;
    q.gantryAngle = (betaA + kPi + 2 * gamma) * 180 / kPi;
    const ProjectionVectors b = vectorsFromCircular(q, d);
    // Distance of b's source from line (a.source, a.detectorPoint(u, centre row)).
    const glm::dvec3 dir = glm::normalize(a.detectorPoint(u, 2) - a.source);
    const glm::dvec3 off = b.source - a.source;
    EXPECT_LT(glm::length(off - glm::dot(off, dir) * dir), 1e-9 * p.sid);
    // Where a's source lands on b's detector, and b's fan angle there.
    const glm::dvec3 hit = b.source + (a.source - b.source) * (b.sourceToDetector() / glm::dot(a.source - b.source, b.detectorNormal()));
    const double ub = glm::dot(hit - b.pixel00, b.uStep) / glm::dot(b.uStep, b.uStep);
    EXPECT_NEAR(parkerFanAngle(b, betaA + kPi + 2 * gamma, ub), -gamma, 1e-9);
  }
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

// Parallel beam: the angles on a circle of 180 degrees. ASTRA's [0, pi) sampling (N views at k pi / N) is complete (no
// short scan, every gap pi / N, the range pi); a whole turn of 2N views measures each line twice (every gap pi / 2N); a
// scan short of 180 degrees is refused naming its range, and taken with shortScan off; no cosine weights.
TEST(FdkFilter, ParallelBeamAnglesLiveOnHalfATurn) {
  constexpr double pi = std::numbers::pi;
  const Geometry half = test::parallelScan(180, 16);
  const FdkFilter f(half, {});
  EXPECT_FALSE(f.isShortScan());
  EXPECT_NEAR(f.scanRange(), pi, 1e-12);
  for (double gap : f.angularGaps()) EXPECT_NEAR(gap, pi / 180, 1e-12);
  const Geometry whole = test::parallelScan(360, 16, 300.0, 360.0);
  const FdkFilter w(whole, {});
  for (double gap : w.angularGaps()) EXPECT_NEAR(gap, pi / 360, 1e-12);
  const Geometry short120 = test::parallelScan(60, 16, 300.0, 120.0);
  test::expectError<GeometryError>([&] { FdkFilter bad(short120, {}); }, {"parallel-beam", "at least 180 degrees", "found 118"});
  FilterOptions off;
  off.shortScan = false;
  const FdkFilter limited(short120, off);
  for (double gap : limited.angularGaps()) EXPECT_NEAR(gap, 2 * pi / 180, 1e-12);
  // No cosine weight: a constant projection filtered equals the ramp of the constant times gap / spacing.
  const DeviceFilter* device = f.deviceFilter();
  ASSERT_NE(device, nullptr);
  for (float c : device->cosine) EXPECT_EQ(c, 1.0f);
  for (float v : device->viewWeights) EXPECT_NEAR(v, (pi / 180) / (300.0 / 16), 1e-7);
}

}  // namespace
}  // namespace glrecon
