// CUDA backprojection (see include/glrecon/cuda_backprojector.h). Same geometry and conventions as every
// other backend: the 3x4 matrices of Geometry::matrix, bilinear sampling with pixel centres at integers,
// 0 outside the detector, 1/w^2 weights.
#include "glrecon/cuda_backprojector.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <mutex>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/filter.h"
#include "glrecon/parallel.h"
#include "glrecon/slab.h"

namespace glrecon {
namespace {

constexpr int kMaxWindow = 128;  // constant memory: 128 x 3 float4 = 6 KiB
constexpr int kDefaultWindow = 32;
constexpr int kBlockX = 32, kBlockY = 4;

// One bank of matrices per live backprojector (constant memory is the device's, shared by every stream): two
// backprojectors on one device (slab workers, --gpu 0,0) would otherwise overwrite each other's matrices while
// the other's kernel still reads them. 8 banks x 6 KiB of the 64 KiB.
constexpr int kBanks = 8;
__constant__ float4 c_rows[kBanks][3 * kMaxWindow];

std::mutex bankMutex;
bool bankUsed[kBanks] = {};
int acquireBank() {
  std::lock_guard lock(bankMutex);
  for (int b = 0; b < kBanks; ++b)
    if (!bankUsed[b]) {
      bankUsed[b] = true;
      return b;
    }
  throw CudaError("cuda backend: at most " + std::to_string(kBanks) + " cuda backprojectors at once in one process");
}
void releaseBank(int bank) {
  std::lock_guard lock(bankMutex);
  bankUsed[bank] = false;
}

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw CudaError(std::string("CUDA: ") + call + ": " + cudaGetErrorString(status));
}
#define GLRECON_CUDA(call) check((call), #call)

// One thread per (x, z) pair and a run of J consecutive y voxels (blockIdx.z picks the run): per projection
// the thread reads the window's matrix once (constant memory, the same for the whole warp), then samples
// J voxels. RTK's gantry turns about y, so for an untilted detector u and w do not change along y
// (the matrices' y column has no u or w part): then u, 1/w and the weight are computed once per projection
// and each voxel costs one multiply-add for v, a texture fetch and a multiply-add (kYInvariant). Any other
// geometry takes the general path, one division per voxel and projection. A warp covers 32 neighbouring x,
// so its fetches are neighbours on the detector too. With a region, a voxel outside its column's z range
// is computed as any other but not stored: inside, the arithmetic is the same with and without the region.
// The volume holds rows [yOffset, yOffset + ny) of the grid (a slab; yOffset a multiple of J): a voxel's
// arithmetic uses its global row, so a slab's voxels get the bits of the whole grid's.
template <int J, bool kYInvariant>
__global__ void __launch_bounds__(kBlockX * kBlockY) backprojectRuns(float* __restrict__ volume, int nx, int ny, int nz, int yOffset, int count,
                                                                     cudaTextureObject_t projections, const int2* __restrict__ zRange,
                                                                     int bank) {
  const int i = blockIdx.x * kBlockX + threadIdx.x, k = blockIdx.y * kBlockY + threadIdx.y, j0 = blockIdx.z * J;
  if (i >= nx || k >= nz) return;
  bool store[J];
  bool any = false;
#pragma unroll
  for (int r = 0; r < J; ++r) {
    const int j = j0 + r;
    store[r] = j < ny;
    if (store[r] && zRange) {
      const int2 range = zRange[j * nx + i];
      store[r] = k >= range.x && k < range.y;
    }
    any |= store[r];
  }
  if (!any) return;
  float sum[J];
#pragma unroll
  for (int r = 0; r < J; ++r) sum[r] = 0.0f;
  const float fi = static_cast<float>(i), fk = static_cast<float>(k), fj0 = static_cast<float>(yOffset + j0);
  for (int p = 0; p < count; ++p) {
    const float4 r0 = c_rows[bank][3 * p], r1 = c_rows[bank][3 * p + 1], r2 = c_rows[bank][3 * p + 2];
    if (kYInvariant) {
      const float invW = 1.0f / (r2.x * fi + r2.z * fk + r2.w);
      const float u = (r0.x * fi + r0.z * fk + r0.w) * invW + 0.5f;
      const float v0 = (r1.x * fi + r1.y * fj0 + r1.z * fk + r1.w) * invW + 0.5f, vStep = r1.y * invW;
      const float weight = invW * invW;
#pragma unroll
      for (int r = 0; r < J; ++r) sum[r] += tex2DLayered<float>(projections, u, v0 + static_cast<float>(r) * vStep, p) * weight;
    } else {
#pragma unroll
      for (int r = 0; r < J; ++r) {
        const float fj = fj0 + static_cast<float>(r);
        const float invW = 1.0f / (r2.x * fi + r2.y * fj + r2.z * fk + r2.w);
        const float u = (r0.x * fi + r0.y * fj + r0.z * fk + r0.w) * invW;
        const float v = (r1.x * fi + r1.y * fj + r1.z * fk + r1.w) * invW;
        sum[r] += tex2DLayered<float>(projections, u + 0.5f, v + 0.5f, p) * (invW * invW);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < J; ++r)
    if (store[r]) volume[(static_cast<size_t>(k) * ny + (j0 + r)) * nx + i] += sum[r];
}

// The FDK filter on the device (DeviceFilter): out[row][i] = sum_j x[row][j] taps[|i - j|] with x the raw pixel
// times its cosine and column weights, for the rows of a window's projections (row r is layer r / nv, detector
// row r % nv), written into the window's layered array through a surface. A dense product with a Toeplitz
// matrix: a block computes a 64 x 64 tile of (rows, columns) in 16-column steps of j from shared memory,
// each thread a 4 x 4 sub-tile strided by 16 (neighbouring threads read neighbouring taps: no bank conflicts).
// Every output sums j in ascending order: the result is deterministic.
constexpr int kFilterTile = 64, kFilterStep = 16, kFilterThreads = 256;
struct WindowViews {
  int view[kMaxWindow];
};
__global__ void __launch_bounds__(kFilterThreads) filterRows(const float* __restrict__ raw, int nu, int nv, int rows, WindowViews views,
                                                             const float* __restrict__ cosine, const float* __restrict__ columnWeights,
                                                             const float* __restrict__ taps, cudaSurfaceObject_t out) {
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
        const int layer = row / nv, v = row - layer * nv;
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
    const int layer = row / nv, v = row - layer * nv;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int i = col0 + tx + 16 * b;
      if (i < nu) surf2DLayeredwrite(sum[a][b], out, i * static_cast<int>(sizeof(float)), v, layer);
    }
  }
}

// Voxels per thread along y: 8 unless GLRECON_CUDA_RUN says 4 or 16 (for tuning on a new GPU).
int runLength() {
  static const int length = [] {
    const char* text = std::getenv("GLRECON_CUDA_RUN");
    const int n = text ? std::atoi(text) : 8;
    return n == 4 || n == 16 ? n : 8;
  }();
  return length;
}

template <int J>
void launchRuns(bool yInvariant, dim3 blocks, cudaStream_t stream, float* volume, int nx, int ny, int nz, int yOffset, int count,
                cudaTextureObject_t projections, const int2* zRange, int bank) {
  const dim3 block(kBlockX, kBlockY);
  if (yInvariant)
    backprojectRuns<J, true><<<blocks, block, 0, stream>>>(volume, nx, ny, nz, yOffset, count, projections, zRange, bank);
  else
    backprojectRuns<J, false><<<blocks, block, 0, stream>>>(volume, nx, ny, nz, yOffset, count, projections, zRange, bank);
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

bool cudaBackendBuilt() { return true; }

int cudaDeviceCount() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess ? devices : 0;
}

std::uint64_t cudaFreeMemory(int device) {
  if (device < 0 || device >= cudaDeviceCount() || cudaSetDevice(device) != cudaSuccess) return 0;
  std::size_t freeBytes = 0, totalBytes = 0;
  return cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess ? freeBytes : 0;
}

void warmUpCuda(int device) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || device < 0 || device >= devices) return;
  if (cudaSetDevice(device) == cudaSuccess) cudaFree(nullptr);
}

