// The projector pair's arithmetic (include/glrecon/operator.h), shared by the graphics and compute projectors and
// written operation for operation as src/project/cpu_projector.cpp computes it. Prepended to each stage's file.
struct View {
  vec4 sourceIndex;  // xyz: the source in voxel-index coordinates; w: the main axis (0, 1, 2) of the view's planes
  vec4 e0;           // xyz: world vector from the source to the centre of pixel (0, 0); w: 1 for parallel beam
  vec4 eu;           // xyz: world step along a detector row
  vec4 ev;           // xyz: world step along a column
  // Parallel beam (e0.w 1, src/operators/projector_views.h): every ray runs along e0 from its pixel's centre
  // sourceIndex + u eu + v ev (voxel index; eu, ev in voxel-index units), the whole line both ways.
  vec4 normal;       // xyz: unit detector normal; w: V_voxel SDD^2 / |eu x ev|
  vec4 rows[3];      // the 3x4 matrix: voxel index -> (u w, v w, w)
  // The matched pair in plane form (src/operators/plane_gather.h says why and how): plane[0].x 1 for a view in it,
  // then its PlaneView, made on the host: (flag, m, s_m, s_n), (s_y, e0_m, e0_n, e0_y), (eu_m, eu_n, ev_y, h_m / h_n),
  // (h_m / h_y, h_m, 0, 0).
  vec4 plane[4];
};
layout(std430, binding = 0) readonly buffer Views { View views[]; };

uniform ivec3 volumeSize;
uniform vec3 spacing;
uniform float stepLength;  // mm; 0: one sample per voxel plane
uniform ivec2 detectorSize;

layout(binding = 0) uniform sampler3D volumeTexture;         // trilinear, border 0
layout(binding = 1) uniform sampler2DArray projectionLayers;  // bilinear, border 0

// A: the ray from the source through pixel centre `pixel` as src/operators/ray_march.h marches it, operation for
// operation: clipped to the box [-1, n] of voxel indices (outside it the trilinear interpolant with a zero border is 0)
// and nothing else (the whole line, past the detector too), sampled at the midpoints of steps of stepLength mm, or
// with stepLength 0 once per voxel plane across the ray's main axis, exactly on the plane.
// marchRay: sample k at first + k delta (voxel index), each standing for `len` mm; false where it takes none.
bool marchRay(int view, vec2 pixel, out vec3 first, out vec3 delta, out int count, out float len) {
  const View o = views[view];
  const bool parallelBeam = o.e0.w != 0.0;
  const vec3 d = parallelBeam ? o.e0.xyz : o.e0.xyz + pixel.x * o.eu.xyz + pixel.y * o.ev.xyz;
  const float dl = sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
  const vec3 dir = d / dl / spacing;
  const vec3 s = parallelBeam ? o.sourceIndex.xyz + pixel.x * o.eu.xyz + pixel.y * o.ev.xyz : o.sourceIndex.xyz;
  const vec3 hi = vec3(volumeSize);
  float tmin = parallelBeam ? -3.402823466e38 : 0.0;
  count = 0;
  first = vec3(0.0);
  delta = vec3(0.0);
  len = 0.0;
  float tmax = 3.402823466e38;
  for (int a = 0; a < 3; ++a) {
    if (dir[a] != 0.0) {
      const float t0 = (-1.0 - s[a]) / dir[a], t1 = (hi[a] - s[a]) / dir[a];
      tmin = max(tmin, min(t0, t1));
      tmax = min(tmax, max(t0, t1));
    } else if (s[a] < -1.0 || s[a] > hi[a]) {
      return false;
    }
  }
  if (!(tmax > tmin)) return false;
  if (stepLength > 0.0) {
    count = int(ceil((tmax - tmin) / stepLength));
    first = s + (tmin + 0.5 * stepLength) * dir;
    delta = stepLength * dir;
    len = stepLength;
    return count > 0;
  }
  int m = int(o.sourceIndex.w);
  const vec3 across = abs(dir);
  const float largest = max(across.x, max(across.y, across.z));
  if (2.0 * across[m] < largest) m = across.x == largest ? 0 : (across.y == largest ? 1 : 2);
  const float dm = dir[m];
  const float entry = s[m] + tmin * dm, exit = s[m] + tmax * dm, last = hi[m] - 1.0;
  const float c0 = dm > 0.0 ? max(ceil(entry), 0.0) : min(floor(entry), last);
  const float c1 = dm > 0.0 ? min(floor(exit), last) : max(ceil(exit), 0.0);
  if (dm > 0.0 ? c1 < c0 : c1 > c0) return false;
  count = int(abs(c1 - c0)) + 1;
  const float perPlane = 1.0 / abs(dm), t = (c0 - s[m]) / dm;
  first = s + t * dir;
  delta = dir * perPlane;
  first[m] = c0;
  delta[m] = dm > 0.0 ? 1.0 : -1.0;
  len = perPlane;
  return true;
}

float forwardRay(int view, vec2 pixel) {
  vec3 first, delta;
  int count;
  float len;
  if (!marchRay(view, pixel, first, delta, count, len)) return 0.0;
  const vec3 invSize = 1.0 / vec3(volumeSize);
  float sum = 0.0;
  for (int k = 0; k < count; ++k) sum += texture(volumeTexture, (first + float(k) * delta + 0.5) * invSize).r;
  return sum * len;
}

