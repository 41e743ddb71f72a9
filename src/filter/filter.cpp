#include "glrecon/filter.h"

#include <fftw3.h>

#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <mutex>
#include <numbers>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"

namespace glrecon {
namespace {

constexpr double kPi = std::numbers::pi;

std::mutex& plannerMutex() {
  static std::mutex m;
  return m;
}

struct FftwDeleter {
  void operator()(void* p) const { fftwf_free(p); }
};
template <typename T>
using FftwBuffer = std::unique_ptr<T[], FftwDeleter>;

double windowAt(RampWindow window, double x) {
  // x = frequency / cut-off frequency, in [0, 1].
  switch (window) {
    case RampWindow::RamLak: return 1.0;
    case RampWindow::SheppLogan: return x == 0.0 ? 1.0 : std::sin(kPi * x / 2) / (kPi * x / 2);
    case RampWindow::Cosine: return std::cos(kPi * x / 2);
    case RampWindow::Hamming: return 0.54 + 0.46 * std::cos(kPi * x);
    case RampWindow::Hann: return 0.5 + 0.5 * std::cos(kPi * x);
  }
  return 1.0;
}

double wrapAngle(double a) {
  a = std::fmod(a, 2 * kPi);
  return a < 0 ? a + 2 * kPi : a;
}

}  // namespace

RampWindow parseRampWindow(const std::string& name) {
  if (name == "ram-lak" || name == "ramlak") return RampWindow::RamLak;
  if (name == "shepp-logan") return RampWindow::SheppLogan;
  if (name == "cosine") return RampWindow::Cosine;
  if (name == "hamming") return RampWindow::Hamming;
  if (name == "hann") return RampWindow::Hann;
  throw UsageError(field("filter") + ": expected ram-lak, shepp-logan, cosine, hamming or hann, found '" + name + "'");
}

const char* rampWindowName(RampWindow window) {
  switch (window) {
    case RampWindow::RamLak: return "ram-lak";
    case RampWindow::SheppLogan: return "shepp-logan";
    case RampWindow::Cosine: return "cosine";
    case RampWindow::Hamming: return "hamming";
    case RampWindow::Hann: return "hann";
  }
  return "?";
}

struct RampFilter::Plans {
  fftwf_plan forward = nullptr;
  fftwf_plan inverse = nullptr;
  ~Plans() {
    std::lock_guard lock(plannerMutex());
    if (forward) fftwf_destroy_plan(forward);
    if (inverse) fftwf_destroy_plan(inverse);
  }
};

double RampFilter::ramLakKernel(long n) {
  if (n == 0) return 0.25;
  if (n % 2 == 0) return 0.0;
  return -1.0 / (kPi * kPi * static_cast<double>(n) * static_cast<double>(n));
}

int RampFilter::fftFriendlyLength(int minimum) {
  for (int n = std::max(minimum, 2);; ++n) {
    int r = n;
    for (int p : {2, 3, 5, 7, 11, 13})
      while (r % p == 0) r /= p;
    if (r == 1) return n;
  }
}

RampFilter::RampFilter(int width, RampWindow window, double cutoff)
    : width_(width), padded_(fftFriendlyLength(2 * width)), plans_(std::make_unique<Plans>()) {
  if (width < 1) throw UsageError("ramp filter: detector width: expected at least 1 pixel");
  if (!(cutoff > 0.0 && cutoff <= 1.0))
    throw UsageError(field("cutoff") + ": expected a fraction of the Nyquist frequency in (0, 1], found " + std::to_string(cutoff));
  // Spectrum of the spatial kernel on the padded circle, in double: H[k] = sum_n h(n) cos(2 pi k n / N),
  // n over one period (-N/2, N/2]. Real because the kernel is even.
  const int n = padded_, bins = n / 2 + 1;
  response_.assign(bins, 0.0);
  for (int k = 0; k < bins; ++k) {
    double sum = ramLakKernel(0);
    for (long m = 1; m < (n + 1) / 2; m += 2) sum += 2.0 * ramLakKernel(m) * std::cos(2 * kPi * k * m / n);
    if (n % 2 == 0 && (n / 2) % 2 == 1) sum += ramLakKernel(n / 2) * std::cos(kPi * k);
    const double x = (static_cast<double>(k) / n) / (0.5 * cutoff);
    response_[k] = x > 1.0 ? 0.0 : sum * windowAt(window, x);
  }
  gains_.resize(bins);
  for (int k = 0; k < bins; ++k) gains_[k] = static_cast<float>(response_[k] * (1.0 / n));
  FftwBuffer<float> real(static_cast<float*>(fftwf_malloc(sizeof(float) * n)));
  FftwBuffer<fftwf_complex> spectrum(static_cast<fftwf_complex*>(fftwf_malloc(sizeof(fftwf_complex) * bins)));
  std::lock_guard lock(plannerMutex());
  plans_->forward = fftwf_plan_dft_r2c_1d(n, real.get(), spectrum.get(), FFTW_ESTIMATE);
  plans_->inverse = fftwf_plan_dft_c2r_1d(n, spectrum.get(), real.get(), FFTW_ESTIMATE);
  if (!plans_->forward || !plans_->inverse) throw std::runtime_error("FFTW could not plan a transform of length " + std::to_string(n));
}

RampFilter::~RampFilter() = default;

void RampFilter::filterRows(float* rows, int count) const {
  const int n = padded_, bins = n / 2 + 1;
  // fftwf_malloc gives the alignment the plans were made with, so the new-array execute calls are valid.
  FftwBuffer<float> real(static_cast<float*>(fftwf_malloc(sizeof(float) * n)));
  FftwBuffer<fftwf_complex> spectrum(static_cast<fftwf_complex*>(fftwf_malloc(sizeof(fftwf_complex) * bins)));
  for (int r = 0; r < count; ++r) {
    float* row = rows + static_cast<std::size_t>(r) * width_;
    std::copy(row, row + width_, real.get());
    std::fill(real.get() + width_, real.get() + n, 0.0f);
    fftwf_execute_dft_r2c(plans_->forward, real.get(), spectrum.get());
    for (int k = 0; k < bins; ++k) {
      spectrum[k][0] *= gains_[k];
      spectrum[k][1] *= gains_[k];
    }
    fftwf_execute_dft_c2r(plans_->inverse, spectrum.get(), real.get());
    std::copy(real.get(), real.get() + width_, row);
  }
}

std::vector<double> RampFilter::convolutionTaps() const {
  // taps[m] = (1/n) sum over the whole circle of H[k] cos(2 pi k m / n), H even (H[n - k] = H[k]); the cosines
  // from one table indexed by k m mod n, exact in the index where cos(2 pi k m / n) directly would not be.
  const int n = padded_;
  std::vector<double> cosines(n);
  for (int t = 0; t < n; ++t) cosines[t] = std::cos(2 * kPi * t / n);
  std::vector<double> taps(width_);
  for (int m = 0; m < width_; ++m) {
    double sum = response_[0];
    for (long k = 1; 2 * k < n; ++k) sum += 2.0 * response_[k] * cosines[(k * m) % n];
    if (n % 2 == 0) sum += response_[n / 2] * cosines[(static_cast<long>(n / 2) * m) % n];
    taps[m] = sum / n;
  }
  return taps;
}

void DeviceFilter::requireMatches(const Geometry& geometry) const {
  const int u = geometry.detector.nu, v = geometry.detector.nv;
  if (nu != u || nv != v || viewWeights.size() != geometry.size() * u || cosine.size() != static_cast<std::size_t>(u) * v ||
      taps.size() != static_cast<std::size_t>(u))
    throw std::invalid_argument("device filter: the filter's detector or view count differs from the geometry's");
}

void applyDeviceFilter(const DeviceFilter& filter, std::size_t view, float* projection) {
  const int nu = filter.nu;
  const float* columns = filter.viewWeights.data() + view * nu;
  std::vector<float> x(nu);
  for (int row = 0; row < filter.nv; ++row) {
    float* p = projection + static_cast<std::size_t>(row) * nu;
    const float* cosine = filter.cosine.data() + static_cast<std::size_t>(row) * nu;
    for (int j = 0; j < nu; ++j) x[j] = p[j] * cosine[j] * columns[j];
    for (int i = 0; i < nu; ++i) {
      float sum = 0.0f;
      for (int j = 0; j < nu; ++j) sum += x[j] * filter.taps[std::abs(i - j)];
      p[i] = sum;
    }
  }
}

FdkFilter::FdkFilter(const Geometry& geometry, const FilterOptions& options)
    : geometry_(geometry), ramp_(geometry.detector.nu, options.window, options.cutoff) {
  geometry.validate("FDK filter");
  angles_ = geometry.sourceAngles();
  // Parallel beam measures each line once in half a turn (the view at a + pi sees the same lines mirrored): the angles
  // live on a circle of pi, ASTRA's [0, pi) sampling is a whole scan, and a whole turn counts each line twice (its
  // gaps come out halved on the circle of pi). Cone beam's circle is the whole turn.
  parallel_ = geometry.parallel();
  const double period = parallel_ ? kPi : 2 * kPi;
  if (parallel_)
    for (double& a : angles_) a = std::fmod(a, kPi);
  const auto wrap = [&](double a) { return parallel_ ? std::fmod(std::fmod(a, kPi) + kPi, kPi) : wrapAngle(a); };
  const std::size_t count = angles_.size();
  gaps_.assign(count, period);
  range_ = period;
  if (count < 2) return;

  // Sort by angle; gap[i] = half the angular distance between the previous and the next projection.
  std::vector<std::size_t> order(count);
  for (std::size_t i = 0; i < count; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return angles_[a] < angles_[b]; });
  std::vector<double> next(count);  // angular distance from sorted position s to s+1 (cyclic)
  for (std::size_t s = 0; s < count; ++s)
    next[s] = wrap(angles_[order[(s + 1) % count]] - angles_[order[s]]);
  if (count == 1 || std::all_of(next.begin(), next.end(), [](double g) { return g == 0.0; })) return;
  std::vector<double> sortedGaps = next;
  std::nth_element(sortedGaps.begin(), sortedGaps.begin() + count / 2, sortedGaps.end());
  const double median = sortedGaps[count / 2];
  const std::size_t hole = static_cast<std::size_t>(std::max_element(next.begin(), next.end()) - next.begin());
  // A gap more than twice the typical one is the unscanned part of a short scan. The projections at its
  // edges get the typical gap there (Parker's weight is near zero at the ends anyway).
  const bool partial = next[hole] > 2.0 * median;
  if (partial) {
    range_ = period - next[hole];
    start_ = angles_[order[(hole + 1) % count]];
    next[hole] = median;
  }
  for (std::size_t s = 0; s < count; ++s) gaps_[order[s]] = 0.5 * (next[s] + next[(s + count - 1) % count]);

