// A float32 volume written slab by slab (see VolumeFileWriter in glrecon/io.h). MetaImage and the TIFF
// writer both store a header, then the voxels contiguous with x fastest, then y, then z: a slab of y rows is
// nz runs of nx * rows floats, each written with pwrite at its own offset (threads may write slabs at once).
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/parallel.h"
#include "headers.h"
#include "posix_file.h"

namespace fs = std::filesystem;

namespace glrecon {

namespace {
void writeAll(int fd, const void* data, std::size_t bytes, off_t offset, const std::string& target) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t written = ::pwrite(fd, p, bytes, offset);
    if (written < 0) {
      if (errno == EINTR) continue;
      throwInputError(target, "output", "a writable file with enough space", std::strerror(errno));
    }
    p += written;
    offset += written;
    bytes -= static_cast<std::size_t>(written);
  }
}

// A file in memory (tmpfs: /dev/shm, often /tmp): no disk behind its pages, so no writeback to bound a mapping's size;
// and its writes serialise on the file's lock (pwrite from 32 threads into one 32 GiB file ran at 2.4-2.9 GB/s on a
// GPU host, as one thread does), where page faults through a mapping do not.
bool onMemoryFileSystem(int fd) {
  struct statfs info{};
  return ::fstatfs(fd, &info) == 0 && static_cast<unsigned long>(info.f_type) == TMPFS_MAGIC;
}

// Pages [begin, end) of a shared mapping made writable and present, as a write would: an error (ENOMEM, EFAULT: the
// file system is full) where a write through the mapping would be a SIGBUS. 0, or the errno. Kernels before 5.14
// (EINVAL) reserve the range with fallocate instead, one thread at a time behind the file's lock.
int populate(int fd, char* base, std::uint64_t begin, std::uint64_t end) {
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t first = begin / page * page;
  if (::madvise(base + first, end - first, MADV_POPULATE_WRITE) == 0) return 0;
  if (errno != EINVAL) return errno;
  return ::fallocate(fd, 0, static_cast<off_t>(first), static_cast<off_t>(end - first)) == 0 ? 0 : errno;
}

// What a failed populate() found: EFAULT is how the kernel reports a page it could not allocate (the file system's size
// limit), which strerror calls "Bad address".
std::string populateFailure(int error) {
  return error == EFAULT || error == ENOSPC ? "the file system full (its size limit reached)" : std::strerror(error);
}

// A file without room for its `bytes` (in memory; or on disk, found as its pages were populated for other ranks): before
// the run (the free room `found`), or as its pages were populated.
[[noreturn]] void throwNoRoom(const std::string& path, std::uint64_t bytes, const std::string& found, bool inMemory = true) {
  throwInputError(path, "output", "room for " + std::to_string(bytes) + " bytes in its file system" + (inMemory ? " (in memory)" : ""), found);
}
}  // namespace

namespace {
// The header a volume file of `path`'s format starts with (or, for .mhd, its own file), and the data file's path.
std::string volumeHeader(const std::string& path, const VolumeGrid& grid, std::string& dataPath) {
  const std::array<double, 3> spacing{grid.spacing.x, grid.spacing.y, grid.spacing.z}, origin{grid.origin.x, grid.origin.y, grid.origin.z};
  dataPath = path;
  if (isTiffPath(path)) return tiffHeader(path, grid.size, spacing, origin);
  checkMetaImageName(path);
  if (!isDetachedMetaImage(path)) return metaImageHeader(grid.size, spacing, origin, "LOCAL");
  dataPath = fs::path(path).replace_extension(".raw").string();
  return metaImageHeader(grid.size, spacing, origin, fs::path(dataPath).filename().string());
}
}  // namespace

