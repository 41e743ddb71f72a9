#pragma once
// What the batch (fdk.cpp) and streaming (stream.cpp) pipelines share about where the FDK filter runs.
#include "glrecon/backprojector.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"

namespace glrecon::detail {

// Hands the filter to the backprojector for the length of one run (and takes it back, also on an exception: a
// reused backprojector, as bench's, must not filter projections that come filtered).
class DeviceFilterScope {
 public:
  DeviceFilterScope(const FdkFilter& filter, Backprojector& backprojector, FilterPlace place) : backprojector_(backprojector) {
    if (place == FilterPlace::Cpu) return;
    const DeviceFilter* device = backprojector.name() == "cpu" ? nullptr : filter.deviceFilter();
    active_ = device && backprojector.filterOnDevice(device, place == FilterPlace::Gpu);
    if (!active_ && place == FilterPlace::Gpu) throw filterOnGpuRefused(backprojector.name(), device != nullptr);
  }
  ~DeviceFilterScope() {
    // Also while an exception unwinds: a failing device must not turn it into std::terminate.
    try {
      if (active_) backprojector_.filterOnDevice(nullptr);
    } catch (...) {
    }
  }
  DeviceFilterScope(const DeviceFilterScope&) = delete;
  DeviceFilterScope& operator=(const DeviceFilterScope&) = delete;
  bool active() const { return active_; }

 private:
  Backprojector& backprojector_;
  bool active_ = false;
};

}  // namespace glrecon::detail
