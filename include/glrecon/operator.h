#pragma once
/// The cone-beam operator pair, one implementation per backend (cpu, graphics, graphics-mp, compute, cuda) behind
/// one interface, and the registry that describes and makes them.
///
/// An operator holds one volume where it computes (host memory for cpu, a texture or device buffer for the GPU
/// backends): a block of y rows [firstRow, firstRow + rows) of the grid, by default the whole grid. On it:
///   back     volume += sum_i B_w(view_i) projection_i, with a weighting w:
///              Fdk      the bilinear detector sample times 1/w^2 (w = depth / source-isocentre distance): FDK's
///                       backprojection of filtered projections, whose sum is the reconstruction in density units;
///              Adjoint  the sample times V_voxel SDD^2 |r - s| / (|du x dv| depth^3): the ray density the transpose
///                       of `forward` integrates, so that <A x, y> ~ <x, B y> (not matched exactly: B interpolates on
///                       the detector where A^T would splat ray samples; tests/operators/projector_test.cpp bounds the gap).
///   forward  projection_i = A(view_i) volume: ray-driven along the line from the source through each pixel centre,
///            clipped to where the trilinear interpolant can be non-zero; by default one sample per voxel plane across
///            the ray's main axis (Joseph's), or trilinear samples at the midpoints of steps of `step` mm.
/// Conventions every backend shares (Geometry's vectors and 3x4 matrices): pixel centres at integer (u, v), a sample
/// is 0 outside the detector and the volume, every voxel is computed with the whole grid's matrices and global indices
/// (so a block's voxels equal the whole grid's bit for bit).
///
/// Fdk back projections are batched into windows of W projections per pass on the GPU backends (Xu & Mueller's
/// projection buffer): a window is drawn when full, and the last partial one by readVolume() or any other call.
/// Tested against the CPU operator in tests/operators/, against the analytic phantom in tests/recon/fdk*_test.cpp.
#include <array>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "glrecon/device_projections.h"
#include "glrecon/geometry.h"
#include "glrecon/grid.h"
#include "glrecon/roi.h"
#include "glrecon/slab.h"

