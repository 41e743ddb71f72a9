#pragma once
// The samples of one forward-projection ray, shared by the cpu operator, countRaySamples and the cuda kernels (compiled
// by nvcc as host and device code), so their rays are the same float expressions; shaders/project_common.glsl writes
// the same operations in GLSL. Internal to src/operators.
#include <math.h>

#if defined(__CUDACC__)
#define GLRECON_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GLRECON_HOST_DEVICE inline
#endif

namespace glrecon::detail {

/// Sample k of a ray lies at first + k delta (continuous voxel index: voxel centres at integers); each stands for
/// `length` mm of the ray.
struct RaySamples {
  float first[3];
  float delta[3];
  int count;
  float length;
};

/// The ray from the source through pixel (fu, fv) of a view (a ProjectorView or the cuda kernels' copy of one: source,
/// e0, eu, ev as float[3], mainAxis), over the whole line through the clip box [-1, size] of voxel indices (outside it the
/// trilinear interpolant with a zero border is 0; past the detector too, wherever the detector stands: the physics'
/// line integral). Two samplings:
///  - step > 0: samples at the midpoints of steps of `step` mm;
///  - step == 0 (the default): one sample per voxel plane across the ray's main axis (Joseph 1982, ASTRA's and TIGRE's
///    choice), exactly on the plane, so the trilinear interpolant there is bilinear: half or fewer of the midpoint
///    samples at the default step, and the interpolant's integral along the main axis taken exactly (the trapezoid rule
///    of a piecewise-linear function). The main axis is the view's (that of its central ray, computed on the host), so
///    every backend marches the same planes; a ray of the cone more than 63 degrees off it takes its own largest axis.
/// Returns false where the ray misses the box or takes no sample.
/// A parallel-beam view (`parallel` 1, projector_views.h) has one direction e0 for every ray, each starting at its pixel
/// sourceIndex + fu eu + fv ev (voxel index): the whole line, both ways from there.
template <class View>
GLRECON_HOST_DEVICE bool marchRay(const View& o, float fu, float fv, const float spacing[3], const float size[3], float step, RaySamples& r) {
  float d[3], dir[3], s[3];
  float tmin = 0.0f, tmax = 3.402823466e38f;
  if (o.parallel) {
    for (int a = 0; a < 3; ++a) {
      d[a] = o.e0[a];
      s[a] = o.sourceIndex[a] + fu * o.eu[a] + fv * o.ev[a];
    }
    tmin = -3.402823466e38f;
  } else {
    for (int a = 0; a < 3; ++a) {
      d[a] = o.e0[a] + fu * o.eu[a] + fv * o.ev[a];
      s[a] = o.sourceIndex[a];
    }
  }
  const float length = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  for (int a = 0; a < 3; ++a) {
    dir[a] = d[a] / length / spacing[a];  // voxel-index units per mm along the ray
    if (dir[a] != 0.0f) {
      const float t0 = (-1.0f - s[a]) / dir[a], t1 = (size[a] - s[a]) / dir[a];
      tmin = fmaxf(tmin, fminf(t0, t1));
      tmax = fminf(tmax, fmaxf(t0, t1));
    } else if (s[a] < -1.0f || s[a] > size[a]) {
      return false;
    }
  }
  if (!(tmax > tmin)) return false;
  if (step > 0.0f) {
    r.count = static_cast<int>(ceilf((tmax - tmin) / step));
    const float t = tmin + 0.5f * step;
    for (int a = 0; a < 3; ++a) {
      r.first[a] = s[a] + t * dir[a];
      r.delta[a] = step * dir[a];
    }
    r.length = step;
    return r.count > 0;
  }
  int m = o.mainAxis;
  const float largest = fmaxf(fabsf(dir[0]), fmaxf(fabsf(dir[1]), fabsf(dir[2])));
  if (2.0f * fabsf(dir[m]) < largest) m = fabsf(dir[0]) == largest ? 0 : (fabsf(dir[1]) == largest ? 1 : 2);
  const float dm = dir[m];
  // The planes c = 0 .. size - 1 (at -1 and size the interpolant is 0) between the entry and the exit, in the ray's order.
  const float entry = s[m] + tmin * dm, exit = s[m] + tmax * dm, last = size[m] - 1.0f;
  float c0, c1;
  if (dm > 0.0f) {
    c0 = fmaxf(ceilf(entry), 0.0f);
    c1 = fminf(floorf(exit), last);
  } else {
    c0 = fminf(floorf(entry), last);
    c1 = fmaxf(ceilf(exit), 0.0f);
  }
  r.count = static_cast<int>(fabsf(c1 - c0)) + 1;
  if (dm > 0.0f ? c1 < c0 : c1 > c0) return false;
  const float perPlane = 1.0f / fabsf(dm), t = (c0 - s[m]) / dm;
  for (int a = 0; a < 3; ++a) {
    r.first[a] = s[a] + t * dir[a];
    r.delta[a] = dir[a] * perPlane;
  }
  r.first[m] = c0;  // exactly on the plane (the expression above rounds): the main axis's weights are then 1 and 0
  r.delta[m] = dm > 0.0f ? 1.0f : -1.0f;
  r.length = perPlane;
  return true;
}

/// The samples [*k0, *k1) of a ray whose trilinear footprint may reach y rows [y0, y1) (their y in [y0 - 1, y1)), solved
/// in double with a sample's margin either side (a sample in the margin reads only zeros or voxels outside the rows);
/// *k0 >= *k1 where none does. For operators holding a block of rows: their rays are the whole grid's, sampled where
/// they reach the block.
GLRECON_HOST_DEVICE void samplesReachingRows(const RaySamples& ray, int y0, int y1, int* k0, int* k1) {
  const int samples = ray.count;
  if (ray.delta[1] == 0.0f) {
    const bool inside = !(ray.first[1] < y0 - 1.0f || ray.first[1] >= static_cast<float>(y1));
    *k0 = 0;
    *k1 = inside ? samples : 0;
    return;
  }
  const double ka = (y0 - 1.0 - ray.first[1]) / ray.delta[1], kb = (y1 - ray.first[1]) / ray.delta[1];
  // Clamped in double before the conversion: a ray nearly parallel to the rows (the centre row of an odd detector:
  // delta y ~ 1e-10) gives ka, kb ~ 1e10, beyond int (converted, INT_MIN: 2^31 samples per ray).
  *k0 = static_cast<int>(fmin(fmax(floor(fmin(ka, kb)) - 1.0, 0.0), static_cast<double>(samples)));
  *k1 = static_cast<int>(fmin(fmax(ceil(fmax(ka, kb)) + 2.0, 0.0), static_cast<double>(samples)));
}

}  // namespace glrecon::detail
