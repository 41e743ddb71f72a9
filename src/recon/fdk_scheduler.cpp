// The one FDK scheduler (see glrecon/fdk.h). Stages, each on threads of its own, joined by one table of what is done:
//   reader      source.read() in chunks, in order, into the store (a ring for one block, every projection for slabs);
//               a source in memory is read where it is;
//   filter pool FdkFilter::apply on the CPU's threads, in place (when the filter does not run on the device);
//   workers     one per device: its operator backprojects every projection, in order, into its block (the whole volume,
//               or the slabs it takes from a shared counter), through the filter's device twin where it has one; then
//               the block is read back into the sink. Worker 0 runs on the caller's thread, step by step (a viewer
//               draws between steps); the others on threads of their own.
// Every voxel gets its projections in the same order and windows in every configuration, so one block, slabs, one
// device or several, read-ahead or streaming give the same bits.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

#include "glrecon/cluster.h"
#include "glrecon/fdk.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"
#include "glrecon/validate.h"
#include "recon/device_session.h"

namespace glrecon {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Projections between the reader and the workers: `slots` of them, projection p in slot p % slots; in memory, or in a
// deleted temporary file under `scratch` (slabs whose filtered projections do not fit in memory), mapped; or (`sparse`,
// a cluster's rank, which fills only its slab's detector rows) address space whose pages exist once written, given
// back between slabs (release).
class ProjectionStore {
 public:
  ProjectionStore(std::size_t slots, std::size_t pixels, const std::string& scratch, bool sparse = false) : slots_(slots), pixels_(pixels) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(slots) * pixels * sizeof(float);
    if (sparse) {
      void* map = ::mmap(nullptr, std::max<std::uint64_t>(bytes, 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (map == MAP_FAILED) throw std::bad_alloc();
      data_ = static_cast<float*>(map);
      sparse_ = true;
      return;
    }
    if (scratch.empty()) {
      // Not zeroed: the reader writes every slot, and so pages it in on its threads instead of this one.
      memory_.reset(new float[std::max<std::size_t>(1, slots * pixels)]);
      data_ = memory_.get();
      return;
    }
    fd_ = ::open(scratch.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) throwInputError(scratch, field("scratch"), "a writable directory on a file system with O_TMPFILE", std::strerror(errno));
    // Blocks reserved, not a sparse size: writes through a mapping of a sparse file on a full file system end in
    // SIGBUS (exit 135 and the output's temporary left), where a reservation fails here with ENOSPC. posix_fallocate
    // writes the blocks itself where the file system cannot reserve them.
    if (const int error = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes)); error != 0)
      throwInputError(scratch, field("scratch"), "room for " + formatBytes(bytes) + " of filtered projections", std::strerror(error));
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) throwInputError(scratch, field("scratch"), "a file that can be mapped", std::strerror(errno));
    data_ = static_cast<float*>(map);
  }
  ~ProjectionStore() {
    if (sparse_) ::munmap(data_, std::max<std::size_t>(slots_ * pixels_ * sizeof(float), 1));
    if (fd_ >= 0) {
      ::munmap(data_, slots_ * pixels_ * sizeof(float));
      ::close(fd_);
    }
  }
  ProjectionStore(const ProjectionStore&) = delete;
  ProjectionStore& operator=(const ProjectionStore&) = delete;
  float* slot(std::size_t projection) { return data_ + (projection % slots_) * pixels_; }
  std::size_t slots() const { return slots_; }
  bool inFile() const { return fd_ >= 0; }
  // A sparse store's pages back to the system (they read as zeros again). Not MADV_FREE, which would keep pages the
  // next band writes again from faulting: it made a rank's reading 3-5 times slower on the development machine
  // (docs/cluster.md).
  void release() {
    if (sparse_) ::madvise(data_, slots_ * pixels_ * sizeof(float), MADV_DONTNEED);
  }

 private:
  std::size_t slots_, pixels_;
  std::unique_ptr<float[]> memory_;
  float* data_ = nullptr;
  int fd_ = -1;
  bool sparse_ = false;
};

// Voxels beyond this magnitude (or not finite) come from projections that overflow float in the sums.
constexpr double kLargestVoxel = 3.0e38;

// A non-finite voxel (projections near float's limit overflow the sums): an error naming the output, never a file.
void checkVolume(const float* data, const std::array<int, 3>& size, const std::string& output, const std::string& rows) {
  try {
    checkFiniteValues(data, size, output, "reconstructed volume" + rows, kLargestVoxel);
  } catch (const InputError& e) {
    throw InputError(e.text() + " (the projections' values overflow float in the reconstruction)");
  }
}

// Rows [first, first + rows) of y read back in place into a whole volume of `size`: the region's zeros (`mask` in the
// slab's layout; empty: the whole slab) and the finite check of checkVolume, a z slice per task.
void finishRowsInPlace(float* volume, const std::array<int, 3>& size, int first, int rows, const std::vector<std::uint8_t>& mask,
                       const std::string& output) {
  const std::size_t nx = static_cast<std::size_t>(size[0]), ny = static_cast<std::size_t>(size[1]), run = nx * static_cast<std::size_t>(rows);
  std::atomic<std::size_t> firstBad{SIZE_MAX};
  parallelFor(static_cast<std::size_t>(size[2]), 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k) {
      float* slice = volume + (k * ny + static_cast<std::size_t>(first)) * nx;
      if (!mask.empty()) {
        const std::uint8_t* inside = mask.data() + k * run;
        for (std::size_t i = 0; i < run; ++i)
          if (!inside[i]) slice[i] = 0.0f;
      }
      for (std::size_t i = 0; i < run; ++i)
        if (!(std::abs(slice[i]) <= static_cast<float>(kLargestVoxel))) {  // NaN fails the comparison too
          lowerAtomically(firstBad, k);
          break;
        }
    }
  });
  if (const std::size_t k = firstBad.load(); k != SIZE_MAX)
    checkVolume(volume + (k * ny + static_cast<std::size_t>(first)) * nx, {size[0], rows, 1}, output,
                " (rows " + std::to_string(first) + " to " + std::to_string(first + rows - 1) + " of y, z slice " + std::to_string(k) + ")");
}

}  // namespace

struct FdkReconstructor::Run {
  struct Worker;

  const FdkPlan& plan;
  ProjectionSource& source;
  VolumeSink& sink;
  const std::atomic<bool>* cancelFlag;
  const std::size_t count, pixels, batch;
  const bool slabs;
  // One slab per device, every device taking its slab at the start: the devices go through the projections side by
  // side, so a ring behind the slowest of them serves them all, as one block's ring does (a slab run keeps every
  // projection for the slabs that come later: 3 GiB of fresh memory for 720 x 1024^2, read in 0.85 s where one block's
  // 1 GiB ring took 0.42 s on two H100s; 32 GiB for 2000 x 2048^2).
  const bool ringSlabs;
  // A cluster's rank (FdkOptions::cluster): slabs dealt by rank 0, each slab's detector rows read and filtered alone.
  Cluster* const cluster;
  const bool bands;
  const Clock::time_point started = Clock::now();
  const float* direct = nullptr;  // the source's memory, read where it is
  std::unique_ptr<ProjectionStore> store;
  bool cpuFilter = true;          // the pool filters; else each device's twin, as its worker hands projections over
  bool waitForFiltered = true;    // the workers take projections once filtered by the pool (else once read)
  bool filterDecided = false;     // cpuFilter is known (under `mutex`): the other devices' workers wait for it
  std::size_t slabCapacity = 0;   // voxels of the tallest slab
  std::atomic<std::size_t> devicesSetUp{0};
  // A device's operator (and twin) made: once every device's is, the sink may prepare its memory (VolumeSink::devicesReady).
  void deviceSetUp() {
    if (++devicesSetUp == plan.devices.size()) sink.devicesReady();
  }

