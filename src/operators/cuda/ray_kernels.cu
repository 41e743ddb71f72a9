// The cuda operator's forward and Adjoint kernels and the subset update (see kernels.h): the volume in a 3D cudaArray
// sampled through a texture object (hardware trilinear, border 0, unnormalised coordinates at texel centres + 0.5),
// projections in a layered 2D cudaArray (bilinear, border 0). The same arithmetic as shaders/project_common.glsl.
// NVIDIA texture units interpolate with 8-bit fractional weights (1/256 steps), so samples differ from the CPU's float
// interpolation by up to 1/512 of the neighbouring voxels' difference (see tests/operators/operator_support.h).
#include "device/cuda/cuda.h"
#include "operators/cuda/block_sum.cuh"
#include "operators/cuda/kernels.h"
#include "operators/plane_gather.h"
#include "operators/ray_march.h"

namespace glrecon::cuda {
namespace {

struct DeviceView {
  float sourceIndex[3], e0[3], eu[3], ev[3];  // the ray's fields as marchRay (ray_march.h) reads them
  int mainAxis;
  int parallel;  // parallel beam (projector_views.h): rays along e0 from each pixel; the Adjoint weight is `weight` alone
  int planeGather;  // the matched pair in plane form (plane_gather.h): its forward by planeForward, its transpose gathered
  int layered;      // the interpolating pair's forward from the volume's planes as layers (launchForward)
  int distanceDriven;  // (planeGather) the distance-driven pair: ddForward and ddGather
  glrecon::detail::PlaneView plane;  // (planeGather) its constants, made on the host: the same for both kernels
  float3 normal;
  float weight;
  float4 rows[3];
};

__constant__ DeviceView kViews[kMaxRayViews];

// The ray through pixel (iu, iv) of view p as every backend marches it (ray_march.h).
__device__ __forceinline__ bool rayOf(const DeviceView& o, int iu, int iv, int3 size, float3 spacing, float step, glrecon::detail::RaySamples& r) {
  const float sp[3] = {spacing.x, spacing.y, spacing.z};
  const float hi[3] = {static_cast<float>(size.x), static_cast<float>(size.y), static_cast<float>(size.z)};
  return glrecon::detail::marchRay(o, static_cast<float>(iu), static_cast<float>(iv), sp, hi, step, r);
}

// The volume holds y rows [firstRow, firstRow + rows) of the grid of `size` (a block: the rays are the whole grid's,
// sampled where they reach the block; outside it the texture's border is 0). `volume`: its 3D copy (trilinear);
// `zLayers` / `xLayers`: its z planes / x planes as layers of a 2D array ((x, y) and (z, y)), for the views marked
// layered, whose rays all keep their main axis z or x: a sample on plane c is then a bilinear fetch from layer c, which
// the texture units serve at twice the rate of a trilinear one (the same value: on its plane the main axis's weight is
// 1 and 0, exactly, in 8 bits as in float).
__global__ void forwardKernel(cudaTextureObject_t volume, cudaTextureObject_t zLayers, cudaTextureObject_t xLayers, int3 size, int firstRow,
                              int rows, float3 spacing, float step, int nu, int nv, int count, float* out) {
  const int iu = blockIdx.x * blockDim.x + threadIdx.x, iv = blockIdx.y * blockDim.y + threadIdx.y, p = blockIdx.z;
  if (iu >= nu || iv >= nv || p >= count) return;
  glrecon::detail::RaySamples r;
  float result = 0.0f;
  if (rayOf(kViews[p], iu, iv, size, spacing, step, r)) {
    // +0.5: texel centres; with one sample per plane the main axis's coordinate is a centre exactly, so the texture
    // unit's trilinear fetch is a bilinear one there.
    const float x0 = r.first[0] + 0.5f, y0 = r.first[1] + (0.5f - static_cast<float>(firstRow)), z0 = r.first[2] + 0.5f;
    int k0 = 0, k1 = r.count;
    if (rows < size.y) glrecon::detail::samplesReachingRows(r, firstRow, firstRow + rows, &k0, &k1);
    float sum = 0.0f;
    if (kViews[p].layered) {
      const bool alongZ = kViews[p].mainAxis == 2;
      const cudaTextureObject_t layers = alongZ ? zLayers : xLayers;
      const float a0 = alongZ ? x0 : z0, da = alongZ ? r.delta[0] : r.delta[2];
      const int c0 = static_cast<int>(r.first[alongZ ? 2 : 0]), dc = r.delta[alongZ ? 2 : 0] > 0.0f ? 1 : -1;
#pragma unroll 4
      for (int k = k0; k < k1; ++k) {
        const float fk = static_cast<float>(k);
        sum += tex2DLayered<float>(layers, a0 + fk * da, y0 + fk * r.delta[1], c0 + k * dc);
      }
    } else {
#pragma unroll 4
      for (int k = k0; k < k1; ++k) {
        const float fk = static_cast<float>(k);
        sum += tex3D<float>(volume, x0 + fk * r.delta[0], y0 + fk * r.delta[1], z0 + fk * r.delta[2]);
      }
    }
    result = sum * r.length;
  }
  out[(static_cast<size_t>(p) * nv + iv) * nu + iu] = result;
}

// The block's x planes into the layers of `surface` (layer x: width nz, height rows), through 32 x 32 tiles of each
// x-z plane in shared memory: read along x, written along z.
__global__ void __launch_bounds__(256) fillXLayersKernel(const float* volume, int nx, int rows, int nz, cudaSurfaceObject_t surface) {
  __shared__ float tile[32][33];
  const int y = blockIdx.z, x0 = blockIdx.x * 32, z0 = blockIdx.y * 32;
  for (int d = threadIdx.y; d < 32; d += 8) {
    const int x = x0 + threadIdx.x, z = z0 + d;
    if (x < nx && z < nz) tile[d][threadIdx.x] = volume[(static_cast<size_t>(z) * rows + y) * nx + x];
  }
  __syncthreads();
  for (int d = threadIdx.y; d < 32; d += 8) {
    const int z = z0 + threadIdx.x, x = x0 + d;
    if (x < nx && z < nz) surf2DLayeredwrite(tile[threadIdx.x][d], surface, z * static_cast<int>(sizeof(float)), y, x);
  }
}

// The matched pair (ProjectorPair::Matched): the forward projection with trilinear weights in float, as the cpu
// backend computes them, not the texture unit's 8-bit ones, so that transposeKernel below is its exact transpose.
// The sample at continuous index (x, y, z), clamped to [-1, n] as the cpu's zero-bordered copy clamps it.
struct Corner {
  int i, j, k;
  float w[3][2];
};
__device__ Corner cornerOf(const glrecon::detail::RaySamples& r, int k, int3 size) {
  const float fk = static_cast<float>(k);
  const float x = fminf(fmaxf(r.first[0] + fk * r.delta[0], -1.0f), static_cast<float>(size.x));
  const float y = fminf(fmaxf(r.first[1] + fk * r.delta[1], -1.0f), static_cast<float>(size.y));
  const float z = fminf(fmaxf(r.first[2] + fk * r.delta[2], -1.0f), static_cast<float>(size.z));
  Corner c;
  c.i = static_cast<int>(floorf(x));
  c.j = static_cast<int>(floorf(y));
  c.k = static_cast<int>(floorf(z));
  const float f[3] = {x - static_cast<float>(c.i), y - static_cast<float>(c.j), z - static_cast<float>(c.k)};
  for (int a = 0; a < 3; ++a) {
    c.w[a][0] = 1.0f - f[a];
    c.w[a][1] = f[a];
  }
  return c;
}

// Where a block's voxel (x, y, z) (y counted from the block's first row) lives: x fastest (the operator's volume), or
// z fastest (its copy with x and z swapped). A view whose rays run along x reads and adds across y and z at each
// plane, and a warp's neighbouring rays are neighbouring z: with x fastest that is one cache line per ray (a voxel
// plane of 1 MiB apart at 512^2), with z fastest neighbouring floats. The arithmetic is the same either way.
// Index: unsigned where the block has fewer than 2^32 voxels (32-bit multiply-adds, where size_t's take several
// instructions each: measurable at 4 reads per sample), size_t otherwise.
template <class Index>
struct Layout {
  const float* base;
  Index sx, sy, sz;
  __device__ Index at(int x, int y, int z) const { return static_cast<Index>(x) * sx + static_cast<Index>(y) * sy + static_cast<Index>(z) * sz; }
};
template <class Index>
__device__ __forceinline__ Layout<Index> layoutFor(const DeviceView& o, const float* volume, const float* swapped, int3 size, int rows) {
  if (swapped && o.mainAxis == 0)
    return Layout<Index>{swapped, static_cast<Index>(rows) * size.z, static_cast<Index>(size.z), 1};
  return Layout<Index>{volume, 1, static_cast<Index>(size.x), static_cast<Index>(rows) * size.x};
}

template <class Index>
__global__ void forwardExactKernel(const float* volume, const float* swapped, int3 size, int firstRow, int rows, float3 spacing, float step,
                                   int nu, int nv, int count, float* out) {
  const int iu = blockIdx.x * blockDim.x + threadIdx.x, iv = blockIdx.y * blockDim.y + threadIdx.y, p = blockIdx.z;
  if (iu >= nu || iv >= nv || p >= count) return;
  const Layout<Index> layout = layoutFor<Index>(kViews[p], volume, swapped, size, rows);
  if (kViews[p].planeGather) {
    const glrecon::detail::PlaneView view = kViews[p].plane;  // (a copy: into registers once, not generic loads per use)
    const auto voxel = [&](int x, int y, int z) { return layout.base[layout.at(x, y - firstRow, z)]; };
    out[(static_cast<size_t>(p) * nv + iv) * nu + iu] =
        kViews[p].distanceDriven ? glrecon::detail::ddForward(view, iu, iv, size.x, size.z, firstRow, firstRow + rows, voxel)
                                 : glrecon::detail::planeForward(view, iu, iv, size.x, size.z, firstRow, firstRow + rows, voxel);
    return;
  }
  glrecon::detail::RaySamples r;
  float result = 0.0f;
  if (rayOf(kViews[p], iu, iv, size, spacing, step, r)) {
    int k0 = 0, k1 = r.count;
    if (rows < size.y) glrecon::detail::samplesReachingRows(r, firstRow, firstRow + rows, &k0, &k1);
    float sum = 0.0f;
    for (int k = k0; k < k1; ++k) {
      const Corner c = cornerOf(r, k, size);
      float value = 0.0f;
      // Corners of weight 0 skipped (on its plane a sample's main-axis weights are 1 and 0: half the corners), here and
      // in transposeKernel alike, so the pair stays exact (a term v 0 adds nothing).
      for (int dz = 0; dz < 2; ++dz)
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) {
            if (c.w[2][dz] == 0.0f || c.w[1][dy] == 0.0f || c.w[0][dx] == 0.0f) continue;
            const int x = c.i + dx, y = c.j + dy - firstRow, z = c.k + dz;
            if (x < 0 || y < 0 || z < 0 || x >= size.x || y >= rows || z >= size.z) continue;
            value += layout.base[layout.at(x, y, z)] * (c.w[1][dy] * c.w[2][dz] * c.w[0][dx]);
          }
      sum += value;
    }
    result = sum * r.length;
  }
  out[(static_cast<size_t>(p) * nv + iv) * nu + iu] = result;
}

// volume += A^T projections for forwardExactKernel's A: each ray's samples spread their value times the step over
// the voxels they read, with the same weights (atomic adds: the order of the sums, and so their last bits, vary).
// Views along x add into `swapped` (Layout), which the caller adds to the volume.
__global__ void transposeKernel(const float* projections, int3 size, int firstRow, int rows, float3 spacing, float step, int nu, int nv,
                                int count, float* volume, float* swapped) {
  const int iu = blockIdx.x * blockDim.x + threadIdx.x, iv = blockIdx.y * blockDim.y + threadIdx.y, p = blockIdx.z;
  if (iu >= nu || iv >= nv || p >= count) return;
  const float value = projections[(static_cast<size_t>(p) * nv + iv) * nu + iu];
  if (value == 0.0f || kViews[p].planeGather) return;  // (plane form: planeGatherKernel)
  glrecon::detail::RaySamples r;
  if (!rayOf(kViews[p], iu, iv, size, spacing, step, r)) return;
  const Layout<size_t> layout = layoutFor<size_t>(kViews[p], volume, swapped, size, rows);
  float* target = const_cast<float*>(layout.base);
  const float w = value * r.length;
  int k0 = 0, k1 = r.count;
  if (rows < size.y) glrecon::detail::samplesReachingRows(r, firstRow, firstRow + rows, &k0, &k1);
  for (int k = k0; k < k1; ++k) {
    const Corner c = cornerOf(r, k, size);
    for (int dz = 0; dz < 2; ++dz)
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          if (c.w[2][dz] == 0.0f || c.w[1][dy] == 0.0f || c.w[0][dx] == 0.0f) continue;
          const int x = c.i + dx, y = c.j + dy - firstRow, z = c.k + dz;
          if (x < 0 || y < 0 || z < 0 || x >= size.x || y >= rows || z >= size.z) continue;
          atomicAdd(target + layout.at(x, y, z), w * c.w[1][dy] * c.w[2][dz] * c.w[0][dx]);
        }
  }
}

