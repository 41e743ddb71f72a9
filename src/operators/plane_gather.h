#pragma once
// The matched pair's rays written plane by plane, for the cuda forward projection and its transpose as a gather (each
// voxel sums the rays that reach it; no atomic adds). Compiled by nvcc as device code and by the host compiler for the
// tests that check the loops on the CPU. Internal to src/operators.
//
// Why: the transpose as a scatter (each ray adds its samples into their 4 voxels) is 24 G atomic adds per iteration at
// 256^3 from 360 x 256^2, the matched pair's largest cost. A gather has each voxel find the pixels whose rays reach it
// and compute their weights; it is the exact transpose only if it computes every weight to the bits the forward
// projection uses, which marching the ray (a sample at first + k delta) would make it recompute per pixel. So for the
// views this holds for (planeGatherable), both sides compute a ray's sample on plane c directly:
//     position_a = source_a + (c - source_m) * R_a,   R_a = (d_a / d_m) * (h_m / h_a)
// for the main axis m and the other two axes a (d: the ray's world direction, h: the spacing), and the same float
// operations in the same order (mulRn and friends: no fused multiply-adds), so both have the same positions, the same
// bilinear weights on the plane (ray_march.h's one sample per plane) and the same length per plane h_m |d| / |d_m|.
// A view qualifies where the detector's u runs across y and its v along y only (RTK's gantry about y, untilted:
// then d_m and d_n depend on u alone and d_y on v alone, so a voxel's u range and its v range solve apart), the
// source is beside the planes, and no ray of the view leaves its main axis (ray_march.h's 63 degrees).
#include <math.h>

#include "operators/ray_march.h"

