#pragma once
// Launchers of the cuda operator's kernels (fdk_kernels.cu: Fdk back; ray_kernels.cu: forward, Adjoint back, the
// subset update and OperatorVectors' algebra; vector_kernels.cu: OperatorVectors' TV operations). The first two are
// apart because each keeps its per-view constants in constant memory, and one module's constant memory (64 KiB) does
// not hold both. For .cu files.
#include <cuda_runtime.h>

#include <cstddef>

#include "operators/projector_views.h"

namespace glrecon::cuda {

// ---- fdk_kernels.cu ----
/// Projections per Fdk pass at most: the window's matrices in constant memory.
inline constexpr int kMaxWindow = 128;
/// A bank of constant memory for one operator's window matrices (several operators may share a device: slab
/// workers, --gpu 0,0). Throws CudaError when all are taken.
int acquireMatrixBank();
void releaseMatrixBank(int bank);
/// The window's 3x4 matrices (3 float4 rows per projection) into `bank`, on `stream`.
void uploadMatrices(int bank, const float4* rows, int count, cudaStream_t stream);
/// Fdk back of `count` projections (a layered texture) into the volume of nx x ny x nz (rows [yOffset, yOffset + ny)
/// of the grid), runs of `run` (4, 8 or 16) voxels along y per thread; `zRange` (or nullptr) limits each column.
void launchFdkBack(int run, bool yInvariant, cudaStream_t stream, float* volume, int nx, int ny, int nz, int yOffset, int count,
                   cudaTextureObject_t projections, const int2* zRange, int bank);

// ---- ray_kernels.cu ----
/// Views per forward or Adjoint launch at most: their constants in constant memory.
inline constexpr int kMaxRayViews = 256;
/// How a view is projected, bits of uploadRayViews' `modes`: the matched pair in plane form (plane_gather.h); the
/// interpolating forward from the volume's planes as layers (launchForward); with kPlaneGather, the distance-driven
/// pair (ddForward, ddGather) instead of the matched one.
inline constexpr unsigned char kPlaneGather = 1, kLayered = 2, kDistanceDriven = 4;
/// The constants of `n` views (synchronous: the previous launch has read the old ones), with their modes (or nullptr:
/// none). True where u, the depth and the perspective divisor do not change along y in any of them (RTK's gantry about
/// y, untilted detectors).
bool uploadRayViews(const glrecon::detail::ProjectorView* const* views, const unsigned char* modes, const float spacing[3], int n);
/// Forward of a volume holding y rows [firstRow, firstRow + rows) of the grid of `size` (the whole grid: 0, size.y):
/// the whole grid's rays, sampled where they reach the rows.
/// `volume`: the block's 3D copy (trilinear), for the views not marked kLayered (0 where there are none); `zLayers`,
/// `xLayers`: its z planes and its x planes as layered 2D arrays (launchFillXLayers), for those marked kLayered whose
/// main axis is z or x (0 where there are none).
void launchForward(cudaTextureObject_t volume, cudaTextureObject_t zLayers, cudaTextureObject_t xLayers, int3 size, int firstRow, int rows,
                   float3 spacing, float step, int nu, int nv, int count, float* out);
/// The block (nx x rows x nz, x fastest) into the layers of a layered array with surface load/store (layer x: nz x rows).
void launchFillXLayers(const float* volume, int nx, int rows, int nz, cudaSurfaceObject_t surface);
/// Adjoint back into a block of `size` (nx, rows, nz) whose rows start at the grid's row firstRow. `yInvariant`
/// (uploadRayViews' answer): runs of y voxels per thread, as the Fdk kernel's (the same products in another order:
/// within the interpolating pair's bounds of cpu, not its bits).
void launchAdjointBack(cudaTextureObject_t projections, int3 size, int firstRow, float3 spacing, int count, bool accumulate, bool yInvariant,
                       float* volume);
/// The matched pair: forward with float trilinear weights from the linear volume, and its exact transpose (adds to
/// `volume`; projections in linear device memory); the volume holds rows [firstRow, firstRow + rows) of `size`'s grid.
/// `swapped` (or nullptr): the volume with x and z swapped (launchSwapXZ), read by the forward for views whose rays run
/// along x, and added into by the transpose for them (the caller then adds it to the volume): their accesses
/// neighbouring floats, not a plane apart.
void launchForwardExact(const float* volume, const float* swapped, int3 size, int firstRow, int rows, float3 spacing, float step, int nu,
                        int nv, int count, float* out);
void launchTransposeBack(const float* projections, int3 size, int firstRow, int rows, float3 spacing, float step, int nu, int nv, int count,
                         float* volume, float* swapped);
/// The transpose of the views marked planeGather, gathered (no atomic adds) and added to the block `volume` (rows
/// [firstRow, firstRow + rows) of `size`'s grid); launchTransposeBack leaves those views out. Their projections are
/// weighed in place first (each pixel times its ray's length).
void launchPlaneGather(float* projections, int3 size, int firstRow, int rows, int nu, int nv, int count, bool distanceDriven, float* volume);
/// A block of nx x rows x nz (x fastest) into `swapped` (z fastest), or (!toSwapped) `swapped` added into it.
void launchSwapXZ(float* volume, float* swapped, int nx, int rows, int nz, bool toSwapped);
/// The subset's corrections from its forward projections `projected` (count views of `pixels`, the i-th being view
/// viewIndex[i] of `data` and `lengths`): additive (b - A x) / A 1 or multiplicative b / A x, 0 where A 1 <= floor
/// (and A x <= 0 for the multiplicative rule), as the host computes them. The sum of (b - A x)^2: per block of a fixed
/// grid of kCorrectionBlocks blocks into partials[kCorrectionBlocks] (added in order by the caller: the same bits
/// every run).
inline constexpr int kCorrectionBlocks = 512;
void launchCorrection(const float* projected, const float* data, const float* lengths, const int* viewIndex, int count, std::size_t pixels,
                      float floor, bool multiplicative, float* correction, double* partials);
/// The largest of n non-negative floats' bits into *result (which must start at 0).
void launchMaxWeight(const float* values, std::size_t n, int* result);
void launchSubsetUpdate(float* x, const float* update, const float* weights, const unsigned char* mask, std::size_t n, float floor,
                        bool multiplicative, float lambda, bool positivity);
/// OperatorVectors' algebra: y += float(a x); y = float(x + b y) (in double, unfused); x = 0 where !mask; the sum of
/// a b in double per block of a fixed grid of kCorrectionBlocks blocks into partials (added in order by the caller).
void launchAxpy(double a, const float* x, float* y, std::size_t n);
void launchXpay(const float* x, double b, float* y, std::size_t n);
void launchMask(float* x, const unsigned char* mask, std::size_t n);
void launchDot(const float* a, const float* b, std::size_t n, double* partials);

// ---- vector_kernels.cu: OperatorVectors' total-variation operations (include/glrecon/operator.h writes each one's
// float operations; these compute exactly those, no fused multiply-adds) ----
/// The sum of (a - b)^2 in double per block of a fixed grid of kCorrectionBlocks blocks into partials (added in order
/// by the caller).
void launchDistanceSquared(const float* a, const float* b, std::size_t n, double* partials);
/// The largest |x| as float bits into *result (which must start at 0): NaN left out, or (keepNaN) a NaN's bits, which
/// order above infinity's, so that a NaN anywhere makes the result NaN. On `stream` (0: the default stream).
void launchLargestMagnitude(const float* x, std::size_t n, int* result, bool keepNaN = false, cudaStream_t stream = 0);
void launchClampNegative(float* x, std::size_t n);
void launchExtrapolate(const float* x, const float* previous, float* out, std::size_t n);
/// Stencils over a grid of `size` (x fastest); a field is three volumes, x's, y's and z's components one after another.
/// Over a block of the grid's rows, the neighbours' rows come as halo planes (nx x nz): `after`, the next block's first
/// row of x (nullptr: the block ends the grid); `before`, the previous block's last row of the field's y component
/// (transposed) or of x (the TV gradient) (nullptr: the block starts the grid); `endsGrid`: no block after this one.
void launchForwardDifferences(const float* x, int3 size, float scale, float* field, const float* after);
void launchAddTransposedDifferences(const float* field, int3 size, float scale, float* volume, const float* before, bool endsGrid);
void launchClipToBall(float* z, const float* d, std::size_t voxels, float bound);
void launchDataDualStep(float* y, const float* ax, const float* axPrevious, const float* data, const float* sigma, std::size_t n);
void launchProjectedStep(const float* x, const float* tau, const float* g, float* out, std::size_t n);
/// u = D x / sqrt(eps^2 + |D x|^2) into `field`, then the gradient from it (0 where mask, if given, is 0).
void launchTotalVariationGradient(const float* x, int3 size, float eps, const unsigned char* mask, float* field, float* gradient,
                                  const float* before, const float* after);

}  // namespace glrecon::cuda
