#include "glrecon/stream.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"
#include "recon/device_filter_scope.h"

namespace glrecon {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Item {
  std::size_t index = 0;
  std::vector<float> data;
};

class FileSource final : public ProjectionSource {
 public:
  explicit FileSource(std::vector<std::string> files) : files_(std::move(files)) {
    if (files_.empty()) throw InputError("projections: no files");
    // The first file gives the layout; a single stack is kept, so it is read once.
    Image first = readImage(files_[0]);
    detector_ = detectorLayoutOf(first);
    if (files_.size() == 1) {
      stack_ = std::move(first);
      count_ = static_cast<std::size_t>(stack_.size[2]);
    } else {
      count_ = files_.size();
    }
  }
  std::size_t count() const override { return count_; }
  DetectorLayout detector() const override { return detector_; }
  std::string origin(std::size_t index) const override { return files_.size() == 1 ? files_[0] : files_[index]; }
  void read(std::size_t index, float* out) override {
    const std::size_t pixels = static_cast<std::size_t>(detector_.nu) * detector_.nv;
    const Image* image = &stack_;
    Image one;
    if (files_.size() > 1) {
      one = readImage(files_[index]);
      if (one.size[0] != detector_.nu || one.size[1] != detector_.nv || one.size[2] != 1)
        throwInputError(files_[index], "DimSize", std::to_string(detector_.nu) + " " + std::to_string(detector_.nv) + " 1",
                        std::to_string(one.size[0]) + " " + std::to_string(one.size[1]) + " " + std::to_string(one.size[2]));
      image = &one;
    }
    const float* src = files_.size() > 1 ? image->data.data() : image->slice(static_cast<int>(index));
    for (std::size_t i = 0; i < pixels; ++i) {
      if (!std::isfinite(src[i]))
        throwInputError(origin(index), "projection " + std::to_string(index) + " pixel " + std::to_string(i), "a finite value",
                        std::isnan(src[i]) ? "NaN" : "infinity");
      out[i] = src[i];
    }
  }

 private:
  std::vector<std::string> files_;
  DetectorLayout detector_;
  Image stack_;
  std::size_t count_ = 0;
};

class ScannerSource final : public ProjectionSource {
 public:
  ScannerSource(const Phantom& phantom, const Geometry& geometry, double rate, int threads)
      : phantom_(phantom), geometry_(geometry), rate_(rate), threads_(threads) {}
  std::size_t count() const override { return geometry_.size(); }
  DetectorLayout detector() const override { return geometry_.detector; }
  std::string origin(std::size_t index) const override { return "simulated scanner, projection " + std::to_string(index); }
  void read(std::size_t index, float* out) override {
    if (index == 0) start_ = std::chrono::steady_clock::now();
    Geometry one;
    one.detector = geometry_.detector;
    one.views = {geometry_.views[index]};
    ProjectionOptions options;
    options.threads = threads_;
    const Image projection = projectPhantom(phantom_, one, options);
    std::copy(projection.data.begin(), projection.data.end(), out);
    // A detector delivers at its frame rate, not faster.
    if (rate_ > 0) std::this_thread::sleep_until(start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                              std::chrono::duration<double>(index / rate_)));
  }

 private:
  const Phantom& phantom_;
  const Geometry& geometry_;
  double rate_;
  int threads_;
  std::chrono::steady_clock::time_point start_;
};

// The shared state of one stream: the two bounded stages, the first error, cancellation.
struct Stream {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Item> raw;                  // reader -> filters
  std::map<std::size_t, Item> filtered;  // filters -> consumer, by index
  std::size_t nextConsume = 0;  // the next projection the backprojector takes
  std::size_t filtering = 0;  // taken by a filter thread, not yet filed: held too
  bool readerFinished = false, stop = false;
  std::exception_ptr error;
  std::size_t depth = 16, peak = 0;