  if (parallel_) {
    // No Parker weights: a parallel scan short of 180 degrees misses lines (limited angle), taken only when asked.
    if (partial && options.shortScan)
      throw GeometryError("FDK filter: scan range: expected views over at least 180 degrees for a parallel-beam scan "
                          "(N views over [0, 180) are complete), found " + std::to_string(range_ * 180 / kPi) +
                          " degrees (a limited-angle reconstruction: " + field("shortScan") + " off)");
    return;
  }
  if (partial && options.shortScan) {
    shortScan_ = true;
    delta_ = 0.5 * (range_ - kPi);
    if (delta_ < 0)
      throw GeometryError("FDK filter: scan range: expected at least 180 degrees for a short scan, found " +
                          std::to_string(range_ * 180 / kPi) + " degrees");
  }
}

double parkerFanAngle(const ProjectionVectors& v, double sourceAngle, double u) {
  // In RTK's frame the tangent of the source circle is t = (cos a, 0, -sin a). A ray meeting the detector
  // at +d along t from the piercing point is, seen from the other end, the ray of the source at
  // a + pi - 2 atan(d / SDD): so Parker's gamma (pairing with beta + pi + 2 gamma) is -atan(d / SDD).
  const auto pierce = v.piercingPoint();
  const glm::dvec3 t(std::cos(sourceAngle), 0.0, -std::sin(sourceAngle));
  const double d = glm::dot(v.uStep, t) * (u - pierce[0]);  // along the row through the piercing point
  return -std::atan(d / v.sourceToDetector());
}