  // What is done, under `mutex`: projections [0, read) are read, filtered[p] once projection p is filtered, [0, filtered
  // prefix) all of them; a one-block ring reuses the slots below `consumed`.
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t read = 0, filteredPrefix = 0, consumed = 0, nextToFilter = 0, peakHeld = 0;
  std::vector<std::uint8_t> filtered;
  bool stop = false;
  std::exception_ptr failure;
  double readSeconds = 0, filterBusy = 0, bytesRead = 0;
  // Bands (a cluster's rank): its slabs in the order it is dealt them, band b holding slab bandAt[b % 2].slab and the
  // rows of every view that slab needs, in bandStore(b). Two bands live at once: while the device backprojects band
  // b, band b + 1 is dealt (the dealer thread, once band b is filled and its device near its end) and read and
  // filtered. read, filteredPrefix, nextToFilter and filtered above are band `filling`'s; every band before it is
  // read and filtered whole. The worker backprojects band bandsTaken - 1.
  struct Band {
    std::size_t slab = 0;
    std::vector<RowBand> rows;
  };
  Band bandAt[2];
  std::unique_ptr<ProjectionStore> spareStore;  // odd bands' rows (even bands': store)
  std::size_t bandsDealt = 0, filling = 0, bandsTaken = 0;
  bool dealtAll = false;  // the cluster has no slab left for this rank
  Clock::time_point fillStarted = Clock::now(), bandTakenAt = Clock::now();
  double lastFillSeconds = 0;            // how long the last band took to be read and filtered
  std::atomic<std::size_t> bandHanded{0};  // projections of its band the worker has handed over
  std::mutex dealMutex;                  // one request to the cluster at a time
  int filterThreads = 0;
  Clock::time_point lastRead = Clock::now();

  std::atomic<std::size_t> nextSlab{0}, done{0};
  std::vector<std::unique_ptr<Worker>> workers;
  std::jthread reader, dealer;
  std::vector<std::jthread> filterPool, deviceThreads;
  std::mutex progressMutex;
  Progress progress;
  std::size_t progressHeard = 0;  // the count last given to `progress` (under progressMutex)
  // Projections handed over here, and in a cluster's rank 0 those of the slabs the other ranks have finished.
  std::size_t heardDone() const { return done + (cluster ? cluster->finishedElsewhere() * count : 0); }
  std::size_t killedVoxels = 0, killedAfter = 0;

  Run(const FdkPlan& p, ProjectionSource& s, VolumeSink& k, const std::atomic<bool>* c, std::string label)
      : plan(p),
        source(s),
        sink(k),
        cancelFlag(c),
        count(p.projections),
        pixels(static_cast<std::size_t>(p.geometry.detector.nu) * p.geometry.detector.nv),
        batch(std::max<std::size_t>(1, p.options.batch)),
        slabs(!p.slabs.slabs.empty()),
        ringSlabs(slabs && p.slabs.slabs.size() == p.devices.size() && !p.options.cluster && p.options.scratch.empty()),
        cluster(p.options.cluster),
        bands(cluster != nullptr),
        filtered(count, 0),
        // A cluster's progress line is rank 0's, counting the slabs the others have finished.
        progress(std::move(label), count * std::max<std::size_t>(1, p.slabs.slabs.size()), "proj",
                 p.options.progress && (!cluster || cluster->rank() == 0)) {}

  bool cancelled() const { return stop || (cancelFlag && cancelFlag->load()); }
  void fail(std::exception_ptr e) {
    std::lock_guard lock(mutex);
    if (!failure) failure = e;
    stop = true;
    changed.notify_all();
  }
  // Waits (under `lock`) until `ready`, a failure, cancellation or `deadline`; polls, as an outside cancel flag notifies
  // nobody. False when it stopped for another reason than `ready`.
  template <typename Ready>
  bool waitFor(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Ready ready) {
    while (!ready()) {
      if (cancelled() || Clock::now() >= deadline) return false;
      changed.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(50)));
    }
    return true;
  }
  // The memory projection p is in: its slot (for bands, the worker's band's), or the source's memory.
  float* slotOf(std::size_t p) { return store->slot(p); }
  const float* projection(std::size_t p) {
    if (!store) return direct + p * pixels;
    return bands ? bandStore(bandsTaken - 1).slot(p) : slotOf(p);
  }
  ProjectionStore& bandStore(std::size_t band) { return band % 2 ? *spareStore : *store; }
  // Projections ready for the workers: filtered, or (the twin filters as they are handed over) read; all of a band
  // filled before the one being filled.
  std::size_t ready() const {
    if (bands && filling >= bandsTaken) return count;
    return waitForFiltered ? filteredPrefix : read;
  }
  // The most projections a ring (one block's, or one slab per device) may hold beyond those consumed.
  std::size_t ringRoom() const { return (slabs && !ringSlabs) || !store ? count : store->slots(); }
  // What every device has handed over (under `mutex`): the ring's slots below it may be read into again.
  std::size_t consumedByAll() const;

  void startReader();
  void startFilterPool(int threads);
  void markFiltered(std::size_t p);
  // Bands: band `band` dealt (unless it is already, or nothing is left), from the worker or ahead from the dealer.
  void dealBand(std::size_t band);
  // The worker's next band, dealt now unless it was ahead: its slab, or nullopt once the cluster has none left.
  std::optional<std::size_t> takeBand();
  void startDealer();
  // Under `mutex`: band `filling` begun afresh; the next band begun where this one is filled.
  void resetFill();
  void fillProgressed();
  // Projections [first, first + n) into `into`: whole, or the rows `rows` of each.
  void readChunk(std::size_t first, std::size_t n, const RowBand* rows, ProjectionStore& into);
};

