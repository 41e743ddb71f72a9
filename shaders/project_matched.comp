// The matched pair (ProjectorPair::Matched) in compute shaders, for the graphics and compute backends alike: A with
// float trilinear weights read texel by texel (not the texture unit's interpolation, whose weights are rounded), and
// its exact transpose, each ray's samples spread over their 8 voxels with the same weights into a buffer of float
// bits (atomic compare-and-swap adds: core GL has no float atomics), then added to the target volume. The same
// arithmetic as CpuOperator::forward / transposeBack and the cuda kernels. FORWARD: one invocation per pixel and view;
// COPY: one per voxel; otherwise (the transpose) one per pixel and view.
// Views in plane form (project_common.glsl, src/operators/plane_gather.h): FORWARD computes their samples on their
// planes; WEIGH (one invocation per pixel and view) multiplies their pixels by their rays' lengths in place, and
// GATHER (one per x, z and run of kGatherRun rows) adds each voxel's share of them to the sums, where the transpose
// (which leaves them out) scatters the other views' rays.
#if defined(GATHER)
const int kGatherRun = 8;
layout(local_size_x = 32, local_size_y = 2, local_size_z = 1) in;
shared float runSums[kGatherRun][64];
#else
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
#endif
layout(binding = 0, r32f) uniform restrict image2DArray target;  // projections (FORWARD) or the volume (COPY)
layout(std430, binding = 1) buffer Scatter { uint scatter[]; };   // the transpose's sums, as float bits
uniform int count;
uniform bool accumulate;

// Sample k of the ray: its lower corner and the weights of the two voxels along each axis.
void cornerOf(vec3 first, vec3 delta, int k, out ivec3 c, out vec3 w0, out vec3 w1) {
  const vec3 p = clamp(first + float(k) * delta, vec3(-1.0), vec3(volumeSize));
  const vec3 lower = floor(p);
  c = ivec3(lower);
  w1 = p - lower;
  w0 = 1.0 - w1;
}

bool inside(ivec3 q) { return all(greaterThanEqual(q, ivec3(0))) && all(lessThan(q, volumeSize)); }

uint indexOf(ivec3 q) { return (uint(q.z) * uint(volumeSize.y) + uint(q.y)) * uint(volumeSize.x) + uint(q.x); }

void addTo(uint index, float value) {
  uint seen = scatter[index], expected;
  do {
    expected = seen;
    seen = atomicCompSwap(scatter[index], expected, floatBitsToUint(uintBitsToFloat(expected) + value));
  } while (seen != expected);
}

#if defined(FORWARD)
// plane_gather.h's planeRange and planeForward (the bounds in float: a plane's margin covers their rounding).
float planeForward(int p, int u, int v) {
  const vec4 a = views[p].plane[0], b = views[p].plane[1];
  const int m = int(a.y), n = 2 - m, sizeM = volumeSize[m], sizeN = volumeSize[n];
  float inv, rn, across;
  planeColumn(p, float(u), inv, rn, across);
  const float dy = planeDy(p, float(v)), ry = planeRy(p, inv, dy);
  float lo = 0.0, hi = float(sizeM - 1);
  const vec2 lows = vec2(-1.0, -1.0), highs = vec2(float(sizeN), float(volumeSize.y)), rs = vec2(rn, ry), ss = vec2(a.w, b.x);
  for (int e = 0; e < 2; ++e) {
    if (rs[e] == 0.0) {
      if (ss[e] < lows[e] || ss[e] > highs[e]) return 0.0;
      continue;
    }
    const float t0 = (lows[e] - ss[e]) / rs[e] + a.z, t1 = (highs[e] - ss[e]) / rs[e] + a.z;
    lo = max(lo, floor(min(t0, t1)) - 1.0);
    hi = min(hi, ceil(max(t0, t1)) + 1.0);
  }
  float sum = 0.0;
  for (int plane = int(lo); plane <= int(hi); ++plane) {
    precise float cs = float(plane) - a.z;
    int ni, yi;
    vec2 wn, wy;
    splitOf(planePosition(a.w, cs, rn), ni, wn.x, wn.y);
    splitOf(planePosition(b.x, cs, ry), yi, wy.x, wy.y);
    float value = 0.0;
    for (int dyi = 0; dyi < 2; ++dyi)
      for (int dn = 0; dn < 2; ++dn) {
        const int row = yi + dyi, at = ni + dn;
        if (wy[dyi] == 0.0 || wn[dn] == 0.0 || row < 0 || row >= volumeSize.y || at < 0 || at >= sizeN) continue;
        precise float w = wy[dyi] * wn[dn];
        value += texelFetch(volumeTexture, m == 0 ? ivec3(plane, row, at) : ivec3(at, row, plane), 0).r * w;
      }
    sum += value;
  }
  return sum * planeLength(p, inv, across, dy);
}
#endif

