#pragma once
/// A projector pair for iterative reconstruction: forward projection A (volume -> line integrals) and the
/// backprojection B ~ A^T (projections -> volume, no FDK filtering or 1/w^2 weight), on the per-projection
/// geometry every backend shares (Geometry's vectors and 3x4 matrices, pixel centres at integer u, v, 0 outside
/// the detector). Every backend computes the same two operators:
///
///   A  (ray-driven, Kaufman's / TIGRE's "interpolated" projector): the ray from the source to the centre of pixel
///      (u, v) is clipped to the box where the trilinear interpolant can be non-zero (voxel indices [-1, n] on
///      every axis, border 0), and sampled at the midpoints of steps of length `step` mm (default half the
///      smallest voxel spacing): (A x)(u, v) = step * sum_k trilinear(x, source + (t_in + (k + 1/2) step) dir).
///   B  (voxel-driven, the proxy-slice path): each voxel centre r projects to (u, v) through the view's matrix;
///      the projection is sampled bilinearly there (0 outside) and weighted by the voxel volume over the
///      cross-section of one pixel's ray bundle at r:  c(r) = V_voxel * SDD^2 * |r - s| / (|du x dv| * depth^3),
///      depth = (r - s) . n. This is the ray density the exact transpose of A integrates (sum over rays of the
///      ray length in a voxel ~ V_voxel / area per ray), so <A x, y> ~ <x, B y> for smooth x, y.
/// The pair is NOT matched (B is not exactly A^T: it interpolates on the detector where A^T would splat the
/// ray samples); the measured gap and its bound are in tests/test_projector.cpp and the README.
/// Tested in tests/test_projector.cpp (analytic phantom, adjoint gap, backends against cpu).
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/geometry.h"
#include "glrecon/image.h"

namespace glrecon {
namespace gl {
class Context;
}

struct ProjectorOptions {
  int threads = 0;     ///< CPU threads (0 = all)
  int gpu = 0;         ///< EGL device index (graphics, compute) or CUDA device index (cuda)
  double step = 0.0;   ///< ray-marching step in mm; 0 = half the smallest voxel spacing
  /// graphics, compute: draw in this context (a viewer's window, current on the calling thread) instead of a headless
  /// one of their own; it must outlive the projector.
  gl::Context* context = nullptr;
};

/// Per-call times (seconds), accumulated since construction.
struct ProjectorTimings {
  double forward = 0.0, back = 0.0;
  double samples = 0.0;  ///< trilinear ray samples taken by forward() (the step count of every ray summed)
};

/// One subset's update in SART / OS-SART (x += lambda * B_S(c) / B_S(1)) and OS-EM (x *= B_S(c) / B_S(1)): only
/// voxels the mask keeps whose weight B_S(1) exceeds its largest value over the volume / (256 * views in S) (below
/// that a voxel only grazes a view's detector edge, where texture units and the CPU disagree: see iterative.cpp).
struct SubsetRule {
  bool multiplicative = false;  ///< OS-EM
  float lambda = 1.0f;          ///< relaxation (additive rule)
  bool positivity = false;      ///< clamp negative voxels to 0 (additive rule)
};

class Projector {
 public:
  virtual ~Projector() = default;
  virtual std::string name() const = 0;
  /// The name and the device it runs on.
  virtual std::string description() const { return name(); }
  /// projections[i] (nv rows of nu floats) = A_{views[i]} volume, for `count` views. `volume` holds the grid's
  /// voxels (x fastest). GL and CUDA backends upload the volume on every call and read the projections back.
  virtual void forward(const float* volume, const std::size_t* views, std::size_t count, float* projections) = 0;
  /// volume = sum_i B_{views[i]} projections[i] (overwrites `volume`).
  virtual void back(const float* projections, const std::size_t* views, std::size_t count, float* volume) = 0;
  const ProjectorTimings& timings() const { return timings_; }
  double step() const { return step_; }