namespace glrecon {
namespace gl {
class Context;
}
struct DeviceProjections;

enum class Backend { Cpu, Graphics, GraphicsMp, Compute, Cuda };

/// A backend's record in the registry.
struct BackendInfo {
  Backend backend;
  const char* name;     ///< for descriptions and messages; the front ends (app/, python/) map names to backends
  bool built;           ///< compiled into this build (cuda: where CMake found a CUDA compiler)
  bool usesDevice;      ///< runs on an EGL (graphics, compute) or CUDA device; cpu: host memory and threads
  bool cullsRegion;     ///< skips the work outside a region of interest (stencil early fragment kill, column ranges)
  bool densityKill;     ///< Xu & Mueller's density-range kill (killOutsideRange)
  bool filtersOnDevice; ///< the FDK filter runs on its device (glrecon/filter.h's GL and CUDA twins)
  int defaultWindow;    ///< projections per Fdk pass when none is asked for: 0 = measured while reconstructing
};
/// Every backend, built or not, in the order above.
const std::vector<BackendInfo>& backendRegistry();
const BackendInfo& backendInfo(Backend backend);
/// The backends this build has.
std::vector<Backend> builtBackends();
/// The backend whose registry name is `name` ("graphics-mp"), for the front ends' parsers; empty for none.
std::optional<Backend> backendNamed(const std::string& name);
/// Devices a backend can use: EGL devices (graphics, compute), CUDA devices (cuda), 1 for cpu.
int deviceCount(Backend backend);
/// Bytes of memory the backend may use on `device` now (free memory as CUDA or the GL driver reports it);
/// UINT64_MAX where nothing is known (cpu, Mesa).
std::uint64_t deviceMemoryAvailable(Backend backend, int device);

/// What an operator of `rows` y rows costs on its device: fixedBytes + bytesPerRow * rows (the volume, the projection
/// window's buffers for `window` projections, the device filter's buffers, a region's buffers).
SlabCost operatorCost(Backend backend, const Geometry& geometry, const VolumeGrid& grid, int window, bool region);

/// OperatorOptions::window asking for the largest window the device allows.
inline constexpr int kMaximumWindow = -1;

/// The iterative methods' pair A, B (Weighting::Adjoint). Interpolating and Matched share A (one ray per pixel, the
/// volume trilinear between voxel centres); DistanceDriven has its own A, which models the pixels' and the voxels' size.
enum class ProjectorPair {
  Interpolating,  ///< B voxel-driven (a bilinear detector sample per voxel): fast, close to A^T but not equal
  Matched,        ///< B = A^T exactly: each ray's samples spread over their 8 voxels with A's trilinear weights
  /// A: on each voxel plane across the main axis, the mean of the box voxels over the pixel's shadow (De Man & Basu's
  /// distance-driven model); B = A^T exactly. Every backend but graphics-mp, for views of a gantry about y with an
  /// untilted detector (src/operators/plane_gather.h); makeOperator refuses other geometries, naming the view.
  DistanceDriven,
};
/// "interpolating", "matched" or "distance-driven" (UsageError naming the field `projector` otherwise).
ProjectorPair parseProjectorPair(const std::string& name);
const char* projectorPairName(ProjectorPair pair);

struct OperatorOptions {
  ProjectorPair pair = ProjectorPair::Interpolating;
  int threads = 0;  ///< CPU threads of the cpu backend and of the GPU backends' host copies (0 = all)
  int device = 0;   ///< EGL device (graphics, compute) or CUDA device (cuda)
  /// Fdk back: projections per pass; 0 = the backend's default (GL: measured on the first passes); kMaximumWindow.
  int window = 0;
  /// window 0 on GL: take the window an earlier search chose for this device, driver, backend and problem (a per-user
  /// cache, $XDG_CACHE_HOME/glrecon/windows.txt, like FFTW's wisdom), and store what a search finds.
  bool rememberWindow = false;
  bool retune = false;           ///< with rememberWindow: search again even where the cache has an answer
  bool substackStencil = false;  ///< graphics: the paper's 8 sub-stacks sharing one 8-bit stencil, not per-slice masks
  bool profile = false;          ///< wait for the device after each step, so timings() splits upload, compute, readback
  double step = 0.0;             ///< forward: ray-marching step in mm; 0 = one sample per voxel plane (Joseph)
  /// The most y rows the operator holds at once (0: the whole grid). With fewer, the operator holds a block of rows
  /// (moveBlock) and uploads of each projection only the detector rows the block can reach (slabRowBand).
  int blockRows = 0;
  /// With blockRows: a second block's worth of device memory, so that readBlockIntoBeside can read one block back
  /// while the next is backprojected (cuda; the plan counts it in each slab's cost).
  bool drainBeside = false;
  /// graphics, compute: draw in this context (a viewer's window, or the run's context for the device) instead of a
  /// headless one of their own; it must outlive the operator and be current on the calling thread.
  gl::Context* context = nullptr;
};

/// Where an operator's time went (seconds, accumulated since construction or reset()).
struct OperatorTimings {
  double upload = 0.0;    ///< Fdk back: projections to the device (split from compute only with OperatorOptions::profile)
  double compute = 0.0;   ///< Fdk back: the passes
  double readback = 0.0;  ///< the volume to the host
  double forward = 0.0, back = 0.0;  ///< forward() and Adjoint back() / updateSubset() calls
  double samples = 0.0;   ///< ray samples taken by forward() (every ray's sample count, summed)
};

enum class Weighting {
  Fdk,      ///< FDK: the bilinear sample times 1/w^2
  Adjoint,  ///< the iterative methods' B ~ A^T (see the top of this file)
};

/// One subset's update in SART / OS-SART (x += lambda * B_S(c) / B_S(1)) and OS-EM (x *= B_S(c) / B_S(1)): only voxels
/// the update mask keeps whose weight B_S(1) exceeds its largest value over the volume / (256 * views in S) (below that
/// a voxel only grazes a view's detector edge, where texture units and the CPU disagree: see recon/iterative).
struct SubsetRule {
  bool multiplicative = false;  ///< OS-EM
  float lambda = 1.0f;          ///< relaxation (additive rule)
  bool positivity = false;      ///< clamp negative voxels to 0 (additive rule)
  /// The largest B_S(1) over the whole grid, where an operator holds part of it (a slab of an operator split over
  /// devices or ranks: the floor must be the whole volume's, as one block's); 0: the largest of the weights at hand.
  float largestWeight = 0.0f;
};
/// The weight below which SubsetRule leaves a voxel alone: 1/256 of the largest B_S(1) per view of the subset.
float subsetWeightFloor(float largestWeight, std::size_t views);
/// SubsetRule on the host: x from the subset's back projection `update` = B_S(c) and `weights` = B_S(1) over `views`
/// views (what every operator's updateSubset computes, the GPU backends on their device in the same float operations).
void applySubsetRule(float* x, const float* update, const float* weights, const std::uint8_t* mask, std::size_t voxels,
                     std::size_t views, const SubsetRule& rule);

/// Whole-volume and whole-scan vectors kept where an operator computes, for the methods that move every view at once
/// (CGLS, PDHG-TV) and for ASD-POCS's TV phase: per iteration nothing crosses to the host but a few sums, as ASTRA's
/// CUDA algorithms keep theirs on the device. Made by ConeBeamOperator::makeVectors; src/recon/iterative/host_vectors.h
/// keeps an implementation over host vectors for the operators that have none, in the same float operations, so the
/// methods are written once over this. Every element-wise operation below is written as a sequence of float (or, where
/// said, double) operations, each rounded once: implementations compute exactly those (no fused multiply-adds), so
/// that their results are equal bit for bit; only the sums (dot, distanceSquared) may differ in their order.
class OperatorVectors {
 public:
  using Id = int;
  virtual ~OperatorVectors() = default;
  /// A new vector of the operator's whole grid (voxels) or of every view's projections (views x nv x nu), zeros.
  virtual Id volume() = 0;
  virtual Id projections() = 0;
  virtual void upload(Id to, const float* values) = 0;
  virtual void download(Id from, float* values) = 0;
  /// Voxels outside `mask` (1 inside; nullptr: none) are zeroed by back(); the mask must outlive the vectors' use.
  virtual void setMask(const std::uint8_t* mask) = 0;
  /// projections = A volume over every view (the operator's held volume is left as it was, or overwritten: callers
  /// set it again before they use it).
  virtual void forward(Id volume, Id projections) = 0;
  /// volume = B projections over every view (the Adjoint weighting, or the matched pair's transpose), 0 outside the mask.
  virtual void back(Id projections, Id volume) = 0;
  /// y[i] += float(a x[i]) (the product in double).
  virtual void axpy(double a, Id x, Id y) = 0;
  /// y[i] = float(x[i] + b y[i]) (in double).
  virtual void xpay(Id x, double b, Id y) = 0;
  virtual void copy(Id from, Id to) = 0;
  /// sum a[i] b[i] in double (in a fixed order: the same bits every run).
  virtual double dot(Id a, Id b) = 0;

