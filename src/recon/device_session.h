#pragma once
// The devices one run uses, opened once and shared by the plan's queries (is it a software renderer? how much memory
// is free? which backend is fastest?) and the run's operators: one GL context per EGL device, made beside the reading
// where the caller starts it early (the driver's first context takes a tenth of a second; CUDA's a quarter of one).
// Internal to glrecon (recon, app).
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "device/gl/context.h"
#include "glrecon/operator.h"

namespace glrecon {

class DeviceSession {
 public:
  DeviceSession() = default;
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  /// Opens `device` for `backend`: CUDA's context on a thread of its own (a fifth of a second on an H200, beside what
  /// the caller does next); a GL backend's context here, on the calling thread, where the run will draw (made on
  /// another thread, it costs a third as much again to make current here); for auto (no backend) the GL context, which
  /// identifies the device for auto's cache (CUDA's start is begun only if auto takes cuda: opening both at once slows
  /// both). Failures are left for the real use to report.
  void open(std::optional<Backend> backend, int device);
  /// The GL context of EGL device `device`, current on the calling thread: one given by useContext, the one opened in
  /// the background (waited for), or made now.
  gl::Context& glContext(int device);
  /// Runs on `device` use `context` (a viewer's window, which outlives the session's use of it).
  void useContext(int device, gl::Context& context);
  /// CUDA's context on `device`, opened now or in the background (waited for).
  void openCuda(int device);
  /// Seconds the callers of glContext() and openCuda() waited for the openings.
  double waitedSeconds() const { return waited_; }
  /// How long opening the first GL context and CUDA's context took (0: not opened by this session).
  double glOpenSeconds() const { return glOpenSeconds_; }
  double cudaOpenSeconds() const { return cudaOpenSeconds_; }

 private:
  void startCuda(int device);
  void waitFor(std::jthread& opener);
  std::mutex mutex_;
  std::map<int, std::unique_ptr<gl::Context>> contexts_;
  std::map<int, gl::Context*> given_;
  std::jthread cudaOpener_;
  double waited_ = 0, glOpenSeconds_ = 0, cudaOpenSeconds_ = 0;
};

}  // namespace glrecon
