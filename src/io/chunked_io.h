#pragma once
// MetaImage pixel data read in chunks over threads, and the value check the projection reader folds into the
// reading. Internal to src/io.
#include <cstddef>
#include <memory>
#include <string>

#include "glrecon/image.h"

namespace glrecon {

/// firstValueOutside (glrecon/limits.h) in fileChunking()'s chunks and threads.
std::size_t firstValueOutsideParallel(const float* values, std::size_t count, double limit);

/// A MetaImage file opened for reading in parts: the header parsed and checked against the data's size (compressed
/// data inflated whole), then slices read on demand, in parallel chunks, straight into float memory.
class MetaImageReader {
 public:
  /// `headerOnly`: the header parsed and checked, the data neither located nor opened (readSlices must not be called).
  explicit MetaImageReader(const std::string& path, bool headerOnly = false);
  ~MetaImageReader();
  MetaImageReader(const MetaImageReader&) = delete;
  MetaImageReader& operator=(const MetaImageReader&) = delete;
  /// Size, spacing and origin (no voxels).
  const Image& header() const { return header_; }
  const std::string& elementType() const { return elementType_; }
  /// DimSize as the header wrote it (quoted for messages).
  const std::string& dimensions() const { return dimensions_; }
  /// Slices [first, first + n) into `out` (nx * ny floats each); with limit > 0 the index in `out` of the first value
  /// firstValueOutside() reports, n * nx * ny when there is none.
  std::size_t readSlices(std::size_t first, std::size_t n, float* out, double limit);
  /// Rows [firstRow, firstRow + rows) of slice `slice` into `out` (rows * nx floats), read alone (an MPI rank reads only
  /// the detector rows its slabs need), on the calling thread (callers read many slices' rows in parallel); the index
  /// in `out` of the first value outside `limit`, rows * nx when none. Safe from several threads at once (pread).
  std::size_t readRows(std::size_t slice, int firstRow, int rows, float* out, double limit);

 private:
  std::string path_;
  Image header_;
  std::string elementType_, dimensions_;
  struct Data;
  std::unique_ptr<Data> data_;
};

/// readMetaImage that also finds, while its chunks are converted, the first value firstValueOutside()
/// reports: its index in *firstOutside (voxelCount() when there is none).
Image readMetaImageChecked(const std::string& path, double limit, std::size_t* firstOutside);

}  // namespace glrecon
