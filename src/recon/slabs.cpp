// FDK in slabs of y rows (see reconstructFdkSlabs in glrecon/fdk.h): volumes larger than a GPU, and several
// GPUs. The filtered projections are kept once; each device's worker thread owns its backprojector (a GL
// context is current on one thread) and takes slabs from a shared counter.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <numeric>
#include <thread>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"
#include "glrecon/roi.h"

namespace glrecon {
namespace {

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The window a backend's slab cost is planned with: the fixed window asked for, or the largest an automatic
// choice may take (cuda's default 32; the GL search tries up to 64).
int plannedWindow(const FdkOptions& options) {
  if (options.window > 0) return options.window;
  return chooseBackend(options) == Backend::Cuda ? (options.window == kMaximumWindow ? 128 : 32) : 64;
}

// Filtered projections, kept once: in memory, or in a deleted temporary file under `scratch`, mapped.
class FilteredStore {
 public:
  FilteredStore(std::size_t floats, const std::string& scratch) : floats_(floats) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(floats) * sizeof(float);
    if (scratch.empty()) {
      checkHostMemory("fdk", "the filtered projections (use " + field("scratch") + " DIR to keep them in a file)", bytes);
      // Not zeroed: the filter threads write every slot, and so page it in on many cores instead of this one.
      memory_.reset(new float[floats]);
      data_ = memory_.get();
      return;
    }
    fd_ = ::open(scratch.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) throwInputError(scratch, field("scratch"), "a writable directory on a file system with O_TMPFILE", std::strerror(errno));
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0)
      throwInputError(scratch, field("scratch"), "room for " + formatBytes(bytes) + " of filtered projections", std::strerror(errno));
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) throwInputError(scratch, field("scratch"), "a file that can be mapped", std::strerror(errno));
    data_ = static_cast<float*>(map);
  }
  ~FilteredStore() {
    if (fd_ >= 0) {
      ::munmap(data_, floats_ * sizeof(float));
      ::close(fd_);
    }
  }
  FilteredStore(const FilteredStore&) = delete;
  FilteredStore& operator=(const FilteredStore&) = delete;
  float* data() { return data_; }
  bool inFile() const { return fd_ >= 0; }

 private:
  std::size_t floats_;
  std::unique_ptr<float[]> memory_;
  float* data_ = nullptr;
  int fd_ = -1;
};

}  // namespace

SlabPlan planFdkSlabs(const Geometry& geometry, const VolumeGrid& grid, const FdkOptions& options) {
  const std::vector<int> gpus = options.gpus.empty() ? std::vector<int>{options.gpu} : options.gpus;
  const bool region = !options.roi.empty();
  const Backend backend = chooseBackend(options);
  const SlabCost cost = operatorCost(backend, geometry, grid, plannedWindow(options), region);
  const std::uint64_t whole = cost.fixedBytes + cost.bytesPerRow * static_cast<std::uint64_t>(grid.size[1]);
  std::uint64_t budget = options.gpuMemory;
  std::string what = field("gpuMemory") + " " + formatBytes(budget);
  if (budget == 0) {
    if (gpus.size() == 1 && (backend == Backend::Cpu || whole < (std::uint64_t{1} << 30))) return {};
    // Measured: the smallest free memory of the devices named, less a margin for the driver's own buffers.
    budget = UINT64_MAX;
    for (int gpu : gpus) budget = std::min(budget, deviceMemoryAvailable(backend, gpu));
    if (budget != UINT64_MAX) budget -= std::min(budget, budget / 16 + (std::uint64_t{256} << 20));
    what = std::string(backendInfo(backend).name) + " device " + std::to_string(gpus.front()) + " (free memory " + formatBytes(budget) + " usable)";
    if (gpus.size() == 1 && whole <= budget) return {};
  }
  return planSlabs(grid, cost, budget, what, static_cast<int>(gpus.size()));
}

