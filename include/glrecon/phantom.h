#pragma once
/// Analytic ellipsoid phantoms: exact line-integral projections for any geometry, and voxelization of the
/// same phantom onto any grid as ground truth. Tested in tests/core/phantom_test.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include <glm/vec3.hpp>

#include "glrecon/geometry.h"
#include "glrecon/image.h"

namespace glrecon {

/// An ellipsoid of constant density (added to whatever it overlaps), with RTK's conventions: semi-axes
/// along x, y, z before rotation; `angleY` (degrees) turns it about the y axis the way RTK's
/// QuadricShape::SetEllipsoid does (the local x axis ends up along (cos a, 0, sin a)).
struct Ellipsoid {
  glm::dvec3 center{0.0};
  glm::dvec3 semiAxes{1.0};
  double angleY = 0.0;
  double density = 1.0;
};

enum class SheppLoganVariant {
  Rtk,       ///< Kak & Slaney's 3D table with its errata, as RTK defines it: densities 2, -0.98, -0.02, ...
  Modified,  ///< the high-contrast variant (Toft's scaling, as ASTRA and others use): 1, -0.8, -0.2, ...
};

class Phantom {
 public:
  Phantom() = default;
  explicit Phantom(std::vector<Ellipsoid> ellipsoids);

  /// The 3D Shepp-Logan phantom; `scale` (mm) multiplies centres and semi-axes (RTK's default is 128).
  static Phantom sheppLogan(SheppLoganVariant variant = SheppLoganVariant::Rtk, double scale = 128.0);

  const std::vector<Ellipsoid>& ellipsoids() const { return ellipsoids_; }
  /// Sum of the densities of the ellipsoids containing point p (boundary included).
  double densityAt(const glm::dvec3& p) const;
  /// Integral of the density along the segment from `a` to `b` (mm x density), exact.
  double lineIntegral(const glm::dvec3& a, const glm::dvec3& b) const;
  /// Integral along the whole ray from `source` through `through` and beyond (what a detector pixel measures,
  /// wherever the detector stands: the object behind the detector plane attenuates the beam before it too).
  double rayIntegral(const glm::dvec3& source, const glm::dvec3& through) const;
  /// Integral along the whole line through `through` along `direction` (a parallel-beam ray), exact.
  double parallelRayIntegral(const glm::dvec3& through, const glm::dvec3& direction) const;
  /// Multiplies every density (e.g. 0.01 to turn RTK's units into attenuation per mm for noise studies).
  void scaleDensities(double factor);

 private:
  double integral(const glm::dvec3& a, const glm::dvec3& b, double upper, double lower = 0.0) const;
  struct Prepared {
    glm::dvec3 center;
    glm::dvec3 rowX, rowY, rowZ;  // world -> unit-sphere coordinates: local = rows . (p - center)
    double density;
  };
  std::vector<Ellipsoid> ellipsoids_;
  std::vector<Prepared> prepared_;
};

SheppLoganVariant parseSheppLoganVariant(const std::string& name);

struct ProjectionOptions {
  int supersample = 1;   ///< rays per pixel along each detector axis (averaged)
  double noiseI0 = 0.0;  ///< unattenuated photon count for Poisson noise; 0 = noise-free
  std::uint64_t seed = 1;
  int threads = 0;
};

/// Line-integral projections of the phantom: an image of size (nu, nv, projections) whose origin and
/// spacing carry the detector layout (so it writes straight to a MetaImage stack RTK can read).
Image projectPhantom(const Phantom& phantom, const Geometry& geometry, const ProjectionOptions& options);

/// A simulated scan, as `glrecon phantom` and Python's project_shepp_logan make it: projectPhantom in batches of 16 views,
/// the noise seed advanced by the batch's first view (so a noisy scan is the same whoever makes it), with a progress line
/// on stderr where `progress` is set.
Image simulateScan(const Phantom& phantom, const Geometry& geometry, const ProjectionOptions& options, bool progress = false);

/// Mean density over each voxel of `grid`, estimated on supersample^3 points per voxel.
Image voxelizePhantom(const Phantom& phantom, const VolumeGrid& grid, int supersample, int threads = 0);

}  // namespace glrecon
