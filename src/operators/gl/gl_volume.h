#pragma once
// What the OpenGL backprojectors (graphics and compute) share: the context, the volume (an R32F texture
// array, one layer per z slice, that stays on the GPU), the window of filtered projections (an R32F texture
// array, bilinear, border 0) with its matrices (a uniform buffer at binding 0), the automatic window
// search, the size limits and the readback. Made for blocks (OperatorOptions::blockRows), the volume holds rows
// [blockFirst, blockFirst + rows) of y only, and each projection's upload only the detector rows the block can reach
// (slabRowBand); matrices stay the whole grid's. Internal to src/operators/gl.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "glrecon/operator.h"
#include "glrecon/slab.h"
#include "device/gl/context.h"
#include "device/gl/objects.h"
#include "device/gl/projection_window.h"

namespace glrecon::detail {

/// Projections per pass the uniform block holds (3 vec4 rows each).
int uniformWindowLimit();

class GlVolume {
  // First, so that every GL object below goes before the context it lives in.
  std::unique_ptr<gl::Context> ownedContext_;
  gl::Context* context_ = nullptr;

 public:
  /// Uses `borrowed` when given (a viewer's window), else a headless context on options.gpu; makes it current,
  /// checks the volume against the device's limits and allocates it (zeroed).
  GlVolume(gl::Context* borrowed, const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options,
                  const std::string& name);
  ~GlVolume();
  GlVolume(const GlVolume&) = delete;
  GlVolume& operator=(const GlVolume&) = delete;

  /// Once the backend knows its largest window: validates --window, prepares the search, allocates the
  /// projection texture and matrix buffer, checks memory.
  void setWindowLimit(int maxWindow);

  gl::Context& context() { return *context_; }
  const gl::DeviceInfo& contextInfo() const { return context_->info(); }
  const std::string& where() const { return where_; }

  /// Uploads projections into the window; calls `draw` each time the window is full (timed while searching).
  void add(const float* projections, const std::size_t* views, std::size_t count, const std::function<void()>& draw);
  /// The window of device projections to fill next (ConeBeamOperator::nextWindow): the current half's layers and
  /// staging memory, once the last pass that read them has finished; projections waiting from add() are drawn first.
  gl::ProjectionWindow* nextWindow(const std::function<void()>& draw);
  /// The window's first `count` projections (views[i]) are filled: they are the pending window, drawn now.
  void addWindow(const std::size_t* views, std::size_t count, const std::function<void()>& draw);
  /// Draws what the window holds (a partial window) now.
  void flush(const std::function<void()>& draw);
  /// The pending views' matrices into the uniform buffer (binding 0), in float.
  void uploadMatrices();
  Image readVolume();
  /// Reads the volume into `destination` in chunks of slices through a persistently mapped pack buffer (two
  /// halves): the GPU copies one chunk while host threads move the previous one out. With `volumeRows` (> 0), each
  /// z slice of the block goes to its place in a whole volume of that many y rows, from row blockFirst on.
  void readVolumeInto(float* destination, int volumeRows = 0);
  /// The largest |voxel| held (NaN where a voxel is NaN), found on the GPU: shaders/volume_largest.comp.
  float largestMagnitude();
  /// Zeroes the volume and forgets the pending window, the timings and the fences' passes (keeps the window).
  void reset();
  /// Made for blocks: checks the block (checkSlab), forgets the pending window as reset() does and zeroes the volume,
  /// which from now on holds rows [firstRow, firstRow + rows) of y. Keeps the window and its search.
  void moveBlock(int firstRow, int rows);
  /// The grid the volume holds now: the whole grid, or the block's (slabGrid).
  VolumeGrid heldGrid() const;
  std::size_t heldVoxels() const { return static_cast<std::size_t>(grid.size[0]) * rows * grid.size[2]; }
  std::string windowDescription() const;

  const Geometry& geometry;
  const VolumeGrid grid;  // the whole grid: matrices and voxel indices are its own, in a block too
  const OperatorOptions options;
  const int blockCapacity;  // options.blockRows: the most rows of y held (0: not made for blocks, the whole grid)
  const int allocatedRows;  // rows of y the volume texture has (ny, or min(blockRows, ny))
  int blockFirst = 0;       // the first row of y the volume holds (0 for the whole grid)
  int rows = 0;             // rows of y the volume holds now (ny for the whole grid)
  double uploaded = 0;      // projection bytes sent to the GPU (whole projections, or the blocks' row bands)
  gl::Texture volume, projections;  // projections: two halves of maxWindow layers, used in turn
  gl::Buffer matrices;
  int layerBase = 0;  // first layer of the half the current window uses (shaders add it to the slot)
  int maxWindow = 1;
  int window = 1;
  std::vector<std::size_t> pending;  // views in the projection texture, slot = position
  std::vector<std::pair<int, double>> timings;
  OperatorTimings profile;  // upload, compute, readback: filled when options.profile (readback always)
 private:
  void drawWindow(const std::function<void()>& draw);
  std::string windowCacheKey() const;
  int rememberedWindow() const;  // 0: none (or not asked to remember)
  void rememberWindow(int chosen) const;
  void finishWindow();  // fences the half just drawn from and switches to the other
  // Uploads go through a persistently mapped pixel buffer (two halves, like the texture), so the next window's
  // projections travel while the previous window is backprojected; a fence guards each half until its pass ends.
  gl::MappedBuffer staging_;
  gl::MappedBuffer readback_;  // made at the first readback
  gl::Program largest_;        // largestMagnitude's, made at its first use
  gl::Buffer largestBits_;
  std::size_t readbackLayers_ = 0;  // slices per chunk
  gl::Fence fences_[2];
  void drawPending(const std::function<void()>& draw);  // draws, clears the window, times it when profiling
  /// Made for blocks: per view, the detector rows the block samples.
  const RowBand* blockBands() { return bands_.of(geometry, grid, blockFirst, rows); }
  BlockRowBands bands_;
  gl::ProjectionWindow window_;  // what nextWindow() hands out
  std::string where_;
  bool searching_ = false;
  std::vector<int> candidates_;
  std::size_t candidate_ = 0;
  int passesAtCandidate_ = 0;
};

}  // namespace glrecon::detail
