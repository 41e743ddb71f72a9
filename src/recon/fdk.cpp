#include "glrecon/fdk.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <thread>
#include <numeric>

#include "device/gl/context.h"
#include "glrecon/errors.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"
#include "recon/device_filter_scope.h"

namespace glrecon {
namespace {
double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

DetectorLayout detectorLayoutOf(const Image& projections) {
  return DetectorLayout{projections.size[0], projections.size[1], projections.spacing[0], projections.spacing[1],
                        projections.origin[0], projections.origin[1]};
}

void checkProjectionsMatch(const Geometry& geometry, const Image& projections, const std::string& name) {
  if (projections.size[0] != geometry.detector.nu || projections.size[1] != geometry.detector.nv)
    throwInputError(name, "DimSize",
                    std::to_string(geometry.detector.nu) + " x " + std::to_string(geometry.detector.nv) + " detector pixels",
                    std::to_string(projections.size[0]) + " x " + std::to_string(projections.size[1]));
  if (static_cast<std::size_t>(projections.size[2]) != geometry.size())
    throwInputError(name, "number of projections",
                    std::to_string(geometry.size()) + " (one per projection of the geometry)",
                    std::to_string(projections.size[2]));
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

OperatorOptions operatorOptions(const FdkOptions& options) {
  OperatorOptions o;
  o.threads = options.threads;
  o.device = options.gpu;
  o.window = options.window;
  o.rememberWindow = options.rememberWindow;
  o.retune = options.retune;
  o.substackStencil = options.substackStencil;
  return o;
}

Backend chooseBackend(const FdkOptions& options, std::string* note) {
  if (options.backend) return *options.backend;
  // A software rasterizer runs the graphics path far slower than the vectorized CPU backend, so auto takes the
  // graphics pipeline only on a hardware GPU.
  std::string reason;
  try {
    // A bare context tells the renderer before any volume-sized allocation.
    const gl::DeviceInfo device = gl::Context::headless(options.gpu)->info();
    if (!device.software) {
      if (note) *note = "auto: graphics backend on the hardware GPU " + device.renderer;
      return Backend::Graphics;
    }
    reason = "only a software renderer (" + device.renderer + ")";
  } catch (const gl::GlError& e) {
    reason = std::string("no usable OpenGL: ") + e.what();
  }
  if (note) *note = "auto: cpu backend, " + reason;
  return Backend::Cpu;
}

void runFdk(const Geometry& geometry, const Image& projections, const FdkFilter& filter, ConeBeamOperator& op,
            float* destination, const FdkOptions& options, FdkReport& report) {
  runFdk(geometry, projections, filter, op, [destination] { return destination; }, options, report);
}

void runFdk(const Geometry& geometry, const Image& projections, const FdkFilter& filter, ConeBeamOperator& op,
            const FdkDestination& destination, const FdkOptions& options, FdkReport& report) {
  const std::size_t count = geometry.size(), batch = std::max<std::size_t>(1, options.batch);
  const std::size_t pixels = projections.sliceStride();
  const DensityKill& kill = options.densityKill;
  if (kill.enabled && !(kill.high > kill.low && kill.margin >= 0 && kill.after > 0 && kill.after < 1))
    throw UsageError(field("densityRange") + ": expected LOW < HIGH, MARGIN >= 0 and " + field("densityAfter") + " in (0, 1)");
  const detail::DeviceFilterScope deviceFilter(filter, op, options.filterOn);
  report.filteredOnGpu = deviceFilter.active();

  // Filtered projections wait in a ring of `slots` (a whole number of batches, so a batch is contiguous)
  // for the op; filter threads take projections in order and never run more than the ring ahead.
  const std::size_t slots = batch * 4;
  std::vector<float> ring(deviceFilter.active() ? 0 : slots * pixels);
  std::vector<std::size_t> filled(slots, SIZE_MAX);  // which projection each slot holds once filtered
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t next = 0, consumed = 0;
  bool stop = false;
  std::exception_ptr failure;
  double filterBusy = 0;
  // The op's thread (this one) needs a core of its own when it feeds a GPU.
  const int threads = resolveThreadCount(options.threads);
  const int filterThreads = op.backend() == Backend::Cpu ? threads : std::max(1, threads - 1);
  const auto filterWorker = [&] {
    for (;;) {
      std::size_t p;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || next >= count || next < consumed + slots; });
        if (stop || next >= count) return;
        p = next++;
      }
      const auto t = std::chrono::steady_clock::now();
      float* slot = ring.data() + (p % slots) * pixels;
      try {
        std::copy(projections.slice(static_cast<int>(p)), projections.slice(static_cast<int>(p)) + pixels, slot);
        filter.apply(p, slot);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        stop = true;
        changed.notify_all();
        return;
      }
      std::lock_guard lock(mutex);
      filled[p % slots] = p;
      filterBusy += secondsSince(t);
      changed.notify_all();
    }
  };
  std::vector<std::jthread> pool;
  const auto stopPool = [&] {
    {
      std::lock_guard lock(mutex);
      stop = true;
      changed.notify_all();
    }
    pool.clear();  // joins
  };
  // On the device the raw projections go straight to the op: no pool, no ring.
  if (!deviceFilter.active())
    for (int t = 0; t < filterThreads; ++t) pool.emplace_back(filterWorker);