VolumeFileWriter::VolumeFileWriter(const std::string& path, const VolumeGrid& grid, const JoinedFile& joined) : path_(path), size_(grid.size) {
  std::string dataPath;
  const std::string header = volumeHeader(path, grid, dataPath);
  dataOffset_ = dataPath != path ? 0 : header.size();
  // Made, sized and headed by rank 0; this rank writes its rows into it.
  fd_ = ::open(joined.temporaryData.c_str(), O_RDWR | O_CLOEXEC);  // read too: a file in memory is written through a mapping
  if (fd_ < 0) throwInputError(path, "output", "the file rank 0 made (" + joined.temporaryData + ") on a file system every rank shares", std::strerror(errno));
  inMemory_ = onMemoryFileSystem(fd_);
  // This rank removes it too where it fails (its writer goes without commit(): the job ends) or a signal ends it: left
  // to rank 0's removal on the signal MPI_Abort sends, the file stayed under load about once in 20 runs (rank 0 likely
  // killed before its handler ran; ClusterCli.ARankThatFailsMidRunStopsTheJobAndLeavesNoFile).
  joinedSlot_ = registerSharedTemporary(joined.temporaryData, fd_);
}

const std::string& VolumeFileWriter::temporaryData() const { return data_->temporaryPath(); }

VolumeFileWriter::VolumeFileWriter(const std::string& path, const VolumeGrid& grid, bool overwrite) : path_(path), size_(grid.size) {
  std::string dataPath;
  const std::string header = volumeHeader(path, grid, dataPath);
  const std::uint64_t dataBytes = static_cast<std::uint64_t>(grid.voxelCount()) * sizeof(float);
  if (dataPath != path) {
    // .mhd: the header is its own small file; the voxels go to the .raw beside it.
    header_ = std::make_unique<AtomicOutput>(path, overwrite);
    writeFileBytes(path, header_->temporaryPath(), header.data(), header.size());
    data_ = std::make_unique<AtomicOutput>(dataPath, overwrite);
    dataOffset_ = 0;
  } else {
    data_ = std::make_unique<AtomicOutput>(path, overwrite);
    dataOffset_ = header.size();
  }
  // Read and write: preparePages maps it.
  fd_ = openEmptied(data_->temporaryPath(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) throwInputError(path, "output", "a writable file", std::strerror(errno));
  inMemory_ = onMemoryFileSystem(fd_);
  if (dataOffset_ > 0) writeAll(fd_, header.data(), header.size(), 0, path);
  // Sized now: a full disk shows before the reconstruction rather than after it where the file system
  // allocates eagerly; elsewhere the writes below report it.
  if (::ftruncate(fd_, static_cast<off_t>(dataOffset_ + dataBytes)) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    throwInputError(path, "output", "a writable file with room for " + std::to_string(dataOffset_ + dataBytes) + " bytes",
                    std::strerror(error));
  }
}

struct VolumeFileWriter::Mapping {
  char* base = nullptr;
  std::size_t bytes = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> error{0};  // a preparing thread's populate() failed: the file system is full
  std::vector<std::thread> threads;
  std::mutex joining;  // several slab workers ask for the mapping (and writeRows joins) at once
  void join() {
    std::lock_guard lock(joining);
    for (std::thread& t : threads) t.join();
    threads.clear();
  }
  ~Mapping() {
    stop = true;
    join();
    ::munmap(base, bytes);
  }
};

VolumeFileWriter::~VolumeFileWriter() {
  mapping_.reset();
  rowsMapping_.reset();
  if (fd_ >= 0) ::close(fd_);
  if (joinedSlot_ >= 0) removeRegisteredPath(joinedSlot_);  // not committed: the job fails (see the joined constructor)
}

void VolumeFileWriter::preparePages(int threads, bool othersWrite) {
  if (mapping_ || fd_ < 0) return;
  const std::uint64_t total = dataOffset_ + std::uint64_t{4} * size_[0] * size_[1] * size_[2];
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (!inMemory_) {
    // Only while the file stays well under the kernel's background-writeback threshold (10% of memory by default):
    // beyond it the zero pages would be written to disk before the volume replaces them, doubling the disk traffic.
    if (total > static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * page / 16) return;
    if (::fallocate(fd_, 0, 0, static_cast<off_t>(total)) != 0) {
      const int error = errno;
      if (error == ENOSPC || error == EDQUOT || error == EFBIG)
        throwInputError(path_, "output", "a writable file with room for " + std::to_string(total) + " bytes", std::strerror(error));
      return;  // no fallocate here (EOPNOTSUPP): writeVolume falls back to pwrite
    }
  } else {
    // Populating finds a full file system only as it goes: a file larger than the room left is refused now, before
    // the reconstruction, as fallocate refuses it on disk (another writer may still take the room meanwhile: then
    // the pages' population reports it).
    struct statfs room{};
    if (::fstatfs(fd_, &room) == 0) {
      const std::uint64_t free = static_cast<std::uint64_t>(room.f_bavail) * static_cast<std::uint64_t>(room.f_bsize);
      if (free < total)
        throwNoRoom(path_, total, std::to_string(free) + " bytes free");
    }
  }
  mapping_ = mapWhole(total);
  if (!mapping_) return;
  // Each thread brings its share of the voxels' pages into the page cache (never the header's bytes). On disk by a
  // write of one zero per page into the reserved blocks, which the volume overwrites later; in memory, or where other
  // ranks may be writing their rows already, by populate(), which writes nothing (and reports a full file system).
  const int n = std::max(1, threads);
  const std::uint64_t share = ((total - dataOffset_) / n + page - 1) / page * page;
  for (int t = 0; t < n; ++t) {
    const std::uint64_t begin = dataOffset_ + t * share, end = std::min(total, begin + share);
    if (begin >= end) break;
    mapping_->threads.emplace_back([m = mapping_.get(), begin, end, page, fd = fd_, untouched = inMemory_ || othersWrite] {
      if (untouched) {
        const std::uint64_t piece = std::uint64_t{64} << 20;  // pieces, so that an abandoned writer stops soon
        for (std::uint64_t at = begin; at < end && !m->stop.load(std::memory_order_relaxed); at += piece)
          if (const int error = populate(fd, m->base, at, std::min(end, at + piece))) {
            m->error = error;
            return;
          }
        return;
      }
      volatile char* bytes = m->base;
      for (std::uint64_t at = begin; at < end && !m->stop.load(std::memory_order_relaxed); at = (at / page + 1) * page) bytes[at] = 0;
    });
  }
}

std::unique_ptr<VolumeFileWriter::Mapping> VolumeFileWriter::mapWhole(std::uint64_t total) {
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base == MAP_FAILED) return nullptr;
  auto mapping = std::make_unique<Mapping>();
  mapping->base = static_cast<char*>(base);
  mapping->bytes = total;
  return mapping;
}