// Each pixel of the views in plane form times its ray's length (planeWeighted), in place before planeGatherKernel.
__global__ void planeWeightKernel(float* projections, int nu, int nv, int count) {
  const int u = blockIdx.x * blockDim.x + threadIdx.x, v = blockIdx.y * blockDim.y + threadIdx.y, p = blockIdx.z;
  if (u >= nu || v >= nv || p >= count || !kViews[p].planeGather) return;
  float& value = projections[(static_cast<size_t>(p) * nv + v) * nu + u];
  value = glrecon::detail::planeWeighted(kViews[p].plane, u, v, value);
}

// The transpose of the views in plane form (plane_gather.h), as a gather: one thread per (x, z) and a run of
// kGatherRun rows of the block (rows of `size.y` from the grid's firstRow), every view's weighted pixels that reach them
// summed and added once. The run's sums live in shared memory, [row][thread], so that a pixel's row picked at run time
// indexes them (registers cannot be; selecting among 8 cost 40 instructions per pixel) without bank conflicts. A warp
// covers 32 neighbouring x: coalesced stores.
constexpr int kGatherRun = 8, kGatherThreads = 128;
template <bool DistanceDriven>
__global__ void __launch_bounds__(kGatherThreads) planeGatherKernel(const float* projections, int3 size, int firstRow, int nu, int nv,
                                                                   int count, float* volume) {
  __shared__ float sums[kGatherRun][kGatherThreads];
  const int thread = threadIdx.y * blockDim.x + threadIdx.x;
  const int i = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y * blockDim.y + threadIdx.y, j0 = blockIdx.z * kGatherRun;
#pragma unroll
  for (int r = 0; r < kGatherRun; ++r) sums[r][thread] = 0.0f;
  if (i >= size.x || k >= size.z) return;  // (no barrier below: each thread reads its own sums only)
  const auto add = [&](int r, float x) { sums[r][thread] += x; };
  for (int p = 0; p < count; ++p) {
    if (!kViews[p].planeGather) continue;
    const glrecon::detail::PlaneView view = kViews[p].plane;
    const float* projection = projections + static_cast<size_t>(p) * nv * nu;
    const auto pixel = [&](int u, int v) { return projection[v * nu + u]; };  // (a view's pixels: fewer than 2^31)
    const int plane = view.m == 0 ? i : k, across = view.m == 0 ? k : i;
    if (DistanceDriven)
      glrecon::detail::ddGather<kGatherRun>(view, nu, nv, plane, across, firstRow + j0, pixel, add);
    else
      glrecon::detail::planeGather<kGatherRun>(view, nu, nv, plane, across, firstRow + j0, pixel, add);
  }
#pragma unroll
  for (int r = 0; r < kGatherRun; ++r) {
    const int j = j0 + r;
    if (j >= size.y) break;
    volume[(static_cast<size_t>(k) * size.y + j) * size.x + i] += sums[r][thread];
  }
}

