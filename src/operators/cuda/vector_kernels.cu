// OperatorVectors' total-variation operations on the device (kernels.h; PDHG-TV and ASD-POCS's TV phase), in the float
// operations include/glrecon/operator.h writes and src/recon/iterative/host_vectors.cpp computes: every product, sum,
// quotient and square root rounded on its own (__fmul_rn, __fadd_rn, __fsub_rn, __fdiv_rn, __fsqrt_rn: nvcc would
// otherwise fuse a product and a sum), so that each voxel's or ray's result equals the host's bit for bit. Only the sums
// over a whole vector (distanceSquared) add in another order than the host's blocks.
#include <cmath>

#include "device/cuda/cuda.h"
#include "operators/cuda/block_sum.cuh"
#include "operators/cuda/kernels.h"

namespace glrecon::cuda {
namespace {

#define GLRECON_FOR_EACH(i, n) \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<size_t>(gridDim.x) * blockDim.x)

__global__ void __launch_bounds__(256) distanceKernel(const float* a, const float* b, size_t n, double* partials) {
  double sum = 0.0;
  GLRECON_FOR_EACH(i, n) {
    const double d = __dsub_rn(static_cast<double>(a[i]), static_cast<double>(b[i]));
    sum = __dadd_rn(sum, __dmul_rn(d, d));
  }
  storeBlockSum(sum, partials);
}

// The largest |x| by integer atomicMax over the bit patterns of non-negative floats (they order as the values do):
// exact. NaN fails `a <= INFINITY` and is left out, as the host's std::max(largest, NaN) keeps `largest`; or kept
// (keepNaN): |NaN|'s bits are above infinity's, so the result is a NaN.
__global__ void magnitudeKernel(const float* x, size_t n, int* result, bool keepNaN) {
  int best = 0;
  GLRECON_FOR_EACH(i, n) {
    const float a = fabsf(x[i]);
    if (keepNaN || a <= INFINITY) best = max(best, __float_as_int(a));
  }
  for (int offset = 16; offset > 0; offset /= 2) best = max(best, __shfl_down_sync(0xffffffffu, best, offset));
  if ((threadIdx.x & 31) == 0) atomicMax(result, best);
}

// x < 0 ? 0 : x (std::max(x, 0.0f)): NaN and -0 stay.
__global__ void clampKernel(float* x, size_t n) {
  GLRECON_FOR_EACH(i, n) {
    if (x[i] < 0.0f) x[i] = 0.0f;
  }
}

__global__ void extrapolateKernel(const float* x, const float* previous, float* out, size_t n) {
  GLRECON_FOR_EACH(i, n) out[i] = __fsub_rn(__fmul_rn(2.0f, x[i]), previous[i]);
}

__global__ void clipKernel(float* z, const float* d, size_t voxels, float bound) {
  GLRECON_FOR_EACH(i, voxels) {
    const float a = __fadd_rn(z[i], d[i]), b = __fadd_rn(z[voxels + i], d[voxels + i]), c = __fadd_rn(z[2 * voxels + i], d[2 * voxels + i]);
    const float length = __fsqrt_rn(__fadd_rn(__fadd_rn(__fmul_rn(a, a), __fmul_rn(b, b)), __fmul_rn(c, c)));
    const float shrink = length > bound ? __fdiv_rn(bound, length) : 1.0f;
    z[i] = __fmul_rn(a, shrink);
    z[voxels + i] = __fmul_rn(b, shrink);
    z[2 * voxels + i] = __fmul_rn(c, shrink);
  }
}

__global__ void dataDualKernel(float* y, const float* ax, const float* axPrevious, const float* data, const float* sigma, size_t n) {
  GLRECON_FOR_EACH(i, n) {
    const float axBar = __fsub_rn(__fmul_rn(2.0f, ax[i]), axPrevious[i]);
    y[i] = __fdiv_rn(__fadd_rn(y[i], __fmul_rn(sigma[i], __fsub_rn(axBar, data[i]))), __fadd_rn(1.0f, sigma[i]));
  }
}

// max(0, x - tau g) as std::max(0.0f, t): 0 < t ? t : 0 (so -0 and NaN give 0, as on the host).
__global__ void projectedStepKernel(const float* x, const float* tau, const float* g, float* out, size_t n) {
  GLRECON_FOR_EACH(i, n) {
    const float t = __fsub_rn(x[i], __fmul_rn(tau[i], g[i]));
    out[i] = 0.0f < t ? t : 0.0f;
  }
}

// The grid's stencils: one thread per voxel, x fastest (warps along x: coalesced).
struct Voxel {
  int i, j, k;
  size_t p, plane, voxels;
};
__device__ __forceinline__ bool voxelOf(int3 n, Voxel& v) {
  v.i = blockIdx.x * blockDim.x + threadIdx.x;
  v.j = blockIdx.y * blockDim.y + threadIdx.y;
  v.k = blockIdx.z;
  if (v.i >= n.x || v.j >= n.y || v.k >= n.z) return false;
  v.plane = static_cast<size_t>(n.x) * n.y;
  v.voxels = v.plane * n.z;
  v.p = v.k * v.plane + static_cast<size_t>(v.j) * n.x + v.i;
  return true;
}

// A block of the grid's rows (a split operator's part, OperatorVectors::setNeighbours) reads its neighbours' rows from
// halo planes (nx x nz, x fastest): `after`, the next block's first row of the same vector (nullptr: the block ends the
// grid); `before`, the previous block's last row (nullptr: the block starts the grid). Each voxel computes the same
// operations on the same values as in the whole grid: the same bits.
__device__ __forceinline__ float rowAfter(const float* x, const Voxel& v, int3 n, const float* after) {
  return v.j + 1 < n.y ? x[v.p + n.x] : after[static_cast<size_t>(v.k) * n.x + v.i];
}

__global__ void differencesKernel(const float* x, int3 n, float scale, float* out, const float* after) {
  Voxel v;
  if (!voxelOf(n, v)) return;
  const size_t p = v.p;
  const float here = x[p];
  out[p] = v.i + 1 < n.x ? __fmul_rn(scale, __fsub_rn(x[p + 1], here)) : 0.0f;
  out[v.voxels + p] = (v.j + 1 < n.y || after) ? __fmul_rn(scale, __fsub_rn(rowAfter(x, v, n, after), here)) : 0.0f;
  out[2 * v.voxels + p] = v.k + 1 < n.z ? __fmul_rn(scale, __fsub_rn(x[p + v.plane], here)) : 0.0f;
}

// `before`: the previous block's last row of z's y component; `endsGrid`: no row after this block (its last row's y
// differences are 0, so they enter no sum).
__global__ void transposedDifferencesKernel(const float* z, int3 n, float scale, float* volume, const float* before, bool endsGrid) {
  Voxel v;
  if (!voxelOf(n, v)) return;
  const size_t p = v.p;
  const float* zx = z;
  const float* zy = z + v.voxels;
  const float* zz = z + 2 * v.voxels;
  float g = 0.0f;
  if (v.i > 0) g = __fadd_rn(g, zx[p - 1]);
  if (v.i + 1 < n.x) g = __fsub_rn(g, zx[p]);
  if (v.j > 0) g = __fadd_rn(g, zy[p - n.x]);
  else if (before) g = __fadd_rn(g, before[static_cast<size_t>(v.k) * n.x + v.i]);
  if (v.j + 1 < n.y || !endsGrid) g = __fsub_rn(g, zy[p]);
  if (v.k > 0) g = __fadd_rn(g, zz[p - v.plane]);
  if (v.k + 1 < n.z) g = __fsub_rn(g, zz[p]);
  volume[p] = __fadd_rn(volume[p], __fmul_rn(scale, g));
}

// u = d / sqrt(((eps^2 + dx^2) + dy^2) + dz^2) at one voxel from its three forward differences (0 where absent).
__device__ __forceinline__ float3 tvField(float dx, float dy, float dz, float eps) {
  const float norm =
      __fsqrt_rn(__fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(eps, eps), __fmul_rn(dx, dx)), __fmul_rn(dy, dy)), __fmul_rn(dz, dz)));
  return make_float3(__fdiv_rn(dx, norm), __fdiv_rn(dy, norm), __fdiv_rn(dz, norm));
}