namespace glrecon::detail {

// Float operations no compiler fuses or reorders: the forward and the gather must agree to the bit.
#if defined(__CUDA_ARCH__)
GLRECON_HOST_DEVICE float mulRn(float a, float b) { return __fmul_rn(a, b); }
GLRECON_HOST_DEVICE float addRn(float a, float b) { return __fadd_rn(a, b); }
GLRECON_HOST_DEVICE float subRn(float a, float b) { return __fsub_rn(a, b); }
GLRECON_HOST_DEVICE float divRn(float a, float b) { return __fdiv_rn(a, b); }
GLRECON_HOST_DEVICE float sqrtRn(float a) { return __fsqrt_rn(a); }
// Where rounding does not matter (the pixel ranges, widened by a margin): the fast approximate division.
GLRECON_HOST_DEVICE float divFast(float a, float b) { return __fdividef(a, b); }
#else
// Host builds must not fuse: the files that use these build with -ffp-contract=off (CMakeLists.txt).
GLRECON_HOST_DEVICE float mulRn(float a, float b) { return a * b; }
GLRECON_HOST_DEVICE float addRn(float a, float b) { return a + b; }
GLRECON_HOST_DEVICE float subRn(float a, float b) { return a - b; }
GLRECON_HOST_DEVICE float divRn(float a, float b) { return a / b; }
GLRECON_HOST_DEVICE float sqrtRn(float a) { return sqrtf(a); }
GLRECON_HOST_DEVICE float divFast(float a, float b) { return a / b; }
#endif

/// A view's constants in plane form: main axis m (0 or 2), the other horizontal axis n (2 or 0), and y.
struct PlaneView {
  int m, n;
  float sm, sn, sy;          // the source (voxel index)
  float e0m, e0n, e0y;       // source -> pixel (0, 0), world
  float eum, eun, evy;       // the pixel steps' non-zero components
  float ratioN, ratioY, hm;  // h_m / h_n, h_m / h_y, h_m
};

template <class View>
GLRECON_HOST_DEVICE PlaneView planeViewOf(const View& o, const float spacing[3]) {
  PlaneView p;
  p.m = o.mainAxis;
  p.n = 2 - o.mainAxis;
  p.sm = o.sourceIndex[p.m];
  p.sn = o.sourceIndex[p.n];
  p.sy = o.sourceIndex[1];
  p.e0m = o.e0[p.m];
  p.e0n = o.e0[p.n];
  p.e0y = o.e0[1];
  p.eum = o.eu[p.m];
  p.eun = o.eu[p.n];
  p.evy = o.ev[1];
  p.ratioN = divRn(spacing[p.m], spacing[p.n]);
  p.ratioY = divRn(spacing[p.m], spacing[1]);
  p.hm = spacing[p.m];
  return p;
}

/// What a pixel column u fixes: 1 / d_m, R_n, and d_m^2 + d_n^2 (the length's first terms).
struct PlaneColumn {
  float inv, rn, across;
};
GLRECON_HOST_DEVICE PlaneColumn planeColumn(const PlaneView& p, float fu) {
  const float dm = addRn(p.e0m, mulRn(fu, p.eum)), dn = addRn(p.e0n, mulRn(fu, p.eun));
  PlaneColumn c;
  c.inv = divRn(1.0f, dm);
  c.rn = mulRn(mulRn(dn, c.inv), p.ratioN);
  c.across = addRn(mulRn(dm, dm), mulRn(dn, dn));
  return c;
}
/// d_y of pixel row v.
GLRECON_HOST_DEVICE float planeDy(const PlaneView& p, float fv) { return addRn(p.e0y, mulRn(fv, p.evy)); }
GLRECON_HOST_DEVICE float planeRy(const PlaneView& p, const PlaneColumn& c, float dy) { return mulRn(mulRn(dy, c.inv), p.ratioY); }
/// The ray's length per plane: h_m |d| / |d_m|.
GLRECON_HOST_DEVICE float planeLength(const PlaneView& p, const PlaneColumn& c, float dy) {
  return mulRn(mulRn(sqrtRn(addRn(c.across, mulRn(dy, dy))), fabsf(c.inv)), p.hm);
}
/// The position along an axis (source s, ratio r) on the plane whose offset from the source is cs = c - s_m.
GLRECON_HOST_DEVICE float planePosition(float s, float cs, float r) { return addRn(s, mulRn(cs, r)); }
/// The bilinear weights' split of a position: its voxel floor(x) takes 1 - f, the next f.
struct Split {
  int index;
  float w0, w1;
};
GLRECON_HOST_DEVICE Split splitOf(float x) {
  const float base = floorf(x), f = subRn(x, base);
  return Split{static_cast<int>(base), subRn(1.0f, f), f};
}
/// The weight a position gives voxel `index` (0 beyond its two voxels): the forward's split, read from the voxel's side.
GLRECON_HOST_DEVICE float hatWeight(float x, int index) {
  const Split s = splitOf(x);
  return index == s.index ? s.w0 : (index == s.index + 1 ? s.w1 : 0.0f);
}

/// The planes [*c0, *c1] on which the ray (column c, d_y dy) may give a voxel of the box of n extent `sizeN`, rows
/// [y0, y1) and planes [0, sizeM) a weight: where its positions are within [-1, size] with a plane's margin either
/// side (the weights outside are 0 anyway: the margin only keeps float rounding of the bounds from dropping a plane).
/// Returns false where there is none.
GLRECON_HOST_DEVICE bool planeRange(const PlaneView& p, const PlaneColumn& c, float ry, int sizeM, int sizeN, int y0, int y1, int* c0,
                                    int* c1) {
  double lo = 0.0, hi = sizeM - 1.0;  // planes, in c
  const double bounds[2][3] = {{-1.0, static_cast<double>(sizeN), static_cast<double>(c.rn)},
                               {y0 - 1.0, static_cast<double>(y1), static_cast<double>(ry)}};
  const double sources[2] = {p.sn, p.sy};
  for (int a = 0; a < 2; ++a) {
    const double r = bounds[a][2], s = sources[a];
    if (r == 0.0) {
      if (s < bounds[a][0] || s > bounds[a][1]) return false;
      continue;
    }
    const double t0 = (bounds[a][0] - s) / r + p.sm, t1 = (bounds[a][1] - s) / r + p.sm;
    lo = fmax(lo, floor(fmin(t0, t1)) - 1.0);
    hi = fmin(hi, ceil(fmax(t0, t1)) + 1.0);
  }
  if (hi < lo) return false;
  *c0 = static_cast<int>(lo);
  *c1 = static_cast<int>(hi);
  return true;
}

/// The forward projection of pixel (u, v) (a planeGatherable view): the sum over its planes of the volume's bilinear
/// samples times the length per plane. `voxel(x, y, z)` reads a voxel of the grid (y: the grid's row; 0 outside the
/// block of rows [y0, y1)).
template <class Voxel>
GLRECON_HOST_DEVICE float planeForward(const PlaneView& p, int u, int v, int sizeX, int sizeZ, int y0, int y1, const Voxel& voxel) {
  const PlaneColumn c = planeColumn(p, static_cast<float>(u));
  const float dy = planeDy(p, static_cast<float>(v)), ry = planeRy(p, c, dy);
  const int sizeM = p.m == 0 ? sizeX : sizeZ, sizeN = p.m == 0 ? sizeZ : sizeX;
  int c0 = 0, c1 = -1;
  if (!planeRange(p, c, ry, sizeM, sizeN, y0, y1, &c0, &c1)) return 0.0f;
  float sum = 0.0f;
  for (int plane = c0; plane <= c1; ++plane) {
    const float cs = subRn(static_cast<float>(plane), p.sm);
    const Split n = splitOf(planePosition(p.sn, cs, c.rn)), y = splitOf(planePosition(p.sy, cs, ry));
    const float wn[2] = {n.w0, n.w1}, wy[2] = {y.w0, y.w1};
    float value = 0.0f;
    for (int dy2 = 0; dy2 < 2; ++dy2)
      for (int dn = 0; dn < 2; ++dn) {
        const int row = y.index + dy2, across = n.index + dn;
        if (wy[dy2] == 0.0f || wn[dn] == 0.0f || row < y0 || row >= y1 || across < 0 || across >= sizeN) continue;
        const float w = mulRn(wy[dy2], wn[dn]);
        value += (p.m == 0 ? voxel(plane, row, across) : voxel(across, row, plane)) * w;
      }
    sum += value;
  }
  return sum * planeLength(p, c, dy);
}

/// The pixel range [*lo, *hi] (within [0, count)) between two pixel coordinates found in float, widened by `margin`
/// pixels (their rounding; the weights decide exactly). False where it is empty. NaN bounds (a degenerate solve) give
/// the whole axis.
GLRECON_HOST_DEVICE bool pixelRange(float a, float b, int count, int* lo, int* hi, float margin) {
  if (isnan(a) || isnan(b)) {
    *lo = 0;
    *hi = count - 1;
    return count > 0;
  }
  const float first = fminf(a, b) - margin, last = fmaxf(a, b) + margin;
  if (!(last >= 0.0f) || !(first <= static_cast<float>(count - 1))) return false;
  *lo = first <= 0.0f ? 0 : static_cast<int>(ceilf(first));
  *hi = last >= static_cast<float>(count - 1) ? count - 1 : static_cast<int>(floorf(last));
  return *lo <= *hi;
}

/// The gather's margin on its pixel ranges: a hundredth of a pixel (divFast's 2 ulp and the solve's rounding at
/// ordinary distances), growing with the plane's distance from the source in voxels, cs, whose float rounding grows
/// the solve's (a source 2e5 voxels away, 5 um voxels at 1 m, missed pixels of weight up to 2^-7 with 0.01 alone).
GLRECON_HOST_DEVICE float rangeMargin(float cs) { return 0.01f + 1e-6f * fabsf(cs); }

/// The pixel's value times its ray's length per plane, as the transpose weighs it (the cuda operator multiplies a
/// batch in place before its gather: planeLength once per pixel, not once per voxel reached).
GLRECON_HOST_DEVICE float planeWeighted(const PlaneView& p, int u, int v, float value) {
  return mulRn(value, planeLength(p, planeColumn(p, static_cast<float>(u)), planeDy(p, static_cast<float>(v))));
}

/// The transpose for voxels (plane c, across index `across`, grid rows [row0, row0 + Run)): add(r, x) for every pixel
/// that reaches row row0 + r, x its weighted value (planeWeighted: `weighted(u, v)` reads it) times the weight the
/// forward gives that voxel (planeForward's, to the bit).
template <int Run, class Weighted, class Add>
GLRECON_HOST_DEVICE void planeGather(const PlaneView& p, int nu, int nv, int plane, int across, int row0, const Weighted& weighted,
                                     const Add& add) {
  const float cs = subRn(static_cast<float>(plane), p.sm);
  // The u whose R_n puts the ray within a voxel of `across`: d_n / d_m = T for T = (P - s_n) / (cs h_m / h_n).
  const float perT = divFast(1.0f, cs * p.ratioN);
  float us[2];
  for (int e = 0; e < 2; ++e) {
    const float t = (static_cast<float>(across + (e == 0 ? -1 : 1)) - p.sn) * perT;
    us[e] = divFast(t * p.e0m - p.e0n, p.eun - t * p.eum);
  }
  int u0 = 0, u1 = -1;
  if (!pixelRange(us[0], us[1], nu, &u0, &u1, rangeMargin(cs))) return;
  const float perEv = divFast(1.0f, p.evy);
  for (int u = u0; u <= u1; ++u) {
    const PlaneColumn c = planeColumn(p, static_cast<float>(u));
    const float wn = hatWeight(planePosition(p.sn, cs, c.rn), across);
    if (wn == 0.0f) continue;
    // The v whose y position is within the run's reach, [row0 - 1, row0 + Run]: d_y = (P - s_y) / (cs R_y / d_y).
    const float perDy = divFast(1.0f, cs * c.inv * p.ratioY);
    float vs[2];
    for (int e = 0; e < 2; ++e) vs[e] = ((static_cast<float>(e == 0 ? row0 - 1 : row0 + Run) - p.sy) * perDy - p.e0y) * perEv;
    int v0 = 0, v1 = -1;
    if (!pixelRange(vs[0], vs[1], nv, &v0, &v1, rangeMargin(cs))) continue;
    for (int v = v0; v <= v1; ++v) {
      const Split y = splitOf(planePosition(p.sy, cs, planeRy(p, c, planeDy(p, static_cast<float>(v)))));
      const int r = y.index - row0;
      if (r < -1 || r >= Run) continue;
      const float value = weighted(u, v);
      if (value == 0.0f) continue;
      if (r >= 0 && y.w0 != 0.0f) add(r, value * mulRn(y.w0, wn));
      if (r + 1 < Run && y.w1 != 0.0f) add(r + 1, value * mulRn(y.w1, wn));
    }
  }
}

// ---- The distance-driven pair (ProjectorPair::DistanceDriven; De Man & Basu, Phys. Med. Biol. 2004) in plane form:
// on plane c, a pixel's shadow is the box between the positions of the rays through its edges (u -+ 1/2 along n;
// v -+ 1/2 along y, through its centre column), and each voxel is its box [k - 1/2, k + 1/2] on each axis. The weight
// of voxel (k, j) for the pixel is (overlap along n / shadow along n) (overlap along y / shadow along y) times the
// centre ray's length per plane: the mean of the piecewise-constant volume over the shadow, integrated along the ray.
// So the pair models both the voxels' and the pixels' size (the interpolating and matched pairs take pencil rays).
// The forward and the gather compute every shadow and overlap by these functions, to the same bits.

/// A shadow's ends (lo <= hi) and 1 / (hi - lo).
struct Shadow {
  float lo, hi, inv;
};
GLRECON_HOST_DEVICE Shadow shadowOf(float a, float b) {
  Shadow s;
  s.lo = fminf(a, b);
  s.hi = fmaxf(a, b);
  s.inv = divRn(1.0f, subRn(s.hi, s.lo));
  return s;
}
/// The fraction of the shadow over voxel k's box (0 where they do not overlap).
GLRECON_HOST_DEVICE float overlapOf(const Shadow& s, int k) {
  const float kf = static_cast<float>(k);
  const float lo = fmaxf(s.lo, subRn(kf, 0.5f)), hi = fminf(s.hi, addRn(kf, 0.5f));
  return hi > lo ? mulRn(subRn(hi, lo), s.inv) : 0.0f;
}
/// The first and last voxel whose box a shadow overlaps (exact: k - 1/2 and k + 1/2 are floats exactly).
GLRECON_HOST_DEVICE int firstOverlapped(float lo) {
  int k = static_cast<int>(floorf(lo + 0.5f));
  if (static_cast<float>(k) + 0.5f <= lo) ++k;
  if (static_cast<float>(k - 1) + 0.5f > lo) --k;
  return k;
}
GLRECON_HOST_DEVICE int lastOverlapped(float hi) {
  int k = static_cast<int>(floorf(hi + 0.5f));
  if (static_cast<float>(k) - 0.5f >= hi) --k;
  if (static_cast<float>(k + 1) - 0.5f < hi) ++k;
  return k;
}

/// A pixel's edge rays: R_n at u -+ 1/2 and R_y at v -+ 1/2 (through the centre column's 1 / d_m).
struct DdPixel {
  float rnLo, rnHi, ryLo, ryHi;
};
GLRECON_HOST_DEVICE DdPixel ddPixel(const PlaneView& p, const PlaneColumn& centre, int u, int v) {
  DdPixel d;
  d.rnLo = planeColumn(p, static_cast<float>(u) - 0.5f).rn;
  d.rnHi = planeColumn(p, static_cast<float>(u) + 0.5f).rn;
  d.ryLo = planeRy(p, centre, planeDy(p, static_cast<float>(v) - 0.5f));
  d.ryHi = planeRy(p, centre, planeDy(p, static_cast<float>(v) + 0.5f));
  return d;
}

/// The planes [*c0, *c1] on which a pixel's shadow along an axis (source s, edge ratios ra, rb) meets [lo, hi]: with
/// cs = c - s_m of one sign on every plane (the source is beside them), the shadow's lower end is s + cs r_lower and
/// its upper end s + cs r_upper for fixed r_lower, r_upper, and it meets [lo, hi] where lower <= hi and upper >= lo,
/// two linear conditions on cs; a plane's margin either side for their rounding. False where none. (The shadow grows
/// with the distance from the source, so it can cover [lo, hi] whole with both edges outside: a range from the edges'
/// own crossings alone missed those planes.)
GLRECON_HOST_DEVICE bool edgePlanes(double s, double sm, double ra, double rb, double lo, double hi, double* c0, double* c1) {
  const bool ahead = sm < 0.0;  // the planes lie at cs > 0
  const double lower = ahead ? fmin(ra, rb) : fmax(ra, rb), upper = ahead ? fmax(ra, rb) : fmin(ra, rb);
  double first = ahead ? 0.0 : -1e300, last = ahead ? 1e300 : 0.0;  // in cs
  // cs lower <= hi - s, cs upper >= lo - s.
  const double bounds[2][2] = {{lower, hi - s}, {upper, lo - s}};
  for (int e = 0; e < 2; ++e) {
    const double r = bounds[e][0], rhs = bounds[e][1];
    const bool atMost = e == 0;  // r cs <= rhs (else r cs >= rhs)
    if (r == 0.0) {
      if (atMost ? rhs < 0.0 : rhs > 0.0) return false;
      continue;
    }
    const double t = rhs / r;
    if ((r > 0.0) == atMost)
      last = fmin(last, t);
    else
      first = fmax(first, t);
  }
  if (first > last) return false;
  *c0 = floor(first + sm) - 1.0;
  *c1 = ceil(last + sm) + 1.0;
  return true;
}

/// The distance-driven forward projection of pixel (u, v) (a planeGatherable view). `voxel(x, y, z)` as planeForward.
template <class Voxel>
GLRECON_HOST_DEVICE float ddForward(const PlaneView& p, int u, int v, int sizeX, int sizeZ, int y0, int y1, const Voxel& voxel) {
  const PlaneColumn c = planeColumn(p, static_cast<float>(u));
  const DdPixel d = ddPixel(p, c, u, v);
  const int sizeM = p.m == 0 ? sizeX : sizeZ, sizeN = p.m == 0 ? sizeZ : sizeX;
  double n0 = 0, n1 = 0, r0 = 0, r1 = 0;  // (fmax / fmin below clamp the open ends, +-1e300, to the planes)
  if (!edgePlanes(p.sn, p.sm, d.rnLo, d.rnHi, -0.5, sizeN - 0.5, &n0, &n1)) return 0.0f;
  if (!edgePlanes(p.sy, p.sm, d.ryLo, d.ryHi, y0 - 0.5, y1 - 0.5, &r0, &r1)) return 0.0f;
  const double first = fmax(fmax(n0, r0), 0.0), last = fmin(fmin(n1, r1), sizeM - 1.0);
  if (last < first) return 0.0f;
  float sum = 0.0f;
  for (int plane = static_cast<int>(first); plane <= static_cast<int>(last); ++plane) {
    const float cs = subRn(static_cast<float>(plane), p.sm);
    const Shadow n = shadowOf(planePosition(p.sn, cs, d.rnLo), planePosition(p.sn, cs, d.rnHi));
    const Shadow y = shadowOf(planePosition(p.sy, cs, d.ryLo), planePosition(p.sy, cs, d.ryHi));
    const int k0 = firstOverlapped(n.lo) < 0 ? 0 : firstOverlapped(n.lo), k1 = lastOverlapped(n.hi) >= sizeN ? sizeN - 1 : lastOverlapped(n.hi);
    const int j0 = firstOverlapped(y.lo) < y0 ? y0 : firstOverlapped(y.lo), j1 = lastOverlapped(y.hi) >= y1 ? y1 - 1 : lastOverlapped(y.hi);
    float value = 0.0f;
    for (int row = j0; row <= j1; ++row) {
      const float wy = overlapOf(y, row);
      if (wy == 0.0f) continue;
      for (int across = k0; across <= k1; ++across) {
        const float wn = overlapOf(n, across);
        if (wn == 0.0f) continue;
        value += (p.m == 0 ? voxel(plane, row, across) : voxel(across, row, plane)) * mulRn(wy, wn);
      }
    }
    sum += value;
  }
  return sum * planeLength(p, c, planeDy(p, static_cast<float>(v)));
}

/// The distance-driven transpose for voxels (plane c, across index `across`, grid rows [row0, row0 + Run)), as
/// planeGather: add(r, x) for every pixel whose shadow overlaps row row0 + r, x its weighted value (planeWeighted, the
/// centre ray's length) times ddForward's weight for that voxel, to the bit.
template <int Run, class Weighted, class Add>
GLRECON_HOST_DEVICE void ddGather(const PlaneView& p, int nu, int nv, int plane, int across, int row0, const Weighted& weighted, const Add& add) {
  const float cs = subRn(static_cast<float>(plane), p.sm);
  // The continuous u at which the ray meets the voxel's edges across +- 1/2; pixels whose [u - 1/2, u + 1/2] meets
  // that span overlap it.
  const float perT = divFast(1.0f, cs * p.ratioN);
  float us[2];
  for (int e = 0; e < 2; ++e) {
    const float t = (static_cast<float>(across) + (e == 0 ? -0.5f : 0.5f) - p.sn) * perT;
    us[e] = divFast(t * p.e0m - p.e0n, p.eun - t * p.eum);
  }
  int u0 = 0, u1 = -1;
  if (!isnan(us[0]) && !isnan(us[1])) {
    const float lo = fminf(us[0], us[1]), hi = fmaxf(us[0], us[1]);
    us[0] = lo - 0.5f;
    us[1] = hi + 0.5f;
  }
  if (!pixelRange(us[0], us[1], nu, &u0, &u1, rangeMargin(cs))) return;
  const float perEv = divFast(1.0f, p.evy);
  for (int u = u0; u <= u1; ++u) {
    const Shadow n = shadowOf(planePosition(p.sn, cs, planeColumn(p, static_cast<float>(u) - 0.5f).rn),
                              planePosition(p.sn, cs, planeColumn(p, static_cast<float>(u) + 0.5f).rn));
    const float wn = overlapOf(n, across);
    if (wn == 0.0f) continue;
    const PlaneColumn c = planeColumn(p, static_cast<float>(u));
    // The continuous v at which the rays through column u meet the run's edges, rows row0 - 1/2 and row0 + Run - 1/2.
    const float perDy = divFast(1.0f, cs * c.inv * p.ratioY);
    float vs[2];
    for (int e = 0; e < 2; ++e)
      vs[e] = ((static_cast<float>(e == 0 ? row0 : row0 + Run) - 0.5f - p.sy) * perDy - p.e0y) * perEv;
    int v0 = 0, v1 = -1;
    if (!isnan(vs[0]) && !isnan(vs[1])) {
      const float lo = fminf(vs[0], vs[1]), hi = fmaxf(vs[0], vs[1]);
      vs[0] = lo - 0.5f;
      vs[1] = hi + 0.5f;
    }
    if (!pixelRange(vs[0], vs[1], nv, &v0, &v1, rangeMargin(cs))) continue;
    for (int v = v0; v <= v1; ++v) {
      const Shadow y = shadowOf(planePosition(p.sy, cs, planeRy(p, c, planeDy(p, static_cast<float>(v) - 0.5f))),
                                planePosition(p.sy, cs, planeRy(p, c, planeDy(p, static_cast<float>(v) + 0.5f))));
      const int j0 = firstOverlapped(y.lo), j1 = lastOverlapped(y.hi);
      if (j1 < row0 || j0 >= row0 + Run) continue;
      const float value = weighted(u, v);
      if (value == 0.0f) continue;
      for (int row = j0 < row0 ? row0 : j0; row <= j1 && row < row0 + Run; ++row) {
        const float wy = overlapOf(y, row);
        if (wy != 0.0f) add(row - row0, value * mulRn(wy, wn));
      }
    }
  }
}

}  // namespace glrecon::detail