void reconstructFdkSlabs(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                         const SlabPlan& plan, const SlabSink& sink, FdkReport* report) {
  const auto start = std::chrono::steady_clock::now();
  geometry.validate("FDK");
  grid.validate("FDK");
  checkProjectionsMatch(geometry, projections, "projections");
  geometry.checkVolumeInFront(grid, "FDK");
  if (options.densityKill.enabled) throw UsageError(field("densityRange") + ": not with slabs (" + field("gpuMemory") + ", several GPUs, or a volume larger than the GPU)");
  if (plan.slabs.empty()) throw std::logic_error("reconstructFdkSlabs: an empty plan");
  const std::vector<int> gpus = options.gpus.empty() ? std::vector<int>{options.gpu} : options.gpus;
  const std::size_t count = geometry.size(), pixels = projections.sliceStride(), batch = std::max<std::size_t>(1, options.batch);

  FdkReport local;
  local.slabs = static_cast<int>(plan.slabs.size());
  local.rowsPerSlab = plan.rowsPerSlab;
  local.slabBudget = plan.budgetBytes;
  RegionOfInterest region;
  if (!options.roi.empty()) {
    region = makeRegionOfInterest(options.roi, geometry, grid);
    local.region = region.description;
    local.regionVoxels = region.insideCount();
  }
  const FdkFilter filter(geometry, options.filter);
  local.shortScan = filter.isShortScan();
  FilteredStore store(count * pixels, options.scratch);
  local.scratchFile = store.inFile();

  // ---- filtering, once, ahead of the workers: projection p is ready when ready[p] is set ----
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::uint8_t> ready(count, 0);
  std::size_t readyPrefix = 0;  // projections [0, readyPrefix) are all filtered
  bool stop = false;
  std::exception_ptr failure;
  std::atomic<std::size_t> nextToFilter{0};
  double filterBusy = 0;
  const int threads = resolveThreadCount(options.threads);
  const Backend backend = chooseBackend(options);
  const int filterThreads = backend == Backend::Cpu ? threads : std::max(1, threads - static_cast<int>(gpus.size()));
  const auto fail = [&](std::exception_ptr e) {
    std::lock_guard lock(mutex);
    if (!failure) failure = e;
    stop = true;
    changed.notify_all();
  };
  // Where the GPU can filter (as the one-block path does, with the same kernels and so the same bits), the first
  // worker filters every projection into the store before its first slab; else, or where it turns out it cannot,
  // a pool of CPU threads does.
  const DeviceFilter* device =
      options.filterOn != FilterPlace::Cpu && backendInfo(backend).filtersOnDevice ? filter.deviceFilter() : nullptr;
  if (!device && options.filterOn == FilterPlace::Gpu) throw filterOnGpuRefused(backend, false);
  bool filteredOnGpu = false;
  double gpuFilterSeconds = 0;
  std::vector<std::jthread> filterPool;
  const auto startFilterPool = [&] {
    for (int t = 0; t < filterThreads; ++t)
      filterPool.emplace_back([&] {
        for (;;) {
          const std::size_t p = nextToFilter++;
          if (p >= count) return;
          {
            std::lock_guard lock(mutex);
            if (stop) return;
          }
          const auto t0 = std::chrono::steady_clock::now();
          try {
            float* slot = store.data() + p * pixels;
            std::copy_n(projections.slice(static_cast<int>(p)), pixels, slot);
            filter.apply(p, slot);
          } catch (...) {
            fail(std::current_exception());
            return;
          }
          const double busy = secondsSince(t0);
          std::lock_guard lock(mutex);
          filterBusy += busy;
          ready[p] = 1;
          while (readyPrefix < count && ready[readyPrefix]) ++readyPrefix;
          changed.notify_all();
        }
      });
  };
  if (!device) startFilterPool();

  // ---- the workers: one per device entry, slabs from a shared counter ----
  std::atomic<std::size_t> nextSlab{0};
  std::atomic<std::size_t> projectionsDone{0};
  std::vector<DeviceShare> shares(gpus.size());
  std::vector<double> uploaded(gpus.size(), 0.0), backprojectSeconds(gpus.size(), 0.0), readbackSeconds(gpus.size(), 0.0);
  std::vector<double> setupSeconds(gpus.size(), 0.0), waitSeconds(gpus.size(), 0.0);
  std::mutex progressMutex;
  const std::string label = std::string("fdk (") + backendInfo(backend).name + ", " + std::to_string(plan.slabs.size()) + (plan.slabs.size() == 1 ? " slab" : " slabs") +
                            (gpus.size() > 1 ? " on " + std::to_string(gpus.size()) + " devices" : "") + ")";
  Progress progress(label, count * plan.slabs.size(), "proj", options.progress);
  const auto worker = [&](std::size_t w) {
    try {
      const auto t0 = std::chrono::steady_clock::now();
      OperatorOptions bo = operatorOptions(options);
      bo.threads = backend == Backend::Cpu ? options.threads : std::max(1, threads / static_cast<int>(gpus.size()));
      bo.device = gpus[w];
      bo.retune = options.retune && w == 0;
      bo.blockRows = plan.rowsPerSlab;
      std::unique_ptr<ConeBeamOperator> backprojector = makeOperator(backend, geometry, grid, bo);
      setupSeconds[w] = secondsSince(t0);
      if (device && w == 0) {
        const auto tf = std::chrono::steady_clock::now();
        // A few large calls (each prepares the filter's tables on the device), enough for other workers to start early.
        const std::size_t chunk = std::max(batch, (count + 15) / 16);
        std::vector<std::size_t> views(chunk);
        for (std::size_t p0 = 0; p0 < count; p0 += chunk) {
          const std::size_t n = std::min(chunk, count - p0);
          std::iota(views.begin(), views.begin() + n, p0);
          if (!backprojector->filterProjections(*device, projections.slice(static_cast<int>(p0)), views.data(), n, store.data() + p0 * pixels,
                                                options.filterOn == FilterPlace::Gpu)) {
            if (options.filterOn == FilterPlace::Gpu) throw filterOnGpuRefused(backend, true);
            // Only the first call can say no (the device's buffers are made once, then kept): the pool starts from
            // projection 0, which no worker has read yet.
            if (p0 > 0) throw std::logic_error("reconstructFdkSlabs: the device stopped filtering after projection " + std::to_string(p0));
            std::lock_guard lock(mutex);
            startFilterPool();
            break;
          }
          std::lock_guard lock(mutex);
          filteredOnGpu = true;
          readyPrefix = p0 + n;
          changed.notify_all();
        }
        gpuFilterSeconds = secondsSince(tf);
      }
      shares[w].gpu = gpus[w];
      shares[w].description = backprojector->description();
      // Two slab buffers: one is written out (asynchronously) while the next slab is read back into the other.
      // Not zeroed: readVolume writes every voxel of a slab, on several threads (which spreads the page faults too).
      const std::size_t capacity = static_cast<std::size_t>(grid.size[0]) * plan.rowsPerSlab * grid.size[2];
      std::unique_ptr<float[]> buffers[2] = {std::unique_ptr<float[]>(new float[capacity]), std::unique_ptr<float[]>(new float[capacity])};
      std::future<void> writing[2];
      int which = 0;
      std::vector<std::size_t> views(batch);
      for (;;) {
        const std::size_t s = nextSlab++;
        if (s >= plan.slabs.size()) break;
        {
          std::lock_guard lock(mutex);
          if (stop) break;
        }
        const auto [first, rows] = plan.slabs[s];
        backprojector->moveBlock(first, rows);
        RegionOfInterest slabRoi;
        if (!region.mask.empty()) {
          slabRoi = slabRegion(region, first, rows);
          backprojector->setRegion(slabRoi);
        }
        auto t = std::chrono::steady_clock::now();
        for (std::size_t p0 = 0; p0 < count; p0 += batch) {
          const std::size_t n = std::min(batch, count - p0);
          {
            const auto tw = std::chrono::steady_clock::now();
            std::unique_lock lock(mutex);
            changed.wait(lock, [&] { return stop || readyPrefix >= p0 + n; });
            if (stop) return;
            waitSeconds[w] += secondsSince(tw);
          }
          std::iota(views.begin(), views.begin() + n, p0);
          backprojector->back(store.data() + p0 * pixels, views.data(), n, Weighting::Fdk);
          std::lock_guard lock(progressMutex);
          projectionsDone += n;
          progress.update(projectionsDone);
        }
        if (writing[which].valid()) writing[which].get();  // this buffer's previous slab is out
        float* buffer = buffers[which].get();
        const std::size_t voxels = static_cast<std::size_t>(grid.size[0]) * rows * grid.size[2];
        const auto tr = std::chrono::steady_clock::now();
        backprojector->readVolume(buffer);
        readbackSeconds[w] += secondsSince(tr);
        backprojectSeconds[w] += secondsSince(t);
        if (!slabRoi.mask.empty())
          for (std::size_t i = 0; i < voxels; ++i)
            if (!slabRoi.mask[i]) buffer[i] = 0.0f;
        writing[which] = std::async(std::launch::async, [&sink, buffer, first = first, rows = rows] { sink(first, rows, buffer); });
        which = 1 - which;
        ++shares[w].slabs;
      }
      for (auto& f : writing)
        if (f.valid()) f.get();
      uploaded[w] = backprojector->uploadedBytes();
      shares[w].seconds = secondsSince(t0) - setupSeconds[w];
      backprojector.reset();  // on this thread: its GL context is current here
    } catch (...) {
      fail(std::current_exception());
    }
  };
  {
    std::vector<std::jthread> workers;
    for (std::size_t w = 0; w < gpus.size(); ++w) workers.emplace_back(worker, w);
  }
  {
    std::lock_guard lock(mutex);
    stop = true;
  }
  filterPool.clear();
  if (failure) std::rethrow_exception(failure);
  progress.finish();

  local.filteredOnGpu = filteredOnGpu;
  local.filterSeconds = filteredOnGpu ? gpuFilterSeconds : filterBusy / filterThreads;
  for (std::size_t w = 0; w < gpus.size(); ++w) {
    local.backprojectSeconds = std::max(local.backprojectSeconds, backprojectSeconds[w]);
    local.readbackSeconds = std::max(local.readbackSeconds, readbackSeconds[w]);
    local.setupSeconds = std::max(local.setupSeconds, setupSeconds[w]);
    local.filterWaitSeconds = std::max(local.filterWaitSeconds, waitSeconds[w]);
    local.uploadedBytes += uploaded[w];
  }
  local.wholeUploadBytes = static_cast<double>(count) * pixels * sizeof(float) * plan.slabs.size();
  local.devices = shares;
  local.backend = shares.front().description + (gpus.size() > 1 ? " (+" + std::to_string(gpus.size() - 1) + " more)" : "");
  local.totalSeconds = secondsSince(start);
  local.voxelUpdates = static_cast<double>(grid.voxelCount()) * count;
  if (report) *report = local;
}

}  // namespace glrecon
