// The volume into a file (glrecon/io.h): mapped and paged in beside the run, so the one-block readback (and a slab
// run's, where the operator reads slabs in place) lands in the page cache directly; or, where the file cannot be
// mapped, into memory paged in meanwhile, written at commit(); a slab run's rows otherwise at their offsets as they come.
#include <chrono>
#include <future>
#include <mutex>

#include "glrecon/io.h"
#include "glrecon/parallel.h"

namespace glrecon {

struct VolumeFileSink::Fallback {
  Image image;
  std::future<void> making;
  std::mutex mutex;
  float* get() {
    std::lock_guard lock(mutex);
    if (making.valid()) making.get();
    return image.data.data();
  }
};

VolumeFileSink::VolumeFileSink(const std::string& path, const VolumeGrid& grid, bool overwrite, int threads, bool mapped, bool othersWrite)
    : path_(path), grid_(grid), threads_(threads), writer_(path, grid, overwrite) {
  // Mapped pages are bounded by the writeback threshold (preparePages); memory for an unmapped volume is claimed
  // only once the plan has checked it fits (beginWholeVolume). A file in memory is mapped for a cluster's rank 0
  // whatever its ranks' hosts, one on disk where they all share this host (`mapped`); where other ranks write
  // (`othersWrite`, and always in memory) its pages are populated without being written. Pages in memory cost
  // allocation and zeroing, not a disk: 8 threads (4 on disk, where the disk bounds what follows).
  if (mapped || writer_.inMemory()) writer_.preparePages(writer_.inMemory() ? 8 : 4, othersWrite);
}

VolumeFileSink::VolumeFileSink(const std::string& path, const VolumeGrid& grid, const VolumeFileWriter::JoinedFile& joined)
    : path_(path), grid_(grid), threads_(1), writer_(path, grid, joined) {}

VolumeFileSink::~VolumeFileSink() {
  if (fallback_ && fallback_->making.valid()) fallback_->making.wait();
}

void VolumeFileSink::startFallback() {
  fallback_ = std::make_unique<Fallback>();
  Fallback& f = *fallback_;
  f.making = std::async(std::launch::async, [&f, grid = grid_, threads = threads_] {
    f.image = Image(grid.size, {grid.spacing.x, grid.spacing.y, grid.spacing.z}, {grid.origin.x, grid.origin.y, grid.origin.z});
    (void)threads;
  });
}

void VolumeFileSink::beginWholeVolume() {
  if (!writer_.mapped() && !fallback_) startFallback();
}

float* VolumeFileSink::wholeVolume() {
  if (float* mapped = writer_.mappedVolume()) return mapped;
  if (!fallback_) startFallback();
  return fallback_->get();
}

// A mapped file (on disk at most a sixteenth of the host's memory, in memory any size: preparePages) stays mapped for a slab run too: the slabs
// can be read back straight into its pages (rowsInPlace), as the one-block readback is.
void VolumeFileSink::beginRows() { fallback_.reset(); }

float* VolumeFileSink::rowsInPlace() { return writer_.mappedVolume(); }

void VolumeFileSink::writeRows(int firstRow, int rows, const float* data) { writer_.writeRows(firstRow, rows, data); }

double VolumeFileSink::commit() {
  const auto start = std::chrono::steady_clock::now();
  if (fallback_) writer_.writeVolume(fallback_->get(), threads_);
  writer_.commit();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const float* VolumeFileSink::volume() {
  if (fallback_) return fallback_->get();
  return writer_.mappedVolume();
}

}  // namespace glrecon
