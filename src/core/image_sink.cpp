#include <future>
#include <mutex>

#include "glrecon/parallel.h"
#include "glrecon/sink.h"

namespace glrecon {

// The image is made (and its pages faulted in) by another thread while the run works; asked for, it is waited for.
struct ImageSink::Prepared {
  Image image;
  std::future<void> making;
  std::mutex mutex;  // slabs' rows arrive from several threads
  Image& get() {
    std::lock_guard lock(mutex);
    if (making.valid()) making.get();
    return image;
  }
};

ImageSink::ImageSink(const VolumeGrid& grid, int threads) : prepared_(std::make_unique<Prepared>()) {
  Prepared& p = *prepared_;
  p.making = std::async(std::launch::async, [&p, grid, threads] {
    p.image.size = grid.size;
    p.image.spacing = {grid.spacing.x, grid.spacing.y, grid.spacing.z};
    p.image.origin = {grid.origin.x, grid.origin.y, grid.origin.z};
    resizeZeroed(p.image.data, grid.voxelCount(), threads);
  });
}

ImageSink::~ImageSink() {
  if (prepared_->making.valid()) prepared_->making.wait();
}

float* ImageSink::wholeVolume() { return prepared_->get().data.data(); }

void ImageSink::writeRows(int firstRow, int rows, const float* data) {
  Image& image = prepared_->get();
  const std::size_t nx = image.size[0], ny = image.size[1];
  // Each slab's slices to their places, on several threads.
  parallelFor(static_cast<std::size_t>(image.size[2]), 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k) std::copy_n(data + k * nx * rows, nx * rows, image.data.data() + (k * ny + firstRow) * nx);
  });
}

Image ImageSink::take() { return std::move(prepared_->get()); }

}  // namespace glrecon
