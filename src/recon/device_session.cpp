#include "recon/device_session.h"

#include <chrono>

#include "device/cuda/device.h"

namespace glrecon {

DeviceSession::~DeviceSession() {
  if (opener_.joinable()) opener_.join();
  if (cudaOpener_.joinable()) cudaOpener_.join();
}

void DeviceSession::openInBackground(std::optional<Backend> backend, int device) {
  if (backend && !backendInfo(*backend).usesDevice) return;
  if ((!backend || backend == Backend::Cuda) && cuda::built() && !cudaOpener_.joinable())
    cudaOpener_ = std::jthread([device] { cuda::warmUp(device); });
  if ((!backend || backend != Backend::Cuda) && !opener_.joinable())
    opener_ = std::jthread([this, device] {
      try {
        auto context = gl::Context::headless(device);
        context->release();
        std::lock_guard lock(mutex_);
        contexts_.emplace(device, std::move(context));
      } catch (const std::exception&) {
        // Reported when the context is asked for and made again.
      }
    });
}

void DeviceSession::waitFor(std::jthread& opener) {
  if (!opener.joinable()) return;
  const auto start = std::chrono::steady_clock::now();
  opener.join();
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void DeviceSession::waitForCuda() { waitFor(cudaOpener_); }

void DeviceSession::useContext(int device, gl::Context& context) {
  std::lock_guard lock(mutex_);
  given_[device] = &context;
}

gl::Context& DeviceSession::glContext(int device) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = given_.find(device); it != given_.end()) {
      it->second->makeCurrent();
      return *it->second;
    }
  }
  waitFor(opener_);
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(device);
  if (it == contexts_.end()) it = contexts_.emplace(device, gl::Context::headless(device)).first;
  it->second->makeCurrent();
  return *it->second;
}

}  // namespace glrecon
