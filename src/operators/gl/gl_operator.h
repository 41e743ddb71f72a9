#pragma once
// What the graphics and compute operators share (their volume, projection window, readback and device filter in
// GlVolume; forward and Adjoint passes in GlRayPasses), and what a viewer sharing their context samples: the volume
// texture. Internal to glrecon (src/operators, src/viewer, tests).
#include <memory>
#include <utility>
#include <vector>

#include "device/gl/context.h"
#include "glrecon/operator.h"
#include "operators/gl/gl_ray_passes.h"
#include "operators/gl/gl_volume.h"

namespace glrecon {

class GlOperator : public ConeBeamOperator {
 public:
  ~GlOperator() override;

  void reset() override;
  void moveBlock(int firstRow, int rows) override;
  void setVolume(const float* voxels) override;
  void readVolume(float* destination) override;
  bool readBlockInto(float* volume, const std::array<int, 3>& volumeSize, int volumeFirstRow) override;
  void back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) override;
  void forward(const std::size_t* views, std::size_t count, float* projections) override;
  void setUpdateMask(const std::uint8_t* mask) override;
  void updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                    const float* cachedWeights) override;
  bool computesSubsetWeights() const override { return true; }
  bool setSubsetData(const float* projections, const float* rayLengths, float rayFloor, bool multiplicative) override;
  double correctSubset(const std::size_t* views, std::size_t count) override;
  void synchronize() override;
  using ConeBeamOperator::back;
  DeviceProjections* nextWindow() override;
  void back(DeviceProjections& window, const std::size_t* views, std::size_t count) override;
  bool softwareDevice() const override { return device().software; }
  std::optional<float> blockLargestMagnitude() override;
  OperatorTimings timings() const override;
  double uploadedBytes() const override { return volume_.uploaded; }
  int window() const override { return volume_.window; }

  const gl::DeviceInfo& device() const;
  gl::Context& context() { return volume_.context(); }
  /// The GL name of the volume texture (R32F 2D array, layer = z slice, the block's rows), live while reconstructing:
  /// a viewer sharing the context samples it (after glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT): compute and
  /// AG-GPU blocks write it by image stores). The last partial window is drawn by readVolume() or drawPending().
  unsigned volumeTexture() const { return volume_.volume.id(); }
  /// Draws the projections waiting in the window now (a viewer about to sample the volume).
  void drawPending();
  /// Largest window the device allows this backend.
  int maxWindow() const { return volume_.maxWindow; }
  /// Automatic window search results: (window, seconds per projection) for each size measured.
  const std::vector<std::pair<int, double>>& windowTimings() const { return volume_.timings; }

 protected:
  GlOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options, const char* where);
  /// One pass over the window's pending projections.
  virtual void drawWindow() = 0;
  /// Fdk counters of the subclass (culled updates) back to zero.
  virtual void resetCounters() = 0;
  /// Forward and Adjoint work on the whole grid only (OperatorOptions::blockRows: Fdk blocks).
  void requireWholeGrid(const char* what) const;
  detail::GlRayPasses& passes();

  detail::GlVolume volume_;

 private:
  std::unique_ptr<detail::GlRayPasses> passes_;  // made at the first forward or Adjoint call
  const std::uint8_t* mask_ = nullptr;
};

}  // namespace glrecon