// x and z swapped between a block of nx x rows x nz (x fastest) and its copy (z fastest), through 32 x 32 tiles of
// each x-z plane in shared memory so that both sides are read and written a cache line at a time. `toSwapped`: from
// the volume into the copy (stored); otherwise the copy added into the volume.
__global__ void __launch_bounds__(256) swapXZKernel(float* volume, float* swapped, int nx, int rows, int nz, bool toSwapped) {
  __shared__ float tile[32][33];
  const int y = blockIdx.z, x0 = blockIdx.x * 32, z0 = blockIdx.y * 32;
  const size_t plane = static_cast<size_t>(rows);
  if (toSwapped) {
    for (int d = threadIdx.y; d < 32; d += 8) {
      const int x = x0 + threadIdx.x, z = z0 + d;
      if (x < nx && z < nz) tile[d][threadIdx.x] = volume[(z * plane + y) * nx + x];
    }
    __syncthreads();
    for (int d = threadIdx.y; d < 32; d += 8) {
      const int z = z0 + threadIdx.x, x = x0 + d;
      if (x < nx && z < nz) swapped[(x * plane + y) * nz + z] = tile[threadIdx.x][d];
    }
  } else {
    for (int d = threadIdx.y; d < 32; d += 8) {
      const int z = z0 + threadIdx.x, x = x0 + d;
      if (x < nx && z < nz) tile[threadIdx.x][d] = swapped[(x * plane + y) * nz + z];
    }
    __syncthreads();
    for (int d = threadIdx.y; d < 32; d += 8) {
      const int x = x0 + threadIdx.x, z = z0 + d;
      if (x < nx && z < nz) volume[(z * plane + y) * nx + x] += tile[d][threadIdx.x];
    }
  }
}

