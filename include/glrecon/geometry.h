#pragma once
/// Cone-beam acquisition geometry, one convention everywhere (docs/algorithms.md, "Geometry conventions").
///
/// World coordinates are millimetres in RTK's frame: the gantry rotates about the y axis, so axial
/// slices are x-z planes; at gantry angle 0 the source sits on +z and the detector on -z.
/// Each projection ("view") is described by four vectors, as ASTRA's cone_vec but anchored at
/// detector pixel (0,0) rather than the detector centre:
///   source   - world position of the X-ray focal spot,
///   pixel00  - world position of the centre of detector pixel (0,0),
///   uStep    - world step from one pixel to the next along a detector row (index u),
///   vStep    - world step from one row to the next (index v).
/// Circular scans and RTK geometry files convert to this form; everything downstream (filter,
/// backprojectors) uses only the vectors and the derived 3x4 matrices.
///
/// Parallel beam (ASTRA's parallel3d_vec, a synchrotron): the source is at infinity and every ray of a view runs along
/// one direction `ray` through its pixel centre. Such a view has `ray` non-zero (and `source` unused, zero); its matrix is
/// affine (w == 1: no distance weight). A scan is all cone or all parallel (Geometry::validate).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include <glm/vec3.hpp>
#include <glm/vec4.hpp>

#include "glrecon/image.h"

namespace glrecon {

struct ProjectionVectors {
  glm::dvec3 source{0.0};
  glm::dvec3 pixel00{0.0};
  glm::dvec3 uStep{0.0};
  glm::dvec3 vStep{0.0};
  /// Parallel beam: the direction of every ray (any length, either sense: the whole line counts, as a cone's rays run
  /// on past the detector). Zero for a cone-beam view (the rays start at `source`).
  glm::dvec3 ray{0.0};

  bool parallel() const { return ray.x != 0.0 || ray.y != 0.0 || ray.z != 0.0; }
  /// Unit normal of the detector plane, pointing from the source towards the detector (parallel beam: along the rays).
  glm::dvec3 detectorNormal() const;
  /// The unit direction of the ray through pixel (u, v) (towards the detector).
  glm::dvec3 rayDirection(double u, double v) const;
  /// Cone beam only (undefined for parallel views, which have no source):
  /// Perpendicular distance from the source to the detector plane (mm).
  double sourceToDetector() const;
  /// Perpendicular distance from the source to the plane through the world origin parallel to the
  /// detector (mm): the source-to-isocentre distance of a circular scan.
  double sourceToIsocentre() const;
  /// World position of the continuous detector coordinate (u, v) (pixel centres at integers).
  glm::dvec3 detectorPoint(double u, double v) const { return pixel00 + u * uStep + v * vStep; }
  /// Continuous pixel coordinates (u, v) where the perpendicular from the source meets the detector.
  std::array<double, 2> piercingPoint() const;
};

/// The detector's pixel grid in detector millimetres, as a projection stack's MetaImage header
/// stores it: pixel (iu, iv) is centred at (originU + iu*spacingU, originV + iv*spacingV).
struct DetectorLayout {
  int nu = 0, nv = 0;
  double spacingU = 1.0, spacingV = 1.0;
  double originU = 0.0, originV = 0.0;

  /// A detector of nu x nv pixels centred on its (0,0) millimetre point.
  static DetectorLayout centred(int nu, int nv, double spacingU, double spacingV);
};

/// RTK's circular-geometry parameters of one projection (rtk::ThreeDCircularProjectionGeometry).
/// Angles in degrees; world -> rotated frame is R = Rz(-inPlane) Rx(-outOfPlane) Ry(-gantry)
/// (ITK's ZXY Euler order). In the rotated frame the source is at (sourceOffsetX, sourceOffsetY, sid)
/// and detector millimetre point (u, v) at (u + projectionOffsetX, v + projectionOffsetY, sid - sdd).
///
/// sdd == 0 is RTK's parallel geometry ("If SDD equals 0., then one is dealing with a parallel geometry"): every ray
/// runs along the rotated frame's -z, through detector point (u, v) at rotated (u + projectionOffsetX,
/// v + projectionOffsetY); the source offsets move no ray (RTK's matrix cancels them). RTK places that detector at
/// z = -sid and integrates its rays from z = +sid to -sid; glrecon integrates the whole line (as ASTRA's parallel3d), so
/// the plane's depth does not matter and glrecon keeps it through the isocentre (z = 0, as makeParallelScan). sid stays
/// positive: it is RTK's ray half-length (and, with the offsets, RTK's source angle).
struct CircularParams {
  double sid = 1000.0;          ///< source to isocentre (mm)
  double sdd = 1536.0;          ///< source to detector (mm); 0: parallel beam (RTK's convention)
  double gantryAngle = 0.0;     ///< rotation about y: the scan angle
  double outOfPlaneAngle = 0.0; ///< tilt about x (a tilted C-arm)
  double inPlaneAngle = 0.0;    ///< detector roll about the beam axis z
  double sourceOffsetX = 0.0, sourceOffsetY = 0.0;
  double projectionOffsetX = 0.0, projectionOffsetY = 0.0;