namespace glrecon::detail {

/// Whether every ray of a view keeps the view's main axis in marchRay (ray_march.h): each corner ray's main-axis
/// component at least 0.55 of its largest (marchRay keeps the axis down to 0.5; the margin is float rounding's), with
/// one sign (the components are linear in u and v, so the corners bound them).
template <class View>
bool raysKeepMainAxis(const View& o, const float spacing[3], int nu, int nv) {
  const int m = o.mainAxis;
  int sign = 0;
  for (int corner = 0; corner < 4; ++corner) {
    const double u = corner & 1 ? nu - 1.0 : 0.0, v = corner & 2 ? nv - 1.0 : 0.0;
    double dir[3];
    for (int a = 0; a < 3; ++a) dir[a] = (o.parallel ? o.e0[a] : o.e0[a] + u * o.eu[a] + v * o.ev[a]) / spacing[a];
    const double largest = fmax(fabs(dir[0]), fmax(fabs(dir[1]), fabs(dir[2])));
    if (!(fabs(dir[m]) >= 0.55 * largest) || dir[m] == 0.0) return false;
    const int s = dir[m] > 0.0 ? 1 : -1;
    if (sign != 0 && s != sign) return false;
    sign = s;
  }
  return true;
}

/// Why a view's rays may not be written in plane form (the header's comment), or nullptr where they may: cone beam,
/// main axis x or z, u across y and v along y exactly (zero components, so that d_m, d_n and d_y each depend on one
/// pixel index to the bit), the source beside the planes, and every ray keeping the main axis (raysKeepMainAxis).
/// `size`: the grid's voxels per axis; nu, nv: the detector's pixels.
template <class View>
const char* planeFormRefusal(const View& o, const float spacing[3], const int size[3], int nu, int nv) {
  if (o.parallel) return "parallel beam";
  if (o.mainAxis != 0 && o.mainAxis != 2) return "its rays run mostly along y, the rotation axis";
  const int m = o.mainAxis, n = 2 - m;
  if (o.eu[1] != 0.0f || o.ev[m] != 0.0f || o.ev[n] != 0.0f || o.ev[1] == 0.0f)
    return "a tilted detector: its u not across y or its v not along y, exactly";
  if (!(o.sourceIndex[m] < -1.0f || o.sourceIndex[m] > static_cast<float>(size[m]))) return "the source within the volume's extent";
  if (!raysKeepMainAxis(o, spacing, nu, nv)) return "a ray too far off the x or z axis (a cone wider than about 60 degrees)";
  return nullptr;
}
template <class View>
bool planeGatherable(const View& o, const float spacing[3], const int size[3], int nu, int nv) {
  return planeFormRefusal(o, spacing, size, nu, nv) == nullptr;
}

}  // namespace glrecon::detail
