// The largest |voxel| of the volume texture (ConeBeamOperator::blockLargestMagnitude on the GL backends), so that the
// host need not scan its copy for the finite check. |v| with the sign bit cleared orders like an unsigned integer,
// infinity below every NaN: a NaN voxel makes the result NaN, which sends the check to the host (it names the voxel).
// An invocation takes one x and a run of RUN slices at one y; a work group of 256 neighbouring x reduces in shared
// memory and adds one atomicMax.
layout(local_size_x = 256) in;
layout(binding = 0) uniform sampler2DArray volume;
layout(std430, binding = 7) buffer Result { uint largestBits; };  // 7: a binding no operator uses (restored after)
uniform ivec3 size;  // the voxels held: x, the block's rows of y, z
const int RUN = 16;
shared uint partial[256];

void main() {
  const int x = int(gl_GlobalInvocationID.x), y = int(gl_WorkGroupID.y), z0 = int(gl_WorkGroupID.z) * RUN;
  uint largest = 0u;
  if (x < size.x)
    for (int z = z0; z < min(z0 + RUN, size.z); ++z)
      largest = max(largest, floatBitsToUint(texelFetch(volume, ivec3(x, y, z), 0).r) & 0x7fffffffu);
  const uint i = gl_LocalInvocationIndex;
  partial[i] = largest;
  barrier();
  for (uint width = 128u; width > 0u; width >>= 1) {
    if (i < width) partial[i] = max(partial[i], partial[i + width]);
    barrier();
  }
  if (i == 0u) atomicMax(largestBits, partial[0]);
}