  bool parallel() const { return sdd == 0.0; }
};

/// Vector form of a circular-geometry projection on a detector layout.
ProjectionVectors vectorsFromCircular(const CircularParams& params, const DetectorLayout& detector);

/// RTK's 3x4 matrix mapping homogeneous world mm to homogeneous detector mm (the <Matrix> of RTK files); for parallel
/// beam (sdd == 0) RTK's affine form: rows (R row 0, -projectionOffsetX), (R row 1, -projectionOffsetY), (0, 0, 0, 1).
std::array<std::array<double, 4>, 3> rtkProjectionMatrix(const CircularParams& params);

/// 3x4 matrix P mapping voxel index (i,j,k,1) to (u*w, v*w, w): u, v continuous pixel indices and
/// w the voxel's depth along the detector normal divided by the source-to-isocentre distance, so
/// the FDK distance weight is 1/w^2. Computed in double; backprojectors convert to float.
struct ProjectionMatrix {
  std::array<std::array<double, 4>, 3> m{};
  glm::dvec3 apply(const glm::dvec4& p) const {
    return {m[0][0] * p.x + m[0][1] * p.y + m[0][2] * p.z + m[0][3] * p.w,
            m[1][0] * p.x + m[1][1] * p.y + m[1][2] * p.z + m[1][3] * p.w,
            m[2][0] * p.x + m[2][1] * p.y + m[2][2] * p.z + m[2][3] * p.w};
  }
};

/// The scan: a detector layout and one set of vectors per projection, in acquisition order.
/// `circular` holds RTK's parameters when the geometry came from them (empty for raw vectors).
struct Geometry {
  DetectorLayout detector;
  std::vector<ProjectionVectors> views;
  std::vector<CircularParams> circular;

  std::size_t size() const { return views.size(); }
  /// True for a parallel-beam scan (every view's `ray` set; validate() refuses a mixture).
  bool parallel() const { return !views.empty() && views.front().parallel(); }

  /// Builds the vectors of every projection from RTK parameters and a detector layout.
  static Geometry fromCircular(std::vector<CircularParams> params, const DetectorLayout& detector);

  /// Throws GeometryError naming the projection and the fault: NaN or infinite values, zero or
  /// parallel detector steps, a source on (or behind) the detector plane, the world origin not
  /// between source and detector.
  void validate(const std::string& context) const;

  /// Throws GeometryError when a corner of the volume lies at or behind the source plane of some view
  /// (w <= 0): backprojection there is undefined.
  void checkVolumeInFront(const VolumeGrid& grid, const std::string& context) const;

  /// Matrix of view `index` for a volume grid.
  ProjectionMatrix matrix(std::size_t index, const VolumeGrid& grid) const;

  /// Angle (radians, [0, 2pi)) of each source about the y axis, measured as RTK's gantry angle:
  /// atan2(source.x, source.z) on the source projected to the y = 0 plane. Parallel beam: the direction the rays come
  /// from, atan2(-ray.x, -ray.z) (a view at gantry angle 0 has rays along -z, as a cone's central ray).
  std::vector<double> sourceAngles() const;
};

/// A circular scan described as scanner builders do: distances, number of projections over an arc,
/// detector size and pixel spacing, offsets. Produces RTK parameters (and so an RTK file) for it; sdd == 0 a
/// parallel-beam scan (RTK's convention, see CircularParams).
struct CircularScanSpec {
  double sid = 1000.0, sdd = 1536.0;
  int projections = 360;
  double firstAngle = 0.0;  ///< degrees
  double arc = 360.0;       ///< degrees covered; projections are spaced arc/projections apart
  int nu = 256, nv = 256;
  double spacingU = 2.0, spacingV = 2.0;
  double projectionOffsetX = 0.0, projectionOffsetY = 0.0;
  double sourceOffsetX = 0.0, sourceOffsetY = 0.0;
  double outOfPlaneAngle = 0.0, inPlaneAngle = 0.0;
};
Geometry makeCircularScan(const CircularScanSpec& spec);

/// A circular parallel-beam scan (ASTRA's parallel3d): the rays turn about y, at gantry angle a along
/// Ry(a) (0, 0, -1) (as a cone's central ray), the detector's centre on the rotation axis, u along Ry(a) (1, 0, 0) and v
/// along y. ASTRA's [0, pi) sampling is projections over an arc of 180 degrees (a complete parallel scan).
/// Made as RTK's parallel geometry (makeCircularScan with sdd 0): its RTK parameters come with it, for an RTK file.
struct ParallelScanSpec {
  int projections = 180;
  double firstAngle = 0.0;  ///< degrees
  double arc = 180.0;       ///< degrees covered; projections are spaced arc/projections apart
  int nu = 256, nv = 256;
  double spacingU = 1.0, spacingV = 1.0;
  double offsetU = 0.0, offsetV = 0.0;  ///< the detector's centre moved along u and v (mm)
  /// RTK's SourceToIsocenterDistance, for the RTK file only: RTK integrates parallel rays from +sid to -sid about the
  /// isocentre (glrecon the whole line); 1000 mm is RTK's own choice where it has none (a parallel matrix).
  double sid = 1000.0;
};
Geometry makeParallelScan(const ParallelScanSpec& spec);

/// A parallel-beam view from ASTRA's parallel3d_vec row in glrecon's world: ray direction, detector centre, u and v
/// steps (already in glrecon's axes); the centre is that of the nu x nv detector, as ASTRA's.
ProjectionVectors parallelVectors(const glm::dvec3& ray, const glm::dvec3& centre, const glm::dvec3& uStep, const glm::dvec3& vStep,
                                  int nu, int nv);

/// Arc (degrees) a short scan needs for a detector: 180 + fan angle of the widest pixel.
double shortScanArcDegrees(double sdd, const DetectorLayout& detector, double projectionOffsetX = 0.0);

}  // namespace glrecon
