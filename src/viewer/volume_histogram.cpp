// The default grey window's histogram on the GPU and its choice on the host (volume_histogram.h).
#include "viewer/volume_histogram.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "device/gl/shader.h"
#include "device/gl/state_scope.h"

namespace glrecon::viewer {
namespace {

constexpr int kMaxSamples = 1 << 18;

// Both sides bin with this float, computed once from the same two floats.
float binsPerUnit(float low, float high, int bins) { return static_cast<float>(bins / (static_cast<double>(high) - low)); }

std::array<int, 3> sampleCounts(const std::array<int, 3>& size, int stride) {
  return {(size[0] + stride - 1) / stride, (size[1] + stride - 1) / stride, (size[2] + stride - 1) / stride};
}

}  // namespace

double Histogram::percentile(double fraction) const {
  std::uint64_t total = 0;
  for (std::uint32_t c : counts) total += c;
  if (total == 0) return low;
  const double target = fraction * static_cast<double>(total), width = (static_cast<double>(high) - low) / static_cast<double>(counts.size());
  double before = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (before + counts[i] >= target && counts[i] > 0)
      return low + width * (static_cast<double>(i) + std::clamp((target - before) / counts[i], 0.0, 1.0));
    before += counts[i];
  }
  return high;
}

int histogramStride(const std::array<int, 3>& size) {
  int s = 1;
  while (true) {
    const std::array<int, 3> n = sampleCounts(size, s);
    if (static_cast<std::int64_t>(n[0]) * n[1] * n[2] <= kMaxSamples) return s;
    ++s;
  }
}

std::optional<std::pair<double, double>> objectWindow(const Histogram& h) {
  const std::size_t bins = h.counts.size();
  double total = 0, sum = 0;
  for (std::size_t i = 0; i < bins; ++i) {
    total += h.counts[i];
    sum += static_cast<double>(i) * h.counts[i];
  }
  if (total == 0 || !(h.high > h.low)) return std::nullopt;
  // Otsu: the split [0, t) | [t, bins) with the largest between-class variance w0 w1 (m0 - m1)^2.
  std::size_t split = 0;
  double best = -1, w0 = 0, s0 = 0;
  for (std::size_t t = 1; t < bins; ++t) {
    w0 += h.counts[t - 1];
    s0 += static_cast<double>(t - 1) * h.counts[t - 1];
    const double w1 = total - w0;
    if (w0 == 0 || w1 == 0) continue;
    const double m0 = s0 / w0, m1 = (sum - s0) / w1, between = w0 * w1 * (m0 - m1) * (m0 - m1);
    if (between > best) {
      best = between;
      split = t;
    }
  }
  Histogram object = h;
  std::fill(object.counts.begin(), object.counts.begin() + static_cast<std::ptrdiff_t>(split), 0u);
  const double median = object.percentile(0.5), iqr = object.percentile(0.75) - object.percentile(0.25);
  const double span = object.percentile(0.99) - object.percentile(0.01), binWidth = (static_cast<double>(h.high) - h.low) / static_cast<double>(bins);
  const double width = std::max({4.0 * iqr, 0.05 * span, 2.0 * binWidth});
  return std::make_pair(median - 0.5 * width, median + 0.5 * width);
}

Histogram histogramCpu(const float* voxels, const std::array<int, 3>& size, float scale, int stride, float low, float high, int bins) {
  Histogram h;
  h.low = low;
  h.high = high;
  h.counts.assign(static_cast<std::size_t>(bins), 0u);
  const float perUnit = binsPerUnit(low, high, bins);
  for (int k = 0; k < size[2]; k += stride)
    for (int j = 0; j < size[1]; j += stride)
      for (int i = 0; i < size[0]; i += stride) {
        const float v = voxels[(static_cast<std::size_t>(k) * size[1] + j) * size[0] + i] * scale;
        const float position = (v - low) * perUnit;  // the shader's `precise` steps
        if (position < 0.0f) {
          ++h.below;
          continue;
        }
        const int bin = static_cast<int>(position);
        if (bin >= bins) ++h.above;
        else ++h.counts[static_cast<std::size_t>(bin)];
      }
  return h;
}

