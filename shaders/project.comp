// The projector pair in a compute shader: FORWARD defined: one invocation per detector pixel and view (z);
// otherwise one invocation per voxel. Same functions as the raster path (project_common.glsl).
layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;
layout(binding = 0, r32f) uniform restrict image2DArray target;  // projections (forward) or the volume (back)
uniform int count;
uniform bool accumulate;
void main() {
  const ivec3 id = ivec3(gl_GlobalInvocationID);
#ifdef FORWARD
  if (id.x >= detectorSize.x || id.y >= detectorSize.y || id.z >= count) return;
  imageStore(target, id, vec4(forwardRay(id.z, vec2(id.xy))));
#else
  if (id.x >= volumeSize.x || id.y >= volumeSize.y || id.z >= volumeSize.z) return;
  float value = backVoxel(vec3(id), count);
  if (accumulate) value += imageLoad(target, id).r;
  imageStore(target, id, vec4(value));
#endif
}
