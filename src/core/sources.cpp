// The sources every front end shares (glrecon/source.h): projections in memory, a simulated scanner, and the
// conversion of raw intensities as projections are read.
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>
#include <thread>

#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/preprocess.h"
#include "glrecon/source.h"
#include "glrecon/validate.h"

namespace glrecon {
namespace {

class MemorySource final : public ProjectionSource {
 public:
  MemorySource(const float* data, std::size_t count, const DetectorLayout& detector, std::string name)
      : data_(data), count_(count), detector_(detector), name_(std::move(name)) {}
  std::size_t count() const override { return count_; }
  DetectorLayout detector() const override { return detector_; }
  std::string origin(std::size_t) const override { return name_; }
  void read(std::size_t first, std::size_t n, float* out) override {
    const std::size_t pixels = static_cast<std::size_t>(detector_.nu) * detector_.nv;
    std::memcpy(out, data_ + first * pixels, n * pixels * sizeof(float));
  }
  const float* memory() const override { return data_; }

 private:
  const float* data_;
  std::size_t count_;
  DetectorLayout detector_;
  std::string name_;
};

class ScannerSource final : public ProjectionSource {
 public:
  ScannerSource(const Phantom& phantom, const Geometry& geometry, double rate, int threads)
      : phantom_(phantom), geometry_(geometry), rate_(rate), threads_(threads) {}
  std::size_t count() const override { return geometry_.size(); }
  DetectorLayout detector() const override { return geometry_.detector; }
  std::string origin(std::size_t index) const override { return "simulated scanner, projection " + std::to_string(index); }
  void read(std::size_t first, std::size_t n, float* out) override {
    const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
    for (std::size_t index = first; index < first + n; ++index) {
      if (index == 0) start_ = std::chrono::steady_clock::now();
      Geometry one;
      one.detector = geometry_.detector;
      one.views = {geometry_.views[index]};
      ProjectionOptions options;
      options.threads = threads_;
      const Image projection = projectPhantom(phantom_, one, options);
      std::copy(projection.data.begin(), projection.data.end(), out + (index - first) * pixels);
      // A detector delivers at its frame rate, not faster.
      if (rate_ > 0)
        std::this_thread::sleep_until(start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                   std::chrono::duration<double>(index / rate_)));
    }
  }

 private:
  // Copies, not references: a caller's geometry moved or gone after the source was made (the app moved its
  // Geometry and the scanner then read garbage detector sizes) must not reach the reads.
  const Phantom phantom_;
  const Geometry geometry_;
  double rate_;
  int threads_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::unique_ptr<ProjectionSource> memorySource(const float* data, std::size_t count, const DetectorLayout& detector, std::string name,
                                               bool check) {
  if (check) {
    // A NaN would spread over a whole row through the ramp filter: refused as the file readers refuse it.
    const std::size_t pixels = static_cast<std::size_t>(detector.nu) * detector.nv;
    const std::size_t bad = firstValueOutside(data, count * pixels, kMaxProjectionValue, std::size_t{1} << 18, 0);
    if (bad < count * pixels) throwBadProjectionValue(name, bad / pixels, bad % pixels, detector.nu, data[bad]);
  }
  return std::make_unique<MemorySource>(data, count, detector, std::move(name));
}

std::unique_ptr<ProjectionSource> memorySource(const Image& stack, std::string name, bool check) {
  const DetectorLayout detector{stack.size[0], stack.size[1], stack.spacing[0], stack.spacing[1], stack.origin[0], stack.origin[1]};
  return memorySource(stack.data.data(), static_cast<std::size_t>(stack.size[2]), detector, std::move(name), check);
}

std::unique_ptr<ProjectionSource> simulatedScanner(const Phantom& phantom, const Geometry& geometry, double rate, int threads) {
  return std::make_unique<ScannerSource>(phantom, geometry, rate, threads);
}

void ProjectionSource::readRows(std::size_t first, std::size_t n, const RowBand* bands, float* out) {
  const DetectorLayout layout = detector();
  const std::size_t pixels = static_cast<std::size_t>(layout.nu) * layout.nv;
  std::vector<float> whole(pixels);
  for (std::size_t i = 0; i < n; ++i) {
    if (bands[i].count <= 0) continue;
    read(first + i, 1, whole.data());
    const std::size_t begin = static_cast<std::size_t>(bands[i].first) * layout.nu, values = static_cast<std::size_t>(bands[i].count) * layout.nu;
    std::copy_n(whole.data() + begin, values, out + i * pixels + begin);
  }
}

LineIntegralSource::LineIntegralSource(std::unique_ptr<ProjectionSource> intensities, const Image& flat, const Image& dark, double i0,
                                       const std::string& flatName, const std::string& darkName)
    : intensities_(std::move(intensities)),
      convert_(intensities_->detector().nu, intensities_->detector().nv, flat, dark, i0, flatName, darkName) {}

void LineIntegralSource::read(std::size_t first, std::size_t n, float* out) {
  intensities_->read(first, n, out);
  convert_.apply(out, n);
}

}  // namespace glrecon
