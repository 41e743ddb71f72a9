// planFdk: every check and decision of an FDK run, once, before any projection is read (see glrecon/fdk.h).
#include <sys/statvfs.h>

#include <algorithm>

#include "glrecon/cluster.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/validate.h"
#include "recon/device_session.h"
#include "recon/tuning.h"

namespace glrecon {
namespace {

// The window a backend's memory cost is planned with: the fixed window asked for, or the largest an automatic choice
// may take (cuda's default, or its constant-memory limit for max; the GL search tries up to 64).
int plannedWindow(Backend backend, int window) {
  if (window > 0) return window;
  if (backend == Backend::Cuda) return window == kMaximumWindow ? 128 : backendInfo(backend).defaultWindow;
  return 64;
}

// Free memory on `device` for the slab plan: CUDA's, or the GL driver's through the run's context (UINT64_MAX: unknown).
std::uint64_t freeMemory(Backend backend, int device, DeviceSession& session) {
  if (backend == Backend::Cpu) return UINT64_MAX;
  if (backend == Backend::Cuda) return deviceMemoryAvailable(backend, device);
  session.glContext(device);
  const long long free = gl::freeDeviceMemory();
  return free >= 0 ? static_cast<std::uint64_t>(free) : UINT64_MAX;
}

// One block, unless a budget is given, several devices are named, a GPU's free memory cannot hold the volume, or cuda
// reads slabs back beside the next (drainBeside below).
SlabPlan planSlabsFor(const FdkPlan& plan, DeviceSession& session, const ProjectionSource& source) {
  const FdkOptions& options = plan.options;
  const SlabCost cost = operatorCost(plan.backend, plan.geometry, plan.grid, plannedWindow(plan.backend, options.window), !options.roi.empty());
  const std::uint64_t whole = cost.fixedBytes + cost.bytesPerRow * static_cast<std::uint64_t>(plan.grid.size[1]);
  const int devices = static_cast<int>(plan.devices.size());
  const std::uint64_t share = cost.volumeBytesPerRow * static_cast<std::uint64_t>(plan.grid.size[1]) / devices;
  // Only where the projections are in memory already and filtered on the devices: two slabs per device read each
  // projection twice, so a source read from a file, or filtered into host memory first, would be kept whole (32 GiB
  // for 2000 x 2048^2) where one slab per device reads it through a ring. From a share of 2 GiB: on two H200s at 1024^3
  // (2 GiB each), once each slab's twin sent and filtered only its rows, 4 slabs read back beside took 0.625 s and
  // 0.648 s against 2 slabs in line 0.660 s and 0.641 s (two runs: even), at 2048^3 3.52 s against 4.02 s; at 768^3
  // (0.84 GiB each) beside lost, 0.385 s against 0.339 s. One device too, though its volume fits: the large slab's
  // readback hides behind the small one's backprojection where one block reads the whole volume back after it, 3-10%
  // faster on an H100 (1024^3 0.99 s against 1.03-1.07 s, 1536^3 2.91 s against 3.18-3.22 s) and an H200 (2048^3 6.71
  // s against 7.29 s; 7.18 s against 7.61 s); not while streaming, which adds each projection to the whole volume.
  const bool drain = options.drainBeside.value_or(plan.backend == Backend::Cuda && share >= (std::uint64_t{2} << 30) &&
                                                  source.memory() != nullptr && plan.deviceFilter && !options.streaming);
  std::uint64_t budget = options.gpuMemory;
  std::string what = field("gpuMemory") + " " + formatBytes(budget);
  if (options.cluster) {
    // Always slabs, the same on every rank: sized for the rank with the least memory, at least slabsPerRank per rank so
    // that dealing them out on demand evens out ranks of different speeds (more would re-read more of the rows that
    // neighbouring slabs share).
    if (budget == 0) {
      budget = freeMemory(plan.backend, plan.devices.front(), session);
      if (budget != UINT64_MAX) budget -= std::min(budget, budget / 16 + (std::uint64_t{256} << 20));
    }
    budget = options.cluster->minimum(budget);
    what = budget == options.gpuMemory ? what : "the smallest free device memory of the ranks (" + formatBytes(budget) + " usable)";
    return planSlabs(plan.grid, cost, budget, what, options.slabsPerRank * options.cluster->size());
  }
  if (budget == 0) {
    if (plan.devices.size() == 1 && (plan.backend == Backend::Cpu || whole < (std::uint64_t{1} << 30))) return {};
    // Measured: the smallest free memory of the devices named, less a margin for the driver's own buffers.
    budget = UINT64_MAX;
    for (int device : plan.devices) budget = std::min(budget, freeMemory(plan.backend, device, session));
    if (budget != UINT64_MAX) budget -= std::min(budget, budget / 16 + (std::uint64_t{256} << 20));
    what = std::string(backendInfo(plan.backend).name) + " device " + std::to_string(plan.devices.front()) + " (free memory " +
           formatBytes(budget) + " usable)";
    if (devices == 1 && whole <= budget) {
      // The volume fits: slabs only where two of them are read back beside each other, else one block.
      SlabPlan beside = drain ? planSlabs(plan.grid, cost, budget, what, 1, 1, true) : SlabPlan{};
      return beside.drainBeside ? beside : SlabPlan{};
    }
  }
  return planSlabs(plan.grid, cost, budget, what, devices, devices, drain);
}

// Where the filter runs (glrecon/fdk.h, FilterPlace). The device's twin may still decline when it is made (too little
// memory for its buffers): the run then filters on the CPU, or refuses a filter on the device that was asked for.
bool deviceFilterWanted(const FdkPlan& plan, DeviceSession& session) {
  const FilterPlace place = plan.options.filterOn;
  if (place == FilterPlace::Cpu) return false;
  if (plan.options.cluster) {
    // Each rank filters only the rows of its slab, as it reads them: on the CPU, row by row as the whole detector would be.
    if (place == FilterPlace::Gpu)
      throw UsageError(field("filterOn") + " gpu: expected " + field("filterOn") + " auto or cpu under MPI (each rank filters only the "
                       "detector rows of its slabs, on the CPU)");
    return false;
  }
  const bool hasTwin = backendInfo(plan.backend).filtersOnDevice;
  const bool sharedTables = hasTwin && plan.filter->deviceFilter() != nullptr;
  if (place == FilterPlace::Gpu) {
    if (!sharedTables) throw filterOnGpuRefused(plan.backend, hasTwin ? false : true);
    return true;
  }
  if (!sharedTables) return false;
  // On a software renderer the CPU's FFTs beat the shader's nu^2 products many times.
  if (plan.backend != Backend::Cuda && session.glContext(plan.devices.front()).info().software) return false;
  return true;
}

void checkDensityKill(const FdkPlan& plan) {
  const DensityKill& kill = plan.options.densityKill;
  if (!kill.enabled) return;
  if (!(kill.high > kill.low && kill.margin >= 0 && kill.after > 0 && kill.after < 1))
    throw UsageError(field("densityRange") + ": expected LOW < HIGH, MARGIN >= 0 and " + field("densityAfter") + " in (0, 1)");
  if (!backendInfo(plan.backend).densityKill)
    throw UsageError(field("densityRange") + ": expected " + field("backend") + " graphics or cpu (the " + backendInfo(plan.backend).name +
                     " backend has no per-voxel kill)");
  if (!plan.slabs.slabs.empty())
    throw UsageError(field("densityRange") + ": not with slabs (" + field("gpuMemory") + ", several GPUs, or a volume larger than the GPU)");
}

// Host memory: the one-block path holds the operator's volume (cpu) or its read-back copy, the sink's volume and the
// ring of projections; slabs hold every filtered projection (unless in a scratch file) and two slab buffers per device.
void checkHostMemoryFor(const FdkPlan& plan, const ProjectionSource& source) {
  const std::uint64_t voxels = plan.grid.voxelCount(), pixels = static_cast<std::uint64_t>(plan.geometry.detector.nu) * plan.geometry.detector.nv;
  const std::string size = std::to_string(plan.grid.size[0]) + "," + std::to_string(plan.grid.size[1]) + "," + std::to_string(plan.grid.size[2]);
  if (plan.slabs.slabs.empty()) {
    checkHostMemory("fdk", field("size") + " " + size, std::uint64_t{3} * 4 * voxels);
    return;
  }
  const std::uint64_t workers = plan.devices.size();
  if (plan.options.cluster) {
    // A rank holds two slabs' detector rows of every projection at a time (the one its device backprojects and the
    // next, read meanwhile; at most the widest slab's each) and two slab buffers.
    std::uint64_t widest = 0;
    for (const auto& [first, rows] : plan.slabs.slabs) {
      std::uint64_t values = 0;
      for (std::size_t view = 0; view < plan.projections; ++view)
        values += static_cast<std::uint64_t>(slabRowBand(plan.geometry, view, plan.grid, first, rows).count) * plan.geometry.detector.nu;
      widest = std::max(widest, values);
    }
    checkHostMemory("fdk", "two slabs' detector rows of every projection and 2 slab buffers",
                    2 * 4 * widest + 2 * 4 * static_cast<std::uint64_t>(plan.grid.size[0]) * plan.slabs.rowsPerSlab * plan.grid.size[2]);
    return;
  }
  const bool stored = source.memory() == nullptr || !plan.deviceFilter;  // a memory source filtered on the device needs no store
  checkHostMemory("fdk", "the filtered projections and " + std::to_string(2 * workers) + " slab buffers",
                  (plan.options.scratch.empty() && stored ? 4 * pixels * plan.projections : 0) +
                      2 * workers * 4 * static_cast<std::uint64_t>(plan.grid.size[0]) * plan.slabs.rowsPerSlab * plan.grid.size[2]);
  // The scratch file's room, before any work (the store reserves its blocks when the run starts, too).
  struct statvfs info {};
  const std::uint64_t scratchBytes = 4 * pixels * plan.projections;
  if (!plan.options.scratch.empty() && stored && ::statvfs(plan.options.scratch.c_str(), &info) == 0 &&
      static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize < scratchBytes)
    throwInputError(plan.options.scratch, field("scratch"), "room for " + formatBytes(scratchBytes) + " of filtered projections",
                    formatBytes(static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize) + " free");
}

}  // namespace

DetectorLayout detectorLayoutOf(const Image& projections) {
  return DetectorLayout{projections.size[0], projections.size[1], projections.spacing[0], projections.spacing[1],
                        projections.origin[0], projections.origin[1]};
}

void checkProjectionsMatch(const Geometry& geometry, std::size_t count, const DetectorLayout& detector, const std::string& name) {
  if (detector.nu != geometry.detector.nu || detector.nv != geometry.detector.nv)
    throwInputError(name, "DimSize",
                    std::to_string(geometry.detector.nu) + " x " + std::to_string(geometry.detector.nv) + " detector pixels",
                    std::to_string(detector.nu) + " x " + std::to_string(detector.nv));
  if (count != geometry.size())
    throwInputError(name, "number of projections", std::to_string(geometry.size()) + " (one per projection of the geometry)",
                    std::to_string(count));
}

FilterPlace parseFilterPlace(const std::string& text) {
  if (text == "auto") return FilterPlace::Auto;
  if (text == "cpu") return FilterPlace::Cpu;
  if (text == "gpu") return FilterPlace::Gpu;
  throw UsageError(field("filterOn") + ": expected auto, cpu or gpu, found '" + text + "'");
}

UsageError filterOnGpuRefused(Backend backend, bool trajectoryAllows) {
  const std::string name = backendInfo(backend).name;
  const std::string found = !backendInfo(backend).filtersOnDevice ? "the " + name + " backend"
                            : !trajectoryAllows                  ? "views whose detector differs in shape relative to the source"
                                                                 : "the " + name + " backend on this device (a software renderer, or not "
                                                                   "enough GPU memory or storage-block size for the filter's buffers)";
  return UsageError(field("filterOn") + " gpu: expected a backend that filters on the GPU (cuda, compute, graphics, graphics-mp) with room "
                    "for it, and views that share one cosine table; found " + found + " (" + field("filterOn") + " auto or cpu filters on the CPU)");
}

FdkPlan planFdk(const Geometry& geometry, const VolumeGrid& grid, const FdkOptions& options, const ProjectionSource& source,
                std::shared_ptr<DeviceSession> session) {
  FdkPlan plan;
  plan.geometry = geometry;
  plan.grid = grid;
  plan.options = options;
  plan.projections = source.count();
  plan.session = session ? std::move(session) : std::make_shared<DeviceSession>();
  // The scan and the grid: values a float reconstruction can hold, the projections the geometry describes, a volume
  // in front of every source and seen by some projection.
  // The numbers as the command line bounds them (glrecon/limits.h): Python's fdk(threads=100000) started as many.
  checkValue("threads", options.threads);
  checkValue("filterThreads", options.filterThreads);
  checkValue("batch", static_cast<double>(options.batch));
  checkValue("queue", static_cast<double>(options.queueDepth));
  checkValue("gpu", options.gpu);
  if (options.slabsPerRank < 1 || options.slabsPerRank > 1024)
    throw UsageError(field("slabsPerRank") + ": expected 1 to 1024, found " + std::to_string(options.slabsPerRank));
  for (int gpu : options.gpus) checkValue("gpu", gpu);
  checkProjectionsMatch(geometry, source.count(), source.detector(), source.count() ? source.origin(0) : "projections");
  checkScanAndGrid(geometry, grid, "fdk");
  if (options.streaming && (options.gpuMemory > 0 || options.gpus.size() > 1))
    throw UsageError(field("stream") + ": expected the whole volume on one GPU (the live pipeline adds each projection to every voxel as "
                     "it arrives); " + field("gpuMemory") + " and several " + field("gpu") + " reconstruct in slabs, which needs every "
                     "projection first: leave out " + field("stream"));
  plan.devices = options.gpus.empty() ? std::vector<int>{options.gpu} : options.gpus;
  if (options.cluster) {
    const std::string many = "several processes (MPI)";
    if (plan.devices.size() > 1)
      throw UsageError(field("gpu") + ": expected one device per rank under MPI, found " + std::to_string(plan.devices.size()) +
                       " (start one rank per GPU: each rank takes the device of its place on its host)");
    if (options.streaming) throw UsageError(field("stream") + ": expected one process, found " + many + " (leave out " + field("stream") + ")");
    if (!options.scratch.empty())
      throw UsageError(field("scratch") + ": expected one process, found " + many + " (each rank holds only its slab's detector rows)");
  }
  if (options.backend) {
    plan.backend = *options.backend;
  } else {
    AutoOptions automatic;
    automatic.device = plan.devices.front();
    automatic.retune = options.retune;
    automatic.glOnly = options.autoGlOnly;
    const AutoChoice choice = chooseBackend(grid, plan.projections, *plan.session, automatic);
    plan.backend = choice.backend;
    plan.autoNote = choice.note;
    if (options.cluster) {
      // Rank 0's choice everywhere: the same kernels on every rank, so that every slab is computed alike.
      plan.backend = *backendNamed(options.cluster->broadcast(backendInfo(plan.backend).name));
      if (plan.backend != choice.backend) plan.autoNote = "rank 0's choice (this rank measured " + std::string(backendInfo(choice.backend).name) + ")";
    }
    if (plan.backend == Backend::Cuda) plan.session->open(Backend::Cuda, plan.devices.front());  // beside the rest
  }
  plan.filter = std::make_shared<FdkFilter>(geometry, options.filter);
  plan.deviceFilter = deviceFilterWanted(plan, *plan.session);
  if (!options.roi.empty()) plan.region = makeRegionOfInterest(options.roi, geometry, grid);
  plan.slabs = planSlabsFor(plan, *plan.session, source);
  checkDensityKill(plan);
  checkHostMemoryFor(plan, source);
  return plan;
}

}  // namespace glrecon
