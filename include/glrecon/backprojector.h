#pragma once
/// Voxel-driven FDK backprojection behind one interface, so every backend (cpu now; graphics, compute and
/// cuda later) runs the same reconstruction and can be compared voxel by voxel.
/// Conventions shared by all backends: the matrix of Geometry::matrix maps a voxel to (u w, v w, w);
/// the sample is bilinear with pixel centres at integer (u, v) and 0 outside the detector; each
/// projection adds (1 / w^2) Q(u, v). Tested in tests/test_backprojector.cpp.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/roi.h"

namespace glrecon {

struct DeviceFilter;

/// Where a backend's time went (seconds), filled when BackprojectorOptions::profile is set: GPU backends then
/// wait for the GPU after each step, so the split is honest at the price of some overlap.
struct BackprojectorTimings {
  double upload = 0.0;    ///< projections to the device
  double compute = 0.0;   ///< backprojection itself
  double readback = 0.0;  ///< the volume back to the host
};

class Backprojector {
 public:
  virtual ~Backprojector() = default;
  virtual std::string name() const = 0;
  /// The name and where it runs, e.g. "graphics on NVIDIA H200/PCIe/SSE2, window 8".
  virtual std::string description() const { return name(); }
  /// Adds `count` filtered projections into the volume: `projections` holds them one after another
  /// (nv rows of nu floats each); views[i] is the geometry index of the i-th.
  virtual void backproject(const float* projections, const std::size_t* views, std::size_t count) = 0;
  /// The volume accumulated so far (GPU backends first finish the projections they hold back).
  virtual Image volume() = 0;
  /// The same into `destination` (voxelCount() floats, x fastest): lets a caller allocate (and page in) the
  /// output while the reconstruction runs, and GPU backends read back in overlapped chunks.
  virtual void readVolume(float* destination) {
    const Image v = volume();
    std::copy(v.data.begin(), v.data.end(), destination);
  }
  /// Starts a new reconstruction with the same geometry, grid, region and device: the volume back to zero and
  /// the timings and counters cleared, without paying the setup again (contexts, programs, buffers).
  virtual void reset() = 0;

  /// Slab mode (BackprojectorOptions::slabRows > 0, see glrecon/slab.h): from now on the volume is rows
  /// [firstRow, firstRow + rows) of the grid's y axis, zeroed; firstRow a multiple of kSlabGranule, rows at most
  /// slabRows. volume() and readVolume() then hold nx x rows x nz voxels (slabGrid), setRegion takes a region on
  /// that grid (slabRegion), and every voxel is computed as in the whole grid (bit for bit). Projections passed to
  /// backproject() are still whole; a GPU backend uploads of each only the rows slabRowBand names. Throws
  /// UsageError for a backend without slabs or arguments outside those bounds.
  virtual void setSlab(int firstRow, int rows);
  /// Filtering on the device: given a filter (FdkFilter::deviceFilter), backproject() takes raw projections from
  /// now on and the backend weights and ramp-filters them itself before backprojecting, equal to FdkFilter::apply
  /// within float rounding; nullptr: filtered projections again. Returns false, changing nothing, where this
  /// backend (or its mode: slabs) cannot, or, unless `force`, where the device would be slower than the CPU's
  /// filter pool (a software renderer): the caller then filters on the CPU.
  virtual bool filterOnDevice(const DeviceFilter* filter, bool force = false) {
    (void)force;
    return filter == nullptr;
  }
  /// Filters `count` raw projections (views[i] the i-th's geometry index) on the device into `filtered` (the same
  /// layout) without backprojecting them, with filterOnDevice's kernels, so with the same bits: the slab path
  /// keeps them for all slabs. Returns false, doing nothing, where filterOnDevice would (slab mode aside). Not
  /// counted in uploadedBytes(); the volume is untouched; no projections may be waiting in a window.
  virtual bool filterProjections(const DeviceFilter& filter, const float* raw, const std::size_t* views, std::size_t count,
                                 float* filtered, bool force = false) {
    (void)filter, (void)raw, (void)views, (void)count, (void)filtered, (void)force;
    return false;
  }
  /// Bytes of projection data sent to the device so far (all rows, or the slab's row bands), for the slab tests
  /// and bench; 0 where nothing is uploaded (cpu).
  virtual double uploadedBytes() const { return 0.0; }