double cudaBilinearPeak(int device) {
  int devices = 0, sms = 0, kiloHertz = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || device < 0 || device >= devices) return 0.0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&kiloHertz, cudaDevAttrClockRate, device) != cudaSuccess)
    return 0.0;
  return 4.0 * sms * kiloHertz * 1e-6;
}

struct CudaBackprojector::Impl {
  const Geometry& geometry;
  VolumeGrid grid;
  BackprojectorOptions options;
  std::string deviceName;
  int window = kDefaultWindow;
  bool lastYInvariant = false;
  float* volume = nullptr;
  int2* zRange = nullptr;
  std::vector<std::uint8_t> regionMask;
  double updatesPerLaunch = 0, updatesDone = 0, updatesTotal = 0;
  // Double buffering: window b is staged in pinned memory, copied on copyStream into array[b], and used by the
  // kernel on computeStream once copied[b] has fired; the next copy into b waits for used[b].
  cudaArray_t arrays[2] = {nullptr, nullptr};
  cudaTextureObject_t textures[2] = {0, 0};
  cudaSurfaceObject_t surfaces[2] = {0, 0};  // the same arrays, written by the device filter
  // Device filter (filterOnDevice): raw windows land in raw[b] and are filtered into arrays[b] on copyStream.
  bool deviceFilter = false;
  float* raw[2] = {nullptr, nullptr};
  float* filterCosine = nullptr;
  float* filterColumns = nullptr;
  float* filterTaps = nullptr;
  float* staging[2] = {nullptr, nullptr};
  std::size_t stagingFloats = 0;  // per buffer: one window of projections
  cudaEvent_t copied[2] = {nullptr, nullptr}, used[2] = {nullptr, nullptr};
  cudaStream_t copyStream = nullptr, computeStream = nullptr;
  int buffer = 0;
  std::vector<std::size_t> pending;
  std::vector<RowBand> pendingBands;  // slab mode: the detector rows each pending projection has staged
  BackprojectorTimings timings;
  int slabFirst = 0, slabRows = 0;  // the y rows the volume holds (slabRows = ny without slabs)
  int bank = -1;                    // this backprojector's matrices in c_rows
  ~Impl() {
    if (bank >= 0) releaseBank(bank);  // also when the constructor throws after acquiring it
  }
  double uploaded = 0;              // projection bytes sent to the device