VolumeHistogram::VolumeHistogram(int bins) : bins_(bins) {
  range_ = gl::buildProgram({{GL_COMPUTE_SHADER, "volume_histogram.comp"}}, {"#define RANGE"});
  counts_ = gl::buildProgram({{GL_COMPUTE_SHADER, "volume_histogram.comp"}});
  result_ = gl::createBuffer();
  glNamedBufferStorage(result_.id(), static_cast<GLsizeiptr>(sizeof(std::uint32_t) * (4 + static_cast<std::size_t>(bins))), nullptr,
                       GL_DYNAMIC_STORAGE_BIT);
}

void VolumeHistogram::dispatch(const gl::Program& program, GLuint volume, const std::array<int, 3>& size, float scale, int stride) {
  const std::array<int, 3> n = sampleCounts(size, stride);
  glUseProgram(program.id());
  glBindTextureUnit(0, volume);
  const gl::StorageBinding result(7, result_.id());
  glUniform3i(glGetUniformLocation(program.id(), "samples"), n[0], n[1], n[2]);
  glUniform1i(glGetUniformLocation(program.id(), "stride"), stride);
  glUniform1f(glGetUniformLocation(program.id(), "scale"), scale);
  // An operator writing the volume by image stores (compute) is seen by texture fetches only after this barrier.
  glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT);
  glDispatchCompute(static_cast<GLuint>((n[0] + 7) / 8), static_cast<GLuint>((n[1] + 7) / 8), static_cast<GLuint>((n[2] + 3) / 4));
  glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
}

void VolumeHistogram::issueRange(GLuint volume, const std::array<int, 3>& size, float scale, int stride) {
  gl::StateScope keep;
  const std::uint32_t start[4] = {0xffffffffu, 0u, 0u, 0u};
  glNamedBufferSubData(result_.id(), 0, sizeof start, start);
  dispatch(range_, volume, size, scale, stride);
}

std::pair<float, float> VolumeHistogram::readRange() const {
  std::uint32_t keys[2];
  glGetNamedBufferSubData(result_.id(), 0, sizeof keys, keys);
  const auto valueOf = [](std::uint32_t key) {
    const std::uint32_t bits = (key & 0x80000000u) ? key & 0x7fffffffu : ~key;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  };
  return {valueOf(keys[0]), valueOf(keys[1])};
}

std::pair<float, float> VolumeHistogram::range(GLuint volume, const std::array<int, 3>& size, float scale, int stride) {
  issueRange(volume, size, scale, stride);
  return readRange();
}

void VolumeHistogram::issueCounts(GLuint volume, const std::array<int, 3>& size, float scale, int stride, float low, float high) {
  gl::StateScope keep;
  const std::vector<std::uint32_t> zero(4 + static_cast<std::size_t>(bins_), 0u);
  glNamedBufferSubData(result_.id(), 0, static_cast<GLsizeiptr>(zero.size() * sizeof(std::uint32_t)), zero.data());
  glUseProgram(counts_.id());
  glUniform1f(glGetUniformLocation(counts_.id(), "low"), low);
  glUniform1f(glGetUniformLocation(counts_.id(), "binsPerUnit"), binsPerUnit(low, high, bins_));
  glUniform1i(glGetUniformLocation(counts_.id(), "bins"), bins_);
  dispatch(counts_, volume, size, scale, stride);
}

Histogram VolumeHistogram::readCounts(float low, float high) const {
  std::vector<std::uint32_t> zero(4 + static_cast<std::size_t>(bins_), 0u);
  glGetNamedBufferSubData(result_.id(), 0, static_cast<GLsizeiptr>(zero.size() * sizeof(std::uint32_t)), zero.data());
  Histogram h;
  h.low = low;
  h.high = high;
  h.below = zero[2];
  h.above = zero[3];
  h.counts.assign(zero.begin() + 4, zero.end());
  return h;
}

Histogram VolumeHistogram::counts(GLuint volume, const std::array<int, 3>& size, float scale, int stride, float low, float high) {
  issueCounts(volume, size, scale, stride, low, high);
  return readCounts(low, high);
}

