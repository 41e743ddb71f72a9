#pragma once
/// Voxel-driven FDK backprojection behind one interface, so every backend (cpu now; graphics, compute and
/// cuda later) runs the same reconstruction and can be compared voxel by voxel.
/// Conventions shared by all backends: the matrix of Geometry::matrix maps a voxel to (u w, v w, w);
/// the sample is bilinear with pixel centres at integer (u, v) and 0 outside the detector; each
/// projection adds (1 / w^2) Q(u, v). Tested in tests/test_backprojector.cpp.
#include <memory>
#include <string>
#include <vector>

#include "glrecon/geometry.h"
#include "glrecon/image.h"

namespace glrecon {

class Backprojector {
 public:
  virtual ~Backprojector() = default;
  virtual std::string name() const = 0;
  /// Adds `count` filtered projections into the volume: `projections` holds them one after another
  /// (nv rows of nu floats each); views[i] is the geometry index of the i-th.
  virtual void backproject(const float* projections, const std::size_t* views, std::size_t count) = 0;
  /// The volume accumulated so far.
  virtual Image volume() const = 0;
};

struct BackprojectorOptions {
  int threads = 0;  ///< CPU threads (0 = all)
};

/// Multithreaded CPU reference: the oracle every GPU backend is held to, and the fallback without a GPU.
class CpuBackprojector final : public Backprojector {
 public:
  CpuBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options = {});
  std::string name() const override { return "cpu"; }
  void backproject(const float* projections, const std::size_t* views, std::size_t count) override;
  Image volume() const override { return volume_; }

 private:
  const Geometry& geometry_;
  VolumeGrid grid_;
  int threads_;
  Image volume_;
  std::vector<float> padded_;  // projections with a zero border: 1 pixel before, 2 after, on both axes
};

/// Backend names this build knows, in order of preference for "auto".
std::vector<std::string> availableBackends();
/// Creates a backend by name ("cpu"; "auto" picks the best available). Throws UsageError naming the
/// known backends for an unknown name.
std::unique_ptr<Backprojector> makeBackprojector(const std::string& name, const Geometry& geometry,
                                                 const VolumeGrid& grid, const BackprojectorOptions& options = {});

}  // namespace glrecon
