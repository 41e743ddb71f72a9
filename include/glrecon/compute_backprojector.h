#pragma once
/// Backprojection in an OpenGL compute shader: one invocation per (x, z) pair and a run of voxels along y, the
/// axis along which the detector coordinates change least (shaders/backproject.comp says why), W projections
/// per dispatch from the same projection texture array the
/// graphics path samples, accumulating into the same R32F volume texture array by image load/store (which,
/// unlike one SSBO, holds a 512^3 volume on Mesa as on NVIDIA). A region of interest limits each column to the
/// slices its region spans; the density-range kill is left to the graphics and CPU backends.
/// Tested against the CPU backprojector in tests/test_graphics_backprojector.cpp.
#include <memory>

#include "glrecon/backprojector.h"
#include "device/gl/context.h"

namespace glrecon {

class ComputeBackprojector final : public Backprojector {
 public:
  ComputeBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options);
  /// The same in an existing context (a viewer's window or offscreen frame), which must outlive the backprojector.
  ComputeBackprojector(gl::Context& context, const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options);
  ~ComputeBackprojector() override;

  std::string name() const override { return "compute"; }
  std::string description() const override;
  void backproject(const float* projections, const std::size_t* views, std::size_t count) override;
  Image volume() override;
  void readVolume(float* destination) override;
  void reset() override;
  /// Slab mode (BackprojectorOptions::slabRows): the volume holds rows [firstRow, firstRow + rows) of y.
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

  const gl::DeviceInfo& device() const;
  /// The GL name of the volume texture (R32F 2D array, layer = z slice), written by image stores: a viewer
  /// sharing the context samples it after glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT).
  unsigned volumeTexture() const;
  int maxWindow() const;
  int window() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glrecon