  std::size_t voxels() const { return static_cast<std::size_t>(grid.size[0]) * slabRows * grid.size[2]; }
  RowBand bandOf(std::size_t view) const {
    return options.slabRows > 0 ? slabRowBand(geometry, view, grid, slabFirst, slabRows) : RowBand{0, geometry.detector.nv};
  }

  Impl(const Geometry& g, const VolumeGrid& v, const BackprojectorOptions& o) : geometry(g), grid(v), options(o) {}

  // The device filter's tables and raw buffers for `filter`; false, doing nothing, without the memory for them.
  bool prepareFilter(const DeviceFilter& filter) {
    filter.requireMatches(geometry);
    if (!raw[0]) {
      std::size_t freeBytes = 0, totalBytes = 0;
      GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
      const std::size_t need = (2 * stagingFloats + filter.cosine.size() + filter.viewWeights.size() + filter.taps.size()) * sizeof(float);
      if (need > freeBytes) return false;
    }
    // Sizes follow from the geometry (checked above), so buffers allocated once serve every later run.
    const auto upload = [](float*& to, const std::vector<float>& from) {
      if (!to) GLRECON_CUDA(cudaMalloc(&to, from.size() * sizeof(float)));
      GLRECON_CUDA(cudaMemcpy(to, from.data(), from.size() * sizeof(float), cudaMemcpyHostToDevice));
    };
    upload(filterCosine, filter.cosine);
    upload(filterColumns, filter.viewWeights);
    upload(filterTaps, filter.taps);
    for (int b = 0; b < 2; ++b)
      if (!raw[b]) GLRECON_CUDA(cudaMalloc(&raw[b], stagingFloats * sizeof(float)));
    return true;
  }

  // Staging buffer b's `w` raw projections (views[]) to the device and filtered into array b, on the copy stream.
  void filterWindow(int b, const std::size_t* views, int w) {
    const int nu = geometry.detector.nu, nv = geometry.detector.nv;
    const std::size_t floats = static_cast<std::size_t>(nu) * nv * w;
    GLRECON_CUDA(cudaMemcpyAsync(raw[b], staging[b], floats * sizeof(float), cudaMemcpyHostToDevice, copyStream));
    WindowViews list{};
    for (int s = 0; s < w; ++s) list.view[s] = static_cast<int>(views[s]);
    const int rows = nv * w;
    const dim3 blocks((nu + kFilterTile - 1) / kFilterTile, (rows + kFilterTile - 1) / kFilterTile);
    filterRows<<<blocks, kFilterThreads, 0, copyStream>>>(raw[b], nu, nv, rows, list, filterCosine, filterColumns, filterTaps, surfaces[b]);
    GLRECON_CUDA(cudaGetLastError());
  }

