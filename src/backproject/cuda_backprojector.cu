// CUDA backprojection (see include/glrecon/cuda_backprojector.h). Same geometry and conventions as every
// other backend: the 3x4 matrices of Geometry::matrix, bilinear sampling with pixel centres at integers,
// 0 outside the detector, 1/w^2 weights.
#include "glrecon/cuda_backprojector.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "glrecon/error.h"

namespace glrecon {
namespace {

constexpr int kMaxWindow = 64;  // constant memory: 64 x 3 float4 = 3 KiB
constexpr int kBlockX = 32, kBlockY = 8;

__constant__ float4 c_rows[3 * kMaxWindow];

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw CudaError(std::string("CUDA: ") + call + ": " + cudaGetErrorString(status));
}
#define GLRECON_CUDA(call) check((call), #call)

// One thread per (x, y) column; for each slice it sums the window's projections and adds to the volume.
// The detector coordinates are affine in k along the column, recomputed from k so rounding does not drift.
__global__ void backprojectColumns(float* __restrict__ volume, int nx, int ny, int nz, int count, cudaTextureObject_t projections,
                                   const int2* __restrict__ zRange) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= nx || j >= ny) return;
  int first = 0, last = nz;
  if (zRange) {
    const int2 r = zRange[j * nx + i];
    first = r.x;
    last = r.y;
  }
  const float fi = static_cast<float>(i), fj = static_cast<float>(j);
  for (int k = first; k < last; ++k) {
    const float fk = static_cast<float>(k);
    float sum = 0.0f;
#pragma unroll 4
    for (int p = 0; p < count; ++p) {
      const float4 r0 = c_rows[3 * p], r1 = c_rows[3 * p + 1], r2 = c_rows[3 * p + 2];
      const float w = r2.x * fi + r2.y * fj + r2.z * fk + r2.w;
      const float invW = 1.0f / w;
      const float u = (r0.x * fi + r0.y * fj + r0.z * fk + r0.w) * invW;
      const float v = (r1.x * fi + r1.y * fj + r1.z * fk + r1.w) * invW;
      sum += tex2DLayered<float>(projections, u + 0.5f, v + 0.5f, p) * (invW * invW);
    }
    volume[(static_cast<size_t>(k) * ny + j) * nx + i] += sum;
  }
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

bool cudaBackendBuilt() { return true; }

struct CudaBackprojector::Impl {
  const Geometry& geometry;
  VolumeGrid grid;
  BackprojectorOptions options;
  std::string deviceName;
  int window = 8;
  float* volume = nullptr;
  int2* zRange = nullptr;
  std::vector<std::uint8_t> regionMask;
  double updatesPerLaunch = 0, updatesDone = 0, updatesTotal = 0;
  // Double buffering: window b is staged in pinned memory, copied on copyStream into array[b], and used by the
  // kernel on computeStream once copied[b] has fired; the next copy into b waits for used[b].
  cudaArray_t arrays[2] = {nullptr, nullptr};
  cudaTextureObject_t textures[2] = {0, 0};
  float* staging[2] = {nullptr, nullptr};
  cudaEvent_t copied[2] = {nullptr, nullptr}, used[2] = {nullptr, nullptr};
  cudaStream_t copyStream = nullptr, computeStream = nullptr;
  int buffer = 0;
  std::vector<std::size_t> pending;
  BackprojectorTimings timings;

  Impl(const Geometry& g, const VolumeGrid& v, const BackprojectorOptions& o) : geometry(g), grid(v), options(o) {}

