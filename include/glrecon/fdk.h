#pragma once
/// FDK as a straight chain, request -> plan -> run (RTK's FDKConeBeamReconstructionFilter in spirit):
///   planFdk()         every check once, before any projection is read: the geometry against the grid and the source,
///                     the backend (auto: src/recon/tuning.h), the devices, the window, one block or slabs of y rows and
///                     the memory each needs, where the filter runs, the region;
///   FdkReconstructor  the one scheduler: reads the source on a thread of its own (in chunks), filters (the FFTW pool, or
///                     the filter's device twin just before the backprojection), backprojects in order on each device's
///                     operator, reads the volume back into the sink. One block or slabs, read-ahead (batch) or bounded
///                     (streaming), one device or several: configurations of the same loop.
/// Tested end to end against the analytic phantom in tests/recon/fdk*_test.cpp; slabs in tests/recon/slab*_test.cpp and
/// tests/operators/block_gl_test.cpp; the streaming configuration in tests/recon/stream*_test.cpp.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/filter.h"
#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/operator.h"
#include "glrecon/roi.h"
#include "glrecon/sink.h"
#include "glrecon/slab.h"
#include "glrecon/source.h"

namespace glrecon {
namespace gl {
class Context;
}
class Cluster;
class DeviceSession;

/// The density-range kill (Xu & Mueller 3.3), a heuristic: off unless asked for.
struct DensityKill {
  bool enabled = false;
  double low = 0.0, high = 0.0, margin = 0.0;
  double after = 0.25;  ///< fraction of the projections applied before voxels are judged
};

/// Where FDK's filter runs: on the operator's device where its backend has a twin and the views share one cosine table
/// (auto, except on a software renderer, where FFTW is many times faster); or always on the CPU's pool; or on the
/// device, an error where it cannot. Slabs filter each projection once, on the first device with the same kernels as one
/// block (the same bits) or on the CPU.
enum class FilterPlace { Auto, Cpu, Gpu };
FilterPlace parseFilterPlace(const std::string& text);
/// The error of a device filter asked for where it cannot run: `trajectoryAllows` false where the views need their
/// own cosine tables, true where the backend or the device said no.
UsageError filterOnGpuRefused(Backend backend, bool trajectoryAllows);

struct FdkOptions {
  FilterOptions filter;
  FilterPlace filterOn = FilterPlace::Auto;
  std::optional<Backend> backend;  ///< empty: auto (see src/recon/tuning.h)
  int gpu = 0;                     ///< EGL or CUDA device of the GPU backends
  /// Several devices (CUDA or EGL indices; the same one may repeat): slabs are handed out from a queue, one worker per
  /// entry. Empty: `gpu` alone.
  std::vector<int> gpus;
  int window = 0;                  ///< projections per GPU pass (0: the backend's default, measured on GL)
  bool rememberWindow = false;     ///< see OperatorOptions::rememberWindow
  bool retune = false;             ///< measure again what a cache remembers (the window, auto's backend)
  bool autoGlOnly = false;         ///< auto chooses among the backends that draw in a GL context (a viewer's) and cpu
  int threads = 0;                 ///< CPU threads for filtering and the cpu backend (0 = all)
  std::size_t batch = 32;          ///< projections handed to an operator together
  bool progress = false;           ///< a progress line on stderr
  std::string roi;                 ///< region of interest spec (see makeRegionOfInterest); empty: the whole volume
  bool substackStencil = false;    ///< graphics: the paper's 8 sub-stack stencil bits instead of per-slice masks
  DensityKill densityKill;
  /// Slabs (glrecon/slab.h): the most one device may hold, in bytes; 0: what it has free, measured (the volume is then
  /// split only when it does not fit). Given, it also forces slabs on the cpu backend (tests).
  std::uint64_t gpuMemory = 0;
  /// Slabs read back beside the next slab's backprojection (SlabPlan::drainBeside; cuda reads back beside, the other
  /// backends in line). Unset: where the backend can (cuda), in one process, the projections in memory (bench,
  /// Python, reconstructFdk) and filtered on the devices, not streaming, when a device's share of the volume is 2 GiB
  /// or more: on two H200s in memory 3.52 s against 4.02 s for one slab per device read back in line at 2048^3; at
  /// 1024^3 even (0.625 and 0.648 s against 0.660 and 0.641 s), at 768^3 slower (0.385 s against 0.339 s; glrecon
  /// bench --gpu 0,1 prints both). From a file, one slab per device reads the projections through a ring, where two
  /// would keep them all. One device whose volume fits takes 2 slabs (4:1) instead of one block: on an H100 3-10%
  /// faster from 1024^3 to 1792^3, on an H200 6-8% at 2048^3 (docs/benchmarks.md); false keeps its one block.
  std::optional<bool> drainBeside;
  /// Where the filtered projections of a slab run go when they do not fit in host memory (a deleted temporary file).
  std::string scratch;
  /// Streaming: at most queueDepth projections held between reading and backprojection (a detector's rate, bounded
  /// memory; the report gives the latency after the last projection); otherwise the reader runs ahead as far as the
  /// ring of 4 batches allows, or holds every projection for slabs.
  bool streaming = false;
  std::size_t queueDepth = 16;
  int filterThreads = 0;           ///< the CPU filter pool's threads (0: threads)
  /// Several processes (glrecon/cluster.h; not owned, it outlives the run): the volume always in slabs, at least
  /// slabsPerRank per rank, dealt out on demand by rank 0; each rank reads and filters (on the CPU) only the detector
  /// rows of the slabs it holds (the one its device backprojects, and the next, dealt ahead and read meanwhile) and
  /// writes each into the sink, which every rank shares (VolumeFileSink's joined form). One device per rank. planFdk
  /// and FdkReconstructor::finish are then collectives: every rank calls them.
  Cluster* cluster = nullptr;
  /// With a cluster: at least this many slabs per rank (more even out ranks of different speeds; fewer, thicker slabs
  /// read fewer detector rows, which thin slabs of a wide cone share: docs/cluster.md).
  int slabsPerRank = 4;
};

/// Everything decided before any projection is read, by planFdk.
struct FdkPlan {
  Geometry geometry;
  VolumeGrid grid;
  FdkOptions options;
  Backend backend = Backend::Cpu;
  std::string autoNote;             ///< why auto chose `backend`
  std::vector<int> devices;         ///< one worker each: options.gpus, or {options.gpu}
  SlabPlan slabs;                   ///< empty: one block (the whole volume at once on one device)
  std::shared_ptr<const FdkFilter> filter;
  bool deviceFilter = false;        ///< filter on the device, where the operator's twin can (options.filterOn, the backend)
  RegionOfInterest region;          ///< empty mask: the whole volume
  std::size_t projections = 0;      ///< the source's count (the geometry's)
  /// The devices the run uses, opened once: the GL context of the first device (made by the plan's queries, or beside
  /// the reading: DeviceSession), reused by its operator.
  std::shared_ptr<DeviceSession> session;
};

/// Checks everything and decides (see the top of this file). `source` gives the projections' count and detector;
/// `session` (may be null) the devices already being opened. Throws InputError, GeometryError, UsageError, DeviceError
/// naming what is wrong; nothing has been read or allocated beyond the checks when it does.
FdkPlan planFdk(const Geometry& geometry, const VolumeGrid& grid, const FdkOptions& options, const ProjectionSource& source,
                std::shared_ptr<DeviceSession> session = nullptr);

/// One stretch of a device's work in a run, in seconds from the run's start: what bounds several devices shows here.
struct DeviceSpan {
  std::string what;  ///< "setup", "backproject" (one block) or "slab K" (its projections handed over), "readback", and
                     ///< beside the next slab "write" (into the sink) or "check" (a slab read back in place); with
                     ///< SlabPlan::drainBeside "readback beside" (the next slab's; within it "memory wait" for the
                     ///< sink's memory) and "readback wait" (for the last)
  double start = 0.0, end = 0.0;
  double waited = 0.0;  ///< within a slab: waiting for projections read and filtered
};

/// What one device did in a slab reconstruction.
struct DeviceShare {
  int gpu = 0;
  int slabs = 0;
  double seconds = 0.0;  ///< from its first slab's start to its last slab's readback
  std::string description;
  std::vector<DeviceSpan> timeline;  ///< in order of start
  /// Its slabs' time handing projections over, waits left out: the backprojection's share of the device.
  double backprojectSeconds() const;
  /// Its own thread's time: setup, slabs less their waits, readbacks (writes and checks run beside them).
  double busySeconds() const;
};

/// What one rank of a cluster did (gathered on rank 0).
struct RankShare {
  int rank = 0;
  std::string host;
  int slabs = 0;
  double seconds = 0.0;    ///< from the run's start to its last slab written
  double busySeconds = 0.0;  ///< in its operator (backprojection, uploads, readback)
  double readSeconds = 0.0;  ///< reading its rows of the projections
  double bytesRead = 0.0;    ///< projection bytes read (its slabs' detector rows)
  std::string description;  ///< its operator: backend and device
  std::vector<DeviceSpan> timeline;  ///< its device's timeline, from its own run's start (fdk --timeline prints it)
};

struct FdkReport {
  std::string backend;      ///< the operator's description: name, device, window
  std::string autoNote;     ///< why auto chose what it chose
  bool shortScan = false;
  double filterSeconds = 0.0;       ///< the CPU pool's busy time over its threads (the filter's wall time alone)
  bool filteredOnGpu = false;       ///< the device twin filtered (its time is in backprojectSeconds)
  double readSeconds = 0.0;         ///< the reader's time reading the source (or waiting for a scanner)
  double backprojectSeconds = 0.0;  ///< in the operators: uploads, passes, the last window and the readback
  double filterWaitSeconds = 0.0;   ///< the backprojecting thread waiting for projections read and filtered
  double readbackSeconds = 0.0;     ///< the volume to the host (part of backprojectSeconds)
  double setupSeconds = 0.0;        ///< making the operators (contexts, programs, buffers)
  double pageInWaitSeconds = 0.0;   ///< at the readback, waiting for the sink's memory (paged in by another thread)
  double latencySeconds = 0.0;      ///< from the last projection read to the volume in the sink
  std::size_t peakQueued = 0;       ///< most projections held between reading and backprojection at once
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
  std::vector<DeviceShare> devices;  ///< slabs: each device's share and timeline
  std::vector<DeviceSpan> blockTimeline;  ///< one block: the device's timeline
  double uploadedBytes = 0.0;       ///< projection bytes sent to the devices (slabs: row bands)
  double wholeUploadBytes = 0.0;    ///< what every slab uploading whole projections would have sent
  bool scratchFile = false;         ///< the filtered projections lived in a mapped scratch file
  double bytesRead = 0.0;           ///< projection bytes read from the source (a cluster's rank: its rows only)
  std::vector<RankShare> ranks;     ///< a cluster's ranks, on rank 0 (empty elsewhere and without a cluster)
  double gigaUpdatesPerSecond() const { return backprojectSeconds > 0 ? voxelUpdates / backprojectSeconds * 1e-9 : 0.0; }
};

/// Raised by a run stopped through FdkReconstructor::cancel() or its cancel flag.
struct Cancelled : Error {
  using Error::Error;
};

/// The one scheduler (see the top of this file), made for a plan: run() or start(), step() and finish() reconstruct, as
/// often as asked (bench repeats runs; the operators are made once, the setup).
class FdkReconstructor {
 public:
  /// `context`: the operators of a GL backend draw there (a viewer's window; one block on one device). The first
  /// device's operator is made at the first start(), once its reader has begun (the file is read while the device
  /// opens), or by firstOperator().
  explicit FdkReconstructor(const FdkPlan& plan, gl::Context* context = nullptr);
  /// A run on an operator the caller made (one block, one device): bench, tests with a recording stand-in.
  FdkReconstructor(const FdkPlan& plan, ConeBeamOperator& op);
  ~FdkReconstructor();
  FdkReconstructor(const FdkReconstructor&) = delete;
  FdkReconstructor& operator=(const FdkReconstructor&) = delete;

