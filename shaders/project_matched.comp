// The matched pair (ProjectorPair::Matched) in compute shaders, for the graphics and compute backends alike: A with
// float trilinear weights read texel by texel (not the texture unit's interpolation, whose weights are rounded), and
// its exact transpose, each ray's samples spread over their 8 voxels with the same weights into a buffer of float
// bits (atomic compare-and-swap adds: core GL has no float atomics), then added to the target volume. The same
// arithmetic as CpuOperator::forward / transposeBack and the cuda kernels. FORWARD: one invocation per pixel and view;
// COPY: one per voxel; otherwise (the transpose) one per pixel and view.
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
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

void main() {
  const ivec3 id = ivec3(gl_GlobalInvocationID);
#if defined(COPY)
  if (id.x >= volumeSize.x || id.y >= volumeSize.y || id.z >= volumeSize.z) return;
  float value = uintBitsToFloat(scatter[indexOf(id)]);
  if (accumulate) value += imageLoad(target, id).r;
  imageStore(target, id, vec4(value));
#else
  if (id.x >= detectorSize.x || id.y >= detectorSize.y || id.z >= count) return;
#if !defined(FORWARD)
  const float value = texelFetch(projectionLayers, id, 0).r;
  if (value == 0.0) return;
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