// `size`: the block's (nx, rows, nz), its rows from firstRow of the grid on.
__global__ void backKernel(cudaTextureObject_t projections, int3 size, int firstRow, float3 spacing, int count, bool accumulate, float* volume) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y, k = blockIdx.z;
  if (i >= size.x || j >= size.y || k >= size.z) return;
  const float x[3] = {static_cast<float>(i), static_cast<float>(firstRow + j), static_cast<float>(k)};
  float sum = 0.0f;
  for (int p = 0; p < count; ++p) {
    const DeviceView& o = kViews[p];
    const float h0 = o.rows[0].x * x[0] + o.rows[0].y * x[1] + o.rows[0].z * x[2] + o.rows[0].w;
    const float h1 = o.rows[1].x * x[0] + o.rows[1].y * x[1] + o.rows[1].z * x[2] + o.rows[1].w;
    const float h2 = o.rows[2].x * x[0] + o.rows[2].y * x[1] + o.rows[2].z * x[2] + o.rows[2].w;
    const float value = tex2DLayered<float>(projections, h0 / h2 + 0.5f, h1 / h2 + 0.5f, p);
    if (o.parallel) {
      sum += value * o.weight;
      continue;
    }
    const float rx = (x[0] - o.sourceIndex[0]) * spacing.x, ry = (x[1] - o.sourceIndex[1]) * spacing.y,
                rz = (x[2] - o.sourceIndex[2]) * spacing.z;
    const float distance = sqrtf(rx * rx + ry * ry + rz * rz);
    const float depth = rx * o.normal.x + ry * o.normal.y + rz * o.normal.z;
    sum += value * (o.weight * distance / (depth * depth * depth));
  }
  const size_t index = (static_cast<size_t>(k) * size.y + j) * size.x + i;
  volume[index] = accumulate ? volume[index] + sum : sum;
}

