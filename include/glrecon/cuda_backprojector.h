#pragma once
/// Backprojection with a CUDA kernel, for comparison with the OpenGL paths (Okitsu, Ino & Hagihara 2010):
/// filtered projections in a layered CUDA array sampled through a texture object (hardware bilinear,
/// border 0, unnormalised coordinates at texel centres + 0.5), the window's matrices in constant memory,
/// one thread per (x, z) pair and a run of voxels along y (the axis along which the detector coordinates
/// change least), W projections per launch, the volume in device memory.
/// Uploads go through pinned staging buffers on a copy stream, double-buffered, so the next window's
/// upload overlaps the current window's kernel; the readback goes through the same pinned buffers in chunks. Built only where CMake finds CUDA (GLRECON_CUDA); the
/// tests skip, saying why, where no CUDA device exists.
#include <cstdint>
#include <memory>
#include <stdexcept>

#include "glrecon/backprojector.h"
#include "glrecon/errors.h"

namespace glrecon {

/// True when this build has the CUDA backend.
bool cudaBackendBuilt();
/// The texture units' peak on CUDA device `device` in G bilinear fetches per second (4 per multiprocessor per
/// clock on NVIDIA GPUs since Maxwell); 0 without CUDA or that device.
double cudaBilinearPeak(int device);
/// Creates CUDA's context on `device` now (a few hundred milliseconds), so a later backprojector does not
/// wait for it; errors are left for the backprojector to report. Does nothing without CUDA.
void warmUpCuda(int device);

/// Free memory on CUDA device `device` in bytes (0 without CUDA or that device), and the number of devices.
std::uint64_t cudaFreeMemory(int device);
int cudaDeviceCount();

class CudaBackprojector final : public Backprojector {
 public:
  CudaBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options);
  ~CudaBackprojector() override;

  std::string name() const override { return "cuda"; }
  std::string description() const override;
  void backproject(const float* projections, const std::size_t* views, std::size_t count) override;
  Image volume() override;
  void readVolume(float* destination) override;
  void reset() override;
  void setSlab(int firstRow, int rows) override;
  double uploadedBytes() const override;
  bool filterOnDevice(const DeviceFilter* filter, bool force) override;
  bool filterProjections(const DeviceFilter& filter, const float* raw, const std::size_t* views, std::size_t count, float* filtered,
                         bool force) override;
  void setRegion(const RegionOfInterest& roi) override;
  void killOutsideRange(double low, double high, double scale) override;
  std::vector<std::uint8_t> activeMask() override;
  double culledFraction() const override;
  BackprojectorTimings timings() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glrecon