// ---- one device's worker ----
struct FdkReconstructor::Run::Worker {
  Run& run;
  const std::size_t index;
  ConeBeamOperator* op = nullptr;
  std::unique_ptr<ConeBeamOperator> owned;
  DeviceFdkFilter* twin = nullptr;  // hands projections over through its device's filter (cpuFilter false)
  std::unique_ptr<DeviceFdkFilter> ownedTwin;
  DeviceShare share;
  std::mutex spansMutex;  // the write of a slab records its span from its own thread
  Clock::time_point blockStart;
  double blockWaitBefore = 0;
  double setupSeconds = 0, backSeconds = 0, readbackSeconds = 0, waitSeconds = 0, pageInWaitSeconds = 0, uploaded = 0;
  Clock::time_point firstSlabStart;
  // The block being reconstructed: its slab (index into the plan's), the next projection to hand over.
  bool inBlock = false;
  std::size_t slab = 0, next = 0;
  int firstRow = 0, rows = 0;
  RegionOfInterest blockRegion;
  bool killed = false;
  // The device window being filled (twin), and its views.
  DeviceProjections* window = nullptr;
  std::vector<std::size_t> windowViews, views;
  // Slabs: two buffers, one written out (asynchronously) while the next slab is read back into the other.
  std::unique_ptr<float[]> buffers[2];
  std::future<void> writing[2];
  int which = 0;

  std::size_t consumedHere = 0;  // projections of its slab handed over (under run.mutex; ringSlabs)

  Worker(Run& r, std::size_t i) : run(r), index(i) {}

  // A stretch of this device's work on the run's clock (DeviceShare::timeline).
  void record(std::string what, Clock::time_point from, Clock::time_point to, double waited = 0) {
    const auto at = [&](Clock::time_point t) { return std::chrono::duration<double>(t - run.started).count(); };
    std::lock_guard lock(spansMutex);
    share.timeline.push_back({std::move(what), at(from), at(to), waited});
  }

  // Takes the next block: the whole volume, or the next slab from the shared counter. False when none is left.
  bool takeBlock() {
    const FdkPlan& plan = run.plan;
    if (!run.slabs) {
      if (run.nextSlab++ > 0) return false;
      firstRow = 0;
      rows = plan.grid.size[1];
      if (!plan.region.mask.empty()) op->setRegion(plan.region);
    } else {
      if (run.bands) {
        const std::optional<std::size_t> dealt = run.takeBand();
        if (!dealt) return false;
        slab = *dealt;
      } else {
        slab = run.nextSlab++;
        if (slab >= plan.slabs.slabs.size()) return false;
      }
      std::tie(firstRow, rows) = plan.slabs.slabs[slab];
      if (share.slabs == 0) firstSlabStart = Clock::now();
      op->moveBlock(firstRow, rows);
      blockRegion = {};
      if (!plan.region.mask.empty()) {
        blockRegion = slabRegion(plan.region, firstRow, rows);
        op->setRegion(blockRegion);
      }
    }
    inBlock = true;
    next = 0;
    blockStart = Clock::now();
    blockWaitBefore = waitSeconds;
    return true;
  }

  // Projections [next, next + n) to the operator: through the device twin into windows, or from host memory.
  void handOver(std::size_t n) {
    const auto t = Clock::now();
    views.resize(n);
    std::iota(views.begin(), views.end(), next);
    if (!twin) {
      op->back(run.projection(next), views.data(), n, Weighting::Fdk);
    } else {
      for (std::size_t done = 0; done < n;) {
        if (!window) {
          window = op->nextWindow();
          windowViews.clear();
        }
        const std::size_t m = std::min(n - done, static_cast<std::size_t>(op->window()) - windowViews.size());
        twin->filter(run.projection(next + done), views.data() + done, m, *window, windowViews.size());
        windowViews.insert(windowViews.end(), views.begin() + done, views.begin() + done + m);
        done += m;
        if (windowViews.size() == static_cast<std::size_t>(op->window())) closeWindow();
      }
    }
    backSeconds += since(t);
  }
  void closeWindow() {
    if (!window) return;
    op->back(*window, windowViews.data(), windowViews.size());
    window = nullptr;
  }

  // The finite check of the block's voxels, where its device finds their largest magnitude in place (a pass over
  // device memory: milliseconds, where the host's scan of a 2048^3 volume took 0.4-0.6 s after the readback). False:
  // the host checks its copy (which names the first bad voxel's place).
  bool checkedOnDevice() {
    const std::optional<float> largest = op->blockLargestMagnitude();
    return largest && std::abs(*largest) <= static_cast<float>(kLargestVoxel);  // NaN fails the comparison too
  }

  // The density-range kill, after the batch that crosses its fraction of the projections (one block).
  void maybeKill() {
    const DensityKill& kill = run.plan.options.densityKill;
    if (!kill.enabled || killed || next < kill.after * run.count || next >= run.count) return;
    closeWindow();
    // Judge voxels by their value so far scaled to the whole scan: a voxel k of N projections in holds about k/N of it.
    op->killOutsideRange(kill.low - kill.margin, kill.high + kill.margin, static_cast<double>(run.count) / next);
    killed = true;
    run.killedAfter = next;
  }

  // Hands over what is ready until `deadline` or projection `until`; false once every block is done.
  bool advance(Clock::time_point deadline, std::size_t until) {
    for (;;) {
      if (!inBlock && !takeBlock()) {
        finishSlabs();
        return false;
      }
      if (next == run.count) {
        finishBlock();
        continue;
      }
      // In read-ahead runs whole batches (their boundaries are where the density kill may come); streaming takes
      // what has arrived, up to a batch.
      std::size_t n = std::min(run.batch, run.count - next);
      if (until > next) n = std::min(n, until - next);
      if (run.store && (!run.slabs || run.ringSlabs)) n = std::min(n, run.store->slots() - next % run.store->slots());  // not across the ring's end
      const bool whole = !run.plan.options.streaming;
      {
        const auto tw = Clock::now();
        std::unique_lock lock(run.mutex);
        const bool arrived = run.waitFor(lock, deadline, [&] { return run.ready() >= next + (whole ? n : 1); });
        waitSeconds += since(tw);
        if (run.failure) std::rethrow_exception(run.failure);
        if (run.cancelled() && !arrived) throw Cancelled("cancelled after " + std::to_string(run.done.load()) + " of " + std::to_string(run.count) + " projections");
        if (!arrived) return true;
        n = std::min(n, run.ready() - next);
      }
      if (next == 0) trace("worker: first projections handed over");
      handOver(n);
      next += n;
      if (run.bands) run.bandHanded = next;  // the dealer deals the next band as this one nears its end
      if (!run.slabs || run.ringSlabs) {
        std::lock_guard lock(run.mutex);
        consumedHere = next;
        run.consumed = run.slabs ? run.consumedByAll() : next;
        run.changed.notify_all();
      }
      maybeKill();
      {
        std::lock_guard lock(run.progressMutex);
        run.done += n;
        run.progressHeard = run.heardDone();
        run.progress.update(run.progressHeard);
      }
      if (until > 0 && run.done >= until) {
        closeWindow();  // the caller looks at the volume here (a snapshot): every projection so far is in it
        return true;
      }
      if (Clock::now() >= deadline) return true;
    }
  }