  void launch() {
    if (pending.empty()) return;
    const int w = static_cast<int>(pending.size());
    const int nu = geometry.detector.nu, nv = geometry.detector.nv;
    auto t = std::chrono::steady_clock::now();
    // The staging buffer of this window was filled by backproject(); copy it into the layered array.
    GLRECON_CUDA(cudaStreamWaitEvent(copyStream, used[buffer], 0));
    if (deviceFilter) {
      filterWindow(buffer, pending.data(), w);
      uploaded += static_cast<double>(nu) * nv * w * sizeof(float);
    }
    cudaMemcpy3DParms copy{};
    copy.srcPtr = make_cudaPitchedPtr(staging[buffer], nu * sizeof(float), nu, nv);
    copy.dstArray = arrays[buffer];
    copy.kind = cudaMemcpyHostToDevice;
    if (deviceFilter) {
      // Filtered into the array above.
    } else if (options.slabRows > 0) {
      // Each projection's band of rows, at its own rows and layer: texture coordinates stay those of the
      // whole detector; rows outside the band hold stale data no voxel of the slab samples.
      for (int s = 0; s < w; ++s) {
        const RowBand band = pendingBands[s];
        if (band.count == 0) continue;
        copy.srcPos = make_cudaPos(0, band.first, s);
        copy.dstPos = make_cudaPos(0, band.first, s);
        copy.extent = make_cudaExtent(nu, band.count, 1);
        GLRECON_CUDA(cudaMemcpy3DAsync(&copy, copyStream));
        uploaded += static_cast<double>(band.count) * nu * sizeof(float);
      }
    } else {
      copy.extent = make_cudaExtent(nu, nv, w);
      GLRECON_CUDA(cudaMemcpy3DAsync(&copy, copyStream));
      uploaded += static_cast<double>(nu) * nv * w * sizeof(float);
    }
    GLRECON_CUDA(cudaEventRecord(copied[buffer], copyStream));
    if (options.profile) {
      GLRECON_CUDA(cudaStreamSynchronize(copyStream));
      timings.upload += since(t);
      t = std::chrono::steady_clock::now();
    }
    std::vector<float4> rows(3 * w);
    bool yInvariant = true;  // u and w constant along y in every projection of the window (see backprojectRuns)
    for (int s = 0; s < w; ++s) {
      const ProjectionMatrix m = geometry.matrix(pending[s], grid);
      for (int r = 0; r < 3; ++r)
        rows[3 * s + r] = make_float4(static_cast<float>(m.m[r][0]), static_cast<float>(m.m[r][1]), static_cast<float>(m.m[r][2]),
                                      static_cast<float>(m.m[r][3]));
      yInvariant = yInvariant && rows[3 * s].y == 0.0f && rows[3 * s + 2].y == 0.0f;
    }
    GLRECON_CUDA(cudaStreamWaitEvent(computeStream, copied[buffer], 0));
    GLRECON_CUDA(cudaMemcpyToSymbolAsync(c_rows, rows.data(), rows.size() * sizeof(float4), bank * sizeof(c_rows[0]), cudaMemcpyHostToDevice,
                                         computeStream));
    const int nx = grid.size[0], ny = slabRows, nz = grid.size[2], run = runLength();
    const dim3 blocks((nx + kBlockX - 1) / kBlockX, (nz + kBlockY - 1) / kBlockY, (ny + run - 1) / run);
    if (run == 4) launchRuns<4>(yInvariant, blocks, computeStream, volume, nx, ny, nz, slabFirst, w, textures[buffer], zRange, bank);
    else if (run == 16) launchRuns<16>(yInvariant, blocks, computeStream, volume, nx, ny, nz, slabFirst, w, textures[buffer], zRange, bank);
    else launchRuns<8>(yInvariant, blocks, computeStream, volume, nx, ny, nz, slabFirst, w, textures[buffer], zRange, bank);
    lastYInvariant = yInvariant;
    GLRECON_CUDA(cudaGetLastError());
    GLRECON_CUDA(cudaEventRecord(used[buffer], computeStream));
    if (options.profile) {
      GLRECON_CUDA(cudaStreamSynchronize(computeStream));
      timings.compute += since(t);
    }
    updatesTotal += static_cast<double>(voxels());
    updatesDone += zRange ? updatesPerLaunch : static_cast<double>(voxels());
    pending.clear();
    pendingBands.clear();
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
    throw CudaError(field("gpu") + " " + std::to_string(options.gpu) + ": expected a CUDA device from 0 to " + std::to_string(devices - 1));
  GLRECON_CUDA(cudaSetDevice(options.gpu));
  d.bank = acquireBank();
  cudaDeviceProp properties{};
  GLRECON_CUDA(cudaGetDeviceProperties(&properties, options.gpu));
  d.deviceName = properties.name;
  if (options.window < kMaximumWindow || options.window > kMaxWindow)
    throw UsageError(field("window") + ": expected 1 to " + std::to_string(kMaxWindow) + " (constant memory), max or auto, found " +
                     std::to_string(options.window));
  // The window only amortises the volume's read-modify-write (one pass per window), which is cheap beside the
  // texture fetches once it holds a few dozen projections: auto takes 32 (measured against 16, 64 and 128 by
  // bench), max the constant-memory limit.
  d.window = options.window == kMaximumWindow ? kMaxWindow : options.window > 0 ? options.window : kDefaultWindow;
  d.window = std::min<int>(d.window, static_cast<int>(geometry.size()));
  d.slabRows = options.slabRows > 0 ? std::min(options.slabRows, grid.size[1]) : grid.size[1];
  const std::size_t bytes = d.voxels() * sizeof(float);
  std::size_t freeBytes = 0, totalBytes = 0;
  GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  const std::size_t projectionBytes = static_cast<std::size_t>(2) * geometry.detector.nu * geometry.detector.nv * d.window * sizeof(float);
  if (bytes + projectionBytes > freeBytes)
    throwInputError("cuda backprojector on " + d.deviceName, "GPU memory (bytes)",
                    "at most " + std::to_string(freeBytes) + (options.slabRows > 0 ? std::string() : std::string(" (") + slabSuggestion() + ")"),
                    std::to_string(bytes + projectionBytes));
  GLRECON_CUDA(cudaMalloc(&d.volume, bytes));
  GLRECON_CUDA(cudaMemset(d.volume, 0, bytes));
  GLRECON_CUDA(cudaStreamCreate(&d.copyStream));
  GLRECON_CUDA(cudaStreamCreate(&d.computeStream));
  const cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  for (int b = 0; b < 2; ++b) {
    GLRECON_CUDA(cudaMalloc3DArray(&d.arrays[b], &format, make_cudaExtent(geometry.detector.nu, geometry.detector.nv, d.window),
                                   cudaArrayLayered | cudaArraySurfaceLoadStore));
    cudaResourceDesc resource{};
    resource.resType = cudaResourceTypeArray;
    resource.res.array.array = d.arrays[b];
    cudaTextureDesc texture{};
    texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeBorder;  // 0 outside the detector
    texture.filterMode = cudaFilterModeLinear;
    texture.readMode = cudaReadModeElementType;
    texture.normalizedCoords = 0;
    GLRECON_CUDA(cudaCreateTextureObject(&d.textures[b], &resource, &texture, nullptr));
    GLRECON_CUDA(cudaCreateSurfaceObject(&d.surfaces[b], &resource));
    d.stagingFloats = static_cast<std::size_t>(geometry.detector.nu) * geometry.detector.nv * d.window;
    GLRECON_CUDA(cudaMallocHost(&d.staging[b], d.stagingFloats * sizeof(float)));
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
    if (d.surfaces[b]) cudaDestroySurfaceObject(d.surfaces[b]);
    if (d.raw[b]) cudaFree(d.raw[b]);
    if (d.arrays[b]) cudaFreeArray(d.arrays[b]);
    if (d.staging[b]) cudaFreeHost(d.staging[b]);
    if (d.copied[b]) cudaEventDestroy(d.copied[b]);
    if (d.used[b]) cudaEventDestroy(d.used[b]);
  }
  if (d.copyStream) cudaStreamDestroy(d.copyStream);
  if (d.computeStream) cudaStreamDestroy(d.computeStream);
  if (d.volume) cudaFree(d.volume);
  if (d.zRange) cudaFree(d.zRange);
  if (d.filterCosine) cudaFree(d.filterCosine);
  if (d.filterColumns) cudaFree(d.filterColumns);
  if (d.filterTaps) cudaFree(d.filterTaps);
}

std::string CudaBackprojector::description() const {
  return "cuda on " + impl_->deviceName + ", window " + std::to_string(impl_->window);
}

void CudaBackprojector::backproject(const float* projections, const std::size_t* views, std::size_t count) {
  Impl& d = *impl_;
  const std::size_t pixels = static_cast<std::size_t>(d.geometry.detector.nu) * d.geometry.detector.nv;
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= d.geometry.size()) throw std::out_of_range("backproject: view index beyond the geometry");
  for (std::size_t p = 0; p < count;) {
    if (d.pending.empty()) GLRECON_CUDA(cudaEventSynchronize(d.used[d.buffer]));  // the staging buffer's last copy is done
    const std::size_t n = std::min(count - p, static_cast<std::size_t>(d.window) - d.pending.size());
    float* to = d.staging[d.buffer] + d.pending.size() * pixels;
    const int threads = std::min(8, resolveThreadCount(d.options.threads));
    if (d.options.slabRows > 0) {
      // Only each projection's band of rows is staged (and later sent).
      const std::size_t nu = d.geometry.detector.nu;
      for (std::size_t s = 0; s < n; ++s) {
        const RowBand band = d.bandOf(views[p + s]);
        d.pendingBands.push_back(band);
        const std::size_t offset = static_cast<std::size_t>(band.first) * nu, length = static_cast<std::size_t>(band.count) * nu;
        parallelFor(length, std::size_t{1} << 18, threads, [&](std::size_t b, std::size_t e) {
          std::memcpy(to + s * pixels + offset + b, projections + (p + s) * pixels + offset + b, (e - b) * sizeof(float));
        });
      }
    } else {
      // Several threads: one core copies about 8 GB/s, and at 512^2 this copy is 1 MiB per projection on the
      // thread that feeds the GPU (it bounded the whole FDK before).
      parallelFor(n * pixels, std::size_t{1} << 18, threads,
                  [&](std::size_t b, std::size_t e) { std::memcpy(to + b, projections + p * pixels + b, (e - b) * sizeof(float)); });
    }
    d.pending.insert(d.pending.end(), views + p, views + p + n);
    p += n;
    if (static_cast<int>(d.pending.size()) == d.window) d.launch();
  }
}