namespace {

// The bins of the first counts over the sampled range [low, high]; a constant volume gets its value mid-range.
std::pair<float, float> wholeBins(float low, float high, int bins) {
  if (!(high > low)) return {low - 0.5f, low + 0.5f};
  // The maximum itself would fall past the last bin [.., high): a range a bin wider keeps it.
  return {low, high + (high - low) / static_cast<float>(bins)};
}

// The bins of the second counts: the first's 0.05..99.95 percentiles out to its bins' edges, so the samples of those
// bins stay in (all of them, in a one-bin volume); nothing where the first is final (a constant volume, one bin).
std::optional<std::pair<float, float>> robustBins(const Histogram& whole, float low, float high, int bins) {
  if (!(high > low)) return std::nullopt;
  const float wholeBin = (high - low) / static_cast<float>(bins);
  const auto binOf = [&](double value) { return std::floor((value - low) / wholeBin); };
  const float robustLow = static_cast<float>(low + wholeBin * binOf(whole.percentile(0.0005)));
  const float robustHigh = static_cast<float>(low + wholeBin * (binOf(whole.percentile(0.9995)) + 1.0));
  if (!(robustHigh > robustLow)) return std::nullopt;
  return std::pair{robustLow, robustHigh};
}

// The range, then counts over it, then counts over its robust part: the same steps on the GPU or on the host.
template <typename Range, typename Counts>
Histogram refined(int bins, Range range, Counts counts) {
  const auto [low, high] = range();
  const auto [wholeLow, wholeHigh] = wholeBins(low, high, bins);
  const Histogram whole = counts(wholeLow, wholeHigh);
  const auto robust = robustBins(whole, low, high, bins);
  return robust ? counts(robust->first, robust->second) : whole;
}

}  // namespace

Histogram VolumeHistogram::compute(GLuint volume, const std::array<int, 3>& size, float scale) {
  const int stride = histogramStride(size);
  return refined(
      bins_, [&] { return range(volume, size, scale, stride); },
      [&](float low, float high) { return counts(volume, size, scale, stride, low, high); });
}

void VolumeHistogram::begin(GLuint volume, const std::array<int, 3>& size, float scale) {
  stride_ = histogramStride(size);
  issueRange(volume, size, scale, stride_);
  stage_ = 1;
  fence_ = gl::Fence::insert();
  glFlush();
}

std::optional<Histogram> VolumeHistogram::poll(GLuint volume, const std::array<int, 3>& size, float scale) {
  if (stage_ == 0 || !fence_.signalled()) return std::nullopt;
  fence_.reset();
  std::optional<Histogram> result;
  if (stage_ == 1) {
    std::tie(low_, high_) = readRange();
    std::tie(binsLow_, binsHigh_) = wholeBins(low_, high_, bins_);
    issueCounts(volume, size, scale, stride_, binsLow_, binsHigh_);
    stage_ = 2;
  } else if (stage_ == 2) {
    Histogram whole = readCounts(binsLow_, binsHigh_);
    if (const auto robust = robustBins(whole, low_, high_, bins_)) {
      std::tie(binsLow_, binsHigh_) = *robust;
      issueCounts(volume, size, scale, stride_, binsLow_, binsHigh_);
      stage_ = 3;
    } else {
      result = std::move(whole);
      stage_ = 0;
    }
  } else {
    result = readCounts(binsLow_, binsHigh_);
    stage_ = 0;
  }
  if (stage_ != 0) {
    fence_ = gl::Fence::insert();
    glFlush();
  }
  return result;
}

Histogram histogramOnHost(const float* voxels, const std::array<int, 3>& size, float scale) {
  const int stride = histogramStride(size), bins = 4096;
  return refined(
      bins,
      [&] {
        float low = INFINITY, high = -INFINITY;
        for (int k = 0; k < size[2]; k += stride)
          for (int j = 0; j < size[1]; j += stride)
            for (int i = 0; i < size[0]; i += stride) {
              const float v = voxels[(static_cast<std::size_t>(k) * size[1] + j) * size[0] + i] * scale;
              low = std::min(low, v);
              high = std::max(high, v);
            }
        return std::pair{low, high};
      },
      [&](float low, float high) { return histogramCpu(voxels, size, scale, stride, low, high, bins); });
}

}  // namespace glrecon::viewer