  // The block's last window, its readback into the sink (the kill's scaling and the region's zeros applied first).
  void finishBlock() {
    inBlock = false;
    closeWindow();
    trace("worker: every projection handed over");
    if (run.bands) run.cluster->finishedOne();  // rank 0's progress line counts it (as it counts its own handed over)
    const FdkPlan& plan = run.plan;
    const auto t = Clock::now();
    record(run.slabs ? "slab " + std::to_string(slab) : "backproject", blockStart, t, waitSeconds - blockWaitBefore);
    const double readbackBefore = op->timings().readback;
    if (!run.slabs) {
      const auto tp = Clock::now();
      float* out = run.sink.wholeVolume();  // asked for only now: its memory may be prepared meanwhile
      pageInWaitSeconds += since(tp);
      std::vector<float> rowsBuffer;
      if (!out) {
        rowsBuffer.resize(plan.grid.voxelCount());
        out = rowsBuffer.data();
      }
      const bool checked = !killed && plan.region.mask.empty() && checkedOnDevice();
      op->readVolume(out);
      trace("worker: volume read back");
      if (killed) {
        // Stopped voxels hold the partial sum of the projections before the kill: scale it to the whole scan.
        const std::vector<std::uint8_t> active = op->activeMask();
        const std::vector<std::uint8_t>* inside = plan.region.mask.empty() ? nullptr : &plan.region.mask;
        const float scale = static_cast<float>(static_cast<double>(run.count) / run.killedAfter);
        for (std::size_t i = 0; i < plan.grid.voxelCount(); ++i)
          if (!active[i] && (!inside || (*inside)[i])) {
            out[i] *= scale;
            ++run.killedVoxels;
          }
      }
      if (!plan.region.mask.empty()) applyRegion(out, plan.region);
      readbackSeconds += op->timings().readback - readbackBefore;
      backSeconds += since(t);
      record("readback", t, Clock::now());
      if (!checked) checkVolume(out, plan.grid.size, run.sink.name(), "");
      trace("worker: volume checked");
      if (!rowsBuffer.empty()) run.sink.writeRows(0, plan.grid.size[1], out);
      return;
    }
    if (plan.slabs.drainBeside && run.sink.hasRowsInPlace() && drainBeside(t)) return;
    if (writing[which].valid()) writing[which].get();  // this buffer's previous slab is out
    const bool checked = blockRegion.mask.empty() && checkedOnDevice();
    if (float* volume = run.sink.rowsInPlace(); volume && op->readBlockInto(volume, plan.grid.size, firstRow)) {
      // Straight into the sink's memory (the volume in memory): no slab buffer to fault in, fill and copy again; the
      // region's zeros and the check (where the device has not checked) follow beside the next slab.
      readbackSeconds += op->timings().readback - readbackBefore;
      backSeconds += since(t);
      record("readback", t, Clock::now());
      if (checked) {
        ++share.slabs;
        return;
      }
      writing[which] = std::async(std::launch::async, [this, volume, first = firstRow, n = rows, mask = std::move(blockRegion.mask)] {
        const auto tc = Clock::now();
        finishRowsInPlace(volume, run.plan.grid.size, first, n, mask, run.sink.name());
        record("check", tc, Clock::now());
      });
      which = 1 - which;
      ++share.slabs;
      return;
    }
    if (!buffers[which]) buffers[which].reset(new float[run.slabCapacity]);  // not zeroed: each readback writes every voxel
    float* buffer = buffers[which].get();
    op->readVolume(buffer);
    readbackSeconds += op->timings().readback - readbackBefore;
    backSeconds += since(t);
    record("readback", t, Clock::now());
    const std::size_t voxels = static_cast<std::size_t>(plan.grid.size[0]) * rows * plan.grid.size[2];
    if (!blockRegion.mask.empty())
      for (std::size_t i = 0; i < voxels; ++i)
        if (!blockRegion.mask[i]) buffer[i] = 0.0f;
    writing[which] = std::async(std::launch::async, [this, buffer, first = firstRow, n = rows, checked] {
      const auto tw = Clock::now();
      struct Recorded {
        Worker& worker;
        Clock::time_point from;
        ~Recorded() { worker.record("write", from, Clock::now()); }
      } recorded{*this, tw};
      if (!checked)
        checkVolume(buffer, {run.plan.grid.size[0], n, run.plan.grid.size[2]}, run.sink.name(),
                    " (rows " + std::to_string(first) + " to " + std::to_string(first + n - 1) + " of y)");
      run.sink.writeRows(first, n, buffer);
    });
    which = 1 - which;
    ++share.slabs;
  }

  // The slab read back into the volume in memory beside the next slab's backprojection (SlabPlan::drainBeside), then
  // its region's zeros and the check where the device has not checked. The worker waits only for the last slab's
  // readback, before this one's can begin (its device buffer is free then): that wait is the readback it shows. The
  // sink's memory is asked for on the readback's thread: the first slabs of two H200s ended at 3.1 s, 0.8 s before a
  // 32 GiB volume in memory was ready (std::vector's zero fill runs on one thread). False where the operator reads
  // back only in line.
  bool drainBeside(Clock::time_point blockEnd) {
    const bool checked = blockRegion.mask.empty() && checkedOnDevice();
    const auto tw = Clock::now();
    if (draining.valid()) draining.get();
    readbackSeconds += since(tw);
    const auto t0 = Clock::now();
    const auto memory = [this] {
      const auto tm = Clock::now();
      float* volume = run.sink.rowsInPlace();
      if (since(tm) > 0.01) record("memory wait", tm, Clock::now());
      return volume;
    };
    std::shared_future<void> copied = op->readBlockIntoBeside(memory, run.plan.grid.size, firstRow);
    if (!copied.valid()) return false;
    backSeconds += since(blockEnd);
    draining = std::async(std::launch::async, [this, copied, t0, checked, first = firstRow, n = rows, mask = std::move(blockRegion.mask)] {
      copied.get();
      record("readback beside", t0, Clock::now());
      if (checked) return;
      const auto tc = Clock::now();
      finishRowsInPlace(run.sink.rowsInPlace(), run.plan.grid.size, first, n, mask, run.sink.name());
      record("check", tc, Clock::now());
    });
    ++share.slabs;
    return true;
  }
  std::future<void> draining;  // the last slab's readback beside the next slab, and its check

  // Every slab written out; what the report wants of the operator kept (it may go before the report is made).
  void finishSlabs() {
    if (finished) return;
    finished = true;
    if (draining.valid()) {
      const auto tw = Clock::now();
      draining.get();
      readbackSeconds += since(tw);
      record("readback wait", tw, Clock::now());
    }
    for (auto& w : writing)
      if (w.valid()) w.get();
    if (run.slabs && share.slabs > 0) share.seconds = since(firstSlabStart);
    uploaded = op->uploadedBytes();
    share.description = op->description();
  }
  bool finished = false;
};

// A device that has not taken its slab yet holds the ring at 0; one whose slab is done, at count. (With no more
// projections than slots, a device may take a second slab before another has begun: the ring then holds them all.)
std::size_t FdkReconstructor::Run::consumedByAll() const {
  std::size_t least = count;
  for (const auto& w : workers) least = std::min(least, w->consumedHere);
  return least;
}

void FdkReconstructor::Run::markFiltered(std::size_t p) {
  filtered[p] = 1;
  while (filteredPrefix < count && filtered[filteredPrefix]) ++filteredPrefix;
  // A source in memory has no reader: its projections are held from the pool's copy into a slot on.
  if (direct) peakHeld = std::max(peakHeld, nextToFilter - std::min(nextToFilter, consumed));
  fillProgressed();
  changed.notify_all();
}