void VolumeFileWriter::checkPrepared() {
  mapping_->join();
  if (const int error = mapping_->error.load())
    throwNoRoom(path_, mapping_->bytes, populateFailure(error), inMemory_);  // on disk where other ranks write (othersWrite)
}

float* VolumeFileWriter::mappedVolume() {
  if (!mapping_) return nullptr;
  checkPrepared();
  char* voxels = mapping_->base + dataOffset_;
  if (reinterpret_cast<std::uintptr_t>(voxels) % alignof(float) != 0) return nullptr;
  return reinterpret_cast<float*>(voxels);
}

void VolumeFileWriter::writeVolume(const float* data, int threads) {
  if (!mapping_) {
    writeRows(0, size_[1], data);
    return;
  }
  checkPrepared();
  char* to = mapping_->base + dataOffset_;
  const std::size_t bytes = mapping_->bytes - dataOffset_, block = std::size_t{16} << 20;
  parallelFor((bytes + block - 1) / block, 1, threads, [&](std::size_t b0, std::size_t b1) {
    const std::size_t begin = b0 * block, end = std::min(bytes, b1 * block);
    std::memcpy(to + begin, reinterpret_cast<const char*>(data) + begin, end - begin);
  });
}

void VolumeFileWriter::writeRows(int firstRow, int rows, const float* data) {
  if (firstRow < 0 || rows <= 0 || firstRow + rows > size_[1]) throw std::logic_error("VolumeFileWriter: rows outside the volume");
  const std::size_t nx = size_[0], run = nx * rows * sizeof(float);
  const auto offsetOf = [&](std::size_t k) {
    return dataOffset_ + ((static_cast<std::uint64_t>(k) * size_[1] + firstRow) * nx) * sizeof(float);
  };
  if (inMemory_) {
    // Through a mapping (another rank's writer maps the file at its first rows): the slab workers, and the ranks of a
    // host, copy at once, where pwrite would queue behind the file's lock.
    // A prepared mapping (made before any slab) is the one to write through; else rows get a mapping of their own,
    // made once under the lock, which mappedVolume() never hands out (its pages are populated only as rows come).
    Mapping* mapping = mapping_.get();
    if (mapping) {
      checkPrepared();
    } else {
      std::lock_guard lock(mappingMutex_);
      if (!rowsMapping_) rowsMapping_ = mapWhole(dataOffset_ + std::uint64_t{4} * size_[0] * size_[1] * size_[2]);
      if (!rowsMapping_) throwInputError(path_, "output", "a file that can be mapped", std::strerror(errno));
      mapping = rowsMapping_.get();
    }
    std::atomic<int> failed{0};
    parallelFor(static_cast<std::size_t>(size_[2]), 1, 0, [&](std::size_t k0, std::size_t k1) {
      for (std::size_t k = k0; k < k1 && !failed; ++k) {
        const std::uint64_t offset = offsetOf(k);
        if (const int error = populate(fd_, mapping->base, offset, offset + run)) {
          failed = error;
          return;
        }
        std::memcpy(mapping->base + offset, data + k * nx * rows, run);
      }
    });
    if (failed) throwNoRoom(path_, mapping->bytes, populateFailure(failed));
    return;
  }
  if (mapping_) mapping_->join();  // its threads write a zero into each page they fault in: before the rows, not after
  // A z slice per task on all threads (a 2 GiB slab took 1.3 s into the page cache of an H200 host's disk with it and
  // about as long with one thread on an H100 host: the file system bounds it there, not the copy).
  parallelFor(static_cast<std::size_t>(size_[2]), 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k) writeAll(fd_, data + k * nx * rows, run, static_cast<off_t>(offsetOf(k)), path_);
  });
}

