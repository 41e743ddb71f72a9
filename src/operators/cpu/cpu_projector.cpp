// The CPU projector pair: the reference every GPU backend is held to. The arithmetic is float, step for step
// as the shaders write it (shaders/project_common.glsl), so backends differ only by rounding and the texture
// units' interpolation.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "glrecon/parallel.h"
#include "glrecon/projector.h"

namespace glrecon {
namespace {

// A copy of the volume with a zero border (1 voxel before, 2 after on every axis): every trilinear sample of a
// point with indices in [-1, n] then reads inside the copy, no bounds checks, and the border gives the "0
// outside the volume" of a texture clamped to a zero border.
struct PaddedVolume {
  int nx, ny, nz;  // padded sizes
  std::vector<float> data;
  PaddedVolume(const float* volume, const std::array<int, 3>& size)
      : nx(size[0] + 3), ny(size[1] + 3), nz(size[2] + 3), data(static_cast<std::size_t>(nx) * ny * nz, 0.0f) {
    for (int k = 0; k < size[2]; ++k)
      for (int j = 0; j < size[1]; ++j)
        std::copy_n(volume + (static_cast<std::size_t>(k) * size[1] + j) * size[0], size[0],
                    data.begin() + ((static_cast<std::size_t>(k + 1) * ny + (j + 1)) * nx + 1));
  }
  // Trilinear sample at continuous voxel index p (voxel centres at integers), p clamped to [-1, n].
  float sample(float x, float y, float z) const {
    x = std::min(std::max(x, -1.0f), static_cast<float>(nx - 3)) + 1.0f;
    y = std::min(std::max(y, -1.0f), static_cast<float>(ny - 3)) + 1.0f;
    z = std::min(std::max(z, -1.0f), static_cast<float>(nz - 3)) + 1.0f;
    const int i = static_cast<int>(x), j = static_cast<int>(y), k = static_cast<int>(z);  // >= 0: truncation is floor
    const float fx = x - static_cast<float>(i), fy = y - static_cast<float>(j), fz = z - static_cast<float>(k);
    const float* p = data.data() + (static_cast<std::size_t>(k) * ny + j) * nx + i;
    const std::size_t sy = static_cast<std::size_t>(nx), sz = static_cast<std::size_t>(nx) * ny;
    const float c00 = p[0] + fx * (p[1] - p[0]), c10 = p[sy] + fx * (p[sy + 1] - p[sy]);
    const float c01 = p[sz] + fx * (p[sz + 1] - p[sz]), c11 = p[sz + sy] + fx * (p[sz + sy + 1] - p[sz + sy]);
    const float c0 = c00 + fy * (c10 - c00), c1 = c01 + fy * (c11 - c01);
    return c0 + fz * (c1 - c0);
  }
};

}  // namespace

CpuProjector::CpuProjector(const Geometry& geometry, const VolumeGrid& grid, const ProjectorOptions& options)
    : grid_(grid), nu_(geometry.detector.nu), nv_(geometry.detector.nv), threads_(resolveThreadCount(options.threads)) {
  checkProjectorGeometry(geometry, grid, "cpu projector");
  step_ = projectorStep(options, grid);
  pixels_ = static_cast<std::size_t>(nu_) * nv_;
  views_ = projectorViews(geometry, grid);
}

void CpuProjector::forward(const float* volume, const std::size_t* views, std::size_t count, float* projections) {
  const auto start = std::chrono::steady_clock::now();
  const PaddedVolume padded(volume, grid_.size);
  const float step = static_cast<float>(step_);
  const float sp[3] = {static_cast<float>(grid_.spacing.x), static_cast<float>(grid_.spacing.y), static_cast<float>(grid_.spacing.z)};
  const float hi[3] = {static_cast<float>(grid_.size[0]), static_cast<float>(grid_.size[1]), static_cast<float>(grid_.size[2])};
  std::vector<double> samples(count * nv_, 0.0);
  parallelFor(count * nv_, 4, threads_, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const std::size_t p = row / nv_;
      const int iv = static_cast<int>(row % nv_);
      const ProjectorView& o = views_[views[p]];
      float* out = projections + row * nu_;
      double taken = 0;
      for (int iu = 0; iu < nu_; ++iu) {
        const float fu = static_cast<float>(iu), fv = static_cast<float>(iv);
        float d[3], dir[3];
        for (int a = 0; a < 3; ++a) d[a] = o.e0[a] + fu * o.eu[a] + fv * o.ev[a];
        const float length = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        // The clip box: where the trilinear interpolant with a zero border can be non-zero.
        float tmin = 0.0f, tmax = length;
        bool miss = false;
        for (int a = 0; a < 3; ++a) {
          dir[a] = d[a] / length / sp[a];  // voxel-index units per mm along the ray
          if (dir[a] != 0.0f) {
            const float t0 = (-1.0f - o.sourceIndex[a]) / dir[a], t1 = (hi[a] - o.sourceIndex[a]) / dir[a];
            tmin = std::max(tmin, std::min(t0, t1));
            tmax = std::min(tmax, std::max(t0, t1));
          } else if (o.sourceIndex[a] < -1.0f || o.sourceIndex[a] > hi[a]) {
            miss = true;
          }
        }
        float sum = 0.0f;
        if (!miss && tmax > tmin) {
          const int n = static_cast<int>(std::ceil((tmax - tmin) / step));
          for (int k = 0; k < n; ++k) {
            const float t = tmin + (static_cast<float>(k) + 0.5f) * step;
            sum += padded.sample(o.sourceIndex[0] + t * dir[0], o.sourceIndex[1] + t * dir[1], o.sourceIndex[2] + t * dir[2]);
          }
          taken += n;
        }
        out[iu] = sum * step;
      }
      samples[row] = taken;
    }
  });
  for (double s : samples) timings_.samples += s;
  timings_.forward += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CpuProjector::back(const float* projections, const std::size_t* views, std::size_t count, float* volume) {
  const auto start = std::chrono::steady_clock::now();
  // Projections with a zero border (1 pixel before, 2 after), as the CPU backprojector pads them.
  const int pitch = nu_ + 3, rows = nv_ + 3;
  std::vector<float> padded(count * static_cast<std::size_t>(pitch) * rows, 0.0f);
  for (std::size_t p = 0; p < count; ++p)
    for (int v = 0; v < nv_; ++v)
      std::copy_n(projections + (p * nv_ + v) * nu_, nu_, padded.begin() + (p * rows + v + 1) * pitch + 1);
  const float sp[3] = {static_cast<float>(grid_.spacing.x), static_cast<float>(grid_.spacing.y), static_cast<float>(grid_.spacing.z)};
  const int nx = grid_.size[0], ny = grid_.size[1], nz = grid_.size[2];
  const float maxU = static_cast<float>(nu_), maxV = static_cast<float>(nv_);
  parallelFor(static_cast<std::size_t>(ny) * nz, 4, threads_, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const int j = static_cast<int>(row % ny), k = static_cast<int>(row / ny);
      float* out = volume + row * nx;
      for (int i = 0; i < nx; ++i) {
        const float x[3] = {static_cast<float>(i), static_cast<float>(j), static_cast<float>(k)};
        float sum = 0.0f;
        for (std::size_t p = 0; p < count; ++p) {
          const ProjectorView& o = views_[views[p]];
          float h[3];
          for (int r = 0; r < 3; ++r) h[r] = o.matrix[r][0] * x[0] + o.matrix[r][1] * x[1] + o.matrix[r][2] * x[2] + o.matrix[r][3];
          const float u = std::min(std::max(h[0] / h[2], -1.0f), maxU) + 1.0f;
          const float v = std::min(std::max(h[1] / h[2], -1.0f), maxV) + 1.0f;
          const int iu = static_cast<int>(u), iv = static_cast<int>(v);
          const float au = u - static_cast<float>(iu), av = v - static_cast<float>(iv);
          const float* q = padded.data() + (p * rows + iv) * pitch + iu;
          const float top = q[0] + au * (q[1] - q[0]), bottom = q[pitch] + au * (q[pitch + 1] - q[pitch]);
          const float value = top + av * (bottom - top);
          float rs[3];
          for (int a = 0; a < 3; ++a) rs[a] = (x[a] - o.sourceIndex[a]) * sp[a];
          const float distance = std::sqrt(rs[0] * rs[0] + rs[1] * rs[1] + rs[2] * rs[2]);
          const float depth = rs[0] * o.normal[0] + rs[1] * o.normal[1] + rs[2] * o.normal[2];
          sum += value * (o.weight * distance / (depth * depth * depth));
        }
        out[i] = sum;
      }
    }
  });
  timings_.back += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace glrecon
