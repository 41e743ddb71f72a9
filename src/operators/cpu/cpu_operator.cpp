// The CPU operator: the reference every GPU backend is held to, and the fallback without a GPU. Fdk back is voxel
// driven over x-rows (AVX2 where the CPU has it, with the scalar path's rounding); forward and Adjoint back follow the
// shaders step for step in float (shaders/project_common.glsl), so backends differ only by rounding and the texture
// units' interpolation.
#include "operators/cpu/cpu_operator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "glrecon/errors.h"
#include "glrecon/parallel.h"
#include "glrecon/slab.h"
#include "operators/plane_gather.h"
#include "operators/ray_march.h"

namespace glrecon {
namespace {

struct RowCoefficients {
  float u0, v0, w0, du, dv, dw;
};

// One voxel of a row: the arithmetic every path below shares, operation for operation, so the AVX2 path
// gives the same bits as this one.
inline float voxelUpdate(const RowCoefficients& c, float fi, const float* q, int pitch, float maxU, float maxV) {
  const float invW = 1.0f / (c.w0 + fi * c.dw);
  // Clamped to [-1, n]: there the zero border gives exactly the "0 outside the detector" of bilinear
  // sampling. After the shift by +1 the value is >= 0, so truncation is floor (std::floor would be a
  // libm call on baseline x86-64).
  // The clamps are written as _mm256_max_ps/_mm256_min_ps behave: a NaN (w = 0, or overflowed coordinates)
  // becomes -1, never an index. std::max would pass the NaN on to the int conversion (undefined, an
  // out-of-bounds read: it crashed on absurd geometries).
  const float ru = (c.u0 + fi * c.du) * invW, rv = (c.v0 + fi * c.dv) * invW;
  const float cu = ru > -1.0f ? ru : -1.0f, cv = rv > -1.0f ? rv : -1.0f;
  const float u = (cu < maxU ? cu : maxU) + 1.0f;
  const float v = (cv < maxV ? cv : maxV) + 1.0f;
  const int iu = static_cast<int>(u), iv = static_cast<int>(v);
  const float au = u - static_cast<float>(iu), av = v - static_cast<float>(iv);
  const float* p = q + (iv - 1) * pitch + (iu - 1);
  const float top = p[0] + au * (p[1] - p[0]);
  const float bottom = p[pitch] + au * (p[pitch + 1] - p[pitch]);
  return invW * invW * (top + av * (bottom - top));
}

// Adds one projection to one x-row of voxels (portable path).
void accumulateRowScalar(float* __restrict out, int begin, int end, const RowCoefficients& c, const float* __restrict q,
                         int pitch, int nu, int nv) {
  const float maxU = static_cast<float>(nu), maxV = static_cast<float>(nv);
  for (int i = begin; i < end; ++i) out[i] += voxelUpdate(c, static_cast<float>(i), q, pitch, maxU, maxV);
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same arithmetic on 8 voxels at once with AVX2 gathers; separate multiply and add (no FMA) keep the
// rounding identical to voxelUpdate, so results do not depend on the CPU.
__attribute__((target("avx2"))) void accumulateRowAvx2(float* __restrict out, int begin, int end, const RowCoefficients& c,
                                                         const float* __restrict q, int pitch, int nu, int nv) {
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 u0 = _mm256_set1_ps(c.u0), v0 = _mm256_set1_ps(c.v0), w0 = _mm256_set1_ps(c.w0);
  const __m256 du = _mm256_set1_ps(c.du), dv = _mm256_set1_ps(c.dv), dw = _mm256_set1_ps(c.dw);
  const __m256 one = _mm256_set1_ps(1.0f), minusOne = _mm256_set1_ps(-1.0f);
  const __m256 maxU = _mm256_set1_ps(static_cast<float>(nu)), maxV = _mm256_set1_ps(static_cast<float>(nv));
  const __m256i vpitch = _mm256_set1_epi32(pitch), offset = _mm256_set1_epi32(pitch + 1);
  const float* base = q;
  int i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256 fi = _mm256_add_ps(_mm256_set1_ps(static_cast<float>(i)), lane);
    const __m256 invW = _mm256_div_ps(one, _mm256_add_ps(w0, _mm256_mul_ps(fi, dw)));
    const __m256 u = _mm256_add_ps(
        _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_add_ps(u0, _mm256_mul_ps(fi, du)), invW), minusOne), maxU), one);
    const __m256 v = _mm256_add_ps(
        _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_add_ps(v0, _mm256_mul_ps(fi, dv)), invW), minusOne), maxV), one);
    const __m256i iu = _mm256_cvttps_epi32(u), iv = _mm256_cvttps_epi32(v);
    const __m256 au = _mm256_sub_ps(u, _mm256_cvtepi32_ps(iu)), av = _mm256_sub_ps(v, _mm256_cvtepi32_ps(iv));
    // Index of p[0] relative to q: (iv - 1) * pitch + (iu - 1).
    const __m256i index = _mm256_sub_epi32(_mm256_add_epi32(_mm256_mullo_epi32(iv, vpitch), iu), offset);
    // Horizontal neighbours are adjacent floats: fetch each pair as one 64-bit element, 4 voxels per
    // gather. Gathering voxels {0,1,4,5} into a and {2,3,6,7} into b makes the even/odd shuffles below come
    // out in voxel order. Half the gathered elements of 8-wide float gathers, 1.3x faster on this machine.
    const __m256i order = _mm256_permutevar8x32_epi32(index, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
    const __m128i ia = _mm256_castsi256_si128(order), ib = _mm256_extracti128_si256(order, 1);
    const auto* row0 = reinterpret_cast<const long long*>(base);
    const auto* row1 = reinterpret_cast<const long long*>(base + pitch);
    const __m256 a0 = _mm256_castsi256_ps(_mm256_i32gather_epi64(row0, ia, 4));
    const __m256 b0 = _mm256_castsi256_ps(_mm256_i32gather_epi64(row0, ib, 4));
    const __m256 a1 = _mm256_castsi256_ps(_mm256_i32gather_epi64(row1, ia, 4));
    const __m256 b1 = _mm256_castsi256_ps(_mm256_i32gather_epi64(row1, ib, 4));
    const __m256 p00 = _mm256_shuffle_ps(a0, b0, 0x88), p01 = _mm256_shuffle_ps(a0, b0, 0xDD);
    const __m256 p10 = _mm256_shuffle_ps(a1, b1, 0x88), p11 = _mm256_shuffle_ps(a1, b1, 0xDD);
    const __m256 top = _mm256_add_ps(p00, _mm256_mul_ps(au, _mm256_sub_ps(p01, p00)));
    const __m256 bottom = _mm256_add_ps(p10, _mm256_mul_ps(au, _mm256_sub_ps(p11, p10)));
    const __m256 sample = _mm256_add_ps(top, _mm256_mul_ps(av, _mm256_sub_ps(bottom, top)));
    const __m256 update = _mm256_mul_ps(_mm256_mul_ps(invW, invW), sample);
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(out + i), update));
  }
  const float fu = static_cast<float>(nu), fv = static_cast<float>(nv);
  for (; i < end; ++i) out[i] += voxelUpdate(c, static_cast<float>(i), q, pitch, fu, fv);
}