  void fail(std::exception_ptr e) {
    std::lock_guard lock(mutex);
    if (!error) error = e;
    stop = true;
    changed.notify_all();
  }
  // Everything between the reader and the consumer; only the reader adds to it, so checking before a read
  // bounds it.
  std::size_t held() const { return raw.size() + filtering + filtered.size(); }
};

}  // namespace

std::unique_ptr<ProjectionSource> openProjectionFiles(const std::vector<std::string>& files) {
  return std::make_unique<FileSource>(files);
}

std::unique_ptr<ProjectionSource> simulatedScanner(const Phantom& phantom, const Geometry& geometry, double rate, int threads) {
  return std::make_unique<ScannerSource>(phantom, geometry, rate, threads);
}

Image reconstructStreaming(ProjectionSource& source, const Geometry& geometry, const VolumeGrid& grid, const StreamOptions& options,
                           StreamReport* report, ConeBeamOperator* external) {
  const auto start = std::chrono::steady_clock::now();
  geometry.validate("stream");
  grid.validate("stream");
  geometry.checkVolumeInFront(grid, "stream");
  const std::size_t count = geometry.size();
  if (source.count() != count)
    throwInputError(source.origin(0), "number of projections", std::to_string(count) + " (one per projection of the geometry)",
                    std::to_string(source.count()));
  const FdkFilter filter(geometry, options.fdk.filter);
  StreamReport local;
  local.shortScan = filter.isShortScan();
  std::unique_ptr<ConeBeamOperator> owned;
  ConeBeamOperator* backprojector = external;
  if (!backprojector) {
    owned = makeOperator(chooseBackend(options.fdk, &local.autoNote), geometry, grid, operatorOptions(options.fdk));
    backprojector = owned.get();
  }
  RegionOfInterest region;
  if (!options.fdk.roi.empty()) {
    region = makeRegionOfInterest(options.fdk.roi, geometry, grid);
    local.region = region.description;
    local.regionVoxels = region.insideCount();
    backprojector->setRegion(region);
  }

  // The filter on the GPU where the batch path would put it (FilterPlace::Auto: not on a software renderer, not the
  // cpu backend): the pool then only hands raw projections on, in order, and the backprojector filters each window.
  const detail::DeviceFilterScope deviceFilter(filter, *backprojector, options.fdk.filterOn);
  local.filteredOnGpu = deviceFilter.active();
  const std::size_t pixels = static_cast<std::size_t>(geometry.detector.nu) * geometry.detector.nv;
  Stream s;
  s.depth = std::max<std::size_t>(2, options.queueDepth);
  const auto cancelled = [&] { return s.stop || (options.cancel && options.cancel->load()); };
  // Waits until `ready` or cancellation; polls every 50 ms because an outside cancel flag notifies nobody.
  const auto waitFor = [&](std::unique_lock<std::mutex>& lock, const auto& ready) {
    while (!cancelled() && !ready()) s.changed.wait_for(lock, std::chrono::milliseconds(50));
  };
  std::chrono::steady_clock::time_point lastRead;

  // Reader: in acquisition order, waiting while the stages hold `depth` projections.
  std::jthread reader([&] {
    try {
      for (std::size_t i = 0; i < count; ++i) {
        {
          std::unique_lock lock(s.mutex);
          waitFor(lock, [&] { return s.held() < s.depth; });
          if (cancelled()) return;
        }
        Item item{i, std::vector<float>(pixels)};
        const auto t = std::chrono::steady_clock::now();
        try {
          source.read(i, item.data.data());
        } catch (const std::exception& e) {
          throw InputError("projection " + std::to_string(i) + " (" + source.origin(i) + "): " + e.what());
        }
        std::lock_guard lock(s.mutex);
        local.readSeconds += since(t);
        lastRead = std::chrono::steady_clock::now();
        s.raw.push_back(std::move(item));
        s.peak = std::max(s.peak, s.held());
        s.changed.notify_all();
      }
      std::lock_guard lock(s.mutex);
      s.readerFinished = true;
      s.changed.notify_all();
    } catch (...) {
      s.fail(std::current_exception());
    }
  });

  // Filter pool: takes the oldest raw projection, filters it, files it by index.
  const int filterThreads = deviceFilter.active() ? 1 : resolveThreadCount(options.filterThreads);
  std::vector<std::jthread> filters;
  for (int t = 0; t < filterThreads; ++t)
    filters.emplace_back([&] {
      try {
        for (;;) {
          Item item;
          {
            std::unique_lock lock(s.mutex);
            waitFor(lock, [&] { return !s.raw.empty() || s.readerFinished; });
            if (cancelled() || (s.raw.empty() && s.readerFinished)) return;
            item = std::move(s.raw.front());
            s.raw.pop_front();
            ++s.filtering;
          }
          const auto t = std::chrono::steady_clock::now();
          if (!deviceFilter.active()) filter.apply(item.index, item.data.data());
          const double seconds = since(t);
          std::lock_guard lock(s.mutex);
          local.filterSeconds += seconds;  // summed over the pool's threads
          --s.filtering;
          s.filtered.emplace(item.index, std::move(item));
          s.changed.notify_all();
        }
      } catch (...) {
        s.fail(std::current_exception());
      }
    });

  // Consumer (this thread, the GL thread): backprojects in order, in batches of what is ready.
  Progress progress(std::string("stream (") + backendInfo(backprojector->backend()).name + ")", count, "proj", options.fdk.progress);
  const std::size_t batch = std::max<std::size_t>(1, options.fdk.batch);
  std::vector<float> buffer;
  std::vector<std::size_t> views;
  try {
    while (s.nextConsume < count) {
      buffer.clear();
      views.clear();
      {
        const auto wait = std::chrono::steady_clock::now();
        std::unique_lock lock(s.mutex);
        waitFor(lock, [&] { return s.filtered.count(s.nextConsume) > 0; });
        local.uploadWaitSeconds += since(wait);
        if (s.error) std::rethrow_exception(s.error);
        if (cancelled()) throw StreamCancelled("stream cancelled after " + std::to_string(s.nextConsume) + " of " + std::to_string(count) + " projections");
        while (views.size() < batch && s.filtered.count(s.nextConsume) &&
               !(options.batchBoundary && !views.empty() && s.nextConsume % options.batchBoundary == 0)) {
          auto node = s.filtered.extract(s.nextConsume);
          buffer.insert(buffer.end(), node.mapped().data.begin(), node.mapped().data.end());
          views.push_back(s.nextConsume++);
        }
        s.changed.notify_all();  // room for the reader
      }
      const auto t = std::chrono::steady_clock::now();
      backprojector->back(buffer.data(), views.data(), views.size(), Weighting::Fdk);
      local.backprojectSeconds += since(t);
      progress.update(s.nextConsume);
      if (options.onBatch) options.onBatch(s.nextConsume, *backprojector);
    }
  } catch (...) {
    s.fail(std::current_exception());
    reader.join();
    for (auto& f : filters) f.join();
    std::rethrow_exception(s.error ? s.error : std::current_exception());
  }
  reader.join();
  for (auto& f : filters) f.join();
  const auto t = std::chrono::steady_clock::now();
  Image volume(grid);
  backprojector->readVolume(volume.data.data());
  local.backprojectSeconds += since(t);
  if (!region.mask.empty()) applyRegion(volume, region);
  progress.finish();
  local.latencySeconds = since(lastRead);
  local.backend = backprojector->description();
  local.culledFraction = backprojector->culledFraction();
  local.voxelUpdates = static_cast<double>(grid.voxelCount()) * count;
  local.totalSeconds = since(start);
  local.peakQueued = s.peak;
  if (report) *report = local;
  return volume;
}

}  // namespace glrecon