#if defined(FORWARD)
// plane_gather.h's ddForward.
float ddForward(int p, int u, int v) {
  const vec4 a = views[p].plane[0], b = views[p].plane[1];
  const int m = int(a.y), n = 2 - m, sizeM = volumeSize[m], sizeN = volumeSize[n];
  float inv, rn, across, edgeInv, rnLo, rnHi, edgeAcross;
  planeColumn(p, float(u), inv, rn, across);
  planeColumn(p, float(u) - 0.5, edgeInv, rnLo, edgeAcross);
  planeColumn(p, float(u) + 0.5, edgeInv, rnHi, edgeAcross);
  const float ryLo = planeRy(p, inv, planeDy(p, float(v) - 0.5)), ryHi = planeRy(p, inv, planeDy(p, float(v) + 0.5));
  float first = 0.0, last = float(sizeM - 1);
  if (!edgePlanes(a.w, a.z, rnLo, rnHi, -0.5, float(sizeN) - 0.5, first, last)) return 0.0;
  if (!edgePlanes(b.x, a.z, ryLo, ryHi, -0.5, float(volumeSize.y) - 0.5, first, last)) return 0.0;
  float sum = 0.0;
  for (int plane = int(first); plane <= int(last); ++plane) {
    precise float cs = float(plane) - a.z;
    float nLo, nHi, nInv, yLo, yHi, yInv;
    shadowOf(planePosition(a.w, cs, rnLo), planePosition(a.w, cs, rnHi), nLo, nHi, nInv);
    shadowOf(planePosition(b.x, cs, ryLo), planePosition(b.x, cs, ryHi), yLo, yHi, yInv);
    const int k0 = max(firstOverlapped(nLo), 0), k1 = min(lastOverlapped(nHi), sizeN - 1);
    const int j0 = max(firstOverlapped(yLo), 0), j1 = min(lastOverlapped(yHi), volumeSize.y - 1);
    float value = 0.0;
    for (int row = j0; row <= j1; ++row) {
      const float wy = overlapOf(yLo, yHi, yInv, row);
      if (wy == 0.0) continue;
      for (int at = k0; at <= k1; ++at) {
        const float wn = overlapOf(nLo, nHi, nInv, at);
        if (wn == 0.0) continue;
        precise float w = wy * wn;
        value += texelFetch(volumeTexture, m == 0 ? ivec3(plane, row, at) : ivec3(at, row, plane), 0).r * w;
      }
    }
    sum += value;
  }
  return sum * planeLength(p, inv, across, planeDy(p, float(v)));
}
#endif