Image CudaBackprojector::volume() {
  Image result(slabGrid(impl_->grid, impl_->slabFirst, impl_->slabRows));
  readVolume(result.data.data());
  return result;
}

// Through the two pinned staging buffers (idle once the kernels are done), chunk by chunk: the copy engine
// fills one while host threads move the other into the destination. A plain cudaMemcpy into pageable memory
// goes through the driver's small bounce buffer and ran at 1.8 GB/s on the H200.
void CudaBackprojector::readVolume(float* destination) {
  Impl& d = *impl_;
  d.launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  const auto t = std::chrono::steady_clock::now();
  const std::size_t total = d.voxels(), chunk = d.stagingFloats, chunks = (total + chunk - 1) / chunk;
  const auto issue = [&](std::size_t c) {
    const std::size_t n = std::min(chunk, total - c * chunk);
    GLRECON_CUDA(cudaMemcpyAsync(d.staging[c % 2], d.volume + c * chunk, n * sizeof(float), cudaMemcpyDeviceToHost, d.copyStream));
    GLRECON_CUDA(cudaEventRecord(d.copied[c % 2], d.copyStream));
  };
  issue(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) issue(c + 1);  // its buffer held chunk c - 1, already copied out below
    GLRECON_CUDA(cudaEventSynchronize(d.copied[c % 2]));
    const std::size_t n = std::min(chunk, total - c * chunk);
    const float* from = d.staging[c % 2];
    float* to = destination + c * chunk;
    // Page-sized pieces: the destination may be untouched memory, and its page faults spread over the threads too.
    parallelFor(n, std::size_t{1} << 18, d.options.threads,
                [&](std::size_t b, std::size_t e) { std::memcpy(to + b, from + b, (e - b) * sizeof(float)); });
  }
  d.timings.readback += since(t);
}