  /// A whole run: start(), step() until done, finish().
  FdkReport run(ProjectionSource& source, VolumeSink& sink);

  /// Starts reading `source` (a thread) and filtering (a pool, for a CPU filter); slab runs start the other devices'
  /// workers. `cancel`, when given, stops the run from anywhere (polled).
  void start(ProjectionSource& source, VolumeSink& sink, const std::atomic<bool>* cancel = nullptr);
  /// Backprojects on the calling thread what has arrived, in order: returns within about `budget` (waiting for
  /// projections at most that long), having stopped at projection `until` at the latest (0: no bound). False once every
  /// projection is in. Throws what any stage threw, with the projection it concerns; Cancelled when cancelled.
  bool step(std::chrono::milliseconds budget, std::size_t until = 0);
  /// Projections backprojected so far (one block; in slabs, summed over slabs and devices).
  std::size_t done() const;
  /// The first device's operator (made here if start() has not made it): a viewer samples its volume, snapshots read it
  /// (one block).
  ConeBeamOperator& firstOperator();
  /// After step() returned false: the volume into the sink (the last window, the readback, the density kill's scaling,
  /// the region's zeros, a check for non-finite values), the threads joined, the report.
  FdkReport finish();
  /// Stops a started run: every thread joined, nothing written to the sink.
  void cancel();

