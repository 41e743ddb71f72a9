// A subset's update of SART / OS-SART / OS-EM on the device (applySubsetRule in src/project/projector_common.cpp;
// the cuda kernels maxKernel and subsetUpdateKernel are the same): MAX defined: the largest B_S(1), as the bits of a
// positive float (their integer order is the floats' order), one atomicMax per work group; otherwise the update of
// the iterate, which the forward projection samples next.
layout(local_size_x = 8, local_size_y = 8, local_size_z = 4) in;
layout(binding = 1, r32f) uniform restrict readonly image2DArray weights;  // B_S(1), layer = z
uniform ivec3 volumeSize;
#ifdef MAX
layout(std430, binding = 1) buffer Largest { uint largest; };
shared uint groupLargest;
void main() {
  if (gl_LocalInvocationIndex == 0u) groupLargest = 0u;
  barrier();
  const ivec3 id = ivec3(gl_GlobalInvocationID);
  if (all(lessThan(id, volumeSize))) {
    const float w = imageLoad(weights, id).r;
    if (w > 0.0) atomicMax(groupLargest, floatBitsToUint(w));
  }
  barrier();
  if (gl_LocalInvocationIndex == 0u) atomicMax(largest, groupLargest);
}
#else
layout(binding = 0, r32f) uniform restrict image2DArray iterate;  // layer = z, as the operator's volume
layout(binding = 2, r32f) uniform restrict readonly image2DArray update;  // B_S(c)
layout(binding = 3) uniform usampler3D mask;                              // texture unit 3
uniform bool masked;
uniform bool multiplicative;
uniform bool positivity;
uniform float weightFloor;
uniform float lambda;
void main() {
  const ivec3 id = ivec3(gl_GlobalInvocationID);
  if (any(greaterThanEqual(id, volumeSize))) return;
  const float w = imageLoad(weights, id).r;
  if ((masked && texelFetch(mask, id, 0).r == 0u) || !(w > weightFloor)) return;
  const float u = imageLoad(update, id).r;
  const float x = imageLoad(iterate, id).r;
  precise float value;  // no fused multiply-add: the operations the host does
  if (multiplicative) {
    value = x * (u / w);
  } else {
    value = x + (lambda * u) / w;
    if (positivity && value < 0.0) value = 0.0;
  }
  imageStore(iterate, id, vec4(value));
}
#endif