void CudaBackprojector::reset() {
  Impl& d = *impl_;
  d.pending.clear();
  GLRECON_CUDA(cudaDeviceSynchronize());
  GLRECON_CUDA(cudaMemset(d.volume, 0, d.voxels() * sizeof(float)));
  d.updatesDone = d.updatesTotal = 0;
  d.timings = {};
  d.uploaded = 0;  // as the GL backends: reset() clears every counter
}

void CudaBackprojector::setSlab(int firstRow, int rows) {
  Impl& d = *impl_;
  checkSlab(d.grid, d.options.slabRows, firstRow, rows);
  d.launch();  // projections staged for the previous slab belong to it
  GLRECON_CUDA(cudaDeviceSynchronize());
  d.slabFirst = firstRow;
  d.slabRows = rows;
  GLRECON_CUDA(cudaMemset(d.volume, 0, d.voxels() * sizeof(float)));
  if (d.zRange) {
    cudaFree(d.zRange);
    d.zRange = nullptr;
  }
  d.regionMask.clear();
  d.updatesDone = d.updatesTotal = 0;
}

double CudaBackprojector::uploadedBytes() const { return impl_->uploaded; }

bool CudaBackprojector::filterOnDevice(const DeviceFilter* filter, bool) {
  Impl& d = *impl_;
  d.launch();  // what is staged was passed under the previous setting
  GLRECON_CUDA(cudaDeviceSynchronize());
  if (!filter) {
    d.deviceFilter = false;
    return true;
  }
  // Slabs stage only each projection's band of rows (their projections come filtered: filterProjections).
  if (d.options.slabRows > 0 || !d.prepareFilter(*filter)) return false;
  d.deviceFilter = true;
  return true;
}