  // ---- the total-variation methods (PDHG-TV, ASD-POCS's TV phase) ----
  /// A new vector of three volumes, zeros: a vector field over the grid, its x, y and z components one after another.
  virtual Id field() = 0;
  /// sum (double(a[i]) - double(b[i]))^2 in double (in a fixed order: the same bits every run).
  virtual double distanceSquared(Id a, Id b) = 0;
  /// The largest |x[i]| (exact in any order; NaN ignored).
  virtual double largestMagnitude(Id x) = 0;
  /// x[i] = x[i] < 0 ? 0 : x[i].
  virtual void clampNegative(Id x) = 0;
  /// out[i] = 2 x[i] - previous[i] (PDHG's extrapolation x + (x - previous), as 2 x - previous).
  virtual void extrapolate(Id x, Id previous, Id out) = 0;
  /// field = scale D volume, D the forward differences along x, y and z (x[p + e] - x[p], then times scale; 0 where
  /// p + e is past the grid's last voxel).
  virtual void forwardDifferences(Id volume, float scale, Id field) = 0;
  /// volume[p] += scale g(p), g(p) = D^T field at p summed as 0 + fx(p - e_x) - fx(p) + fy(p - e_y) - fy(p) +
  /// fz(p - e_z) - fz(p), each term present where its difference is.
  virtual void addTransposedDifferences(Id field, float scale, Id volume) = 0;
  /// Per voxel, z = w * s with w = z + d (three sums) and s = |w| > bound ? bound / |w| : 1, |w| = sqrt((wx^2 + wy^2)
  /// + wz^2): z + d projected onto the ball of radius `bound` (PDHG-TV's dual of the TV term).
  virtual void clipToBall(Id z, Id d, float bound) = 0;
  /// Per ray, y = (y + sigma ((2 ax - axPrevious) - b)) / (1 + sigma): PDHG-TV's data dual, the proximal step of
  /// 1/2 |. - b|^2 at the extrapolated projection.
  virtual void dataDualStep(Id y, Id ax, Id axPrevious, Id b, Id sigma) = 0;
  /// out[i] = max(0, x[i] - tau[i] g[i]) as (0 < t ? t : 0): PDHG-TV's primal step onto x >= 0.
  virtual void projectedStep(Id x, Id tau, Id g, Id out) = 0;
  /// The gradient of the smoothed isotropic TV, sum_p sqrt(eps^2 + |D x(p)|^2): with d = D x (unscaled) and
  /// u = d / sqrt(((eps^2 + dx^2) + dy^2) + dz^2) per voxel (into `field`), gradient(p) = -((ux + uy) + uz)(p) +
  /// ux(p - e_x) + uy(p - e_y) + uz(p - e_z) (added in that order, where present); 0 outside the mask (setMask).
  virtual void totalVariationGradient(Id x, float eps, Id field, Id gradient) = 0;
  /// The operator's held volume into the volume vector `to`, and the vector `from` into the held volume (the subset
  /// methods keep their iterate there): a copy on the device where the vectors are (cuda), readVolume and setVolume
  /// on the host.
  virtual void fromOperatorVolume(Id to) = 0;
  virtual void toOperatorVolume(Id from) = 0;
  /// to = other's `from` (or, `add`, to + other's `from`: one float addition per item), `other` the vectors of another
  /// operator of the same backend (a split operator's parts, glrecon/split.h: cuda copies between devices). The base
  /// throws std::logic_error (vectors on the host are never parts of a split).
  virtual void takeFrom(Id to, OperatorVectors& other, Id from, bool add);
  /// A block's neighbours (a split operator's parts): the vectors of the blocks holding the rows just before and just
  /// after this one's (nullptr: the block starts or ends the grid), made alike (the same ids), from which the stencils
  /// (forwardDifferences, addTransposedDifferences, totalVariationGradient) read the rows across the block's edges.
  /// The base throws std::logic_error for a neighbour (vectors on the host hold the whole grid).
  virtual void setNeighbours(OperatorVectors* before, OperatorVectors* after);
};

class ConeBeamOperator {
 public:
  virtual ~ConeBeamOperator();
  ConeBeamOperator(const ConeBeamOperator&) = delete;
  ConeBeamOperator& operator=(const ConeBeamOperator&) = delete;