bool haveAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#endif

// Voxels [begin, end) of a row; each voxel's arithmetic depends only on its own index, so a voxel gets the
// same bits whatever span it is computed in (what makes region results bit-identical).
void accumulateRow(float* out, int begin, int end, const RowCoefficients& c, const float* q, int pitch, int nu, int nv) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (haveAvx2()) return accumulateRowAvx2(out, begin, end, c, q, pitch, nu, nv);
#endif
  accumulateRowScalar(out, begin, end, c, q, pitch, nu, nv);
}

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

// samplesReachingRows (ray_march.h) as a pair.
std::pair<int, int> samplesReachingRows(const detail::RaySamples& ray, int y0, int y1) {
  std::pair<int, int> range;
  detail::samplesReachingRows(ray, y0, y1, &range.first, &range.second);
  return range;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

CpuOperator::CpuOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options)
    : ConeBeamOperator(Backend::Cpu, geometry, grid, options),
      threads_(resolveThreadCount(options.threads)),
      nu_(geometry.detector.nu),
      nv_(geometry.detector.nv),
      volume_(blockGrid()),
      views_(detail::projectorViews(geometry, grid)) {}

void CpuOperator::moveBlock(int firstRow, int rows) {
  if (killed_) throw UsageError("moveBlock: not after a density-range kill");
  setBlock(firstRow, rows);
  volume_ = Image(blockGrid());
  active_.clear();
  spans_.clear();
  rowPartial_.clear();
  updatesSkipped_ = updatesTotal_ = 0;
}

