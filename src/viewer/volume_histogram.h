#pragma once
// The viewer's default grey window: a histogram of the volume texture computed on the GPU (compute shaders over every
// stride-th voxel: about 2^18 of them whatever the grid) and read back as a few kilobytes, never the volume; the window
// is chosen from it on the host (objectWindow). A CPU reference bins the same voxels the same way (histogramCpu);
// tests/viewer/volume_histogram_gl_test.cpp compares them and checks the window on the Shepp-Logan phantom.
#include <GL/glew.h>

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "device/gl/objects.h"

namespace glrecon::viewer {

/// Counts of the sampled voxels' values (times the scale) in `counts.size()` equal bins over [low, high); below and
/// above: the samples outside.
struct Histogram {
  float low = 0, high = 1;
  std::vector<std::uint32_t> counts;
  std::uint64_t below = 0, above = 0;
  /// The value under which `fraction` of the samples in the bins lie (linear within a bin); the bins' counts only.
  double percentile(double fraction) const;
};

/// The sampling stride for a volume of `size`: the smallest s with ceil(n/s) per axis making at most 2^18 samples.
int histogramStride(const std::array<int, 3>& size);

/// The grey window that shows an object's inside: the samples are split into background and object at Otsu's
/// threshold (the one maximising the between-class variance), and the window is centred on the object's median,
/// 4 interquartile ranges wide (at least 5% of the object's 1st..99th percentile span, for a piecewise-constant
/// object whose quartiles coincide). Nothing when the histogram is empty or flat.
std::optional<std::pair<double, double>> objectWindow(const Histogram& histogram);

/// The same histogram as VolumeHistogram::compute, on the CPU: `voxels` x fastest.
Histogram histogramCpu(const float* voxels, const std::array<int, 3>& size, float scale, int stride, float low, float high, int bins);

/// VolumeHistogram::compute's three passes on the host, over every stride-th voxel of `voxels` (the cpu backend's volume).
Histogram histogramOnHost(const float* voxels, const std::array<int, 3>& size, float scale);

class VolumeHistogram {
 public:
  explicit VolumeHistogram(int bins = 4096);  ///< needs the context current
  /// The sampled values' minimum and maximum (GPU pass, 16 bytes read back).
  std::pair<float, float> range(GLuint volume, const std::array<int, 3>& size, float scale, int stride);
  /// Counts in [low, high) (GPU pass, 16 + 4 bins bytes read back).
  Histogram counts(GLuint volume, const std::array<int, 3>& size, float scale, int stride, float low, float high);
  /// What the viewer uses: the range, then counts over it, then counts again over its 0.05..99.95 percentiles (so a
  /// few streaks' extremes do not make the bins coarse).
  Histogram compute(GLuint volume, const std::array<int, 3>& size, float scale);
  int bins() const { return bins_; }

  /// compute()'s passes without waiting for the GPU (a frame loop's way): begin() issues the first; each poll() finds
  /// whether the pass before is done (a fence), reads its few bytes and issues the next, and returns the histogram
  /// once the last is read. Each pass samples the volume as it is when issued (it may fill in meanwhile).
  void begin(GLuint volume, const std::array<int, 3>& size, float scale);
  std::optional<Histogram> poll(GLuint volume, const std::array<int, 3>& size, float scale);
  bool busy() const { return stage_ != 0; }

 private:
  void dispatch(const gl::Program& program, GLuint volume, const std::array<int, 3>& size, float scale, int stride);
  void issueRange(GLuint volume, const std::array<int, 3>& size, float scale, int stride);
  std::pair<float, float> readRange() const;
  void issueCounts(GLuint volume, const std::array<int, 3>& size, float scale, int stride, float low, float high);
  Histogram readCounts(float low, float high) const;
  int bins_;
  gl::Program range_, counts_;
  gl::Buffer result_;
  // The passes in flight (begin, poll): 0 none, 1 the range, 2 the counts over it, 3 over its robust part.
  int stage_ = 0, stride_ = 1;
  float low_ = 0, high_ = 0, binsLow_ = 0, binsHigh_ = 0;
  gl::Fence fence_;
};

}  // namespace glrecon::viewer
