// Projections from files, read as the scheduler asks for them (glrecon/source.h): a MetaImage stack in chunks of
// projections (parallel pread straight into the scheduler's memory, each chunk's values checked while in cache); a
// TIFF file whole when its first projection is asked for; one file after another for a directory, glob or list.
// Opening checks every header, locates the first file's data (a FIFO, a truncated file: refused here) and reads and
// checks the first chunk of the first file, so that input that is bad from its start is refused before any device works; a file
// damaged further on is reported when its projections are read, naming them (nothing is written then either).
#include <algorithm>
#include <cmath>
#include <atomic>
#include <memory>

#include "chunked_io.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/source.h"
#include "glrecon/validate.h"

namespace glrecon {
namespace {

class ProjectionFiles final : public ProjectionSource {
 public:
  explicit ProjectionFiles(std::vector<std::string> files) : files_(std::move(files)) {
    if (files_.empty()) throw InputError("projections: no files");
    // The first file gives the detector layout; every file's header its projection count, checked against the first.
    for (std::size_t f = 0; f < files_.size(); ++f) {
      // Headers only: a file whose data is damaged is reported when its projections are read, with their index.
      const Image header = isTiffPath(files_[f]) ? readTiffHeader(files_[f]) : MetaImageReader(files_[f], true).header();
      if (f == 0) {
        first_ = header;
      } else {
        const auto same = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a)); };
        if (header.size[0] != first_.size[0] || header.size[1] != first_.size[1])
          throwInputError(files_[f], "DimSize",
                          std::to_string(first_.size[0]) + " x " + std::to_string(first_.size[1]) + " pixels as in " + files_[0],
                          std::to_string(header.size[0]) + " x " + std::to_string(header.size[1]));
        if (!same(header.spacing[0], first_.spacing[0]) || !same(header.spacing[1], first_.spacing[1]) ||
            !same(header.origin[0], first_.origin[0]) || !same(header.origin[1], first_.origin[1]))
          throwInputError(files_[f], "ElementSpacing/Offset", "the detector spacing and origin of " + files_[0], "a different detector layout");
      }
      starts_.push_back(count_);
      count_ += static_cast<std::size_t>(header.size[2]);
    }
    starts_.push_back(count_);
    if (!isTiffPath(files_[0])) {
      reader_ = std::make_unique<MetaImageReader>(files_[0]);
      readerFile_ = 0;
    }
    prefetched_.resize(std::min(chunk(), starts_[1]) * pixels());  // of the first file
    read(0, prefetched_.size() / pixels(), prefetched_.data());
    havePrefetched_ = true;
  }

  std::size_t count() const override { return count_; }
  const Image& firstHeader() const { return first_; }
  DetectorLayout detector() const override {
    return DetectorLayout{first_.size[0], first_.size[1], first_.spacing[0], first_.spacing[1], first_.origin[0], first_.origin[1]};
  }
  std::string origin(std::size_t index) const override { return files_[fileOf(index)]; }
  // Chunks of about 16 MiB: large enough for the parallel reads to run at full speed, small enough that the first
  // projections reach the device early.
  std::size_t chunk() const override { return std::max<std::size_t>(1, (std::size_t{16} << 20) / (pixels() * sizeof(float))); }

  void read(std::size_t first, std::size_t n, float* out) override {
    std::size_t done = 0;
    if (havePrefetched_ && first * pixels() < prefetched_.size()) {  // the chunk read at opening, handed over once
      done = std::min(n, prefetched_.size() / pixels() - first);
      std::copy_n(prefetched_.data() + first * pixels(), done * pixels(), out);
      if (first + done == prefetched_.size() / pixels()) std::vector<float>().swap(prefetched_);
    }
    while (done < n) {
      const std::size_t p = first + done, f = fileOf(p), local = p - starts_[f];
      const std::size_t m = std::min(n - done, starts_[f + 1] - p);
      float* to = out + done * pixels();
      std::size_t outside = m * pixels();
      try {
        openFile(f);
        if (isTiffPath(files_[f])) {
          std::copy_n(tiff_.slice(static_cast<int>(local)), m * pixels(), to);
          outside = firstValueOutside(to, m * pixels(), kMaxProjectionValue);
        } else {
          outside = reader_->readSlices(local, m, to, kMaxProjectionValue);
        }
      } catch (const Error& e) {
        // The file names itself; which projection it held is the stream's to add.
        throw InputError("projection " + std::to_string(p) + " (" + files_[f] + "): " + e.text());
      }
      if (outside < m * pixels())
        throwBadProjectionValue(files_[f], p + outside / pixels(), outside % pixels(), first_.size[0], to[outside]);
      done += m;
    }
  }

  // MetaImage files: each band read alone (pread of its rows), the projections of one file in parallel (a band is a
  // megabyte or two: one thread each reads them at the page cache's speed, many threads at the file system's); TIFF
  // files are read whole (readTiff) and their rows kept.
  void readRows(std::size_t first, std::size_t n, const RowBand* bands, float* out) override {
    const std::size_t nu = static_cast<std::size_t>(first_.size[0]);
    for (std::size_t done = 0; done < n;) {
      const std::size_t p0 = first + done, f = fileOf(p0), m = std::min(n - done, starts_[f + 1] - p0);
      try {
        openFile(f);
      } catch (const Error& e) {
        throw InputError("projection " + std::to_string(p0) + " (" + files_[f] + "): " + e.text());
      }
      std::atomic<std::size_t> bad{SIZE_MAX};  // the first projection (of this file's) with a value outside, and where
      std::vector<std::size_t> badPixel(m, SIZE_MAX);
      parallelFor(m, 1, fileChunking().threads, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) {
          const RowBand band = bands[done + i];
          if (band.count <= 0) continue;
          float* to = out + (done + i) * pixels() + static_cast<std::size_t>(band.first) * nu;
          const std::size_t values = static_cast<std::size_t>(band.count) * nu, local = p0 + i - starts_[f];
          std::size_t outside = values;
          if (isTiffPath(files_[f])) {
            std::copy_n(tiff_.slice(static_cast<int>(local)) + static_cast<std::size_t>(band.first) * nu, values, to);
            outside = firstValueOutside(to, values, kMaxProjectionValue);
          } else {
            try {
              outside = reader_->readRows(local, band.first, band.count, to, kMaxProjectionValue);
            } catch (const Error& e) {
              throw InputError("projection " + std::to_string(p0 + i) + " (" + files_[f] + "): " + e.text());
            }
          }
          if (outside < values) {
            badPixel[i] = static_cast<std::size_t>(band.first) * nu + outside;
            lowerAtomically(bad, i);
          }
        }
      });
      if (bad != SIZE_MAX) {
        const std::size_t i = bad;
        throwBadProjectionValue(files_[f], p0 + i, badPixel[i], first_.size[0], out[(done + i) * pixels() + badPixel[i]]);
      }
      done += m;
    }
  }

 private:
  // File f ready to read: a TIFF read whole (kept until another file is read), a MetaImage's reader made.
  void openFile(std::size_t f) {
    if (isTiffPath(files_[f])) {
      if (tiffFile_ != f) {
        tiff_ = readTiff(files_[f]);
        tiffFile_ = f;
      }
    } else if (readerFile_ != f) {
      reader_ = std::make_unique<MetaImageReader>(files_[f]);
      readerFile_ = f;
    }
  }
  std::size_t pixels() const { return static_cast<std::size_t>(first_.size[0]) * first_.size[1]; }
  std::size_t fileOf(std::size_t index) const {
    return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), index) - starts_.begin()) - 1;
  }

  std::vector<std::string> files_;
  Image first_;                      // the first file's header: the detector layout
  std::vector<std::size_t> starts_;  // the first projection of each file; the count last
  std::size_t count_ = 0;
  std::unique_ptr<MetaImageReader> reader_;  // the file being read
  std::size_t readerFile_ = SIZE_MAX;
  Image tiff_;
  std::size_t tiffFile_ = SIZE_MAX;
  std::vector<float> prefetched_;  // the first chunk, read and checked at opening
  bool havePrefetched_ = false;
};

}  // namespace

std::unique_ptr<ProjectionSource> openProjectionFiles(const std::vector<std::string>& files) {
  return std::make_unique<ProjectionFiles>(files);
}

Image readProjectionFiles(const std::vector<std::string>& files) {
  ProjectionFiles source(files);
  const Image& first = source.firstHeader();
  const std::uint64_t bytes = static_cast<std::uint64_t>(source.count()) * first.size[0] * first.size[1] * sizeof(float);
  checkHostMemory(files.front(), "projections (" + std::to_string(source.count()) + " of " + std::to_string(first.size[0]) + " x " +
                                     std::to_string(first.size[1]) + ")",
                  bytes);
  Image stack({first.size[0], first.size[1], static_cast<int>(source.count())}, first.spacing, first.origin);
  source.read(0, source.count(), stack.data.data());
  return stack;
}

}  // namespace glrecon