void VolumeFileWriter::commit() {
  if (!data_) {
    // Joined: this rank's rows closed, which is what shows them to rank 0 (NFS sends a file's writes to the server at
    // close; Lustre and GPFS are coherent; ranks of one host share its page cache). Not fdatasync'ed: that wrote back
    // the whole file's pages, every rank's of the host, and rank 0 syncs no part of it either (nor does a one-process run).
    const bool closed = ::close(fd_) == 0;
    fd_ = -1;
    if (!closed) throwInputError(path_, "output", "a writable file with enough space", std::strerror(errno));
    unregisterCleanupPath(std::exchange(joinedSlot_, -1));  // rank 0 renames it once every rank is here
    return;
  }
  // The mapped pages are in the page cache already, the file's: it is complete, closed and renamed now, and the mapping
  // goes with the writer (unmapping half a gigabyte takes tens of milliseconds the output need not wait for). Pages a
  // file in memory could not be given (a full file system) are an error here too, where no rows asked for them.
  if (mapping_) checkPrepared();
  if (::close(fd_) != 0) {
    fd_ = -1;
    throwInputError(path_, "output", "a writable file with enough space", std::strerror(errno));
  }
  fd_ = -1;
  if (header_)
    AtomicOutput::commitPair(*data_, *header_);
  else
    data_->commit();
}

}  // namespace glrecon