__global__ void tvFieldKernel(const float* x, int3 n, float eps, float* u, const float* after) {
  Voxel v;
  if (!voxelOf(n, v)) return;
  const size_t p = v.p;
  const float here = x[p];
  const float dx = v.i + 1 < n.x ? __fsub_rn(x[p + 1], here) : 0.0f,
              dy = (v.j + 1 < n.y || after) ? __fsub_rn(rowAfter(x, v, n, after), here) : 0.0f,
              dz = v.k + 1 < n.z ? __fsub_rn(x[p + v.plane], here) : 0.0f;
  const float3 w = tvField(dx, dy, dz, eps);
  u[p] = w.x;
  u[v.voxels + p] = w.y;
  u[2 * v.voxels + p] = w.z;
}

// `before` (x's previous row, that block's last): the first row's uy(p - e_y) is computed here from it, in tvField's
// operations (that row's x and z differences lie in the plane; its y difference reaches this block's first row).
__global__ void tvGradientKernel(const float* u, int3 n, const unsigned char* mask, float* gradient, const float* x, const float* before,
                                 float eps) {
  Voxel v;
  if (!voxelOf(n, v)) return;
  const size_t p = v.p;
  const float* ux = u;
  const float* uy = u + v.voxels;
  const float* uz = u + 2 * v.voxels;
  float g = -__fadd_rn(__fadd_rn(ux[p], uy[p]), uz[p]);
  if (v.i > 0) g = __fadd_rn(g, ux[p - 1]);
  if (v.j > 0) {
    g = __fadd_rn(g, uy[p - n.x]);
  } else if (before) {
    const size_t q = static_cast<size_t>(v.k) * n.x + v.i;
    const float here = before[q];
    const float dx = v.i + 1 < n.x ? __fsub_rn(before[q + 1], here) : 0.0f, dy = __fsub_rn(x[p], here),
                dz = v.k + 1 < n.z ? __fsub_rn(before[q + n.x], here) : 0.0f;
    g = __fadd_rn(g, tvField(dx, dy, dz, eps).y);
  }
  if (v.k > 0) g = __fadd_rn(g, uz[p - v.plane]);
  gradient[p] = (!mask || mask[p]) ? g : 0.0f;
}