void FdkReconstructor::Run::readChunk(std::size_t first, std::size_t n, const RowBand* rows, ProjectionStore& into) {
  try {
    if (rows)
      source.readRows(first, n, rows + first, into.slot(first));
    else
      source.read(first, n, into.slot(first));
  } catch (const Error&) {
    throw;  // glrecon's sources name the file, the projection and the field
  } catch (const std::exception& e) {
    throw InputError("projections " + std::to_string(first) + " to " + std::to_string(first + n - 1) + " (" + source.origin(first) +
                     "): " + e.what());
  }
}

void FdkReconstructor::Run::startReader() {
  if (direct) {
    if (!bands) read = count;  // bands: as each band is begun (resetFill)
    return;
  }
  reader = std::jthread([this] {
    try {
      // Once; in a cluster's rank, each band in turn (once the one before is filled), only its slab's rows.
      for (std::size_t band = 0;; ++band) {
        std::size_t chunk = std::max<std::size_t>(1, source.chunk());
        const RowBand* rows = nullptr;
        ProjectionStore* into = store.get();
        if (bands) {
          std::unique_lock lock(mutex);
          if (!waitFor(lock, Clock::time_point::max(), [&] { return (filling == band && band < bandsDealt) || (dealtAll && bandsDealt <= band); }) ||
              band >= bandsDealt)
            return;
          // Unchanged until the worker is done with this band: only then is a band dealt over it (dealBand).
          rows = bandAt[band % 2].rows.data();
          into = &bandStore(band);
          // About 64 MiB of rows at once: the source reads a chunk's projections in parallel.
          std::size_t values = 0;
          for (std::size_t p = 0; p < count; ++p) values += static_cast<std::size_t>(std::max(0, rows[p].count));
          const std::size_t perProjection = std::max<std::size_t>(1, values * plan.geometry.detector.nu * sizeof(float) / std::max<std::size_t>(1, count));
          chunk = std::max(chunk, (std::size_t{64} << 20) / perProjection);
        }
        for (std::size_t first = 0; first < count;) {
          std::size_t n = std::min(chunk, count - first);
          {
            std::unique_lock lock(mutex);
            // A one-block ring holds at most its slots beyond what the workers consumed.
            if (!waitFor(lock, Clock::time_point::max(), [&] { return first < consumed + ringRoom(); })) return;
            n = std::min({n, consumed + ringRoom() - first, into->slots() - first % into->slots()});
          }
          const auto t = Clock::now();
          readChunk(first, n, rows, *into);
          std::lock_guard lock(mutex);
          readSeconds += since(t);
          double values = 0;
          for (std::size_t p = first; p < first + n; ++p) values += rows ? static_cast<double>(rows[p].count) * plan.geometry.detector.nu : pixels;
          bytesRead += values * sizeof(float);
          lastRead = Clock::now();
          read = first + n;
          peakHeld = std::max(peakHeld, read - std::min(read, consumed));
          first += n;
          if (!waitForFiltered) fillProgressed();  // the device twin filters: a band read is filled
          changed.notify_all();
        }
        trace("reader: every projection read");
        if (!bands) return;
      }
    } catch (...) {
      fail(std::current_exception());
    }
  });
}

void FdkReconstructor::Run::resetFill() {
  read = direct ? count : 0;
  filteredPrefix = nextToFilter = 0;
  std::fill(filtered.begin(), filtered.end(), 0);
  fillStarted = Clock::now();
  // From memory with the device twin filtering, a band is filled as soon as it begins.
  fillProgressed();
  changed.notify_all();
}

void FdkReconstructor::Run::fillProgressed() {
  if (!bands || filling >= bandsDealt || (waitForFiltered ? filteredPrefix : read) < count) return;
  lastFillSeconds = since(fillStarted);
  ++filling;
  if (filling < bandsDealt) resetFill();
}

void FdkReconstructor::Run::dealBand(std::size_t band) {
  std::lock_guard dealing(dealMutex);
  {
    std::lock_guard lock(mutex);
    if (bandsDealt > band || dealtAll) return;
  }
  // The request goes to rank 0 and back (outside `mutex`: the pool and the reader go on).
  const std::optional<std::size_t> slab = cluster->next();
  std::vector<RowBand> rows;
  if (slab) {
    const auto [firstRow, slabRows] = plan.slabs.slabs[*slab];
    rows.resize(count);
    for (std::size_t view = 0; view < count; ++view) rows[view] = slabRowBand(plan.geometry, view, plan.grid, firstRow, slabRows);
  }
  std::lock_guard lock(mutex);
  if (!slab) {
    dealtAll = true;
    changed.notify_all();
    return;
  }
  // This store's last band (band - 2) is backprojected: the worker has taken band - 1 (the dealer deals ahead only
  // then, and the worker deals its own band only after finishing the last one).
  if (store) bandStore(band).release();
  bandAt[band % 2] = {*slab, std::move(rows)};
  bandsDealt = band + 1;
  if (filling == band) resetFill();
  changed.notify_all();
}

std::optional<std::size_t> FdkReconstructor::Run::takeBand() {
  const std::size_t band = bandsTaken;  // written by this (the worker's) thread alone
  dealBand(band);
  std::lock_guard lock(mutex);
  if (band >= bandsDealt) return std::nullopt;
  bandsTaken = band + 1;
  bandHanded = 0;
  bandTakenAt = Clock::now();
  changed.notify_all();
  return bandAt[band % 2].slab;
}

// Bands are dealt ahead of the worker: the first at once (read while the devices open), each next one so that its
// rows are read and filtered while the device still backprojects the worker's band, but only once that band is
// filled (the reader is free) and its device nears the band's end: when the time it still needs, at its pace so far,
// is within 1.5 times the last band's filling. A band dealt earlier would wait idle at this rank while another rank,
// done sooner, finds no slab left at the end of the run.
void FdkReconstructor::Run::startDealer() {
  dealer = std::jthread([this] {
    try {
      for (;;) {
        std::size_t ahead = 0;
        {
          std::unique_lock lock(mutex);
          const auto due = [&] {
            if (bandsTaken == 0) return bandsDealt == 0;  // the first band, before the device is ready
            if (bandsDealt != bandsTaken || filling < bandsTaken) return false;
            const std::size_t handed = bandHanded;
            if (handed >= count) return true;
            if (handed == 0) return false;
            return since(bandTakenAt) * static_cast<double>(count - handed) / static_cast<double>(handed) <= 1.5 * lastFillSeconds;
          };
          if (!waitFor(lock, Clock::time_point::max(), [&] { return dealtAll || due(); }) || dealtAll) return;
          ahead = bandsTaken;
        }
        dealBand(ahead);
      }
    } catch (...) {
      fail(std::current_exception());
    }
  });
}

