#pragma once
/// Projections resident on a device, as an operator's back() samples them (a window of a GPU backend): the FDK filter's
/// device twins (glrecon/filter.h) fill one from raw projections, then the operator backprojects it, so filtered
/// projections never come back to the host (RTK's FFTRamp -> FDKBackProjection on the GPU). Opaque: each device kind
/// (src/device/gl, src/device/cuda) says what one holds.
#include <cstddef>

namespace glrecon {

struct RowBand;  // glrecon/slab.h

struct DeviceProjections {
  virtual ~DeviceProjections() = default;
  /// Projections it holds at most.
  std::size_t capacity = 0;
  /// Per view of the geometry, the detector rows its operator's block samples (slabRowBand), or nullptr: every row.
  /// A twin need filter and send only those (each row is filtered alone); the others are never read.
  const RowBand* rowBands = nullptr;
  /// Projection bytes a twin sent to the device into this window since its operator last took the count (back()).
  double sentBytes = 0;
};

}  // namespace glrecon