void CpuOperator::reset() {
  // The kill shrank the active set from this scan's values: it cannot carry over to the next one.
  if (killed_) throw UsageError("reset: not after a density-range kill (make a new operator)");
  std::fill(volume_.data.begin(), volume_.data.end(), 0.0f);
  updatesSkipped_ = updatesTotal_ = 0;
  timings_ = {};
}

void CpuOperator::setVolume(const float* voxels) { std::copy_n(voxels, volume_.data.size(), volume_.data.begin()); }

void CpuOperator::readVolume(float* destination) {
  const auto start = std::chrono::steady_clock::now();
  // Page-sized pieces on all threads: the destination may be untouched memory (a mapped output file).
  const float* from = volume_.data.data();
  parallelFor(volume_.data.size(), std::size_t{1} << 18, threads_,
              [&](std::size_t b, std::size_t e) { std::copy(from + b, from + e, destination + b); });
  timings_.readback += since(start);
}

bool CpuOperator::readBlockInto(float* volume, const std::array<int, 3>& volumeSize, int volumeFirstRow) {
  checkHoldsBlock(volumeSize, volumeFirstRow);
  const auto start = std::chrono::steady_clock::now();
  moveSlabRows(volumeSize, volumeFirstRow, volume_.size[1], volume_.data.data(), volume, /*toBlock=*/false);
  timings_.readback += since(start);
  return true;
}

void CpuOperator::back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) {
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry_.size()) throw std::out_of_range("back: view index beyond the geometry");
  if (weighting == Weighting::Fdk) return fdkBack(projections, views, count);
  const auto start = std::chrono::steady_clock::now();
  pairBack(projections, views, count, volume_.data.data());
  timings_.back += since(start);
}

void CpuOperator::setUpdateMask(const std::uint8_t* mask) { mask_ = mask; }

void CpuOperator::updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                               const float* cachedWeights) {
  const auto start = std::chrono::steady_clock::now();
  const std::size_t voxels = volume_.data.size();
  update_.assign(voxels, 0.0f);
  pairBack(correction, views, count, update_.data());
  const float* weights = cachedWeights;
  if (!weights) {
    // B_S(1): a correction of ones over the subset's projections.
    weights_.assign(voxels, 0.0f);
    ones_.resize(std::max(ones_.size(), count * static_cast<std::size_t>(nu_) * nv_), 1.0f);
    pairBack(ones_.data(), views, count, weights_.data());
    weights = weights_.data();
  }
  applySubsetRule(volume_.data.data(), update_.data(), weights, mask_, voxels, count, rule);
  timings_.back += since(start);
}