  void launch() {
    if (pending.empty()) return;
    const int w = static_cast<int>(pending.size());
    const int nu = geometry.detector.nu, nv = geometry.detector.nv;
    auto t = std::chrono::steady_clock::now();
    // The staging buffer of this window was filled by backproject(); copy it into the layered array.
    GLRECON_CUDA(cudaStreamWaitEvent(copyStream, used[buffer], 0));
    cudaMemcpy3DParms copy{};
    copy.srcPtr = make_cudaPitchedPtr(staging[buffer], nu * sizeof(float), nu, nv);
    copy.dstArray = arrays[buffer];
    copy.extent = make_cudaExtent(nu, nv, w);
    copy.kind = cudaMemcpyHostToDevice;
    GLRECON_CUDA(cudaMemcpy3DAsync(&copy, copyStream));
    GLRECON_CUDA(cudaEventRecord(copied[buffer], copyStream));
    if (options.profile) {
      GLRECON_CUDA(cudaStreamSynchronize(copyStream));
      timings.upload += since(t);
      t = std::chrono::steady_clock::now();
    }
    std::vector<float4> rows(3 * w);
    for (int s = 0; s < w; ++s) {
      const ProjectionMatrix m = geometry.matrix(pending[s], grid);
      for (int r = 0; r < 3; ++r)
        rows[3 * s + r] = make_float4(static_cast<float>(m.m[r][0]), static_cast<float>(m.m[r][1]), static_cast<float>(m.m[r][2]),
                                      static_cast<float>(m.m[r][3]));
    }
    GLRECON_CUDA(cudaStreamWaitEvent(computeStream, copied[buffer], 0));
    GLRECON_CUDA(cudaMemcpyToSymbolAsync(c_rows, rows.data(), rows.size() * sizeof(float4), 0, cudaMemcpyHostToDevice, computeStream));
    const dim3 block(kBlockX, kBlockY), blocks((grid.size[0] + kBlockX - 1) / kBlockX, (grid.size[1] + kBlockY - 1) / kBlockY);
    backprojectColumns<<<blocks, block, 0, computeStream>>>(volume, grid.size[0], grid.size[1], grid.size[2], w, textures[buffer], zRange);
    GLRECON_CUDA(cudaGetLastError());
    GLRECON_CUDA(cudaEventRecord(used[buffer], computeStream));
    if (options.profile) {
      GLRECON_CUDA(cudaStreamSynchronize(computeStream));
      timings.compute += since(t);
    }
    updatesTotal += static_cast<double>(grid.voxelCount());
    updatesDone += zRange ? updatesPerLaunch : static_cast<double>(grid.voxelCount());
    pending.clear();
    buffer = 1 - buffer;
  }
};

CudaBackprojector::CudaBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options)
    : impl_(std::make_unique<Impl>(geometry, grid, options)) {
  geometry.validate("cuda backprojector");
  grid.validate("cuda backprojector");
  Impl& d = *impl_;
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0)
    throw CudaError(std::string("CUDA: no device (") + (status != cudaSuccess ? cudaGetErrorString(status) : "none found") + ")");
  if (options.gpu < 0 || options.gpu >= devices)
    throw CudaError("--gpu " + std::to_string(options.gpu) + ": expected a CUDA device from 0 to " + std::to_string(devices - 1));
  GLRECON_CUDA(cudaSetDevice(options.gpu));
  cudaDeviceProp properties{};
  GLRECON_CUDA(cudaGetDeviceProperties(&properties, options.gpu));
  d.deviceName = properties.name;
  if (options.window < kMaximumWindow || options.window > kMaxWindow)
    throw UsageError("--window: expected 1 to " + std::to_string(kMaxWindow) + " (constant memory), max or auto, found " +
                     std::to_string(options.window));
  // No search yet: auto takes 8, which Okitsu et al. and the OpenGL paths found best; max takes 64.
  d.window = options.window == kMaximumWindow ? kMaxWindow : options.window > 0 ? options.window : 8;
  d.window = std::min<int>(d.window, static_cast<int>(geometry.size()));
  const std::size_t bytes = grid.voxelCount() * sizeof(float);
  std::size_t freeBytes = 0, totalBytes = 0;
  GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  const std::size_t projectionBytes = static_cast<std::size_t>(2) * geometry.detector.nu * geometry.detector.nv * d.window * sizeof(float);
  if (bytes + projectionBytes > freeBytes)
    throwInputError("cuda backprojector on " + d.deviceName, "GPU memory (bytes)", "at most " + std::to_string(freeBytes),
                    std::to_string(bytes + projectionBytes));
  GLRECON_CUDA(cudaMalloc(&d.volume, bytes));
  GLRECON_CUDA(cudaMemset(d.volume, 0, bytes));
  GLRECON_CUDA(cudaStreamCreate(&d.copyStream));
  GLRECON_CUDA(cudaStreamCreate(&d.computeStream));
  const cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  for (int b = 0; b < 2; ++b) {
    GLRECON_CUDA(cudaMalloc3DArray(&d.arrays[b], &format, make_cudaExtent(geometry.detector.nu, geometry.detector.nv, d.window),
                                   cudaArrayLayered));
    cudaResourceDesc resource{};
    resource.resType = cudaResourceTypeArray;
    resource.res.array.array = d.arrays[b];
    cudaTextureDesc texture{};
    texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeBorder;  // 0 outside the detector
    texture.filterMode = cudaFilterModeLinear;
    texture.readMode = cudaReadModeElementType;
    texture.normalizedCoords = 0;
    GLRECON_CUDA(cudaCreateTextureObject(&d.textures[b], &resource, &texture, nullptr));
    GLRECON_CUDA(cudaMallocHost(&d.staging[b], static_cast<std::size_t>(geometry.detector.nu) * geometry.detector.nv * d.window * sizeof(float)));
    GLRECON_CUDA(cudaEventCreateWithFlags(&d.copied[b], cudaEventDisableTiming));
    GLRECON_CUDA(cudaEventCreateWithFlags(&d.used[b], cudaEventDisableTiming));
    GLRECON_CUDA(cudaEventRecord(d.used[b], d.computeStream));
  }
}

