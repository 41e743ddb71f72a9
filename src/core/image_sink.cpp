#include <exception>
#include <future>
#include <mutex>
#include <system_error>

#include "glrecon/sink.h"
#include "glrecon/slab.h"

namespace glrecon {

// The image is made (and its pages faulted in) by another thread while the run works, started once the devices are
// set up; asked for, it is waited for (or made then, where nothing started it).
struct ImageSink::Prepared {
  VolumeGrid grid;
  int threads = 0;
  Image image;
  bool started = false;
  std::future<void> making;
  std::exception_ptr failure;  // kept: every later caller (another device's readback) hears it, not only the first
  std::mutex mutex;            // slabs' rows arrive from several threads
  void make() {
    image.size = grid.size;
    image.spacing = {grid.spacing.x, grid.spacing.y, grid.spacing.z};
    image.origin = {grid.origin.x, grid.origin.y, grid.origin.z};
    resizeZeroed(image.data, grid.voxelCount(), threads);
  }
  void start() {  // under the mutex
    if (started) return;
    making = std::async(std::launch::async, [this] { make(); });  // a thread refused throws here, still unstarted
    started = true;
  }
  Image& get() {
    std::lock_guard lock(mutex);
    try {
      if (!started) {
        started = true;
        make();
      }
      if (making.valid()) making.get();
    } catch (...) {
      failure = std::current_exception();
    }
    if (failure) std::rethrow_exception(failure);
    return image;
  }
};

ImageSink::ImageSink(const VolumeGrid& grid, int threads) : prepared_(std::make_unique<Prepared>()) {
  prepared_->grid = grid;
  prepared_->threads = threads;
}

void ImageSink::devicesReady() {
  std::lock_guard lock(prepared_->mutex);
  try {
    prepared_->start();
  } catch (const std::system_error&) {
    // No thread to be had: the volume is made when first asked for.
  }
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