double parkerWeight(double beta, double gamma, double delta) {
  auto sq = [](double x) { return x * x; };
  if (beta < 0.0) return 0.0;
  if (beta < 2 * (delta - gamma)) return sq(std::sin(kPi / 4 * beta / (delta - gamma)));
  if (beta <= kPi - 2 * gamma) return 1.0;
  if (beta <= kPi + 2 * delta) return sq(std::sin(kPi / 4 * (kPi + 2 * delta - beta) / (delta + gamma)));
  return 0.0;
}

std::vector<double> FdkFilter::columnWeights(std::size_t view) const {
  const ProjectionVectors& v = geometry_.views[view];
  const int nu = geometry_.detector.nu;
  if (parallel_) {
    // Each line once over the circle of pi: the whole gap; the ramp in the pixel spacing across the rays.
    const glm::dvec3 r = glm::normalize(v.ray);
    const double acrossSpacing = glm::length(v.uStep - glm::dot(v.uStep, r) * r);
    return std::vector<double>(nu, gaps_[view] / acrossSpacing);
  }
  // Ramp at the isocentre: pixel spacing demagnified to the isocentre plane; 1/spacing scales the unit kernel.
  const double isoSpacing = glm::length(v.uStep) * v.sourceToIsocentre() / v.sourceToDetector();
  // Full scan: every ray is measured twice, hence the 1/2; Parker's weights already sum to one per ray pair.
  const double angular = shortScan_ ? gaps_[view] : 0.5 * gaps_[view];
  const double scale = angular / isoSpacing;
  std::vector<double> weights(nu, scale);
  if (shortScan_)
    for (int u = 0; u < nu; ++u) {
      // A rounding hair past the last projection's angle still belongs to the scan.
      const double beta = std::min(wrapAngle(angles_[view] - start_), range_);
      weights[u] = parkerWeight(beta, parkerFanAngle(v, angles_[view], u), delta_) * scale;
    }
  return weights;
}