void FdkReconstructor::Run::startFilterPool(int threads) {
  filterThreads = threads;
  const FdkFilter& filter = *plan.filter;
  for (int t = 0; t < threads; ++t)
    filterPool.emplace_back([this, &filter] {
      try {
        for (;;) {
          std::size_t p;
          RowBand band;
          float* slot;
          {
            std::unique_lock lock(mutex);
            // In order; from a source in memory, into the ring's slots (never more than it holds ahead). A cluster's
            // rank filters each band's rows in turn, until no band is left.
            const auto bandsOver = [&] { return dealtAll && filling >= bandsDealt; };
            if (!waitFor(lock, Clock::time_point::max(), [&] {
                  if (bands) return bandsOver() || nextToFilter < read;
                  return nextToFilter >= count || (nextToFilter < read && nextToFilter < consumed + ringRoom());
                }))
              return;
            if (bands ? nextToFilter >= read : nextToFilter >= count) return;
            p = nextToFilter++;
            if (bands) band = bandAt[filling % 2].rows[p];
            slot = bands ? bandStore(filling).slot(p) : slotOf(p);
          }
          const auto t0 = Clock::now();
          if (bands) {
            const std::size_t begin = static_cast<std::size_t>(band.first) * plan.geometry.detector.nu;
            if (direct) std::copy_n(direct + p * pixels + begin, static_cast<std::size_t>(band.count) * plan.geometry.detector.nu, slot + begin);
            filter.applyRows(p, slot, band.first, band.count);
          } else {
            if (direct) std::copy_n(direct + p * pixels, pixels, slot);
            filter.apply(p, slot);
          }
          std::lock_guard lock(mutex);
          filterBusy += since(t0);
          markFiltered(p);
        }
      } catch (...) {
        fail(std::current_exception());
      }
    });
}

// ---- FdkReconstructor ----

FdkReconstructor::FdkReconstructor(const FdkPlan& plan, gl::Context* context) : plan_(plan), context_(context) {}

FdkReconstructor::FdkReconstructor(const FdkPlan& plan, ConeBeamOperator& op) : plan_(plan), first_(&op) {
  if (!plan_.slabs.slabs.empty() || plan_.devices.size() > 1)
    throw std::logic_error("FdkReconstructor: a given operator reconstructs one block on one device");
}

FdkReconstructor::~FdkReconstructor() {
  if (run_) cancel();
}

namespace {
OperatorOptions operatorOptionsOf(const FdkPlan& plan, int device, gl::Context* context, int threads) {
  OperatorOptions o;
  o.threads = threads;
  o.device = device;
  o.window = plan.options.window;
  o.rememberWindow = plan.options.rememberWindow;
  o.retune = plan.options.retune;
  o.substackStencil = plan.options.substackStencil;
  o.blockRows = plan.slabs.rowsPerSlab;
  o.drainBeside = plan.slabs.drainBeside;
  o.context = context;
  return o;
}

int operatorThreads(const FdkPlan& plan) {
  // Devices share the CPU's threads for their host copies; the cpu backend takes them all. (All of them for each
  // device was no faster on two H200s at 2048^3, slower at 1024^3: the devices read back at once, and the copies are
  // bound by the host's memory, 50-55 GB/s there with one device or two.)
  const int threads = resolveThreadCount(plan.options.threads);
  return plan.backend == Backend::Cpu ? plan.options.threads : std::max(1, threads / static_cast<int>(plan.devices.size()));
}
}  // namespace

// Made at the first start() (after its reader has begun: the file is read while the device opens), or when a viewer
// asks for it first.
ConeBeamOperator& FdkReconstructor::firstOperator() {
  if (first_) return *first_;
  const double waitedBefore = plan_.session->waitedSeconds();
  const auto t = Clock::now();
  // The run's GL context for the first device: the caller's (a viewer's window), or the session's (the plan's queries
  // made it, or it was opened beside the reading).
  const bool gl = plan_.backend != Backend::Cpu && plan_.backend != Backend::Cuda;
  gl::Context* context = context_;
  if (gl && !context) context = &plan_.session->glContext(plan_.devices.front());
  if (plan_.backend == Backend::Cuda) plan_.session->openCuda(plan_.devices.front());
  owned_ = makeOperator(plan_.backend, plan_.geometry, plan_.grid, operatorOptionsOf(plan_, plan_.devices.front(), context, operatorThreads(plan_)));
  first_ = owned_.get();
  // The time waiting for the device's opening is the session's to report (the GPU's start), not the setup's.
  setupSeconds_ = since(t) - (plan_.session->waitedSeconds() - waitedBefore);
  return *first_;
}

std::size_t FdkReconstructor::done() const { return run_ ? run_->done.load() : 0; }

void FdkReconstructor::start(ProjectionSource& source, VolumeSink& sink, const std::atomic<bool>* cancelFlag) {
  if (run_) throw std::logic_error("FdkReconstructor::start: a run is already going");
  spent_.reset();
  const FdkPlan& plan = plan_;
  if (source.count() != plan.projections) throw std::logic_error("FdkReconstructor::start: a source of another plan");
  std::string label = std::string(plan.options.streaming ? "stream (" : "fdk (") + backendInfo(plan.backend).name;
  if (!plan.slabs.slabs.empty())
    label += ", " + std::to_string(plan.slabs.slabs.size()) + (plan.slabs.slabs.size() == 1 ? " slab" : " slabs") +
             (plan.devices.size() > 1 ? " on " + std::to_string(plan.devices.size()) + " devices" : "");
  run_ = std::make_unique<Run>(plan, source, sink, cancelFlag, label + ")");
  try {
    begin(source, sink);
  } catch (...) {
    cancel();
    throw;
  }
}

