#pragma once
/// FDK projection filtering on the CPU with FFTW (single precision), Turbell's / Kak & Slaney's
/// flat-detector FDK:
///   1. cosine weight SDD / |pixel - source| (SDD the perpendicular source-detector distance),
///   2. angular weight: half the projection's angular gap for a full scan, or the gap times Parker's
///      weight for a short scan (180 degrees plus the fan angle),
///   3. ramp filter along detector rows from the discrete spatial Ram-Lak kernel (no DC bias), zero-padded
///      to at least twice the row, optionally windowed, with the detector spacing scaled to the isocentre.
/// After it the backprojector only sums (1/w^2) Q(u,v) over projections: the reconstruction comes out in
/// the phantom's density units. Tested in tests/filter/filter_test.cpp (kernel, windows) and tests/recon/fdk*_test.cpp.
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "glrecon/device_projections.h"
#include "glrecon/geometry.h"

namespace glrecon {

enum class RampWindow { RamLak, SheppLogan, Cosine, Hamming, Hann };
RampWindow parseRampWindow(const std::string& name);
const char* rampWindowName(RampWindow window);

/// The ramp filter of one detector-row width, at unit pixel spacing (callers scale by 1/spacing).
/// Plans are made once, under one lock (FFTW's planner is not thread-safe); filterRows may then run from
/// many threads at once.
class RampFilter {
 public:
  RampFilter(int width, RampWindow window = RampWindow::RamLak, double cutoff = 1.0);
  ~RampFilter();
  RampFilter(const RampFilter&) = delete;
  RampFilter& operator=(const RampFilter&) = delete;

  /// The discrete spatial Ram-Lak kernel at unit spacing: 1/4 at 0, -1/(n pi)^2 at odd n, 0 at even n.
  static double ramLakKernel(long n);
  /// Smallest length >= minimum whose prime factors are all at most 13 (fast FFTW sizes).
  static int fftFriendlyLength(int minimum);

  int width() const { return width_; }
  int paddedLength() const { return padded_; }
  /// Real frequency response at bins 0 .. paddedLength/2 (kernel spectrum times window).
  const std::vector<double>& response() const { return response_; }

  /// Filters `count` contiguous rows of width() floats in place.
  void filterRows(float* rows, int count) const;
  /// The same filter as a direct convolution: filterRows(x)[i] = sum_j x[j] taps[|i - j|] for i, j < width (the
  /// inverse transform of the response on the padded circle; even, and padding >= 2 width keeps the circle's
  /// wrap away from every kept pixel). width() taps, computed in double.
  std::vector<double> convolutionTaps() const;

 private:
  struct Plans;
  int width_;
  int padded_;
  std::vector<double> response_;
  std::vector<float> gains_;  // response_ / padded length, in the float the spectrum is multiplied by
  std::unique_ptr<Plans> plans_;
};

struct FilterOptions {
  RampWindow window = RampWindow::RamLak;
  double cutoff = 1.0;     ///< fraction of the Nyquist frequency kept by the window, (0, 1]
  bool shortScan = true;   ///< apply Parker weights when the scan covers less than a full circle
};

/// Parker's short-scan weight for a ray at scan angle `beta` (radians from the first projection) and fan
/// angle `gamma`, for a scan of pi + 2 delta: smooth, and w(beta, gamma) + w(conjugate) = 1 for the
/// conjugate ray (beta + pi + 2 gamma, -gamma).
double parkerWeight(double beta, double gamma, double delta);

/// Fan angle of detector column `u` of a view whose source sits at `sourceAngle` (Geometry::sourceAngles),
/// in Parker's sign convention (the conjugate of (beta, gamma) is (beta + pi + 2 gamma, -gamma)).
double parkerFanAngle(const ProjectionVectors& view, double sourceAngle, double u);

/// The FDK filter in the form a GPU applies it (DeviceFdkFilter): each raw pixel times
/// cosine[row][u] times viewWeights[view][u], then along each row the ramp as the direct sum
/// y[i] = sum_j x[j] taps[|i - j|] (RampFilter::convolutionTaps). That is the CPU's padded FFT written out: the
/// same result up to float rounding for any padded length (FFTW's sizes with primes up to 13, which a GPU FFT
/// would all have to support), at nu^2 multiply-adds per row: at 512^2 and 1024^2 a few percent of the
/// backprojection's work, and a dense product a GPU runs near its arithmetic peak.
struct DeviceFilter {
  int nu = 0, nv = 0;
  std::vector<float> cosine;       ///< nv x nu: the cosine weight, one table for every view
  std::vector<float> viewWeights;  ///< views x nu: angular gap (x Parker's weight) / isocentre spacing
  std::vector<float> taps;         ///< nu taps of the even ramp kernel
  /// Throws std::invalid_argument where the tables' sizes are not `geometry`'s detector and view count (a
  /// backend handed another scan's filter).
  void requireMatches(const Geometry& geometry) const;
};

/// DeviceFilter's arithmetic on the host, in the order the GPU kernels use (the tests hold both to it).
void applyDeviceFilter(const DeviceFilter& filter, std::size_t view, float* projection);

/// The FDK filter of a scan: weights and ramp, per projection.
class FdkFilter {
 public:
  FdkFilter(const Geometry& geometry, const FilterOptions& options);