#if defined(GATHER)
// plane_gather.h's ddGather: the distance-driven transpose for voxels (plane, across, rows row0 .. + kGatherRun - 1).
void ddGather(int p, int plane, int acrossIndex, int row0, uint thread) {
  const vec4 a = views[p].plane[0], b = views[p].plane[1], c = views[p].plane[2], d = views[p].plane[3];
  precise float cs = float(plane) - a.z;
  float us[2];
  for (int e = 0; e < 2; ++e) {
    const float t = (float(acrossIndex) + (e == 0 ? -0.5 : 0.5) - a.w) / (cs * c.w);
    us[e] = (t * b.y - b.z) / (c.y - t * c.x);
  }
  float firstU = min(us[0], us[1]) - 0.5 - rangeMargin(cs), lastU = max(us[0], us[1]) + 0.5 + rangeMargin(cs);
  if (isnan(us[0]) || isnan(us[1])) {
    firstU = 0.0;
    lastU = float(detectorSize.x - 1);
  }
  if (!(lastU >= 0.0) || !(firstU <= float(detectorSize.x - 1))) return;
  const int u0 = firstU <= 0.0 ? 0 : int(ceil(firstU)), u1 = lastU >= float(detectorSize.x - 1) ? detectorSize.x - 1 : int(floor(lastU));
  for (int u = u0; u <= u1; ++u) {
    float i0, rnLo, q0, i1, rnHi, q1, inv, rn, across;
    planeColumn(p, float(u) - 0.5, i0, rnLo, q0);
    planeColumn(p, float(u) + 0.5, i1, rnHi, q1);
    float nLo, nHi, nInv;
    shadowOf(planePosition(a.w, cs, rnLo), planePosition(a.w, cs, rnHi), nLo, nHi, nInv);
    const float wn = overlapOf(nLo, nHi, nInv, acrossIndex);
    if (wn == 0.0) continue;
    planeColumn(p, float(u), inv, rn, across);
    const float perDy = 1.0 / (cs * inv * d.x);
    float vs[2];
    for (int e = 0; e < 2; ++e) vs[e] = ((float(e == 0 ? row0 : row0 + kGatherRun) - 0.5 - b.x) * perDy - b.w) / c.z;
    float firstV = min(vs[0], vs[1]) - 0.5 - rangeMargin(cs), lastV = max(vs[0], vs[1]) + 0.5 + rangeMargin(cs);
    if (isnan(vs[0]) || isnan(vs[1])) {
      firstV = 0.0;
      lastV = float(detectorSize.y - 1);
    }
    if (!(lastV >= 0.0) || !(firstV <= float(detectorSize.y - 1))) continue;
    const int v0 = firstV <= 0.0 ? 0 : int(ceil(firstV)), v1 = lastV >= float(detectorSize.y - 1) ? detectorSize.y - 1 : int(floor(lastV));
    for (int v = v0; v <= v1; ++v) {
      float yLo, yHi, yInv;
      shadowOf(planePosition(b.x, cs, planeRy(p, inv, planeDy(p, float(v) - 0.5))),
               planePosition(b.x, cs, planeRy(p, inv, planeDy(p, float(v) + 0.5))), yLo, yHi, yInv);
      const int j0 = firstOverlapped(yLo), j1 = lastOverlapped(yHi);
      if (j1 < row0 || j0 >= row0 + kGatherRun) continue;
      const float value = texelFetch(projectionLayers, ivec3(u, v, p), 0).r;
      if (value == 0.0) continue;
      for (int row = max(j0, row0); row <= j1 && row < row0 + kGatherRun; ++row) {
        const float wy = overlapOf(yLo, yHi, yInv, row);
        if (wy == 0.0) continue;
        precise float w = wy * wn;
        runSums[row - row0][thread] += value * w;
      }
    }
  }
}

// plane_gather.h's planeGather: voxels (plane, across, rows row0 .. row0 + kGatherRun - 1) of view p, into runSums.
void planeGather(int p, int plane, int acrossIndex, int row0, uint thread) {
  const vec4 a = views[p].plane[0], b = views[p].plane[1], c = views[p].plane[2], d = views[p].plane[3];
  precise float cs = float(plane) - a.z;
  float us[2];
  for (int e = 0; e < 2; ++e) {
    const float t = (float(acrossIndex + (e == 0 ? -1 : 1)) - a.w) / (cs * c.w);
    us[e] = (t * b.y - b.z) / (c.y - t * c.x);
  }
  if (isnan(us[0]) || isnan(us[1])) {
    us[0] = 0.0;
    us[1] = float(detectorSize.x - 1);
  }
  const float firstU = min(us[0], us[1]) - rangeMargin(cs), lastU = max(us[0], us[1]) + rangeMargin(cs);
  if (!(lastU >= 0.0) || !(firstU <= float(detectorSize.x - 1))) return;
  const int u0 = firstU <= 0.0 ? 0 : int(ceil(firstU)), u1 = lastU >= float(detectorSize.x - 1) ? detectorSize.x - 1 : int(floor(lastU));
  for (int u = u0; u <= u1; ++u) {
    float inv, rn, across;
    planeColumn(p, float(u), inv, rn, across);
    const float wn = hatWeight(planePosition(a.w, cs, rn), acrossIndex);
    if (wn == 0.0) continue;
    const float perDy = 1.0 / (cs * inv * d.x);
    float vs[2];
    for (int e = 0; e < 2; ++e) vs[e] = ((float(e == 0 ? row0 - 1 : row0 + kGatherRun) - b.x) * perDy - b.w) / c.z;
    if (isnan(vs[0]) || isnan(vs[1])) {
      vs[0] = 0.0;
      vs[1] = float(detectorSize.y - 1);
    }
    const float firstV = min(vs[0], vs[1]) - rangeMargin(cs), lastV = max(vs[0], vs[1]) + rangeMargin(cs);
    if (!(lastV >= 0.0) || !(firstV <= float(detectorSize.y - 1))) continue;
    const int v0 = firstV <= 0.0 ? 0 : int(ceil(firstV)), v1 = lastV >= float(detectorSize.y - 1) ? detectorSize.y - 1 : int(floor(lastV));
    for (int v = v0; v <= v1; ++v) {
      int yi;
      float w0, w1;
      splitOf(planePosition(b.x, cs, planeRy(p, inv, planeDy(p, float(v)))), yi, w0, w1);
      const int r = yi - row0;
      if (r < -1 || r >= kGatherRun) continue;
      const float value = texelFetch(projectionLayers, ivec3(u, v, p), 0).r;
      if (value == 0.0) continue;
      if (r >= 0 && w0 != 0.0) {
        precise float w = w0 * wn;
        runSums[r][thread] += value * w;
      }
      if (r + 1 < kGatherRun && w1 != 0.0) {
        precise float w = w1 * wn;
        runSums[r + 1][thread] += value * w;
      }
    }
  }
}
#endif