// backKernel for views whose u, depth and divisor do not change along y (RTK's gantry about y, untilted detectors):
// one thread per (x, z) and a run of kBackRun consecutive y voxels, as the Fdk kernel's runs. Per view the thread
// reads the constants once and computes u, 1/w, the depth and its cube once; per voxel v is one multiply-add, the
// weight's distance one square root. A warp covers 32 neighbouring x: coalesced stores, neighbouring fetches.
// Measured before it: the voxel-per-thread kernel at about 110 G updates/s on an H200 (256^3 from 360 views).
constexpr int kBackRun = 8;
__global__ void __launch_bounds__(128) backRunsKernel(cudaTextureObject_t projections, int3 size, int firstRow, float3 spacing, int count,
                                                      bool accumulate, float* volume) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, k = blockIdx.y * blockDim.y + threadIdx.y, j0 = blockIdx.z * kBackRun;
  if (i >= size.x || k >= size.z) return;
  const float fi = static_cast<float>(i), fk = static_cast<float>(k), fj0 = static_cast<float>(firstRow + j0);
  float sum[kBackRun];
#pragma unroll
  for (int r = 0; r < kBackRun; ++r) sum[r] = 0.0f;
  for (int p = 0; p < count; ++p) {
    const DeviceView& o = kViews[p];
    const float invW = 1.0f / (o.rows[2].x * fi + o.rows[2].z * fk + o.rows[2].w);
    const float u = (o.rows[0].x * fi + o.rows[0].z * fk + o.rows[0].w) * invW + 0.5f;
    const float v0 = (o.rows[1].x * fi + o.rows[1].y * fj0 + o.rows[1].z * fk + o.rows[1].w) * invW + 0.5f, vStep = o.rows[1].y * invW;
    const float rx = (fi - o.sourceIndex[0]) * spacing.x, rz = (fk - o.sourceIndex[2]) * spacing.z;
    const float depth = rx * o.normal.x + rz * o.normal.z;
    const float scale = o.weight / (depth * depth * depth), across = rx * rx + rz * rz;
    if (o.parallel) {  // parallel beam: the weight alone
#pragma unroll
      for (int r = 0; r < kBackRun; ++r) sum[r] += tex2DLayered<float>(projections, u, v0 + static_cast<float>(r) * vStep, p) * o.weight;
      continue;
    }
#pragma unroll
    for (int r = 0; r < kBackRun; ++r) {
      const float ry = (fj0 + static_cast<float>(r) - o.sourceIndex[1]) * spacing.y;
      sum[r] += tex2DLayered<float>(projections, u, v0 + static_cast<float>(r) * vStep, p) * (scale * sqrtf(across + ry * ry));
    }
  }