  /// Filters projection `view` (nv rows of nu floats) in place, ready for backprojection.
  void apply(std::size_t view, float* projection) const;
  /// Only rows [firstRow, firstRow + rows) of the projection, in place: the same bits as apply() gives those rows (the
  /// weights are per pixel, the ramp per row), for a cluster's rank that holds only the rows its slabs need.
  void applyRows(std::size_t view, float* projection, int firstRow, int rows) const;
  /// This filter for a GPU (made at the first call, then kept: runs that reuse the filter pay for it once), or
  /// nullptr where views need different cosine tables (a trajectory whose detector moves relative to the source):
  /// those are filtered on the CPU.
  const DeviceFilter* deviceFilter() const;

  bool isShortScan() const { return shortScan_; }
  /// Angular range from the first to the last projection of a short scan (radians); 2 pi for a full scan.
  double scanRange() const { return range_; }
  /// Angular gap assigned to each projection (radians), before Parker weighting.
  const std::vector<double>& angularGaps() const { return gaps_; }
  /// Angle of the first projection of a short scan, and Parker's delta = (range - pi) / 2 (radians).
  double shortScanStart() const { return start_; }
  double shortScanDelta() const { return delta_; }

 private:
  const Geometry& geometry_;
  RampFilter ramp_;
  /// The cosine weight SDD / |pixel - source| of one view depends only on the dot products of (pixel00 -
  /// source, uStep, vStep): views that agree on them (every view of a circular scan) share one table.
  struct CosineTable {
    std::array<double, 6> invariants{};
    std::vector<double> weights;  ///< nu x nv
  };
  std::shared_ptr<const CosineTable> cosineTable(std::size_t view) const;
  /// Per detector column of `view`: the angular weight, Parker's weight and 1 / isocentre spacing, multiplied.
  std::vector<double> columnWeights(std::size_t view) const;
  bool sharesCosineTable(std::size_t view, const CosineTable& table) const;
  /// What makes two views' cosine weights equal: the dot products of (pixel00 - source, uStep, vStep).
  std::array<double, 6> cosineInvariants(std::size_t view) const;
  std::shared_ptr<const CosineTable> buildCosineTable(std::size_t view) const;
  mutable std::mutex cosineMutex_;
  mutable std::once_flag deviceOnce_;
  mutable std::optional<DeviceFilter> device_;
  mutable std::shared_ptr<const CosineTable> cosine_;
  std::vector<double> angles_;  ///< source angle of each view
  std::vector<double> gaps_;
  bool parallel_ = false;  ///< parallel beam: angles on a circle of pi, no cosine or Parker weights
  bool shortScan_ = false;
  double range_ = 0.0;
  double start_ = 0.0;  ///< angle of the first projection of a short scan
  double delta_ = 0.0;  ///< Parker's half-fan parameter: (range - pi) / 2
};

/// The FDK filter's device twins (GL: shaders/filter_rows.comp; CUDA: a tiled Toeplitz product): the weights and ramp
/// of DeviceFilter applied on an operator's device, equal to FdkFilter::apply within float rounding, written into a
/// window of device projections that the operator then backprojects (ConeBeamOperator::back(DeviceProjections&)).
/// Tested against the host in tests/filter/device_filter*_test.cpp.
class DeviceFdkFilter {
 public:
  virtual ~DeviceFdkFilter() = default;
  /// `count` raw projections (host memory, nv rows of nu floats each; views[i] the i-th's geometry index) into the
  /// window's projections [slot, slot + count), filtered on its device: every row, or where the window has rowBands
  /// only the rows from the first to the last of the views' bands (bandUnion; the others keep what they held, which
  /// the operator's block never samples). Adds the bytes it sends to the window's sentBytes. Asynchronous where the
  /// device is: the operator's back() of the window orders after it. The host memory may be reused when the call
  /// returns.
  virtual void filter(const float* raw, const std::size_t* views, std::size_t count, DeviceProjections& window, std::size_t slot) = 0;
};

/// The twin for the device that `window` lives on, or nullptr where the filter should run on the CPU's FFTW pool:
/// views that need their own cosine tables (FdkFilter::deviceFilter() is nullptr), too little free device memory for
/// its buffers, a detector row block larger than the device's storage blocks (GL), or, unless `force`, a software
/// renderer, where the FFTs on the CPU are many times faster than the shader's nu^2 products.
std::unique_ptr<DeviceFdkFilter> makeDeviceFdkFilter(const FdkFilter& filter, const Geometry& geometry, DeviceProjections& window,
                                                     bool force);

}  // namespace glrecon
