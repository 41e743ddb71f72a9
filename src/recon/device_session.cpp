#include "recon/device_session.h"

#include <chrono>

#include "device/cuda/device.h"
#include "glrecon/progress.h"

namespace glrecon {
namespace {
double since(std::chrono::steady_clock::time_point t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); }
}  // namespace

DeviceSession::~DeviceSession() {
  if (cudaOpener_.joinable()) cudaOpener_.join();
}

void DeviceSession::startCuda(int device) {
  if (!cuda::built() || cudaOpener_.joinable()) return;
  cudaOpener_ = std::jthread([this, device] {
    cudaOpenSeconds_ = cuda::open(device);
    trace("session: CUDA context made");
  });
}

void DeviceSession::open(std::optional<Backend> backend, int device) {
  if (backend && !backendInfo(*backend).usesDevice) return;
  if (backend == Backend::Cuda) return startCuda(device);
  try {
    glContext(device);
  } catch (const std::exception&) {
    // Reported when the context is asked for again by the run.
  }
}

void DeviceSession::waitFor(std::jthread& opener) {
  if (!opener.joinable()) return;
  const auto start = std::chrono::steady_clock::now();
  opener.join();
  waited_ += since(start);
}

void DeviceSession::openCuda(int device) {
  startCuda(device);
  waitFor(cudaOpener_);
}

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
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(device);
  if (it == contexts_.end()) {
    const auto start = std::chrono::steady_clock::now();
    it = contexts_.emplace(device, gl::Context::headless(device)).first;
    if (glOpenSeconds_ == 0) glOpenSeconds_ = since(start);
  }
  it->second->makeCurrent();
  trace("session: GL context current");
  return *it->second;
}

}  // namespace glrecon