#pragma unroll
  for (int r = 0; r < kBackRun; ++r) {
    const int j = j0 + r;
    if (j >= size.y) break;
    const size_t index = (static_cast<size_t>(k) * size.y + j) * size.x + i;
    volume[index] = accumulate ? volume[index] + sum[r] : sum[r];
  }
}

__global__ void __launch_bounds__(256) correctionKernel(const float* projected, const float* data, const float* lengths,
                                                        const int* viewIndex, int count, size_t pixels, float floor,
                                                        bool multiplicative, float* correction, double* partials) {
  double sum = 0.0;
  const size_t n = static_cast<size_t>(count) * pixels;
  for (size_t e = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t i = e / pixels, k = e % pixels;
    const size_t at = static_cast<size_t>(viewIndex[i]) * pixels + k;
    const float b = data[at], length = lengths[at], ax = projected[e];
    const float residual = b - ax;
    sum += static_cast<double>(residual) * residual;
    correction[e] = multiplicative ? ((length > floor && ax > 0.0f) ? b / ax : 0.0f) : (length > floor ? residual / length : 0.0f);
  }
  storeBlockSum(sum, partials);
}

// The largest of n non-negative floats (B_S 1): positive floats' bit patterns order as the values do, so an integer
// atomicMax over them is exact. *result starts at 0.
__global__ void maxKernel(const float* values, size_t n, int* result) {
  int best = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (values[i] > 0.0f) best = max(best, __float_as_int(values[i]));  // (never -0.0, whose sign bit would win)
  for (int offset = 16; offset > 0; offset /= 2) best = max(best, __shfl_down_sync(0xffffffffu, best, offset));
  if ((threadIdx.x & 31) == 0) atomicMax(result, best);
}

// applySubsetRule (src/operators/operator.cpp) on the device, in the same float operations (no fused multiply-adds), so
// the iterate equals the host path's for the same B_S(c) and B_S(1).
__global__ void subsetUpdateKernel(float* x, const float* update, const float* weights, const unsigned char* mask, size_t n,
                                   float floor, bool multiplicative, float lambda, bool positivity) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if ((mask && !mask[i]) || !(weights[i] > floor)) continue;
    if (multiplicative) {
      x[i] = __fmul_rn(x[i], __fdiv_rn(update[i], weights[i]));
    } else {
      float value = __fadd_rn(x[i], __fdiv_rn(__fmul_rn(lambda, update[i]), weights[i]));
      if (positivity && value < 0.0f) value = 0.0f;
      x[i] = value;
    }
  }
}

// OperatorVectors on the device, in the host implementation's operations (iterative.cpp's HostVectors): the products
// in double, explicitly rounded (no fused multiply-add), then to float.
__global__ void axpyKernel(double a, const float* x, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = __fadd_rn(y[i], static_cast<float>(__dmul_rn(a, static_cast<double>(x[i]))));
}