  Backend backend() const { return backend_; }
  /// The backend's name, where it runs and how, e.g. "compute on NVIDIA H200/PCIe/SSE2, window 32 (auto)".
  virtual std::string description() const = 0;
  const Geometry& geometry() const { return geometry_; }
  /// The whole grid (matrices and voxel indices are its own in every block).
  const VolumeGrid& grid() const { return grid_; }
  /// The y rows the operator holds: [firstRow, firstRow + rows).
  int firstRow() const { return firstRow_; }
  int rows() const { return rows_; }
  /// The grid of the rows held (the whole grid unless the operator was made for fewer rows).
  VolumeGrid blockGrid() const;
  std::size_t blockVoxels() const;
  /// The ray-marching step of forward() in mm; 0: one sample per voxel plane.
  double step() const { return step_; }

  // ---- the volume held ----
  /// Zeroes the volume and forgets pending projections and the timings and counters, keeping everything made at
  /// construction (contexts, programs, buffers): a new reconstruction on the same block.
  virtual void reset() = 0;
  /// Operators made for fewer rows (OperatorOptions::blockRows): the volume becomes rows [firstRow, firstRow + rows) of
  /// the grid, zeroed (firstRow a multiple of kSlabGranule, rows at most blockRows); the region is cleared. Projections
  /// pending for the previous block are drawn into it first. Throws UsageError for arguments outside those bounds.
  virtual void moveBlock(int firstRow, int rows) = 0;
  /// The held volume from host memory (blockVoxels() floats, x fastest).
  virtual void setVolume(const float* voxels) = 0;
  /// The held volume into host memory (blockVoxels() floats, x fastest), after drawing what is pending. GPU
  /// backends read back in chunks, overlapped with the host's copies; `destination` may be untouched memory (a
  /// mapped output file): its pages are faulted in on several threads.
  virtual void readVolume(float* destination) = 0;
  /// The block's voxels straight into their places in a whole volume of `volumeSize` (x fastest, then y, then z): rows
  /// [volumeFirstRow, volumeFirstRow + rows()) of y (volumeFirstRow is firstRow()). False where the backend reads only
  /// whole blocks (then readVolume).
  virtual bool readBlockInto(float* volume, const std::array<int, 3>& volumeSize, int volumeFirstRow) {
    (void)volume, (void)volumeSize, (void)volumeFirstRow;
    return false;
  }
  /// readBlockInto beside the next block: the block's voxels move to the operator's second buffer
  /// (OperatorOptions::drainBeside) and are copied from there on a thread of the operator's into the memory `volume()`
  /// gives (asked for on that thread: it may wait for the memory to be prepared; nullptr is an error), while the
  /// caller moves on (moveBlock) and backprojects the next block. The future is ready once they are in the volume
  /// (rethrowing what failed); one readback at a time (a second call waits for the first). An invalid future where
  /// the backend cannot (the caller then reads back with readBlockInto).
  virtual std::shared_future<void> readBlockIntoBeside(const std::function<float*()>& volume, const std::array<int, 3>& volumeSize,
                                                       int volumeFirstRow) {
    (void)volume, (void)volumeSize, (void)volumeFirstRow;
    return {};
  }
  /// The block's largest |voxel| as the device finds it without a readback (a NaN voxel makes it NaN), so that the
  /// caller need not scan the host copy; nullopt: the caller checks the host copy.
  virtual std::optional<float> blockLargestMagnitude() { return std::nullopt; }