bool CudaBackprojector::filterProjections(const DeviceFilter& filter, const float* raw, const std::size_t* views, std::size_t count,
                                          float* filtered, bool) {
  Impl& d = *impl_;
  d.launch();
  GLRECON_CUDA(cudaDeviceSynchronize());  // staging[0], raw[0] and arrays[0] are free
  if (!d.prepareFilter(filter)) return false;
  const int nu = d.geometry.detector.nu, nv = d.geometry.detector.nv;
  const std::size_t pixels = static_cast<std::size_t>(nu) * nv;
  const int threads = std::min(8, resolveThreadCount(d.options.threads));
  for (std::size_t first = 0; first < count; first += d.window) {
    const std::size_t n = std::min<std::size_t>(d.window, count - first);
    for (std::size_t s = 0; s < n; ++s)
      if (views[first + s] >= d.geometry.size()) throw std::out_of_range("filterProjections: view index beyond the geometry");
    parallelFor(n * pixels, std::size_t{1} << 18, threads,
                [&](std::size_t b, std::size_t e) { std::memcpy(d.staging[0] + b, raw + first * pixels + b, (e - b) * sizeof(float)); });
    d.filterWindow(0, views + first, static_cast<int>(n));
    // Back out of the layered array the backprojection would sample: the same bits it would see.
    cudaMemcpy3DParms back{};
    back.srcArray = d.arrays[0];
    back.dstPtr = make_cudaPitchedPtr(d.staging[0], nu * sizeof(float), nu, nv);
    back.extent = make_cudaExtent(nu, nv, n);
    back.kind = cudaMemcpyDeviceToHost;
    GLRECON_CUDA(cudaMemcpy3DAsync(&back, d.copyStream));
    GLRECON_CUDA(cudaStreamSynchronize(d.copyStream));
    parallelFor(n * pixels, std::size_t{1} << 18, threads,
                [&](std::size_t b, std::size_t e) { std::memcpy(filtered + first * pixels + b, d.staging[0] + b, (e - b) * sizeof(float)); });
  }
  return true;
}

void CudaBackprojector::setRegion(const RegionOfInterest& roi) {
  Impl& d = *impl_;
  if (roi.size != std::array<int, 3>{d.grid.size[0], d.slabRows, d.grid.size[2]}) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
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
  throw UsageError(field("densityRange") + ": expected " + field("backend") + " graphics or cpu (the cuda backend has no per-voxel kill)");
}

std::vector<std::uint8_t> CudaBackprojector::activeMask() { return impl_->regionMask; }

double CudaBackprojector::culledFraction() const {
  return impl_->updatesTotal > 0 ? 1.0 - impl_->updatesDone / impl_->updatesTotal : 0.0;
}

BackprojectorTimings CudaBackprojector::timings() const { return impl_->timings; }

}  // namespace glrecon