#undef GLRECON_FOR_EACH

constexpr int kBlocks = 1024, kThreads = 256;

dim3 stencilBlocks(int3 n) { return dim3((n.x + 31) / 32, (n.y + 7) / 8, n.z); }
const dim3 kStencilThreads(32, 8, 1);

}  // namespace

void launchDistanceSquared(const float* a, const float* b, std::size_t n, double* partials) {
  distanceKernel<<<kCorrectionBlocks, 256>>>(a, b, n, partials);
  GLRECON_CUDA(cudaGetLastError());
}

void launchLargestMagnitude(const float* x, std::size_t n, int* result, bool keepNaN, cudaStream_t stream) {
  magnitudeKernel<<<kBlocks, kThreads, 0, stream>>>(x, n, result, keepNaN);
  GLRECON_CUDA(cudaGetLastError());
}

void launchClampNegative(float* x, std::size_t n) {
  clampKernel<<<kBlocks, kThreads>>>(x, n);
  GLRECON_CUDA(cudaGetLastError());
}

void launchExtrapolate(const float* x, const float* previous, float* out, std::size_t n) {
  extrapolateKernel<<<kBlocks, kThreads>>>(x, previous, out, n);
  GLRECON_CUDA(cudaGetLastError());
}

void launchForwardDifferences(const float* x, int3 size, float scale, float* field, const float* after) {
  differencesKernel<<<stencilBlocks(size), kStencilThreads>>>(x, size, scale, field, after);
  GLRECON_CUDA(cudaGetLastError());
}

void launchAddTransposedDifferences(const float* field, int3 size, float scale, float* volume, const float* before, bool endsGrid) {
  transposedDifferencesKernel<<<stencilBlocks(size), kStencilThreads>>>(field, size, scale, volume, before, endsGrid);
  GLRECON_CUDA(cudaGetLastError());
}

void launchClipToBall(float* z, const float* d, std::size_t voxels, float bound) {
  clipKernel<<<kBlocks, kThreads>>>(z, d, voxels, bound);
  GLRECON_CUDA(cudaGetLastError());
}

void launchDataDualStep(float* y, const float* ax, const float* axPrevious, const float* data, const float* sigma, std::size_t n) {
  dataDualKernel<<<kBlocks, kThreads>>>(y, ax, axPrevious, data, sigma, n);
  GLRECON_CUDA(cudaGetLastError());
}

void launchProjectedStep(const float* x, const float* tau, const float* g, float* out, std::size_t n) {
  projectedStepKernel<<<kBlocks, kThreads>>>(x, tau, g, out, n);
  GLRECON_CUDA(cudaGetLastError());
}

void launchTotalVariationGradient(const float* x, int3 size, float eps, const unsigned char* mask, float* field, float* gradient,
                                  const float* before, const float* after) {
  tvFieldKernel<<<stencilBlocks(size), kStencilThreads>>>(x, size, eps, field, after);
  GLRECON_CUDA(cudaGetLastError());
  tvGradientKernel<<<stencilBlocks(size), kStencilThreads>>>(field, size, mask, gradient, x, before, eps);
  GLRECON_CUDA(cudaGetLastError());
}

}  // namespace glrecon::cuda
