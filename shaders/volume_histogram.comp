// The viewer's grey-window histogram (viewer/volume_histogram.h): every `stride`-th voxel along each axis of the
// volume texture, multiplied by `scale`. Pass RANGE keeps the minimum and maximum (as order-preserving unsigned keys,
// so atomicMin/atomicMax order floats); pass COUNTS bins the values in [low, high]. The bin is computed with `precise`
// products and sums (correctly rounded, not fused), so the CPU reference bins every value the same.
layout(local_size_x = 8, local_size_y = 8, local_size_z = 4) in;
layout(binding = 0) uniform sampler2DArray volume;
layout(std430, binding = 7) buffer Result {  // 7: a binding no operator uses (restored after)
  uint minKey, maxKey, below, above;
  uint counts[];
};
uniform ivec3 samples;  // sampled voxels per axis
uniform int stride;
uniform float scale;
uniform float low, binsPerUnit;
uniform int bins;

uint keyOf(float v) {
  const uint b = floatBitsToUint(v);
  return (b & 0x80000000u) != 0u ? ~b : b | 0x80000000u;
}

void main() {
  const ivec3 s = ivec3(gl_GlobalInvocationID);
  if (any(greaterThanEqual(s, samples))) return;
  precise float v = texelFetch(volume, s * stride, 0).r * scale;
#ifdef RANGE
  atomicMin(minKey, keyOf(v));
  atomicMax(maxKey, keyOf(v));
#else
  precise float position = (v - low) * binsPerUnit;
  if (position < 0.0) {
    atomicAdd(below, 1u);
    return;
  }
  const int bin = int(position);
  if (bin >= bins) {
    atomicAdd(above, 1u);
    return;
  }
  atomicAdd(counts[bin], 1u);
#endif
}
