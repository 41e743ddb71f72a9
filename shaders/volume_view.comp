// The viewer's 3D view (viewer/volume_renderer.h): one invocation per pixel casts its ray through the volume texture,
// MIP or DVR, and stores the pixel in the view's image. A compute shader, not a fragment shader: on datacenter GPUs
// (H100, H200) only a few SMs run raster work, while compute runs on all of them (docs/benchmarks.md), and the
// view shares the queue with the backprojection passes.
//
// Why the CPU reference (viewer/volume_reference.cpp) reproduces this bit for bit: every value a sample depends on is
// computed with +, - and * only, each `precise` (GLSL 4.50, 4.7.1: these are correctly rounded; 4.8.1: `precise`
// forbids fusing them into fma or reordering), from the same float uniforms; the pixel centres (x + 1/2, y + 1/2) are
// exact in float; floor() and the comparisons are exact. So both sides fetch the same voxels, and MIP's maximum of
// the same values is the same value. DVR composites in the same order with the same operations; its only freedom
// is GLSL's licence to flush subnormals to zero (bounded in the test).
//
// Which samples are tried is decided by an ordinary ray-box intersection (a division: not exact), widened by one
// sample on each side; the exact test is whether a sample's voxel is inside the grid. The widening covers the
// intersection's rounding (a few ulps of depths of at most ~1e4 sample steps: < 0.01 of a step), so the samples
// kept are the same as if every plane were tried.
layout(local_size_x = 8, local_size_y = 8) in;
layout(binding = 0) uniform sampler2DArray volume;
layout(rgba32f, binding = 0) uniform writeonly image2D view;
uniform ivec2 viewSize;
uniform vec3 eye, forward, right, up;  // voxel coordinates
uniform float t0, dt;
uniform int samples;
uniform vec2 halfSize;
uniform ivec3 size;
uniform float scale;
uniform int mode;                      // 0 MIP, 1 DVR
uniform bool raw;
uniform float low, invWindow;
uniform int colourMap;
uniform int points;
uniform float density[8];
uniform vec4 colour[8], slope[8];

const vec3 background = vec3(0.05);

vec4 transfer(float v) {
  if (v <= density[0]) return colour[0];
  if (v >= density[points - 1]) return colour[points - 1];
  int i = 0;
  for (int j = 1; j < points - 1; ++j)
    if (v >= density[j]) i = j;
  precise vec4 c = colour[i] + slope[i] * (v - density[i]);
  return c;
}

vec4 castRay(vec2 pixelCentre) {
  precise vec2 s = pixelCentre - halfSize;
  precise vec3 d = forward + right * s.x + up * s.y;
  // The planes where the ray is in the box (approximate, widened below).
  const vec3 safe = mix(d, vec3(1e-20), lessThan(abs(d), vec3(1e-20)));
  const vec3 ta = (vec3(0.0) - eye) / safe, tb = (vec3(size) - eye) / safe;
  const vec3 tNear = min(ta, tb), tFar = max(ta, tb);
  const float enter = max(max(tNear.x, tNear.y), tNear.z), leave = min(min(tFar.x, tFar.y), tFar.z);
  int first = samples, last = -1;
  if (leave >= enter - dt) {
    first = max(0, int(floor((enter - t0) / dt)) - 1);
    last = min(samples - 1, int(ceil((leave - t0) / dt)) + 1);
  }
  precise float peak = 0.0;
  bool hit = false;
  precise vec3 emitted = vec3(0.0);
  precise float alpha = 0.0;
  for (int k = first; k <= last; ++k) {
    precise float t = t0 + float(k) * dt;
    precise vec3 p = eye + d * t;
    const ivec3 voxel = ivec3(floor(p));
    if (any(lessThan(voxel, ivec3(0))) || any(greaterThanEqual(voxel, size))) continue;
    precise float v = texelFetch(volume, voxel, 0).r * scale;
    if (mode == 0) {
      peak = hit ? max(peak, v) : v;
      hit = true;
    } else {
      precise vec4 c = transfer(v);
      precise float w = (1.0 - alpha) * c.a;
      emitted = emitted + c.rgb * w;
      alpha = alpha + w;
      if (alpha >= 0.99) break;  // what is behind shows through less than 1%
    }
  }
  if (mode == 0) {
    if (raw) return vec4(peak, hit ? 1.0 : 0.0, 0.0, 1.0);
    precise float g = clamp((peak - low) * invWindow, 0.0, 1.0);
    return vec4(hit ? colourOf(colourMap, g) : background, 1.0);
  }
  precise vec3 shown = emitted + background * (1.0 - alpha);
  return vec4(shown, 1.0);
}

void main() {
  const ivec2 pixel = ivec2(gl_GlobalInvocationID.xy);
  if (any(greaterThanEqual(pixel, viewSize))) return;
  // Integers below 2^23 plus 1/2: exact, as the CPU reference's (x + 0.5f).
  precise vec2 centre = vec2(pixel) + vec2(0.5);
  imageStore(view, pixel, castRay(centre));
}
