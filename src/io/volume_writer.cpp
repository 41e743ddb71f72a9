// A float32 volume written slab by slab (see VolumeFileWriter in glrecon/io.h). MetaImage and the TIFF
// writer both store a header, then the voxels contiguous with x fastest, then y, then z: a slab of y rows is
// nz runs of nx * rows floats, each written with pwrite at its own offset (threads may write slabs at once).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/parallel.h"
#include "headers.h"

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
  fd_ = ::open(joined.temporaryData.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) throwInputError(path, "output", "the file rank 0 made (" + joined.temporaryData + ") on a file system every rank shares", std::strerror(errno));
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
  fd_ = ::open(data_->temporaryPath().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throwInputError(path, "output", "a writable file", std::strerror(errno));
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
  if (fd_ >= 0) ::close(fd_);
}

void VolumeFileWriter::preparePages(int threads) {
  if (mapping_ || fd_ < 0) return;
  const std::uint64_t total = dataOffset_ + std::uint64_t{4} * size_[0] * size_[1] * size_[2];
  // Only while the file stays well under the kernel's background-writeback threshold (10% of memory by default):
  // beyond it the zero pages would be written to disk before the volume replaces them, doubling the disk traffic.
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (total > static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * page / 16) return;
  if (::fallocate(fd_, 0, 0, static_cast<off_t>(total)) != 0) {
    const int error = errno;
    if (error == ENOSPC || error == EDQUOT || error == EFBIG)
      throwInputError(path_, "output", "a writable file with room for " + std::to_string(total) + " bytes", std::strerror(error));
    return;  // no fallocate here (EOPNOTSUPP): writeVolume falls back to pwrite
  }
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base == MAP_FAILED) return;
  mapping_ = std::make_unique<Mapping>();
  mapping_->base = static_cast<char*>(base);
  mapping_->bytes = total;
  // Each thread touches one byte per page of its share of the voxels (never the header's bytes): a zero the
  // volume overwrites later, but the page is in the page cache by then.
  const int n = std::max(1, threads);
  const std::uint64_t share = ((total - dataOffset_) / n + page - 1) / page * page;
  for (int t = 0; t < n; ++t) {
    const std::uint64_t begin = dataOffset_ + t * share, end = std::min(total, begin + share);
    if (begin >= end) break;
    mapping_->threads.emplace_back([m = mapping_.get(), begin, end, page] {
      volatile char* bytes = m->base;
      for (std::uint64_t at = begin; at < end && !m->stop.load(std::memory_order_relaxed); at = (at / page + 1) * page) bytes[at] = 0;
    });
  }
}

float* VolumeFileWriter::mappedVolume() {
  if (!mapping_) return nullptr;
  mapping_->join();
  char* voxels = mapping_->base + dataOffset_;
  if (reinterpret_cast<std::uintptr_t>(voxels) % alignof(float) != 0) return nullptr;
  return reinterpret_cast<float*>(voxels);
}

void VolumeFileWriter::writeVolume(const float* data, int threads) {
  if (!mapping_) {
    writeRows(0, size_[1], data);
    return;
  }
  mapping_->join();
  char* to = mapping_->base + dataOffset_;
  const std::size_t bytes = mapping_->bytes - dataOffset_, block = std::size_t{16} << 20;
  parallelFor((bytes + block - 1) / block, 1, threads, [&](std::size_t b0, std::size_t b1) {
    const std::size_t begin = b0 * block, end = std::min(bytes, b1 * block);
    std::memcpy(to + begin, reinterpret_cast<const char*>(data) + begin, end - begin);
  });
}

void VolumeFileWriter::writeRows(int firstRow, int rows, const float* data) {
  if (firstRow < 0 || rows <= 0 || firstRow + rows > size_[1]) throw std::logic_error("VolumeFileWriter: rows outside the volume");
  if (mapping_) mapping_->join();  // its threads write a zero into each page they fault in: before the rows, not after
  const std::size_t nx = size_[0], run = nx * rows * sizeof(float);
  // A z slice per task on all threads (a 2 GiB slab took 1.3 s into the page cache of an H200 host's disk with it and
  // about as long with one thread on an H100 host: the file system bounds it there, not the copy).
  parallelFor(static_cast<std::size_t>(size_[2]), 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k) {
      const std::uint64_t offset = dataOffset_ + ((static_cast<std::uint64_t>(k) * size_[1] + firstRow) * nx) * sizeof(float);
      writeAll(fd_, data + k * nx * rows, run, static_cast<off_t>(offset), path_);
    }
  });
}

void VolumeFileWriter::commit() {
  if (!data_) {
    // Joined: this rank's rows on the disk (a shared file system shows them to rank 0 once written back) and closed.
    const bool synced = ::fdatasync(fd_) == 0 || errno == EINVAL;
    const int error = errno;
    const bool closed = ::close(fd_) == 0;
    fd_ = -1;
    if (!synced || !closed) throwInputError(path_, "output", "a writable file with enough space", std::strerror(synced ? errno : error));
    return;
  }
  // The mapped pages are in the page cache already, the file's: it is complete, closed and renamed now, and the mapping
  // goes with the writer (unmapping half a gigabyte takes tens of milliseconds the output need not wait for).
  if (mapping_) mapping_->join();
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