 private:
  struct Run;
  void begin(ProjectionSource& source, VolumeSink& sink);
  const FdkPlan plan_;
  gl::Context* context_ = nullptr;
  std::unique_ptr<ConeBeamOperator> owned_;
  ConeBeamOperator* first_ = nullptr;
  std::unique_ptr<DeviceFdkFilter> firstFilter_;  // the device twin of the first operator (made at the first run that uses it)
  bool firstFilterTried_ = false;
  bool usedBefore_ = false;
  double setupSeconds_ = 0;
  std::unique_ptr<Run> run_;
  std::unique_ptr<Run> spent_;  // the last run: its memory is released at the next start or with the reconstructor
};

/// The chain on projections in memory into a volume in memory: planFdk, FdkReconstructor::run.
Image reconstructFdk(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                     FdkReport* report = nullptr);

/// The detector layout a projection stack's header describes (origin and spacing in detector mm).
DetectorLayout detectorLayoutOf(const Image& projections);

/// Throws InputError (naming `name`) when the stack's pixel or projection count differs from the geometry's.
void checkProjectionsMatch(const Geometry& geometry, std::size_t count, const DetectorLayout& detector, const std::string& name);
inline void checkProjectionsMatch(const Geometry& geometry, const Image& projections, const std::string& name) {
  checkProjectionsMatch(geometry, static_cast<std::size_t>(projections.size[2]), detectorLayoutOf(projections), name);
}

}  // namespace glrecon