  std::vector<std::size_t> views(batch);
  bool killed = false;
  Progress progress(std::string("fdk (") + backendInfo(op.backend()).name + ")", count, "proj", options.progress);
  try {
    for (std::size_t first = 0; first < count; first += batch) {
      const std::size_t n = std::min(batch, count - first);
      std::iota(views.begin(), views.begin() + n, first);
      auto t = std::chrono::steady_clock::now();
      const float* batchData = projections.slice(static_cast<int>(first));  // raw: filtered on the device
      if (!deviceFilter.active()) {
        {
          std::unique_lock lock(mutex);
          changed.wait(lock, [&] {
            if (stop) return true;
            for (std::size_t p = first; p < first + n; ++p)
              if (filled[p % slots] != p) return false;
            return true;
          });
          if (failure) std::rethrow_exception(failure);
        }
        report.filterWaitSeconds += secondsSince(t);
        t = std::chrono::steady_clock::now();
        batchData = ring.data() + (first % slots) * pixels;
      }
      op.back(batchData, views.data(), n, Weighting::Fdk);
      if (kill.enabled && !killed && first + n >= kill.after * count && first + n < count) {
        // Judge voxels by their value so far scaled to the whole scan: a voxel k of N projections in holds
        // about k/N of its final value.
        op.killOutsideRange(kill.low - kill.margin, kill.high + kill.margin, static_cast<double>(count) / (first + n));
        killed = true;
        report.killedAfter = first + n;
      }
      report.backprojectSeconds += secondsSince(t);
      {
        std::lock_guard lock(mutex);
        consumed = first + n;
        changed.notify_all();
      }
      progress.update(first + n);
    }
  } catch (...) {
    stopPool();
    throw;
  }
  stopPool();
  report.filterSeconds = deviceFilter.active() ? 0.0 : filterBusy / filterThreads;
  auto t = std::chrono::steady_clock::now();
  float* out = destination();  // asked for only now: its memory may be paged in meanwhile
  report.pageInWaitSeconds += secondsSince(t);
  t = std::chrono::steady_clock::now();
  const double readbackBefore = op.timings().readback;
  op.readVolume(out);  // GPU backends: the last partial window, then the readback
  report.backprojectSeconds += secondsSince(t);
  report.readbackSeconds = op.timings().readback - readbackBefore;
  progress.finish();
  report.backend = op.description();
  report.culledFraction = op.culledFraction();
  (void)killed;
}

namespace {
void reconstructOneBlock(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                         const FdkDestination& destination, FdkReport* report, std::chrono::steady_clock::time_point start);
}  // namespace

