// A subset's corrections formed on the device (the GL operators' correctSubset; the cuda kernel correctionKernel and
// the reconstructor's host path compute the same): from the batch's forward projections (layers of `projected`), the
// data and the ray lengths A 1 of view viewIndex[first + layer]: additive (b - A x) / A 1, multiplicative b / A x, 0
// where A 1 <= rayFloor (and A x <= 0 for the multiplicative rule). Each work group's sum of (b - A x)^2, in double,
// into partials[its index] (added in order on the host: the same bits every run).
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(binding = 0, r32f) uniform restrict readonly image2DArray projected;
layout(std430, binding = 2) readonly buffer Data { float data[]; };
layout(std430, binding = 3) readonly buffer Lengths { float lengths[]; };
layout(std430, binding = 4) readonly buffer ViewIndex { int viewIndex[]; };
layout(std430, binding = 5) writeonly buffer Correction { float correction[]; };
layout(std430, binding = 6) writeonly buffer Partials { double partials[]; };
uniform ivec2 detectorSize;
uniform int count;  // views in this batch
uniform int first;  // the batch's first view within the subset
uniform float rayFloor;
uniform bool multiplicative;
shared double sums[64];
void main() {
  const ivec3 id = ivec3(gl_GlobalInvocationID);
  double square = 0.0lf;
  if (id.x < detectorSize.x && id.y < detectorSize.y && id.z < count) {
    const uint pixels = uint(detectorSize.x) * uint(detectorSize.y);
    const uint pixel = uint(id.y) * uint(detectorSize.x) + uint(id.x);
    const uint at = uint(viewIndex[first + id.z]) * pixels + pixel;
    const float b = data[at], length = lengths[at], ax = imageLoad(projected, id).r;
    precise float residual = b - ax;
    square = double(residual) * double(residual);
    float value = 0.0;
    if (multiplicative) {
      if (length > rayFloor && ax > 0.0) value = b / ax;
    } else if (length > rayFloor) {
      value = residual / length;
    }
    correction[uint(first + id.z) * pixels + pixel] = value;
  }
  sums[gl_LocalInvocationIndex] = square;
  barrier();
  for (uint span = 32u; span > 0u; span /= 2u) {
    if (gl_LocalInvocationIndex < span) sums[gl_LocalInvocationIndex] += sums[gl_LocalInvocationIndex + span];
    barrier();
  }
  if (gl_LocalInvocationIndex == 0u) {
    const uint group = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    partials[group] = sums[0];
  }
}