void main() {
  const ivec3 id = ivec3(gl_GlobalInvocationID);
#if defined(GATHER)
  const uint thread = gl_LocalInvocationIndex;
  for (int r = 0; r < kGatherRun; ++r) runSums[r][thread] = 0.0;
  const int x = id.x, z = id.y, row0 = id.z * kGatherRun;
  if (x >= volumeSize.x || z >= volumeSize.z) return;
  for (int p = 0; p < count; ++p) {
    if (!inPlaneForm(p)) continue;
    const int plane = planeMainAxis(p) == 0 ? x : z, acrossIndex = planeMainAxis(p) == 0 ? z : x;
    if (distanceDriven(p))
      ddGather(p, plane, acrossIndex, row0, thread);
    else
      planeGather(p, plane, acrossIndex, row0, thread);
  }
  for (int r = 0; r < kGatherRun && row0 + r < volumeSize.y; ++r) {
    const uint index = indexOf(ivec3(x, row0 + r, z));
    scatter[index] = floatBitsToUint(uintBitsToFloat(scatter[index]) + runSums[r][thread]);
  }
#elif defined(WEIGH)
  if (id.x >= detectorSize.x || id.y >= detectorSize.y || id.z >= count || !inPlaneForm(id.z)) return;
  float inv, rn, across;
  planeColumn(id.z, float(id.x), inv, rn, across);
  precise float value = imageLoad(target, id).r * planeLength(id.z, inv, across, planeDy(id.z, float(id.y)));
  imageStore(target, id, vec4(value));
#elif defined(COPY)
  if (id.x >= volumeSize.x || id.y >= volumeSize.y || id.z >= volumeSize.z) return;
  float value = uintBitsToFloat(scatter[indexOf(id)]);
  if (accumulate) value += imageLoad(target, id).r;
  imageStore(target, id, vec4(value));
#else
  if (id.x >= detectorSize.x || id.y >= detectorSize.y || id.z >= count) return;
#if defined(FORWARD)
  if (inPlaneForm(id.z)) {
    imageStore(target, id, vec4(distanceDriven(id.z) ? ddForward(id.z, id.x, id.y) : planeForward(id.z, id.x, id.y)));
    return;
  }
#else
  const float value = texelFetch(projectionLayers, id, 0).r;
  if (value == 0.0 || inPlaneForm(id.z)) return;  // (plane form: GATHER)
#endif
  vec3 first, delta;
  int samples;
  float len;
  float sum = 0.0;
  if (marchRay(id.z, vec2(id.xy), first, delta, samples, len)) {
#if !defined(FORWARD)
    const float w = value * len;
#endif
    for (int k = 0; k < samples; ++k) {
      ivec3 c;
      vec3 w0, w1;
      cornerOf(first, delta, k, c, w0, w1);
      for (int dz = 0; dz < 2; ++dz)
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) {
            const ivec3 q = c + ivec3(dx, dy, dz);
            if (!inside(q)) continue;
            const float weight = (dy == 0 ? w0.y : w1.y) * (dz == 0 ? w0.z : w1.z) * (dx == 0 ? w0.x : w1.x);
            // Corners of weight 0 skipped (on its plane a sample's main-axis weights are 1 and 0), in A and its
            // transpose alike: half the fetches and compare-and-swap loops.
            if (weight == 0.0) continue;
#if defined(FORWARD)
            sum += texelFetch(volumeTexture, q, 0).r * weight;
#else
            addTo(indexOf(q), w * weight);
#endif
          }
    }
  }
#if defined(FORWARD)
  imageStore(target, id, vec4(sum * len));
#endif
#endif
}
