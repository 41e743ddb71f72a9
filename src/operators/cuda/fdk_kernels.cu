// The cuda operator's Fdk kernels: the voxel-driven backprojection and the FDK filter (see kernels.h). Same
// conventions as every backend: the 3x4 matrices of Geometry::matrix, bilinear sampling with pixel centres at
// integers, 0 outside the detector, 1/w^2 weights.
#include <mutex>
#include <string>

#include "device/cuda/cuda.h"
#include "operators/cuda/kernels.h"

namespace glrecon::cuda {
namespace {

constexpr int kBlockX = 32, kBlockY = 4;

// One bank of matrices per live operator (constant memory is the device's, shared by every stream): two
// operators on one device (slab workers, --gpu 0,0) would otherwise overwrite each other's matrices while
// the other's kernel still reads them. 8 banks x 6 KiB of the 64 KiB. The split operator refuses more cuda slabs
// in one process than this before making any (split_operator.cpp, kCudaPartsPerProcess: change both).
constexpr int kBanks = 8;
__constant__ float4 c_rows[kBanks][3 * kMaxWindow];

std::mutex bankMutex;
bool bankUsed[kBanks] = {};
}  // namespace

int acquireMatrixBank() {
  std::lock_guard lock(bankMutex);
  for (int b = 0; b < kBanks; ++b)
    if (!bankUsed[b]) {
      bankUsed[b] = true;
      return b;
    }
  throw CudaError("cuda: at most " + std::to_string(kBanks) + " cuda operators at once in one process");
}
void releaseMatrixBank(int bank) {
  std::lock_guard lock(bankMutex);
  bankUsed[bank] = false;
}

namespace {

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

template <int J>
void launchRuns(bool yInvariant, dim3 blocks, cudaStream_t stream, float* volume, int nx, int ny, int nz, int yOffset, int count,
                cudaTextureObject_t projections, const int2* zRange, int bank) {
  const dim3 block(kBlockX, kBlockY);
  if (yInvariant)
    backprojectRuns<J, true><<<blocks, block, 0, stream>>>(volume, nx, ny, nz, yOffset, count, projections, zRange, bank);
  else
    backprojectRuns<J, false><<<blocks, block, 0, stream>>>(volume, nx, ny, nz, yOffset, count, projections, zRange, bank);
}

}  // namespace

void uploadMatrices(int bank, const float4* rows, int count, cudaStream_t stream) {
  GLRECON_CUDA(cudaMemcpyToSymbolAsync(c_rows, rows, static_cast<std::size_t>(count) * 3 * sizeof(float4), bank * sizeof(c_rows[0]),
                                       cudaMemcpyHostToDevice, stream));
}

void launchFdkBack(int run, bool yInvariant, cudaStream_t stream, float* volume, int nx, int ny, int nz, int yOffset, int count,
                   cudaTextureObject_t projections, const int2* zRange, int bank) {
  const dim3 blocks((nx + kBlockX - 1) / kBlockX, (nz + kBlockY - 1) / kBlockY, (ny + run - 1) / run);
  if (run == 4) launchRuns<4>(yInvariant, blocks, stream, volume, nx, ny, nz, yOffset, count, projections, zRange, bank);
  else if (run == 16) launchRuns<16>(yInvariant, blocks, stream, volume, nx, ny, nz, yOffset, count, projections, zRange, bank);
  else launchRuns<8>(yInvariant, blocks, stream, volume, nx, ny, nz, yOffset, count, projections, zRange, bank);
  GLRECON_CUDA(cudaGetLastError());
}


}  // namespace glrecon::cuda