Image reconstructFdk(const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                     const FdkOptions& options, FdkReport* report) {
  const auto start = std::chrono::steady_clock::now();
  geometry.validate("FDK");
  grid.validate("FDK");
  checkProjectionsMatch(geometry, projections, "projections");
  geometry.checkVolumeInFront(grid, "FDK");
  const SlabPlan plan = planFdkSlabs(geometry, grid, options);
  if (!plan.slabs.empty()) {
    // The output is paged in (zeroed) meanwhile by another thread, as on the one-block path; the first slab waits
    // for it, and each slab's slices go to their places on several threads.
    Image volume;  // declared first: the future below (which waits for its task) goes before it
    std::shared_future<Image*> output;
    output = std::async(std::launch::async, [&] {
      volume = Image(grid);
      return &volume;
    }).share();
    const std::size_t nx = grid.size[0], ny = grid.size[1];
    const int threads = resolveThreadCount(options.threads);
    reconstructFdkSlabs(geometry, projections, grid, options, plan, [&](int first, int rows, const float* data) {
      float* to = output.get()->data.data();
      parallelFor(static_cast<std::size_t>(grid.size[2]), 1, threads, [&](std::size_t k0, std::size_t k1) {
        for (std::size_t k = k0; k < k1; ++k) std::copy_n(data + k * nx * rows, nx * rows, to + (k * ny + first) * nx);
      });
    }, report);
    output.wait();
    return volume;
  }
  // The output is paged in (zeroed) by another thread while the op is made and the scan runs: at
  // 512^3 that is 512 MiB of page faults, a tenth of a second that would otherwise follow the readback.
  Image volume;  // declared first: the future below (which waits for its task) goes before it
  std::future<void> output = std::async(std::launch::async, [&] { volume = Image(grid); });
  reconstructOneBlock(geometry, projections, grid, options, [&] {
    output.get();
    return volume.data.data();
  }, report, start);
  return volume;
}

void reconstructFdkInto(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                        const FdkDestination& destination, FdkReport* report) {
  geometry.validate("FDK");
  grid.validate("FDK");
  checkProjectionsMatch(geometry, projections, "projections");
  geometry.checkVolumeInFront(grid, "FDK");
  reconstructOneBlock(geometry, projections, grid, options, destination, report, std::chrono::steady_clock::now());
}

namespace {
// Steps 1 to 4 on one block, the inputs checked: the filter, the op, the run, the kill's scaling and the
// region, into `destination`; `start` is where the report's clock began.
void reconstructOneBlock(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                         const FdkDestination& destination, FdkReport* report, std::chrono::steady_clock::time_point start) {
  const FdkFilter filter(geometry, options.filter);
  FdkReport local;
  const Backend backend = chooseBackend(options, &local.autoNote);
  std::unique_ptr<ConeBeamOperator> op;
  try {
    op = makeOperator(backend, geometry, grid, operatorOptions(options));
  } catch (const InputError& e) {
    if (options.backend) throw;
    // auto: the volume does not fit the GPU; the cpu backend holds it in host memory.
    local.autoNote = std::string("auto: cpu backend, the volume does not fit the GPU: ") + e.what();
    op = makeOperator(Backend::Cpu, geometry, grid, operatorOptions(options));
  }
  local.shortScan = filter.isShortScan();
  RegionOfInterest region;
  if (!options.roi.empty()) {
    region = makeRegionOfInterest(options.roi, geometry, grid);
    local.region = region.description;
    local.regionVoxels = region.insideCount();
    op->setRegion(region);
  }
  if (options.densityKill.enabled && options.roi.empty()) {
    local.region = "whole volume";
    local.regionVoxels = grid.voxelCount();
  }
  local.setupSeconds = secondsSince(start);
  float* out = nullptr;
  runFdk(geometry, projections, filter, *op, [&] { return out = destination(); }, options, local);
  if (local.killedAfter > 0) {
    // Stopped voxels hold the partial sum of the projections before the kill: scale it to the whole scan.
    const std::vector<std::uint8_t> active = op->activeMask();
    const std::vector<std::uint8_t>* inside = region.mask.empty() ? nullptr : &region.mask;
    const float scale = static_cast<float>(static_cast<double>(geometry.size()) / local.killedAfter);
    for (std::size_t i = 0; i < grid.voxelCount(); ++i)
      if (!active[i] && (!inside || (*inside)[i])) {
        out[i] *= scale;
        ++local.killedVoxels;
      }
  }
  if (!region.mask.empty()) applyRegion(out, region);
  local.totalSeconds = secondsSince(start);
  local.voxelUpdates = static_cast<double>(grid.voxelCount()) * geometry.size();
  if (report) *report = local;
}
}  // namespace

}  // namespace glrecon