__global__ void xpayKernel(const float* x, double b, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    y[i] = static_cast<float>(__dadd_rn(static_cast<double>(x[i]), __dmul_rn(b, static_cast<double>(y[i]))));
}

__global__ void maskKernel(float* x, const unsigned char* mask, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (!mask[i]) x[i] = 0.0f;
}

__global__ void __launch_bounds__(256) dotKernel(const float* a, const float* b, size_t n, double* partials) {
  double sum = 0.0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  storeBlockSum(sum, partials);
}

}  // namespace

bool uploadRayViews(const glrecon::detail::ProjectorView* const* views, const unsigned char* modes, const float spacing[3], int n) {
  DeviceView host[kMaxRayViews];
  bool yInvariant = true;
  for (int p = 0; p < n; ++p) {
    const glrecon::detail::ProjectorView& o = *views[p];
    for (int a = 0; a < 3; ++a) {
      host[p].sourceIndex[a] = o.sourceIndex[a];
      host[p].e0[a] = o.e0[a];
      host[p].eu[a] = o.eu[a];
      host[p].ev[a] = o.ev[a];
    }
    host[p].mainAxis = o.mainAxis;
    host[p].parallel = o.parallel;
    host[p].planeGather = modes && (modes[p] & kPlaneGather) ? 1 : 0;
    host[p].layered = modes && (modes[p] & kLayered) ? 1 : 0;
    host[p].distanceDriven = modes && (modes[p] & kDistanceDriven) ? 1 : 0;
    if (host[p].planeGather) host[p].plane = glrecon::detail::planeViewOf(o, spacing);
    host[p].normal = make_float3(o.normal[0], o.normal[1], o.normal[2]);
    host[p].weight = o.weight;
    for (int r = 0; r < 3; ++r) host[p].rows[r] = make_float4(o.matrix[r][0], o.matrix[r][1], o.matrix[r][2], o.matrix[r][3]);
    yInvariant = yInvariant && o.matrix[0][1] == 0.0f && o.matrix[2][1] == 0.0f && o.normal[1] == 0.0f;
  }
  // Synchronous: the previous kernel has finished reading the constants before they change.
  GLRECON_CUDA(cudaMemcpyToSymbol(kViews, host, sizeof(DeviceView) * n));
  return yInvariant;
}

void launchForward(cudaTextureObject_t volume, cudaTextureObject_t zLayers, cudaTextureObject_t xLayers, int3 size, int firstRow, int rows,
                   float3 spacing, float step, int nu, int nv, int count, float* out) {
  const dim3 block(16, 16, 1), blocks((nu + 15) / 16, (nv + 15) / 16, count);
  forwardKernel<<<blocks, block>>>(volume, zLayers, xLayers, size, firstRow, rows, spacing, step, nu, nv, count, out);
  GLRECON_CUDA(cudaGetLastError());
}

void launchForwardExact(const float* volume, const float* swapped, int3 size, int firstRow, int rows, float3 spacing, float step, int nu,
                        int nv, int count, float* out) {
  // Warps of 32 rays along u: neighbouring voxels along the layout's fastest axis (Layout).
  const dim3 block(32, 8, 1), blocks((nu + 31) / 32, (nv + 7) / 8, count);
  if (static_cast<size_t>(size.x) * rows * size.z < (size_t{1} << 32))
    forwardExactKernel<unsigned><<<blocks, block>>>(volume, swapped, size, firstRow, rows, spacing, step, nu, nv, count, out);
  else
    forwardExactKernel<size_t><<<blocks, block>>>(volume, swapped, size, firstRow, rows, spacing, step, nu, nv, count, out);
  GLRECON_CUDA(cudaGetLastError());
}

void launchTransposeBack(const float* projections, int3 size, int firstRow, int rows, float3 spacing, float step, int nu, int nv, int count,
                         float* volume, float* swapped) {
  const dim3 block(32, 8, 1), blocks((nu + 31) / 32, (nv + 7) / 8, count);
  transposeKernel<<<blocks, block>>>(projections, size, firstRow, rows, spacing, step, nu, nv, count, volume, swapped);
  GLRECON_CUDA(cudaGetLastError());
}