  /// The iterate of a subset method, kept where the projector computes: on the host here (through forward() and
  /// back(), with `cachedWeights` = B_S(1) when the caller keeps them), on the device in the GPU backends that
  /// override these, so that a subset moves only its projections and corrections between host and device, not
  /// the volume. `mask` (voxels bytes, nullptr: every voxel) must outlive the iterate. A forward() call may replace
  /// a device iterate (graphics, compute: they share the volume texture; the iterate calls then throw): set it again.
  virtual void setIterate(const float* x, std::size_t voxels, const std::uint8_t* mask);
  /// projections[i] = A_{views[i]} x for the iterate x.
  virtual void forwardIterate(const std::size_t* views, std::size_t count, float* projections);
  /// Applies `rule` with B_S(correction) for the subset `views` (corrections laid out as forward's projections).
  virtual void updateIterate(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                             const float* cachedWeights = nullptr);
  /// The iterate, to the host.
  virtual void getIterate(float* x);
  /// True where the iterate stays on the device and B_S(1) is computed there: callers then keep no weights.
  virtual bool iterateOnDevice() const { return false; }

 protected:
  ProjectorTimings timings_;
  double step_ = 0.0;
  std::size_t pixels_ = 0;  ///< detector pixels per view (nu * nv), set by the backend

 private:
  std::vector<float> iterate_, update_, weights_, ones_;
  const std::uint8_t* mask_ = nullptr;
};

/// The weight below which SubsetRule leaves a voxel alone: 1/256 of the largest B_S(1) per view of the subset.
float subsetWeightFloor(float largestWeight, std::size_t views);

/// SubsetRule on the host: x from the subset's back projection `update` = B_S(c) and `weights` = B_S(1) over
/// `views` views (what Projector::updateIterate does on the host, and the GPU backends do on the device).
void applySubsetRule(float* x, const float* update, const float* weights, const std::uint8_t* mask, std::size_t voxels,
                     std::size_t views, const SubsetRule& rule);

/// The view constants every backend uses (float, as GPUs compute), in one place so that all agree bit for bit on
/// the inputs. Coordinates: "index" = continuous voxel index (world - origin) / spacing.
struct ProjectorView {
  float sourceIndex[3];  ///< the source in voxel-index coordinates
  float e0[3];           ///< world vector from the source to the centre of pixel (0, 0)
  float eu[3], ev[3];    ///< world steps along a detector row / column
  float normal[3];       ///< unit detector normal (source -> detector)
  float weight;          ///< V_voxel * SDD^2 / |eu x ev| (see B above)
  float matrix[3][4];    ///< Geometry::matrix for the grid
};
std::vector<ProjectorView> projectorViews(const Geometry& geometry, const VolumeGrid& grid);
/// The step the options ask for (0: half the smallest spacing); throws GeometryError for a non-positive one.
double projectorStep(const ProjectorOptions& options, const VolumeGrid& grid);
/// Throws GeometryError when a ray has zero length (the source on a pixel centre) or the volume is not in front
/// of every source.
void checkProjectorGeometry(const Geometry& geometry, const VolumeGrid& grid, const std::string& context);

/// The trilinear samples forward() takes over every ray of every view (for rates in G ray-samples/s).
double countRaySamples(const Geometry& geometry, const VolumeGrid& grid, double step);

/// Multithreaded CPU reference (float arithmetic written as the shaders do it).
class CpuProjector final : public Projector {
 public:
  CpuProjector(const Geometry& geometry, const VolumeGrid& grid, const ProjectorOptions& options = {});
  std::string name() const override { return "cpu"; }
  void forward(const float* volume, const std::size_t* views, std::size_t count, float* projections) override;
  void back(const float* projections, const std::size_t* views, std::size_t count, float* volume) override;

 private:
  VolumeGrid grid_;
  int nu_, nv_;
  int threads_;
  std::vector<ProjectorView> views_;
};

/// Backend names: cpu, graphics (fragment-shader ray marching, proxy-slice backprojection), compute (the same in
/// compute shaders), cuda (where built).
std::vector<std::string> availableProjectors();
/// Throws UsageError for an unknown name, gl::GlError / CudaError when a GPU backend cannot run.
std::unique_ptr<Projector> makeProjector(const std::string& name, const Geometry& geometry, const VolumeGrid& grid,
                                         const ProjectorOptions& options = {});

}  // namespace glrecon