  /// Restricts the work to a region (early fragment kill): voxels inside receive exactly the updates they
  /// would without it; voxels outside may be skipped (callers zero them with applyRegion).
  virtual void setRegion(const RegionOfInterest& roi) = 0;
  /// Density-range kill (Xu & Mueller 3.3): from now on, voxels whose current value times `scale` lies
  /// outside [low, high] stop receiving updates. Sets a whole-volume region first if none is set.
  virtual void killOutsideRange(double low, double high, double scale) = 0;
  /// 1 for voxels still receiving updates (the region minus killed voxels); empty without a region.
  virtual std::vector<std::uint8_t> activeMask() = 0;
  /// Fraction of voxel updates skipped so far (fragments culled on the GPU).
  virtual double culledFraction() const = 0;
  virtual BackprojectorTimings timings() const = 0;
};

struct BackprojectorOptions {
  int threads = 0;  ///< CPU threads (0 = all)
  int gpu = 0;      ///< EGL device index for GPU backends
  int window = 0;   ///< projections per GPU pass; 0 = choose automatically (measured while reconstructing)
  bool substackStencil = false;  ///< graphics: the paper's 8 sub-stacks sharing one 8-bit stencil, not per-slice masks
  bool profile = false;          ///< time upload, compute and readback separately (see BackprojectorTimings)
  /// window 0 (auto): take the window an earlier search chose for this device, driver, backend and problem
  /// (a per-user cache, $XDG_CACHE_HOME/glrecon/windows.txt, like FFTW's wisdom) and store what a search finds.
  bool rememberWindow = false;
  bool retune = false;  ///< with rememberWindow: search again even where the cache has an answer
  /// Slab mode: the most y rows the backprojector holds at once (allocated for that many); 0: the whole grid,
  /// no slabs. See Backprojector::setSlab.
  int slabRows = 0;
};
/// BackprojectorOptions::window value asking for the largest window the device allows.
inline constexpr int kMaximumWindow = -1;

/// Multithreaded CPU reference: the oracle every GPU backend is held to, and the fallback without a GPU.
class CpuBackprojector final : public Backprojector {
 public:
  CpuBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options = {});
  std::string name() const override { return "cpu"; }
  void backproject(const float* projections, const std::size_t* views, std::size_t count) override;
  Image volume() override;
  void reset() override;
  void setSlab(int firstRow, int rows) override;
  void setRegion(const RegionOfInterest& roi) override;
  void killOutsideRange(double low, double high, double scale) override;
  std::vector<std::uint8_t> activeMask() override { return active_; }
  double culledFraction() const override { return updatesTotal_ > 0 ? updatesSkipped_ / updatesTotal_ : 0.0; }
  BackprojectorTimings timings() const override { return timings_; }

 private:
  BackprojectorTimings timings_;
  const Geometry& geometry_;
  VolumeGrid grid_;      // the whole grid: the matrices and a voxel's arithmetic come from it
  int slabCapacity_ = 0;  // slab mode: the most rows held (0: the whole grid)
  int slabFirst_ = 0;     // the first row of y held
  int threads_;
  Image volume_;
  std::vector<std::uint8_t> active_;           // empty: every voxel
  std::vector<std::pair<int, int>> spans_;     // per row: [first, last) holding its active voxels
  std::vector<std::uint8_t> rowPartial_;       // per row: some voxel inside the span is inactive
  double updatesSkipped_ = 0, updatesTotal_ = 0;
  bool killed_ = false;
  std::vector<float> padded_;  // projections with a zero border: 1 pixel before, 2 after, on both axes
};

/// The OpenGL graphics-pipeline backprojector (AG-GPU, or MP-GPU with `fragmentMapping`), in its own headless
/// EGL context on device `options.gpu`. Declared in graphics_backprojector.h.
class GraphicsBackprojector;

/// Bytes of memory a backend may use on device `gpu` now: free memory as CUDA or the GL driver
/// (NVX_gpu_memory_info, ATI_meminfo) reports it; UINT64_MAX where nothing is known (cpu, Mesa).
std::uint64_t deviceMemoryAvailable(const std::string& backend, int gpu);
/// Devices a backend can use: CUDA devices for cuda, EGL devices for the GL backends, 1 for cpu.
int deviceCount(const std::string& backend);

/// Backend names this build knows.
std::vector<std::string> availableBackends();
/// Creates a backend by name: cpu, graphics, graphics-mp, or auto (graphics on a hardware GPU, cpu where only
/// a software renderer or no OpenGL exists; `autoNote`, when given, receives the reason for the choice).
/// Throws UsageError for an unknown name, gl::GlError when a GPU backend was asked for and cannot run.
std::unique_ptr<Backprojector> makeBackprojector(const std::string& name, const Geometry& geometry,
                                                 const VolumeGrid& grid, const BackprojectorOptions& options = {},
                                                 std::string* autoNote = nullptr);

}  // namespace glrecon
