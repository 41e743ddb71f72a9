#pragma once
/// Backprojection through the OpenGL graphics pipeline (Xu & Mueller 2007, AG-GPU):
/// - the volume is an R32F 2D texture array, one layer per z slice, that stays on the GPU;
/// - a window of W filtered projections sits in an R32F texture array (bilinear, border 0);
/// - per window, every slice's proxy quad is drawn face-on at slice resolution (all slices in one instanced
///   draw, gl_Layer choosing the slice); the vertex shader maps its corners into the W detectors, the
///   rasterizer interpolates, the fragment shader divides, samples, weights by 1/w^2 and sums, and additive
///   float blending accumulates into the slice.
/// The MP-GPU variant computes the detector coordinates in the fragment shader instead.
/// W runs from 1 to the largest the varyings allow (floor(GL_MAX_VARYING_COMPONENTS / 3)); W = 0 searches
/// over a few sizes during the first passes and keeps the fastest, as the paper proposes.
/// Tested against the CPU backprojector in tests/test_graphics_backprojector.cpp.
#include <memory>
#include <utility>
#include <vector>

#include "glrecon/backprojector.h"
#include "device/gl/context.h"

namespace glrecon {

class GraphicsBackprojector final : public Backprojector {
 public:
  /// `fragmentMapping` selects MP-GPU. Throws gl::GlError when no OpenGL 4.5 device is usable, and
  /// InputError when the volume exceeds the GPU's limits (naming the size and the limit).
  GraphicsBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options,
                        bool fragmentMapping = false);
  /// The same in an existing context (a viewer's window), which must outlive the backprojector.
  GraphicsBackprojector(gl::Context& context, const Geometry& geometry, const VolumeGrid& grid,
                        const BackprojectorOptions& options, bool fragmentMapping = false);
  ~GraphicsBackprojector() override;

  std::string name() const override;
  std::string description() const override;
  void backproject(const float* projections, const std::size_t* views, std::size_t count) override;
  Image volume() override;
  void readVolume(float* destination) override;
  void reset() override;
  /// Slab mode (BackprojectorOptions::slabRows): the volume holds rows [firstRow, firstRow + rows) of y, each voxel
  /// bit for bit as in the one-block volume. AG-GPU rasterizes the whole slice's quad as without slabs, into a
  /// framebuffer without attachments scissored to the slab's rows, and adds into the slab by image load/store
  /// (a region is then a per-voxel mask texture; a viewport shifted by firstRow changed the interpolated
  /// coordinates' rounding); MP-GPU adds firstRow to the fragment's row. No density-range kill in slab mode.
  void setSlab(int firstRow, int rows) override;
  double uploadedBytes() const override;
  bool filterOnDevice(const DeviceFilter* filter, bool force) override;
  bool filterProjections(const DeviceFilter& filter, const float* raw, const std::size_t* views, std::size_t count, float* filtered,
                         bool force) override;
  /// The region goes into the stencil: per slice (a stencil texture array beside the volume, one draw for
  /// all slices: the default) or, with substackStencil, the paper's scheme: 8 sub-stacks of slices, each
  /// owning one bit of a single 8-bit stencil that holds the union of its slices' masks (slices drawn one
  /// by one). The fragment shaders declare early_fragment_tests, so culled fragments never run them.
  void setRegion(const RegionOfInterest& roi) override;
  /// Needs the per-slice stencil (not substackStencil); not in slab mode.
  void killOutsideRange(double low, double high, double scale) override;
  std::vector<std::uint8_t> activeMask() override;
  double culledFraction() const override;
  BackprojectorTimings timings() const override;

  const gl::DeviceInfo& device() const;
  /// The GL name of the volume texture (R32F 2D array, layer = z slice), live while reconstructing: a viewer
  /// sharing the context samples it directly. The last partial window is drawn by volume().
  unsigned volumeTexture() const;
  /// Largest window the device's varyings allow (AG-GPU); MP-GPU is limited by the uniform block only.
  int maxWindow() const;
  /// The window in use (during an automatic search: the size being measured).
  int window() const;
  /// Automatic search results: (window, seconds per projection) for each size measured.
  const std::vector<std::pair<int, double>>& windowTimings() const;

 private:
  void initialise();  // after the base: framebuffer, programs, window limit
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glrecon
