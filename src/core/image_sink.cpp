#include <future>
#include <mutex>

#include "glrecon/sink.h"
#include "glrecon/slab.h"

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
  // Each slab's slices to their places, on several threads.
  moveSlabRows(image.size, firstRow, rows, data, image.data.data(), /*toBlock=*/false);
}

Image ImageSink::take() { return std::move(prepared_->get()); }

}  // namespace glrecon
