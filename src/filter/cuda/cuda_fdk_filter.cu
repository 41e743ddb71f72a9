// The FDK filter's CUDA twin (see glrecon/filter.h): raw projections staged in the window's pinned buffer, copied to
// the device on the window's stream and filtered there into the window's layered array through its surface.
#include <algorithm>
#include <memory>
#include <vector>

#include "device/cuda/cuda.h"
#include "device/cuda/projection_window.h"
#include "glrecon/filter.h"
#include "glrecon/slab.h"

namespace glrecon {
namespace {

constexpr int kMaxViews = 128;  // projections per launch at most (a window's, see operators/cuda/kernels.h)

// The FDK filter on the device (DeviceFilter): out[row][i] = sum_j x[row][j] taps[|i - j|] with x the raw pixel
// times its cosine and column weights, for the rows of a window's projections (each projection's detector rows
// [firstV, firstV + bandRows): row r is layer r / bandRows, detector row firstV + r % bandRows), written into the
// window's layered array through a surface. A dense product with a Toeplitz
// matrix: a block computes a 64 x 64 tile of (rows, columns) in 16-column steps of j from shared memory,
// each thread a 4 x 4 sub-tile strided by 16 (neighbouring threads read neighbouring taps: no bank conflicts).
// Every output sums j in ascending order: the result is deterministic.
constexpr int kFilterTile = 64, kFilterStep = 16, kFilterThreads = 256;
struct WindowViews {
  int view[kMaxViews];
};
__global__ void __launch_bounds__(kFilterThreads) filterRows(const float* __restrict__ raw, int nu, int firstV, int bandRows, int rows,
                                                             WindowViews views,
                                                             const float* __restrict__ cosine, const float* __restrict__ columnWeights,
                                                             const float* __restrict__ taps, cudaSurfaceObject_t out,
                                                             int firstLayer) {
  __shared__ float xs[kFilterTile][kFilterStep + 1];
  __shared__ float ts[kFilterTile + kFilterStep];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * kFilterTile, col0 = blockIdx.x * kFilterTile;
  float sum[4][4];
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b) sum[a][b] = 0.0f;
  for (int j0 = 0; j0 < nu; j0 += kFilterStep) {
    for (int e = threadIdx.x; e < kFilterTile * kFilterStep; e += kFilterThreads) {
      const int r = e / kFilterStep, jj = e % kFilterStep, row = row0 + r, j = j0 + jj;
      float x = 0.0f;
      if (row < rows && j < nu) {
        const int layer = row / bandRows, v = firstV + row - layer * bandRows;
        x = raw[static_cast<size_t>(row) * nu + j] * cosine[static_cast<size_t>(v) * nu + j] *
            columnWeights[static_cast<size_t>(views.view[layer]) * nu + j];
      }
      xs[r][jj] = x;
    }
    // ts[t] = taps[|i - j|] for i - j = col0 - j0 - (kFilterStep - 1) + t.
    for (int t = threadIdx.x; t < kFilterTile + kFilterStep - 1; t += kFilterThreads) {
      const int d = abs(col0 - j0 - (kFilterStep - 1) + t);
      ts[t] = d < nu ? taps[d] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int jj = 0; jj < kFilterStep; ++jj) {
      float x[4], t[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) x[a] = xs[ty + 16 * a][jj];
#pragma unroll
      for (int b = 0; b < 4; ++b) t[b] = ts[tx + 16 * b - jj + kFilterStep - 1];
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) sum[a][b] = fmaf(x[a], t[b], sum[a][b]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int row = row0 + ty + 16 * a;
    if (row >= rows) continue;
    const int layer = row / bandRows, v = firstV + row - layer * bandRows;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int i = col0 + tx + 16 * b;
      if (i < nu) surf2DLayeredwrite(sum[a][b], out, i * static_cast<int>(sizeof(float)), v, firstLayer + layer);
    }
  }
}

class CudaFdkFilter final : public DeviceFdkFilter {
 public:
  CudaFdkFilter(const DeviceFilter& tables, int device, std::size_t capacity) : nu_(tables.nu), nv_(tables.nv), device_(device) {
    GLRECON_CUDA(cudaSetDevice(device));
    // Sizes follow from the geometry, so buffers allocated once serve every call.
    const auto upload = [](cuda::DeviceBuffer<float>& to, const std::vector<float>& from) {
      to = cuda::DeviceBuffer<float>(from.size());
      GLRECON_CUDA(cudaMemcpy(to.get(), from.data(), from.size() * sizeof(float), cudaMemcpyHostToDevice));
    };
    upload(cosine_, tables.cosine);
    upload(columns_, tables.viewWeights);
    upload(taps_, tables.taps);
    for (auto& raw : raw_) raw = cuda::DeviceBuffer<float>(capacity * pixels());
  }