// B: voxel `voxel` projected into each of `count` views (layer p of projectionLayers is views[p]), bilinear
// sample times the ray-density weight V_voxel SDD^2 |r - s| / (|eu x ev| depth^3) (parallel beam: normal.w alone).
float backVoxel(vec3 voxel, int count) {
  const vec2 invDetector = 1.0 / vec2(detectorSize);
  const vec4 x = vec4(voxel, 1.0);
  float sum = 0.0;
  for (int p = 0; p < count; ++p) {
    const View o = views[p];
    const vec3 h = vec3(dot(o.rows[0], x), dot(o.rows[1], x), dot(o.rows[2], x));
    const vec2 uv = h.xy / h.z;
    const float value = texture(projectionLayers, vec3((uv + 0.5) * invDetector, float(p))).r;
    const vec3 rs = (voxel - o.sourceIndex.xyz) * spacing;
    const float distance = sqrt(rs.x * rs.x + rs.y * rs.y + rs.z * rs.z);
    const float depth = dot(rs, o.normal.xyz);
    sum += value * (o.e0.w != 0.0 ? o.normal.w : o.normal.w * distance / (depth * depth * depth));  // parallel: no depth
  }
  return sum;
}

// ---- The matched pair in plane form: plane_gather.h's functions, operation for operation. `precise`: the forward
// and the gather must compute every weight to the same bits, so no operation may be fused or reordered differently
// in the two shaders.
// plane_gather.h's rangeMargin: the gathers' margin on their pixel ranges.
float rangeMargin(float cs) { return 0.01 + 1e-6 * abs(cs); }
bool inPlaneForm(int p) { return views[p].plane[0].x != 0.0; }
int planeMainAxis(int p) { return int(views[p].plane[0].y); }

// 1 / d_m, R_n and d_m^2 + d_n^2 of pixel column u.
void planeColumn(int p, float fu, out float inv, out float rn, out float across) {
  const vec4 a = views[p].plane[1], b = views[p].plane[2];
  precise float dm = a.y + fu * b.x;
  precise float dn = a.z + fu * b.y;
  precise float i = 1.0 / dm;
  precise float r = (dn * i) * b.w;
  precise float q = dm * dm + dn * dn;
  inv = i;
  rn = r;
  across = q;
}
float planeDy(int p, float fv) {
  precise float dy = views[p].plane[1].w + fv * views[p].plane[2].z;
  return dy;
}
float planeRy(int p, float inv, float dy) {
  precise float r = (dy * inv) * views[p].plane[3].x;
  return r;
}
float planeLength(int p, float inv, float across, float dy) {
  precise float l = (sqrt(across + dy * dy) * abs(inv)) * views[p].plane[3].y;
  return l;
}
float planePosition(float s, float cs, float r) {
  precise float x = s + cs * r;
  return x;
}
// The bilinear split of a position: voxel floor(x) takes w0 = 1 - f, the next w1 = f.
void splitOf(float x, out int index, out float w0, out float w1) {
  const float base = floor(x);
  precise float f = x - base;
  precise float g = 1.0 - f;
  index = int(base);
  w0 = g;
  w1 = f;
}
float hatWeight(float x, int index) {
  int i;
  float w0, w1;
  splitOf(x, i, w0, w1);
  return index == i ? w0 : (index == i + 1 ? w1 : 0.0);
}

// The distance-driven pair (plane_gather.h's Shadow, overlapOf, firstOverlapped, lastOverlapped): views whose
// plane[3].z is 1.
bool distanceDriven(int p) { return views[p].plane[3].z != 0.0; }
void shadowOf(float a, float b, out float lo, out float hi, out float inv) {
  lo = min(a, b);
  hi = max(a, b);
  precise float w = hi - lo;
  precise float i = 1.0 / w;
  inv = i;
}
float overlapOf(float lo, float hi, float inv, int k) {
  precise float kl = float(k) - 0.5;
  precise float kh = float(k) + 0.5;
  const float a = max(lo, kl), b = min(hi, kh);
  precise float o = (b - a) * inv;
  return b > a ? o : 0.0;
}
int firstOverlapped(float lo) {
  int k = int(floor(lo + 0.5));
  if (float(k) + 0.5 <= lo) ++k;
  if (float(k - 1) + 0.5 > lo) --k;
  return k;
}
int lastOverlapped(float hi) {
  int k = int(floor(hi + 0.5));
  if (float(k) - 0.5 >= hi) --k;
  if (float(k + 1) - 0.5 < hi) ++k;
  return k;
}
// The planes on which a pixel's shadow along an axis (edge ratios ra, rb) meets [lo, hi] (plane_gather.h's edgePlanes:
// two linear conditions on cs = c - s_m, whose sign is the same on every plane), narrowing [first, last].
bool edgePlanes(float s, float sm, float ra, float rb, float lo, float hi, inout float first, inout float last) {
  const bool ahead = sm < 0.0;
  const float lower = ahead ? min(ra, rb) : max(ra, rb), upper = ahead ? max(ra, rb) : min(ra, rb);
  float f = ahead ? 0.0 : -3.0e38, l = ahead ? 3.0e38 : 0.0;
  const float rs[2] = float[2](lower, upper), rhs[2] = float[2](hi - s, lo - s);
  for (int e = 0; e < 2; ++e) {
    const bool atMost = e == 0;
    if (rs[e] == 0.0) {
      if (atMost ? rhs[e] < 0.0 : rhs[e] > 0.0) return false;
      continue;
    }
    const float t = rhs[e] / rs[e];
    if ((rs[e] > 0.0) == atMost)
      l = min(l, t);
    else
      f = max(f, t);
  }
  if (f > l) return false;
  first = max(first, floor(f + sm) - 1.0);
  last = min(last, ceil(l + sm) + 1.0);
  return true;
}