// A block of rows (OperatorOptions::blockRows, moveBlock) projects as the whole grid with zeros outside the block:
// every ray is marched over the whole grid's box, as the whole grid marches it (the same samples), and only the samples
// whose trilinear footprint reaches the block's rows are taken (a skipped sample adds exactly 0), so the blocks' sums
// add up to the whole grid's projection up to the order of the additions (the split operator, glrecon/split.h).
void CpuOperator::forward(const std::size_t* views, std::size_t count, float* projections) {
  if (options_.pair == ProjectorPair::DistanceDriven) return distanceDrivenForward(views, count, projections);
  const auto start = std::chrono::steady_clock::now();
  const PaddedVolume padded(volume_.data.data(), volume_.size);
  const float step = static_cast<float>(step_);
  const detail::FloatSpacing sp(grid_);
  const float hi[3] = {static_cast<float>(grid_.size[0]), static_cast<float>(grid_.size[1]), static_cast<float>(grid_.size[2])};
  const bool block = holdsPartOfGrid();
  const float firstRow = static_cast<float>(this->firstRow());
  const int y0 = this->firstRow(), y1 = y0 + rows();
  std::vector<double> samples(count * nv_, 0.0);
  parallelFor(count * nv_, 4, threads_, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const std::size_t p = row / nv_;
      const int iv = static_cast<int>(row % nv_);
      const detail::ProjectorView& o = views_[views[p]];
      float* out = projections + row * nu_;
      double taken = 0;
      for (int iu = 0; iu < nu_; ++iu) {
        detail::RaySamples ray;
        float sum = 0.0f;
        if (detail::marchRay(o, static_cast<float>(iu), static_cast<float>(iv), sp, hi, step, ray)) {
          int k0 = 0, k1 = ray.count;
          if (block) std::tie(k0, k1) = samplesReachingRows(ray, y0, y1);
          for (int k = k0; k < k1; ++k) {
            const float fk = static_cast<float>(k);
            sum += padded.sample(ray.first[0] + fk * ray.delta[0], ray.first[1] + fk * ray.delta[1] - firstRow, ray.first[2] + fk * ray.delta[2]);
          }
          sum *= ray.length;
          taken += k1 > k0 ? k1 - k0 : 0;
        }
        out[iu] = sum;
      }
      samples[row] = taken;
    }
  });
  for (double s : samples) timings_.samples += s;
  timings_.forward += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CpuOperator::distanceDrivenForward(const std::size_t* views, std::size_t count, float* projections) {
  const auto start = std::chrono::steady_clock::now();
  const detail::FloatSpacing h(grid_);
  const int nx = grid_.size[0], nz = grid_.size[2], y0 = firstRow(), y1 = y0 + rows();
  const float* volume = volume_.data.data();
  const std::size_t sy = static_cast<std::size_t>(nx), sz = sy * rows();
  const auto voxel = [&](int x, int y, int z) { return volume[z * sz + (y - y0) * sy + x]; };
  parallelFor(count * nv_, 4, threads_, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const detail::PlaneView view = detail::planeViewOf(views_[views[row / nv_]], h);
      const int iv = static_cast<int>(row % nv_);
      for (int iu = 0; iu < nu_; ++iu) projections[row * nu_ + iu] = detail::ddForward(view, iu, iv, nx, nz, y0, y1, voxel);
    }
  });
  timings_.forward += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// volume += A^T projections for the distance-driven pair: per batch of up to kDdBatch views (a batch's weighed copy,