void FdkReconstructor::begin(ProjectionSource& source, VolumeSink& sink) {
  const FdkPlan& plan = plan_;
  Run& run = *run_;
  if (run.slabs)
    sink.beginRows();
  else
    sink.beginWholeVolume();

  // Storage: none where the source is in memory and the device filters it; every projection for slabs (each slab
  // reads each projection), unless each device has one slab (ringSlabs); for one block, the stream's queue, or in
  // read-ahead (one block, one slab per device) a ring of 4 batches, and up to 1 GiB where a source is read (a file
  // is then read while the device opens and starts).
  const auto makeStore = [&] {
    std::size_t slots = run.count;
    if (!run.slabs && plan.options.streaming) slots = std::max<std::size_t>(2, plan.options.queueDepth);
    if ((!run.slabs || run.ringSlabs) && !plan.options.streaming)
      slots = std::max(run.batch * 4, run.direct ? 0 : (std::size_t{1} << 30) / (run.pixels * sizeof(float)));
    run.store = std::make_unique<ProjectionStore>(std::min(slots, run.count), run.pixels, run.slabs && !run.ringSlabs ? plan.options.scratch : "",
                                                  run.bands);
    // A cluster's rank holds two bands at once: the next slab's rows are read while this one's are backprojected.
    if (run.bands) run.spareStore = std::make_unique<ProjectionStore>(run.count, run.pixels, "", true);
  };
  run.direct = source.memory();
  if (!run.direct) {
    makeStore();
    run.startReader();
  }
  trace("scheduler: reader started");
  // A cluster's slabs are dealt from here on (every rank starts its run: a collective), its first one at once: its
  // rows are read while the devices open, as one process reads its first projections meanwhile.
  if (run.bands) {
    run.cluster->deal(plan.slabs.slabs.size());
    run.startDealer();
  }
  // Every device's worker. The others make their operators on threads of their own (a GL context is current on one
  // thread) while the first device's is made here: the devices start together (made one after the other, the second
  // of two H100s began its slab 0.8 s after the first).
  for (std::size_t i = 0; i < plan.devices.size(); ++i) run.workers.push_back(std::make_unique<Run::Worker>(run, i));
  run.slabCapacity = run.slabs ? static_cast<std::size_t>(plan.grid.size[0]) * plan.slabs.rowsPerSlab * plan.grid.size[2] : 0;
  for (std::size_t i = 1; i < plan.devices.size(); ++i) {
    Run::Worker* w = run.workers[i].get();
    run.deviceThreads.emplace_back([w, &run, i] {
      try {
        const auto t = Clock::now();
        w->owned = makeOperator(run.plan.backend, run.plan.geometry, run.plan.grid,
                                operatorOptionsOf(run.plan, run.plan.devices[i], nullptr, operatorThreads(run.plan)));
        w->op = w->owned.get();
        trace(("scheduler: device " + std::to_string(run.plan.devices[i]) + "'s operator made").c_str());
        // Its filter twin is made beside the first device's (made after it, the second of two H200s began its slab
        // 0.2-0.3 s after the first); where the first device's twin declines, this one is dropped below.
        if (run.plan.deviceFilter) {
          DeviceProjections* window = w->op->nextWindow();
          if (window) w->ownedTwin = makeDeviceFdkFilter(*run.plan.filter, run.plan.geometry, *window, run.plan.options.filterOn == FilterPlace::Gpu);
          trace(("scheduler: device " + std::to_string(run.plan.devices[i]) + "'s filter twin " + (w->ownedTwin ? "made" : "declined")).c_str());
        }
        {
          // Where the filter runs is the first device's to find out (its twin may decline).
          std::unique_lock lock(run.mutex);
          if (!run.waitFor(lock, Clock::time_point::max(), [&] { return run.filterDecided; })) return;
        }
        if (run.cpuFilter) {
          w->ownedTwin.reset();
        } else {
          // The plan's budget kept room for the twin's buffers on every device (the smallest free memory, less a margin).
          if (!w->ownedTwin)
            throw InputError(std::string(backendInfo(run.plan.backend).name) + " device " + std::to_string(run.plan.devices[i]) +
                             ": the filter's device buffers do not fit beside its slab (device " + std::to_string(run.plan.devices.front()) +
                             " had room); expected room for both, or " + field("filterOn") + " cpu");
          w->twin = w->ownedTwin.get();
        }
        w->setupSeconds = since(t);
        w->record("setup", t, Clock::now());
        run.deviceSetUp();
        while (w->advance(Clock::time_point::max(), 0)) {
        }
        w->twin = nullptr;
        w->ownedTwin.reset();
        w->op = nullptr;
        w->owned.reset();  // on this thread: its GL context is current here
      } catch (...) {
        run.fail(std::current_exception());
      }
    });
  }
  ConeBeamOperator& firstOp = firstOperator();
  trace("scheduler: operator made");
  // The device twin of the filter, where the plan wants the filter on the device (made once, kept for later runs): it
  // declines where the device has too little memory for its buffers.
  if (plan.deviceFilter && !firstFilterTried_) {
    firstFilterTried_ = true;
    const auto t = Clock::now();
    if (DeviceProjections* window = firstOp.nextWindow())
      firstFilter_ = makeDeviceFdkFilter(*plan.filter, plan.geometry, *window, plan.options.filterOn == FilterPlace::Gpu);
    setupSeconds_ += since(t);
    trace("scheduler: filter's device twin made");
  }
  if (plan.deviceFilter && !firstFilter_ && plan.options.filterOn == FilterPlace::Gpu) throw filterOnGpuRefused(plan.backend, true);
  run.cpuFilter = !firstFilter_;
  run.deviceSetUp();
  // Filtered on the devices: every worker hands raw projections over through its own device's twin, slab after slab
  // (each slab filters every projection again, only the rows of its band: the filter overlaps the backprojection,
  // about 0.1 s a slab at 2048^3 from 720 x 1024^2 on an H100 when it filtered every row, where filtering every
  // projection into host memory first, on one device, took 1.7-4.5 s before the first slab, bound by the host's
  // memory; the same kernels: the same bits).
  {
    std::lock_guard lock(run.mutex);
    run.waitForFiltered = run.cpuFilter;
    run.fillProgressed();  // a band read before the twin was known to filter is filled
  }
  if (run.direct) {
    if (run.cpuFilter) makeStore();
    run.startReader();
  }
  {
    // The other devices' workers go on from here: the store and the reader are in place.
    std::lock_guard lock(run.mutex);
    run.filterDecided = true;
    run.changed.notify_all();
  }
  if (usedBefore_ && !run.slabs) firstOp.reset();  // a later run on the same operator starts from zero
  usedBefore_ = true;
  const int threads = resolveThreadCount(plan.options.threads);
  if (run.cpuFilter) {
    // Threads that feed a GPU need a core of their own.
    const int pool = plan.options.filterThreads > 0 ? plan.options.filterThreads
                     : plan.backend == Backend::Cpu ? threads
                                                    : std::max(1, threads - static_cast<int>(plan.devices.size()));
    run.startFilterPool(pool);
  }

  Run::Worker* first = run.workers[0].get();
  first->op = first_;
  first->setupSeconds = setupSeconds_;
  if (setupSeconds_ > 0) first->record("setup", run.started, run.started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(setupSeconds_)));
  first->twin = firstFilter_.get();

}

bool FdkReconstructor::step(std::chrono::milliseconds budget, std::size_t until) {
  if (!run_) throw std::logic_error("FdkReconstructor::step: no run started");
  Run& run = *run_;
  try {
    const bool more = run.workers[0]->advance(Clock::now() + budget, until);
    if (more) return true;
    // The first worker is done: wait for the others (slabs; a cluster's rank has one worker, and its share of the slabs).
    std::unique_lock lock(run.mutex);
    while (!run.bands && run.done < run.count * std::max<std::size_t>(1, run.plan.slabs.slabs.size()) && !run.failure && !run.cancelled())
      run.changed.wait_for(lock, std::chrono::milliseconds(50));
    if (run.failure) std::rethrow_exception(run.failure);
    return false;
  } catch (...) {
    run.fail(std::current_exception());
    throw;
  }
}

