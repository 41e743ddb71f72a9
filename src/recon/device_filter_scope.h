#pragma once
// What the batch (fdk.cpp) and streaming (stream.cpp) pipelines share about where the FDK filter runs.
#include "glrecon/operator.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"

namespace glrecon::detail {

// Hands the filter to the operator for the length of one run (and takes it back, also on an exception: a
// reused operator, as bench's, must not filter projections that come filtered).
class DeviceFilterScope {
 public:
  DeviceFilterScope(const FdkFilter& filter, ConeBeamOperator& op, FilterPlace place) : op_(op) {
    if (place == FilterPlace::Cpu) return;
    const DeviceFilter* device = !backendInfo(op.backend()).filtersOnDevice ? nullptr : filter.deviceFilter();
    active_ = device && op.filterOnDevice(device, place == FilterPlace::Gpu);
    if (!active_ && place == FilterPlace::Gpu) throw filterOnGpuRefused(op.backend(), device != nullptr);
  }
  ~DeviceFilterScope() {
    // Also while an exception unwinds: a failing device must not turn it into std::terminate.
    try {
      if (active_) op_.filterOnDevice(nullptr);
    } catch (...) {
    }
  }
  DeviceFilterScope(const DeviceFilterScope&) = delete;
  DeviceFilterScope& operator=(const DeviceFilterScope&) = delete;
  bool active() const { return active_; }

 private:
  ConeBeamOperator& op_;
  bool active_ = false;
};

}  // namespace glrecon::detail