// not every projection's: 2048^2 pixels are 16 MiB a view), each pixel weighed by its centre ray's length, then every
// (x, z) column's runs of rows gather the batch's pixels whose shadows overlap them (ddGather) and add them once. One
// task per z: each voxel is written by one task, in view order, so the bits do not depend on the thread count.
void CpuOperator::distanceDrivenBack(const float* projections, const std::size_t* views, std::size_t count, float* volume) {
  constexpr int kRun = 8;
  constexpr std::size_t kDdBatch = 32;
  const detail::FloatSpacing h(grid_);
  const int nx = grid_.size[0], nz = grid_.size[2], y0 = firstRow(), held = rows();
  const std::size_t pixels = static_cast<std::size_t>(nu_) * nv_, sy = static_cast<std::size_t>(nx), sz = sy * held;
  std::vector<detail::PlaneView> planeViews(std::min(count, kDdBatch));
  std::vector<float> weighted(std::min(count, kDdBatch) * pixels);
  for (std::size_t first = 0; first < count; first += kDdBatch) {
    const std::size_t n = std::min(kDdBatch, count - first);
    parallelFor(n, 1, threads_, [&](std::size_t begin, std::size_t end) {
      for (std::size_t p = begin; p < end; ++p) {
        planeViews[p] = detail::planeViewOf(views_[views[first + p]], h);
        for (int v = 0; v < nv_; ++v)
          for (int u = 0; u < nu_; ++u) {
            const std::size_t at = static_cast<std::size_t>(v) * nu_ + u;
            weighted[p * pixels + at] = detail::planeWeighted(planeViews[p], u, v, projections[(first + p) * pixels + at]);
          }
      }
    });
    parallelFor(static_cast<std::size_t>(nz), 1, threads_, [&](std::size_t begin, std::size_t end) {
      for (std::size_t k = begin; k < end; ++k)
        for (int i = 0; i < nx; ++i)
          for (int j0 = 0; j0 < held; j0 += kRun) {
            float sums[kRun] = {};
            const auto add = [&](int r, float x) { sums[r] += x; };
            for (std::size_t p = 0; p < n; ++p) {
              const detail::PlaneView& view = planeViews[p];
              const float* own = weighted.data() + p * pixels;
              const auto pixel = [&](int u, int v) { return own[static_cast<std::size_t>(v) * nu_ + u]; };
              const int plane = view.m == 0 ? i : static_cast<int>(k), across = view.m == 0 ? static_cast<int>(k) : i;
              detail::ddGather<kRun>(view, nu_, nv_, plane, across, y0 + j0, pixel, add);
            }
            for (int r = 0; r < kRun && j0 + r < held; ++r) volume[k * sz + (j0 + r) * sy + i] += sums[r];
          }
    });
  }
}