  // ---- the operator pair ----
  /// volume += sum_i B_w(views[i]) projections[i]: `projections` holds `count` projections one after another (nv rows
  /// of nu floats each). Fdk: GPU backends batch them into windows (see the top of this file).
  virtual void back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) = 0;
  /// projections[i] = A(views[i]) volume for `count` views (nv rows of nu floats each).
  virtual void forward(const std::size_t* views, std::size_t count, float* projections) = 0;

  // ---- the subset methods (glrecon/iterative.h): the held volume is the iterate ----
  /// Voxels updateSubset may change (voxels bytes, 1 inside; nullptr: every voxel); must outlive the operator's use.
  virtual void setUpdateMask(const std::uint8_t* mask) = 0;
  /// x = SubsetRule(x, B_S(correction), B_S(1)) over the subset `views` (Adjoint weighting; corrections laid out as
  /// forward's projections; nullptr: the correction correctSubset formed on the device). `cachedWeights` = B_S(1) when the caller keeps it (host operators), else computed here.
  virtual void updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                            const float* cachedWeights = nullptr) = 0;
  /// True where updateSubset computes B_S(1) itself next to the volume (the GPU backends): callers keep no weights.
  virtual bool computesSubsetWeights() const { return false; }
  /// The largest B_S(1) over the rows held for the subset `views` (a split operator's slabs: their subset rule floors by
  /// the whole volume's largest, SubsetRule::largestWeight). The base computes B_S(1) by back() of ones, the held volume
  /// kept aside meanwhile; cuda computes it next to its volume and keeps it for the subset's updates.
  virtual float subsetLargestWeight(const std::size_t* views, std::size_t count);
  /// The subset methods' data kept on the device (cuda): all projections and their ray lengths A 1 (views x nv x nu
  /// each), the length below which a ray counts as missing the volume, and the rule (multiplicative: b / A x where
  /// A 1 > floor and A x > 0; additive: (b - A x) / A 1 where A 1 > floor; else 0). False where the operator keeps no
  /// data on a device (the base), or its device lacks the memory: the caller then forms corrections on the host.
  virtual bool setSubsetData(const float* projections, const float* rayLengths, float rayFloor, bool multiplicative);
  /// After setSubsetData: A_S x of the subset's views and its correction, formed and kept on the device for the next
  /// updateSubset(nullptr, ...), so that nothing crosses to the host; returns sum over the subset's rays of (b - A x)^2.
  virtual double correctSubset(const std::size_t* views, std::size_t count);
  /// correctSubset in three steps, for an operator of part of the grid (a slab of a split operator, glrecon/split.h)
  /// whose parts' projections are summed where they are kept: projectSubset keeps A_S x of the held rows on the
  /// device (false where nothing is kept: the base); takeSubsetProjection makes the kept projection its sum with
  /// `other`'s (`add`: kept + other's, one float addition per ray) or a copy of `other`'s, `other` being an operator of
  /// the same backend that kept one (cuda: a peer copy between devices); correctProjectedSubset forms the correction
  /// of the kept projection as correctSubset does, for updateSubset(nullptr, ...), and returns its sum of squares.
  /// setSubsetData(nullptr, ...) drops the data kept (cpu and cuda, the backends a split operator's parts are).
  virtual bool projectSubset(const std::size_t* views, std::size_t count);
  virtual void takeSubsetProjection(ConeBeamOperator& other, bool add);
  virtual double correctProjectedSubset(const std::size_t* views, std::size_t count);

  // ---- projections resident on the device (filled by the FDK filter's device twins, glrecon/filter.h) ----
  /// The window of device projections to fill next (GPU backends; nullptr for cpu): free (the pass that last read it
  /// has finished), room for `capacity` projections; the same window until back(window, ...) takes it. Projections
  /// waiting from back() of host memory are drawn first.
  virtual DeviceProjections* nextWindow() { return nullptr; }
  /// volume += B_Fdk over the window's first `count` projections (views[i] the i-th's), filled since nextWindow(): one
  /// pass (at most window() projections, so the passes are those back() of host projections would draw).
  virtual void back(DeviceProjections& window, const std::size_t* views, std::size_t count);
  /// True on a software rasterizer (llvmpipe), where device work runs slower than the host's.
  virtual bool softwareDevice() const { return false; }
  /// Waits until the work queued on the device has finished (cpu: nothing to wait for), so that a time taken after
  /// it counts that work (the iterative methods' per-iteration times).
  virtual void synchronize() {}

  // ---- vectors kept on the device (glrecon::OperatorVectors) ----
  /// Vectors where this operator computes, for a method needing `volumes` volume and `scans` projection vectors; nullptr
  /// where it keeps none (cpu, the GL backends) or its device lacks the memory: the caller then keeps host vectors.
  /// A block's vectors (a split operator's parts) read the rows across its edges from its neighbours' for the TV
  /// stencils (OperatorVectors::setNeighbours).
  virtual std::unique_ptr<OperatorVectors> makeVectors(int volumes, int scans);

  // ---- regions of interest (Xu & Mueller 3.3, early fragment kill) ----
  /// Restricts Fdk back to a region on the block's grid: voxels inside receive exactly the updates they would
  /// without it; voxels outside may be skipped (callers zero them with applyRegion).
  virtual void setRegion(const RegionOfInterest& region) = 0;
  /// Density-range kill: from now on, voxels whose value times `scale` lies outside [low, high] stop receiving Fdk
  /// updates (BackendInfo::densityKill; UsageError elsewhere). Sets a whole-volume region first if none is set.
  virtual void killOutsideRange(double low, double high, double scale);
  /// 1 for voxels still receiving Fdk updates (the region minus killed voxels); empty without a region.
  virtual std::vector<std::uint8_t> activeMask() = 0;
  /// Fraction of Fdk voxel updates skipped so far.
  virtual double culledFraction() const = 0;

  // ---- counters ----
  virtual OperatorTimings timings() const { return timings_; }
  /// Projection bytes sent to the device so far (whole projections, or a block's row bands); 0 for cpu.
  virtual double uploadedBytes() const { return 0.0; }
  /// Projections per Fdk pass now (during an automatic search, the size being measured); 0 for cpu.
  virtual int window() const { return 0; }

 protected:
  ConeBeamOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options);
  /// Checks moveBlock's arguments against the operator's capacity and records them.
  void setBlock(int firstRow, int rows);
  /// readBlockInto's arguments: a volume of the grid's x and z whose rows include this block's, at firstRow().
  void checkHoldsBlock(const std::array<int, 3>& volumeSize, int volumeFirstRow) const;
  int blockCapacity() const { return capacity_; }
  /// Made for fewer rows than the grid has (OperatorOptions::blockRows).
  bool holdsPartOfGrid() const { return capacity_ < grid_.size[1]; }

  const Geometry& geometry_;
  const VolumeGrid grid_;
  const OperatorOptions options_;
  OperatorTimings timings_;
  double step_ = 0.0;

 private:
  Backend backend_;
  int capacity_ = 0;
  int firstRow_ = 0, rows_ = 0;
};

