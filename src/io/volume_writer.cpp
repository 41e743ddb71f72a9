// A float32 volume written slab by slab (see VolumeFileWriter in glrecon/io.h). MetaImage and the TIFF
// writer both store a header, then the voxels contiguous with x fastest, then y, then z: a slab of y rows is
// nz runs of nx * rows floats, each written with pwrite at its own offset (threads may write slabs at once).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "glrecon/error.h"
#include "glrecon/io.h"
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

VolumeFileWriter::VolumeFileWriter(const std::string& path, const VolumeGrid& grid, bool overwrite) : path_(path), size_(grid.size) {
  const std::array<double, 3> spacing{grid.spacing.x, grid.spacing.y, grid.spacing.z}, origin{grid.origin.x, grid.origin.y, grid.origin.z};
  std::string header;
  std::string dataPath = path;
  if (isTiffPath(path)) {
    header = tiffHeader(path, size_, spacing, origin);
  } else {
    checkMetaImageName(path);
    if (isDetachedMetaImage(path)) {
      dataPath = fs::path(path).replace_extension(".raw").string();
      header = metaImageHeader(size_, spacing, origin, fs::path(dataPath).filename().string());
    } else {
      header = metaImageHeader(size_, spacing, origin, "LOCAL");
    }
  }
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
  fd_ = ::open(data_->temporaryPath().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

VolumeFileWriter::~VolumeFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void VolumeFileWriter::writeRows(int firstRow, int rows, const float* data) {
  if (firstRow < 0 || rows <= 0 || firstRow + rows > size_[1]) throw std::logic_error("VolumeFileWriter: rows outside the volume");
  const std::size_t nx = size_[0], run = nx * rows * sizeof(float);
  for (int k = 0; k < size_[2]; ++k) {
    const std::uint64_t offset = dataOffset_ + ((static_cast<std::uint64_t>(k) * size_[1] + firstRow) * nx) * sizeof(float);
    writeAll(fd_, data + static_cast<std::size_t>(k) * nx * rows, run, static_cast<off_t>(offset), path_);
  }
}

void VolumeFileWriter::commit() {
  if (::close(fd_) != 0) {
    fd_ = -1;
    throwInputError(path_, "output", "a writable file with enough space", std::strerror(errno));
  }
  fd_ = -1;
  data_->commit();
  if (header_) header_->commit();
}

}  // namespace glrecon