namespace {
// Every rank's share of a cluster's run, on rank 0 (a collective: after it returns on rank 0, every rank has written its
// slabs).
std::vector<RankShare> gatherRankShares(Cluster& cluster, const FdkReport& report, const DeviceShare& own) {
  std::ostringstream mine;
  mine.precision(17);
  mine << own.slabs << ' ' << report.totalSeconds << ' ' << report.backprojectSeconds << ' ' << report.readSeconds << ' '
       << report.bytesRead << '\t' << cluster.host() << '\t' << own.description << '\t';
  for (const DeviceSpan& span : own.timeline) mine << span.what << '|' << span.start << '|' << span.end << '|' << span.waited << ';';
  std::vector<RankShare> shares;
  const std::vector<std::string> all = cluster.gather(mine.str());
  for (std::size_t r = 0; r < all.size(); ++r) {
    RankShare share;
    share.rank = static_cast<int>(r);
    std::istringstream in(all[r]);
    in >> share.slabs >> share.seconds >> share.busySeconds >> share.readSeconds >> share.bytesRead;
    in.ignore(1);
    std::getline(in, share.host, '\t');
    std::getline(in, share.description, '\t');
    for (std::string span; std::getline(in, span, ';');) {
      std::istringstream fields(span);
      DeviceSpan s;
      std::string number;
      std::getline(fields, s.what, '|');
      std::getline(fields, number, '|');
      s.start = std::stod(number);
      std::getline(fields, number, '|');
      s.end = std::stod(number);
      std::getline(fields, number, '|');
      s.waited = std::stod(number);
      share.timeline.push_back(std::move(s));
    }
    shares.push_back(share);
  }
  return shares;
}
}  // namespace

FdkReport FdkReconstructor::finish() {
  if (!run_) throw std::logic_error("FdkReconstructor::finish: no run started");
  Run& run = *run_;
  {
    std::lock_guard lock(run.mutex);
    run.stop = true;
    run.changed.notify_all();
  }
  run.deviceThreads.clear();  // joins
  run.filterPool.clear();
  run.reader = {};
  run.dealer = {};
  std::unique_ptr<Run> ended = std::move(run_);
  if (ended->failure) std::rethrow_exception(ended->failure);
  for (auto& w : ended->workers) w->finishSlabs();
  // Rank 0's progress line goes on while the other ranks finish their last slabs (each reports them as it finishes:
  // Cluster::finishedOne), instead of standing still until the final line.
  if (ended->bands && ended->progress.enabled()) {
    const std::size_t all = plan_.slabs.slabs.size() * ended->count;
    for (;;) {
      const std::size_t heard = ended->heardDone();
      if (heard != ended->progressHeard) ended->progress.update(heard);  // the workers are joined: no lock needed
      ended->progressHeard = heard;
      if (heard >= all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ended->progress.finish();

  const FdkPlan& plan = plan_;
  FdkReport report;
  report.autoNote = plan.autoNote;
  report.shortScan = plan.filter->isShortScan();
  report.readSeconds = ended->readSeconds;
  report.peakQueued = ended->peakHeld;
  report.filteredOnGpu = firstFilter_ != nullptr;
  report.filterSeconds = ended->filterThreads > 0 ? ended->filterBusy / ended->filterThreads : 0.0;
  for (const auto& w : ended->workers) {
    report.backprojectSeconds = std::max(report.backprojectSeconds, w->backSeconds);
    report.readbackSeconds = std::max(report.readbackSeconds, w->readbackSeconds);
    report.setupSeconds = std::max(report.setupSeconds, w->setupSeconds);
    report.filterWaitSeconds = std::max(report.filterWaitSeconds, w->waitSeconds);
    report.pageInWaitSeconds = std::max(report.pageInWaitSeconds, w->pageInWaitSeconds);
    report.uploadedBytes += w->uploaded;
    {
      std::lock_guard lock(w->spansMutex);
      std::sort(w->share.timeline.begin(), w->share.timeline.end(), [](const DeviceSpan& a, const DeviceSpan& b) { return a.start < b.start; });
    }
    if (plan.slabs.slabs.empty()) report.blockTimeline = w->share.timeline;
    if (!plan.slabs.slabs.empty()) {
      DeviceShare share = w->share;
      share.gpu = plan.devices[w->index];
      report.devices.push_back(share);
    }
  }
  report.backend = first_->description() + (plan.devices.size() > 1 ? " (+" + std::to_string(plan.devices.size() - 1) + " more)" : "");
  report.culledFraction = first_->culledFraction();
  if (!plan.region.mask.empty()) {
    report.region = plan.region.description;
    report.regionVoxels = plan.region.insideCount();
  } else if (plan.options.densityKill.enabled) {
    report.region = "whole volume";
    report.regionVoxels = plan.grid.voxelCount();
  }
  report.killedVoxels = ended->killedVoxels;
  report.killedAfter = ended->killedAfter;
  report.slabs = plan.slabs.slabs.empty() ? 1 : static_cast<int>(plan.slabs.slabs.size());
  report.rowsPerSlab = plan.slabs.rowsPerSlab;
  report.slabBudget = plan.slabs.budgetBytes;
  report.wholeUploadBytes = static_cast<double>(plan.projections) * ended->pixels * sizeof(float) * report.slabs;
  report.scratchFile = ended->store && ended->store->inFile();
  report.voxelUpdates = static_cast<double>(plan.grid.voxelCount()) * plan.projections;
  report.latencySeconds = since(ended->lastRead);
  report.totalSeconds = since(ended->started);
  report.bytesRead = ended->bytesRead;
  if (ended->cluster) report.ranks = gatherRankShares(*ended->cluster, report, ended->workers[0]->share);  // a rank has one worker
  setupSeconds_ = 0;  // paid once: later runs reuse the operator
  spent_ = std::move(ended);  // its memory (the projections' ring) released later, not while the caller waits
  return report;
}

void FdkReconstructor::cancel() {
  if (!run_) return;
  {
    std::lock_guard lock(run_->mutex);
    run_->stop = true;
    run_->changed.notify_all();
  }
  run_->deviceThreads.clear();
  run_->filterPool.clear();
  run_->reader = {};
  run_->dealer = {};
  for (auto& w : run_->workers)
    for (auto& f : w->writing)
      if (f.valid()) f.wait();
  run_.reset();
}

double DeviceShare::backprojectSeconds() const {
  double seconds = 0;
  for (const DeviceSpan& span : timeline)
    if (span.what == "backproject" || span.what.rfind("slab ", 0) == 0) seconds += span.end - span.start - span.waited;
  return seconds;
}

double DeviceShare::busySeconds() const {
  double seconds = 0;
  for (const DeviceSpan& span : timeline)
    if (span.what != "write" && span.what != "check" && span.what != "readback beside" && span.what != "memory wait")
      seconds += span.end - span.start - span.waited;
  return seconds;
}

FdkReport FdkReconstructor::run(ProjectionSource& source, VolumeSink& sink) {
  start(source, sink);
  while (step(std::chrono::milliseconds(1000))) {
  }
  return finish();
}

Image reconstructFdk(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const FdkOptions& options,
                     FdkReport* report) {
  auto source = memorySource(projections, "projections");
  const FdkPlan plan = planFdk(geometry, grid, options, *source);
  ImageSink sink(grid, options.threads);
  FdkReconstructor reconstructor(plan);
  const FdkReport r = reconstructor.run(*source, sink);
  if (report) *report = r;
  return sink.take();
}

}  // namespace glrecon