// volume += A^T projections, the exact transpose of forward(): every ray is marched as forward() marches it (the same
// float expressions, so the same samples) and each sample's value times the step goes to the voxels its trilinear
// interpolant reads, with its weights (voxels of the zero border dropped: they hold no unknowns). A scatter, made
// deterministic without atomics: the volume is cut into slabs of y rows, each owned by one task, which marches every ray but
// spreads only the samples whose footprint reaches its slab (their index range solved from the ray's y, then each
// sample tested), in a fixed order: the bits do not depend on the thread count.
void CpuOperator::transposeBack(const float* projections, const std::size_t* views, std::size_t count, float* volume) {
  const float step = static_cast<float>(step_);
  const int n[3] = {grid_.size[0], grid_.size[1], grid_.size[2]};
  const detail::FloatSpacing sp(grid_);
  const float hi[3] = {static_cast<float>(n[0]), static_cast<float>(n[1]), static_cast<float>(n[2])};
  // The volume holds rows [firstRow, firstRow + rows) (the whole grid, or a block): `volume` is indexed from firstRow.
  const int heldFirst = firstRow(), held = rows();
  const std::size_t sy = static_cast<std::size_t>(n[0]), sz = sy * held;
  // Slabs of y rows: y is the rotation axis, along which rays climb only by the cone angle, so most rays reach one or
  // two slabs and the others skip them at once. A voxel's additions come in the same order (view, pixel, sample)
  // whichever slab holds it, so neither the thread count nor a block changes its bits.
  const std::size_t slabs = std::min<std::size_t>(held, static_cast<std::size_t>(4 * threads_));
  parallelFor(slabs, 1, threads_, [&](std::size_t first, std::size_t last) {
    for (std::size_t slab = first; slab < last; ++slab) {
      const int y0 = heldFirst + static_cast<int>(slab * held / slabs), y1 = heldFirst + static_cast<int>((slab + 1) * held / slabs);
      for (std::size_t p = 0; p < count; ++p) {
        const detail::ProjectorView& o = views_[views[p]];
        for (int iv = 0; iv < nv_; ++iv)
          for (int iu = 0; iu < nu_; ++iu) {
            const float value = projections[(p * nv_ + iv) * nu_ + iu];
            if (value == 0.0f) continue;
            detail::RaySamples ray;  // the ray as forward() marches it
            if (!detail::marchRay(o, static_cast<float>(iu), static_cast<float>(iv), sp, hi, step, ray)) continue;
            const auto [k0, k1] = samplesReachingRows(ray, y0, y1);
            if (k0 >= k1) continue;
            const float w = value * ray.length;
            for (int k = k0; k < k1; ++k) {
              const float fk = static_cast<float>(k);
              const float x = std::min(std::max(ray.first[0] + fk * ray.delta[0], -1.0f), hi[0]);
              const float y = std::min(std::max(ray.first[1] + fk * ray.delta[1], -1.0f), hi[1]);
              const float z = std::min(std::max(ray.first[2] + fk * ray.delta[2], -1.0f), hi[2]);
              const int i = static_cast<int>(std::floor(x)), j = static_cast<int>(std::floor(y)), kz = static_cast<int>(std::floor(z));
              if (j + 1 < y0 || j >= y1) continue;
              const float fx = x - static_cast<float>(i), fy = y - static_cast<float>(j), fz = z - static_cast<float>(kz);
              const float wx[2] = {1.0f - fx, fx}, wy[2] = {1.0f - fy, fy}, wz[2] = {1.0f - fz, fz};
              if (i >= 0 && i + 1 < n[0] && j >= y0 && j + 1 < y1 && kz >= 0 && kz + 1 < n[2]) {
                // All 8 voxels inside the slab (most samples): no tests.
                float* q = volume + kz * sz + (j - heldFirst) * sy + i;
                const float w00 = w * wy[0] * wz[0], w10 = w * wy[1] * wz[0], w01 = w * wy[0] * wz[1], w11 = w * wy[1] * wz[1];
                q[0] += w00 * wx[0];
                q[1] += w00 * wx[1];
                q[sy] += w10 * wx[0];
                q[sy + 1] += w10 * wx[1];
                q[sz] += w01 * wx[0];
                q[sz + 1] += w01 * wx[1];
                q[sz + sy] += w11 * wx[0];
                q[sz + sy + 1] += w11 * wx[1];
                continue;
              }
              for (int c = 0; c < 2; ++c) {
                const int zz = kz + c;
                if (zz < 0 || zz >= n[2]) continue;
                for (int b = 0; b < 2; ++b) {
                  const int yy = j + b;
                  if (yy < y0 || yy >= y1) continue;
                  for (int a = 0; a < 2; ++a) {
                    const int xx = i + a;
                    if (xx < 0 || xx >= n[0]) continue;
                    volume[zz * sz + (yy - heldFirst) * sy + xx] += w * wy[b] * wz[c] * wx[a];
                  }
                }
              }
            }
          }
      }
    }
  });
}