void launchPlaneGather(float* projections, int3 size, int firstRow, int rows, int nu, int nv, int count, bool distanceDriven, float* volume) {
  const dim3 weighBlock(32, 8, 1), weighBlocks((nu + 31) / 32, (nv + 7) / 8, count);
  planeWeightKernel<<<weighBlocks, weighBlock>>>(projections, nu, nv, count);
  GLRECON_CUDA(cudaGetLastError());
  const dim3 block(32, kGatherThreads / 32, 1), blocks((size.x + 31) / 32, (size.z + block.y - 1) / block.y, (rows + kGatherRun - 1) / kGatherRun);
  if (distanceDriven)
    planeGatherKernel<true><<<blocks, block>>>(projections, make_int3(size.x, rows, size.z), firstRow, nu, nv, count, volume);
  else
    planeGatherKernel<false><<<blocks, block>>>(projections, make_int3(size.x, rows, size.z), firstRow, nu, nv, count, volume);
  GLRECON_CUDA(cudaGetLastError());
}

void launchFillXLayers(const float* volume, int nx, int rows, int nz, cudaSurfaceObject_t surface) {
  const dim3 block(32, 8, 1), blocks((nx + 31) / 32, (nz + 31) / 32, rows);
  fillXLayersKernel<<<blocks, block>>>(volume, nx, rows, nz, surface);
  GLRECON_CUDA(cudaGetLastError());
}

void launchSwapXZ(float* volume, float* swapped, int nx, int rows, int nz, bool toSwapped) {
  const dim3 block(32, 8, 1), blocks((nx + 31) / 32, (nz + 31) / 32, rows);
  swapXZKernel<<<blocks, block>>>(volume, swapped, nx, rows, nz, toSwapped);
  GLRECON_CUDA(cudaGetLastError());
}

void launchAdjointBack(cudaTextureObject_t projections, int3 size, int firstRow, float3 spacing, int count, bool accumulate, bool yInvariant,
                       float* volume) {
  if (yInvariant) {
    const dim3 block(32, 4, 1), blocks((size.x + 31) / 32, (size.z + 3) / 4, (size.y + kBackRun - 1) / kBackRun);
    backRunsKernel<<<blocks, block>>>(projections, size, firstRow, spacing, count, accumulate, volume);
  } else {
    const dim3 block(16, 16, 1), blocks((size.x + 15) / 16, (size.y + 15) / 16, size.z);
    backKernel<<<blocks, block>>>(projections, size, firstRow, spacing, count, accumulate, volume);
  }
  GLRECON_CUDA(cudaGetLastError());
}

void launchCorrection(const float* projected, const float* data, const float* lengths, const int* viewIndex, int count, std::size_t pixels,
                      float floor, bool multiplicative, float* correction, double* partials) {
  correctionKernel<<<kCorrectionBlocks, 256>>>(projected, data, lengths, viewIndex, count, pixels, floor, multiplicative, correction, partials);
  GLRECON_CUDA(cudaGetLastError());
}

void launchMaxWeight(const float* values, std::size_t n, int* result) {
  maxKernel<<<1024, 256>>>(values, n, result);
  GLRECON_CUDA(cudaGetLastError());
}

void launchSubsetUpdate(float* x, const float* update, const float* weights, const unsigned char* mask, std::size_t n, float floor,
                        bool multiplicative, float lambda, bool positivity) {
  subsetUpdateKernel<<<1024, 256>>>(x, update, weights, mask, n, floor, multiplicative, lambda, positivity);
  GLRECON_CUDA(cudaGetLastError());
}

void launchAxpy(double a, const float* x, float* y, std::size_t n) {
  axpyKernel<<<1024, 256>>>(a, x, y, n);
  GLRECON_CUDA(cudaGetLastError());
}

void launchXpay(const float* x, double b, float* y, std::size_t n) {
  xpayKernel<<<1024, 256>>>(x, b, y, n);
  GLRECON_CUDA(cudaGetLastError());
}

void launchMask(float* x, const unsigned char* mask, std::size_t n) {
  maskKernel<<<1024, 256>>>(x, mask, n);
  GLRECON_CUDA(cudaGetLastError());
}

void launchDot(const float* a, const float* b, std::size_t n, double* partials) {
  dotKernel<<<kCorrectionBlocks, 256>>>(a, b, n, partials);
  GLRECON_CUDA(cudaGetLastError());
}

}  // namespace glrecon::cuda
