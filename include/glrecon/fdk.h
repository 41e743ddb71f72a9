#pragma once
/// The FDK chain, wired from its stages (RTK's FDKConeBeamReconstructionFilter in spirit):
///   1. check the projections against the geometry and the volume against the sources,
///   2. filter projections on a pool of CPU threads (FdkFilter: cosine and angular/Parker weights, ramp),
///      working ahead of
///   3. the backprojector (Backprojector), fed batch by batch in order on the calling thread (the GL
///      thread), so the chain costs about max(filter, backprojection) rather than their sum,
///   4. read the volume back (into an output paged in meanwhile by another thread).
/// Tested end to end against the analytic phantom in tests/test_fdk.cpp.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/filter.h"
#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/operator.h"
#include "glrecon/slab.h"

namespace glrecon {

/// The density-range kill (Xu & Mueller 3.3), a heuristic: off unless asked for.
struct DensityKill {
  bool enabled = false;
  double low = 0.0, high = 0.0, margin = 0.0;
  double after = 0.25;  ///< fraction of the projections applied before voxels are judged
};

/// Where FDK's filter runs: on the GPU where the backend can (cuda, compute, graphics, graphics-mp on a hardware
/// GPU) and the views share one cosine table, else on the CPU's thread pool (auto; --stream always filters on the
/// CPU); or always on the CPU; or on the GPU, an error where it cannot. Slabs filter each projection once, on the
/// GPU with the same kernels as one block (the same bits) or on the CPU.
enum class FilterPlace { Auto, Cpu, Gpu };
FilterPlace parseFilterPlace(const std::string& text);
/// The error of --filter-on gpu where the GPU cannot filter: the backend, `trajectoryAllows` false where the views need
/// their own cosine tables (FdkFilter::deviceFilter), true where the backend or device said no.
UsageError filterOnGpuRefused(Backend backend, bool trajectoryAllows);

struct FdkOptions {
  FilterOptions filter;
  FilterPlace filterOn = FilterPlace::Auto;
  std::optional<Backend> backend;  ///< empty: auto (graphics on a hardware GPU, else cpu)
  int gpu = 0;              ///< EGL or CUDA device for GPU backends
  int window = 0;           ///< projections per GPU pass (0 = measured automatically)
  bool rememberWindow = false;  ///< see OperatorOptions::rememberWindow
  bool retune = false;
  int threads = 0;          ///< CPU threads for filtering and the CPU backend (0 = all)
  std::size_t batch = 32;   ///< projections filtered and backprojected together
  bool progress = false;    ///< print a progress line on stderr
  std::string roi;          ///< region of interest spec (see makeRegionOfInterest); empty: the whole volume
  bool substackStencil = false;  ///< graphics: the paper's 8 sub-stack stencil bits instead of per-slice masks
  DensityKill densityKill;
  /// Slabs (glrecon/slab.h): the most one device may hold, in bytes; 0: what it has free, measured (the volume is
  /// then split only when it does not fit). Given, it also forces slabs on the cpu backend (tests).
  std::uint64_t gpuMemory = 0;
  /// Several devices (CUDA or EGL indices; the same one may repeat): slabs are handed out from a queue, one
  /// worker thread per entry. Empty: `gpu` alone.
  std::vector<int> gpus;
  /// Where the filtered projections go when they do not fit in host memory (a deleted temporary file, mapped).
  std::string scratch;
};

/// What one device did in a slab reconstruction.
struct DeviceShare {
  int gpu = 0;
  int slabs = 0;
  double seconds = 0.0;  ///< from its first slab's start to its last slab's readback
  std::string description;
};

struct FdkReport {
  std::string backend;      ///< the backend's description: name, device, window
  std::string autoNote;     ///< why --backend auto chose what it chose
  bool shortScan = false;
  double filterSeconds = 0.0;       ///< filter threads' busy time over their number (the filter's wall time alone)
  bool filteredOnGpu = false;       ///< the backend filtered on the device (its time is in backprojectSeconds)
  double backprojectSeconds = 0.0;  ///< in the backprojector: uploads, passes, the last window and the readback
  double filterWaitSeconds = 0.0;   ///< the backprojector's thread waiting for filtered projections
  double readbackSeconds = 0.0;     ///< the volume to the host (part of backprojectSeconds)
  double setupSeconds = 0.0;        ///< making the backprojector (context, programs, buffers)
  double pageInWaitSeconds = 0.0;   ///< at the readback, waiting for the output's memory (paged in by another thread)
  double totalSeconds = 0.0;
  double voxelUpdates = 0.0;  ///< voxels x projections
  std::string region;         ///< the region's description; empty: the whole volume
  std::size_t regionVoxels = 0;
  double culledFraction = 0.0;   ///< voxel updates skipped (fragments culled on the GPU)
  std::size_t killedVoxels = 0;  ///< voxels the density-range kill stopped
  std::size_t killedAfter = 0;   ///< projections applied when they were stopped
  int slabs = 1;                 ///< slabs of y rows (1: the whole volume at once)
  int rowsPerSlab = 0;
  std::uint64_t slabBudget = 0;  ///< bytes per device the slabs were planned for
  std::vector<DeviceShare> devices;
  double uploadedBytes = 0.0;       ///< projection bytes sent to the devices (slab mode: row bands)
  double wholeUploadBytes = 0.0;    ///< what every slab uploading whole projections would have sent
  bool scratchFile = false;         ///< the filtered projections lived in a mapped scratch file
  double gigaUpdatesPerSecond() const { return backprojectSeconds > 0 ? voxelUpdates / backprojectSeconds * 1e-9 : 0.0; }
};

/// The detector layout a projection stack's header describes (origin and spacing in detector mm).
DetectorLayout detectorLayoutOf(const Image& projections);

/// Throws InputError (naming `name`) when the stack's pixel or projection count differs from the geometry's.
void checkProjectionsMatch(const Geometry& geometry, const Image& projections, const std::string& name);

Image reconstructFdk(const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                     const FdkOptions& options, FdkReport* report = nullptr);

/// Where a one-block reconstruction puts the volume: called once, when the readback begins (so its memory can be
/// prepared meanwhile), it returns voxelCount() floats, aligned, x fastest (e.g. a mapped output file).
using FdkDestination = std::function<float*()>;
/// reconstructFdk's one-block path into the caller's memory (the caller has checked that planFdkSlabs gives no
/// slabs): the same voxels, bit for bit.
void reconstructFdkInto(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                        const FdkDestination& destination, FdkReport* report = nullptr);

/// Where the slabs of a slab reconstruction go: rows [firstRow, firstRow + rows) of y, nx x rows x nz floats
/// (x fastest), each once, in any order, from the workers' threads (concurrently for different rows).
using SlabSink = std::function<void(int firstRow, int rows, const float* data)>;

/// The slabs options ask for, or an empty plan (slabs.empty()) for the one-block path: slabs when
/// options.gpuMemory is given, several devices are named, or a GPU backend's measured free memory cannot hold
/// the volume. Throws InputError when even one slab does not fit (naming the budget).
SlabPlan planFdkSlabs(const Geometry& geometry, const VolumeGrid& grid, const FdkOptions& options);

/// FDK in slabs: every projection filtered once (kept in memory, or in a scratch file under options.scratch),
/// then each device's worker takes slabs from a queue, backprojects every projection into its slab (uploading
/// only the rows the slab needs), reads it back and hands it to `sink` while the next slab runs. Each voxel
/// equals reconstructFdk's bit for bit (same arithmetic, same projection order). No density kill.
void reconstructFdkSlabs(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                         const SlabPlan& plan, const SlabSink& sink, FdkReport* report = nullptr);

/// Steps 2 to 4 with an operator the caller made (and may reuse after ConeBeamOperator::reset, as bench does
/// to keep the setup out of repeated runs) and filter: the volume goes to `destination` (voxelCount floats).
/// options.backend/gpu/window/roi are not used here (the operator has them); the density kill is.
void runFdk(const Geometry& geometry, const Image& projections, const FdkFilter& filter, ConeBeamOperator& op,
            float* destination, const FdkOptions& options, FdkReport& report);
/// The same, the destination asked for only when the readback begins (its wait counted in pageInWaitSeconds).
void runFdk(const Geometry& geometry, const Image& projections, const FdkFilter& filter, ConeBeamOperator& op,
            const FdkDestination& destination, const FdkOptions& options, FdkReport& report);

/// The backend FdkOptions::backend names, or for auto the graphics backend on a hardware GPU and cpu where only a software
/// renderer or no OpenGL exists; `note` receives the reason for an automatic choice.
Backend chooseBackend(const FdkOptions& options, std::string* note = nullptr);
/// The operator options an FDK reconstruction makes its operators with.
OperatorOptions operatorOptions(const FdkOptions& options);

}  // namespace glrecon