// volume += B projections, the Adjoint weighting. Per voxel the sum over the views is formed first, then added: with the
// volume at zero, the result is the sum itself, bit for bit.
void CpuOperator::adjointBack(const float* projections, const std::size_t* views, std::size_t count, float* volume) {
  const auto start = std::chrono::steady_clock::now();
  // Projections with a zero border (1 pixel before, 2 after), as the CPU backprojector pads them.
  const int pitch = nu_ + 3, rows = nv_ + 3;
  std::vector<float> padded(count * static_cast<std::size_t>(pitch) * rows, 0.0f);
  for (std::size_t p = 0; p < count; ++p)
    for (int v = 0; v < nv_; ++v)
      std::copy_n(projections + (p * nv_ + v) * nu_, nu_, padded.begin() + (p * rows + v + 1) * pitch + 1);
  const detail::FloatSpacing sp(grid_);
  // The volume holds rows [firstRow, firstRow + ny) (the whole grid, or a block); j is the global row.
  const int nx = grid_.size[0], ny = ConeBeamOperator::rows(), nz = grid_.size[2];
  const float maxU = static_cast<float>(nu_), maxV = static_cast<float>(nv_);
  parallelFor(static_cast<std::size_t>(ny) * nz, 4, threads_, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const int j = firstRow() + static_cast<int>(row % ny), k = static_cast<int>(row / ny);
      float* out = volume + row * nx;
      for (int i = 0; i < nx; ++i) {
        const float x[3] = {static_cast<float>(i), static_cast<float>(j), static_cast<float>(k)};
        float sum = 0.0f;
        for (std::size_t p = 0; p < count; ++p) {
          const detail::ProjectorView& o = views_[views[p]];
          float h[3];
          for (int r = 0; r < 3; ++r) h[r] = o.matrix[r][0] * x[0] + o.matrix[r][1] * x[1] + o.matrix[r][2] * x[2] + o.matrix[r][3];
          const float u = std::min(std::max(h[0] / h[2], -1.0f), maxU) + 1.0f;
          const float v = std::min(std::max(h[1] / h[2], -1.0f), maxV) + 1.0f;
          const int iu = static_cast<int>(u), iv = static_cast<int>(v);
          const float au = u - static_cast<float>(iu), av = v - static_cast<float>(iv);
          const float* q = padded.data() + (p * rows + iv) * pitch + iu;
          const float top = q[0] + au * (q[1] - q[0]), bottom = q[pitch] + au * (q[pitch + 1] - q[pitch]);
          const float value = top + av * (bottom - top);
          if (o.parallel) {  // parallel beam: the rays' density does not change with depth
            sum += value * o.weight;
            continue;
          }
          float rs[3];
          for (int a = 0; a < 3; ++a) rs[a] = (x[a] - o.sourceIndex[a]) * sp[a];
          const float distance = std::sqrt(rs[0] * rs[0] + rs[1] * rs[1] + rs[2] * rs[2]);
          const float depth = rs[0] * o.normal[0] + rs[1] * o.normal[1] + rs[2] * o.normal[2];
          sum += value * (o.weight * distance / (depth * depth * depth));
        }
        out[i] += sum;
      }
    }
  });
  timings_.back += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CpuOperator::fdkBack(const float* projections, const std::size_t* views, std::size_t count) {
  const auto start = std::chrono::steady_clock::now();
  const int nu = geometry_.detector.nu, nv = geometry_.detector.nv;
  // A zero border lets the inner loop clamp coordinates to [-1, n] instead of branching: a sample clamped
  // to -1 or n reads only border zeros, which is exactly "0 outside the detector" of bilinear sampling.
  const int pu = nu + 3, pv = nv + 3;
  const std::size_t paddedSize = static_cast<std::size_t>(pu) * pv;
  padded_.assign(paddedSize * count, 0.0f);
  struct ViewMatrix {
    double m[3][4];
    const float* data;
  };
  std::vector<ViewMatrix> matrices(count);
  for (std::size_t p = 0; p < count; ++p) {
    if (views[p] >= geometry_.size()) throw std::out_of_range("backproject: view index beyond the geometry");
    float* dst = padded_.data() + p * paddedSize;
    const float* src = projections + p * static_cast<std::size_t>(nu) * nv;
    for (int v = 0; v < nv; ++v) std::copy(src + static_cast<std::size_t>(v) * nu, src + static_cast<std::size_t>(v + 1) * nu,
                                           dst + static_cast<std::size_t>(v + 1) * pu + 1);
    const ProjectionMatrix pm = geometry_.matrix(views[p], grid_);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) matrices[p].m[r][c] = pm.m[r][c];
    matrices[p].data = dst + pu + 1;  // pixel (0,0)
  }

  // The volume holds rows [firstRow(), firstRow() + ny) of y; j below is the global row.
  const int nx = grid_.size[0], ny = volume_.size[1], nz = grid_.size[2];
  // Work unit: a block of x-rows at one y and consecutive z (an axial strip, 16 KiB of volume at 256^3).
  // y is the rotation axis, so the strip projects onto a band of only a few detector rows in every
  // projection and the whole batch's bands stay in L2; blocks stacked along y instead span tens of detector
  // rows per projection and ran 2.5x slower (measured at 256^3 from 384^2 projections, batch 32).
  constexpr std::size_t kRowsPerBlock = 16;
  const bool restricted = !spans_.empty();
  parallelFor(static_cast<std::size_t>(ny) * nz, kRowsPerBlock, threads_, [&](std::size_t begin, std::size_t end) {
    std::vector<float> scratch;
    for (const ViewMatrix& vm : matrices) {
      const auto& m = vm.m;
      for (std::size_t row = begin; row < end; ++row) {
        const int k = static_cast<int>(row % nz), local = static_cast<int>(row / nz), j = firstRow() + local;
        const std::size_t rowIndex = static_cast<std::size_t>(k) * ny + local;
        const int first = restricted ? spans_[rowIndex].first : 0, last = restricted ? spans_[rowIndex].second : nx;
        if (first >= last) continue;
        float* out = volume_.data.data() + rowIndex * nx;
        // Homogeneous coordinates are affine along the row: base at i = 0 (double, then float) plus i * step.
        RowCoefficients c;
        c.u0 = static_cast<float>(m[0][1] * j + m[0][2] * k + m[0][3]);
        c.v0 = static_cast<float>(m[1][1] * j + m[1][2] * k + m[1][3]);
        c.w0 = static_cast<float>(m[2][1] * j + m[2][2] * k + m[2][3]);
        c.du = static_cast<float>(m[0][0]);
        c.dv = static_cast<float>(m[1][0]);
        c.dw = static_cast<float>(m[2][0]);
        if (restricted && rowPartial_[rowIndex]) {
          // Some voxels of the span were killed: update a copy and keep only the active voxels' results.
          scratch.assign(out, out + nx);
          accumulateRow(scratch.data(), first, last, c, vm.data, pu, nu, nv);
          const std::uint8_t* a = active_.data() + rowIndex * nx;
          for (int i = first; i < last; ++i)
            if (a[i]) out[i] = scratch[i];
        } else {
          accumulateRow(out, first, last, c, vm.data, pu, nu, nv);
        }
      }
    }
  });
  const double voxels = static_cast<double>(volume_.data.size());
  double computed = voxels;
  if (restricted) {
    computed = 0;
    for (std::size_t r = 0; r < spans_.size(); ++r) computed += spans_[r].second - spans_[r].first;
  }
  updatesTotal_ += voxels * count;
  updatesSkipped_ += (voxels - computed) * count;
  timings_.compute += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void CpuOperator::setRegion(const RegionOfInterest& roi) {
  if (roi.size != volume_.size) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  active_ = roi.mask;
  spans_ = roi.rowSpans;
  rowPartial_.assign(spans_.size(), 0);
}

void CpuOperator::killOutsideRange(double low, double high, double scale) {
  killed_ = true;
  if (active_.empty()) {
    RegionOfInterest all;
    all.size = volume_.size;
    all.mask.assign(volume_.data.size(), 1);
    all.updateSpans();
    setRegion(all);
  }
  for (std::size_t i = 0; i < active_.size(); ++i) {
    const double value = volume_.data[i] * scale;
    if (active_[i] && !(value >= low && value <= high)) active_[i] = 0;
  }
  // Spans shrink to the remaining active voxels; rows with holes inside their span go the masked way.
  RegionOfInterest remaining;
  remaining.size = volume_.size;
  remaining.mask = active_;
  remaining.updateSpans();
  spans_ = remaining.rowSpans;
  const int nx = grid_.size[0];
  for (std::size_t r = 0; r < spans_.size(); ++r) {
    const std::uint8_t* a = active_.data() + r * nx;
    rowPartial_[r] = !std::all_of(a + spans_[r].first, a + spans_[r].second, [](std::uint8_t x) { return x != 0; });
  }
}

}  // namespace glrecon