/// Makes a backend's operator after checking what every operator needs (the geometry, the grid, a volume in front of
/// every source, rays of non-zero length, the step). Throws UsageError for a backend this build lacks, DeviceError
/// (gl::GlError, CudaError) when its device cannot run it, InputError when the volume exceeds the device's limits.
std::unique_ptr<ConeBeamOperator> makeOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid,
                                               const OperatorOptions& options = {});

/// A forward projection of every view with what made it (for `glrecon project` and Python's project()).
struct VolumeProjection {
  Image projections;         ///< nu x nv x views, the detector's spacing and origin
  std::string description;   ///< the operator's description()
  double step = 0.0;         ///< its ray-marching step in mm (0: one sample per voxel plane)
  double seconds = 0.0;      ///< setVolume and forward
};

/// The volume's line integrals for every view of `geometry`, after the checks every reconstruction runs on its scan and
/// grid (glrecon/validate.h: in the beam, in front of every source, within bounds), on the volume's values (finite, no
/// line integral beyond kMaxProjectionValue) and on host memory; the result is checked finite before it is returned.
VolumeProjection projectVolume(Backend backend, const Geometry& geometry, const VolumeGrid& grid, const float* volume,
                               const OperatorOptions& options = {});

/// The samples forward() takes over every ray of every view (for rates in G ray-samples/s).
double countRaySamples(const Geometry& geometry, const VolumeGrid& grid, double step);

/// How forward() samples its rays, for messages: "one sample per voxel plane" or "step 0.5 mm".
std::string raySamplingDescription(double step);

}  // namespace glrecon