  void filter(const float* raw, const std::size_t* views, std::size_t count, DeviceProjections& target, std::size_t slot) override {
    auto& window = static_cast<cuda::ProjectionWindow&>(target);
    GLRECON_CUDA(cudaSetDevice(device_));
    // A slab's operator samples only its band of rows: those alone are sent and filtered (a slab of 96 rows of 1024
    // sent and filtered every row of 720 projections, about half its time on an H200). The band of the whole call, so
    // that the rows stay one contiguous block per projection.
    const RowBand band = window.rowBands ? bandUnion(window.rowBands, views, count) : RowBand{0, nv_};
    if (band.count == 0) return;  // no voxel of the block sees these views
    const std::size_t bandPixels = static_cast<std::size_t>(band.count) * nu_;
    // On several threads: at 512^2 this copy is 1 MiB per projection on the thread that feeds the GPU.
    float* staged = window.staging + slot * pixels();
    copyRowBands(raw, count, pixels(), nu_, band, staged);
    float* onDevice = raw_[window.index % 2].get() + slot * pixels();
    GLRECON_CUDA(cudaMemcpyAsync(onDevice, staged, count * bandPixels * sizeof(float), cudaMemcpyHostToDevice, window.stream));
    window.sentBytes += static_cast<double>(count * bandPixels * sizeof(float));
    WindowViews list{};
    for (std::size_t s = 0; s < count; ++s) list.view[s] = static_cast<int>(views[s]);
    const int rows = band.count * static_cast<int>(count);
    const dim3 blocks((nu_ + kFilterTile - 1) / kFilterTile, (rows + kFilterTile - 1) / kFilterTile);
    filterRows<<<blocks, kFilterThreads, 0, window.stream>>>(onDevice, nu_, band.first, band.count, rows, list, cosine_.get(), columns_.get(),
                                                              taps_.get(), window.surface, static_cast<int>(slot));
    GLRECON_CUDA(cudaGetLastError());
  }

 private:
  std::size_t pixels() const { return static_cast<std::size_t>(nu_) * nv_; }

  int nu_, nv_, device_;
  cuda::DeviceBuffer<float> cosine_, columns_, taps_;
  cuda::DeviceBuffer<float> raw_[2];  // one per window of the operator (window.index)
};

}  // namespace

std::unique_ptr<DeviceFdkFilter> makeCudaFdkFilter(const DeviceFilter& tables, DeviceProjections& target) {
  auto* found = dynamic_cast<cuda::ProjectionWindow*>(&target);
  if (!found) return nullptr;
  cuda::ProjectionWindow& window = *found;
  GLRECON_CUDA(cudaSetDevice(window.device));
  std::size_t freeBytes = 0, totalBytes = 0;
  GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  const std::size_t need = (2 * window.capacity * tables.nu * tables.nv + tables.cosine.size() + tables.viewWeights.size() + tables.taps.size()) *
                           sizeof(float);
  if (need > freeBytes) return nullptr;  // without room beside the volume the CPU filters
  return std::make_unique<CudaFdkFilter>(tables, window.device, window.capacity);
}

}  // namespace glrecon