CudaBackprojector::~CudaBackprojector() {
  if (!impl_) return;
  Impl& d = *impl_;
  cudaDeviceSynchronize();
  for (int b = 0; b < 2; ++b) {
    if (d.textures[b]) cudaDestroyTextureObject(d.textures[b]);
    if (d.arrays[b]) cudaFreeArray(d.arrays[b]);
    if (d.staging[b]) cudaFreeHost(d.staging[b]);
    if (d.copied[b]) cudaEventDestroy(d.copied[b]);
    if (d.used[b]) cudaEventDestroy(d.used[b]);
  }
  if (d.copyStream) cudaStreamDestroy(d.copyStream);
  if (d.computeStream) cudaStreamDestroy(d.computeStream);
  if (d.volume) cudaFree(d.volume);
  if (d.zRange) cudaFree(d.zRange);
}

std::string CudaBackprojector::description() const {
  return "cuda on " + impl_->deviceName + ", window " + std::to_string(impl_->window);
}

void CudaBackprojector::backproject(const float* projections, const std::size_t* views, std::size_t count) {
  Impl& d = *impl_;
  const std::size_t pixels = static_cast<std::size_t>(d.geometry.detector.nu) * d.geometry.detector.nv;
  for (std::size_t p = 0; p < count; ++p) {
    if (views[p] >= d.geometry.size()) throw std::out_of_range("backproject: view index beyond the geometry");
    if (d.pending.empty()) GLRECON_CUDA(cudaEventSynchronize(d.used[d.buffer]));  // the staging buffer's last copy is done
    std::memcpy(d.staging[d.buffer] + d.pending.size() * pixels, projections + p * pixels, pixels * sizeof(float));
    d.pending.push_back(views[p]);
    if (static_cast<int>(d.pending.size()) == d.window) d.launch();
  }
}

Image CudaBackprojector::volume() {
  Impl& d = *impl_;
  d.launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  const auto t = std::chrono::steady_clock::now();
  Image result(d.grid);
  GLRECON_CUDA(cudaMemcpy(result.data.data(), d.volume, result.data.size() * sizeof(float), cudaMemcpyDeviceToHost));
  d.timings.readback += since(t);
  return result;
}

void CudaBackprojector::setRegion(const RegionOfInterest& roi) {
  Impl& d = *impl_;
  if (roi.size != d.grid.size) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  d.launch();
  std::vector<int2> ranges;
  d.updatesPerLaunch = 0;
  for (const auto& [first, last] : columnZRanges(roi)) {
    ranges.push_back(make_int2(first, last));
    d.updatesPerLaunch += last - first;
  }
  GLRECON_CUDA(cudaDeviceSynchronize());
  if (!d.zRange) GLRECON_CUDA(cudaMalloc(&d.zRange, ranges.size() * sizeof(int2)));
  GLRECON_CUDA(cudaMemcpy(d.zRange, ranges.data(), ranges.size() * sizeof(int2), cudaMemcpyHostToDevice));
  d.regionMask = roi.mask;
}

void CudaBackprojector::killOutsideRange(double, double, double) {
  throw UsageError("--density-range: expected --backend graphics or cpu (the cuda backend has no per-voxel kill)");
}

std::vector<std::uint8_t> CudaBackprojector::activeMask() { return impl_->regionMask; }

double CudaBackprojector::culledFraction() const {
  return impl_->updatesTotal > 0 ? 1.0 - impl_->updatesDone / impl_->updatesTotal : 0.0;
}

BackprojectorTimings CudaBackprojector::timings() const { return impl_->timings; }

}  // namespace glrecon