void FdkFilter::apply(std::size_t view, float* projection) const { applyRows(view, projection, 0, geometry_.detector.nv); }

void FdkFilter::applyRows(std::size_t view, float* projection, int firstRow, int rows) const {
  const int nu = geometry_.detector.nu;
  if (rows <= 0) return;
  const std::vector<double> columns = columnWeights(view);
  const std::shared_ptr<const CosineTable> cosine = cosineTable(view);
  for (int row = firstRow; row < firstRow + rows; ++row) {
    float* p = projection + static_cast<std::size_t>(row) * nu;
    const double* w = cosine->weights.data() + static_cast<std::size_t>(row) * nu;
    for (int u = 0; u < nu; ++u) p[u] = static_cast<float>(p[u] * w[u] * columns[u]);
  }
  ramp_.filterRows(projection + static_cast<std::size_t>(firstRow) * nu, rows);
}

const DeviceFilter* FdkFilter::deviceFilter() const {
  std::call_once(deviceOnce_, [this] {
    const std::shared_ptr<const CosineTable> table = cosineTable(0);
    for (std::size_t view = 1; view < geometry_.size(); ++view)
      if (!sharesCosineTable(view, *table)) return;
    DeviceFilter& filter = device_.emplace();
    filter.nu = geometry_.detector.nu;
    filter.nv = geometry_.detector.nv;
    filter.cosine.assign(table->weights.begin(), table->weights.end());
    filter.viewWeights.reserve(geometry_.size() * filter.nu);
    for (std::size_t view = 0; view < geometry_.size(); ++view) {
      const std::vector<double> columns = columnWeights(view);
      filter.viewWeights.insert(filter.viewWeights.end(), columns.begin(), columns.end());
    }
    const std::vector<double> taps = ramp_.convolutionTaps();
    filter.taps.assign(taps.begin(), taps.end());
  });
  return device_ ? &*device_ : nullptr;
}

std::array<double, 6> FdkFilter::cosineInvariants(std::size_t view) const {
  const ProjectionVectors& v = geometry_.views[view];
  if (parallel_) return {1.0, 0.0, 0.0, 0.0, 0.0, 0.0};  // one table of ones for every view
  const glm::dvec3 e = v.pixel00 - v.source;
  return {glm::dot(e, e), glm::dot(e, v.uStep), glm::dot(e, v.vStep), glm::dot(v.uStep, v.uStep), glm::dot(v.vStep, v.vStep),
          glm::dot(v.uStep, v.vStep)};
}

std::shared_ptr<const FdkFilter::CosineTable> FdkFilter::buildCosineTable(std::size_t view) const {
  const ProjectionVectors& v = geometry_.views[view];
  auto table = std::make_shared<CosineTable>();
  table->invariants = cosineInvariants(view);
  const int nu = geometry_.detector.nu, nv = geometry_.detector.nv;
  table->weights.resize(static_cast<std::size_t>(nu) * nv);
  if (parallel_) {  // no cone: every ray meets the detector at the same angle
    std::fill(table->weights.begin(), table->weights.end(), 1.0);
    return table;
  }
  const double sdd = v.sourceToDetector();
  for (int row = 0; row < nv; ++row)
    for (int u = 0; u < nu; ++u)
      table->weights[static_cast<std::size_t>(row) * nu + u] = sdd / glm::length(v.detectorPoint(u, row) - v.source);
  return table;
}

bool FdkFilter::sharesCosineTable(std::size_t view, const CosineTable& table) const {
  const std::array<double, 6> invariants = cosineInvariants(view);
  // Rotated copies of one detector agree to rounding (1e-12 relative); a weight changes by less than that.
  return std::equal(invariants.begin(), invariants.end(), table.invariants.begin(),
                    [&](double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(invariants[0], 1.0); });
}

std::shared_ptr<const FdkFilter::CosineTable> FdkFilter::cosineTable(std::size_t view) const {
  std::shared_ptr<const CosineTable> shared;
  {
    // The shared table is always view 0's, whichever thread asks first: which table a view gets must not depend
    // on thread timing (it did: rotated copies differ in the last bits, and results differed run to run by 1e-7).
    std::lock_guard lock(cosineMutex_);
    if (!cosine_) cosine_ = buildCosineTable(0);
    shared = cosine_;
  }
  if (view == 0 || sharesCosineTable(view, *shared)) return shared;
  return buildCosineTable(view);  // a view of another shape: its own table
}

}  // namespace glrecon
