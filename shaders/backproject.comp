// Compute-shader backprojection (the modern form of Xu & Mueller's MP-GPU, as DESIGN.md's "compute" path):
// one invocation per (x, y) column of the volume, walking z. Along a column the homogeneous coordinates
// change by a constant step (the matrix's z column), so each slice costs three additions per projection.
// W projections per dispatch come from the same texture array the graphics path samples; the volume is the
// same r32f texture array, read and written as an image (each voxel belongs to one invocation: no races).
// Defines: W, and the local size LX, LY.
layout(local_size_x = LX, local_size_y = LY) in;

layout(std140, binding = 0) uniform Matrices {
  vec4 rows[3 * W];
};
layout(binding = 0) uniform sampler2DArray projections;
layout(binding = 0, r32f) uniform restrict image2DArray volume;
uniform ivec3 volumeSize;
uniform vec2 detectorSize;
uniform int layerBase;  // the window's first layer in the projection texture (two halves, used in turn)
// With a region of interest: per column, the slices [x, y) holding all its inside voxels.
uniform bool useRange;
layout(binding = 1) uniform isampler2D zRange;

void main() {
  const ivec2 column = ivec2(gl_GlobalInvocationID.xy);
  if (column.x >= volumeSize.x || column.y >= volumeSize.y) return;
  vec3 h[W];
  vec3 step[W];
  for (int p = 0; p < W; ++p) {
    const vec4 base = vec4(vec2(column), 0.0, 1.0);
    h[p] = vec3(dot(rows[3 * p], base), dot(rows[3 * p + 1], base), dot(rows[3 * p + 2], base));
    step[p] = vec3(rows[3 * p].z, rows[3 * p + 1].z, rows[3 * p + 2].z);
  }
  const ivec2 range = useRange ? texelFetch(zRange, column, 0).xy : ivec2(0, volumeSize.z);
  for (int k = range.x; k < range.y; ++k) {
    float sum = 0.0;
    for (int p = 0; p < W; ++p) {
      // Recomputed from k rather than accumulated, so rounding does not drift along the column.
      const vec3 c = h[p] + float(k) * step[p];
      const float invW = 1.0 / c.z;
      const vec2 uv = c.xy * invW;
      sum += texture(projections, vec3((uv + 0.5) / detectorSize, float(p + layerBase))).r * (invW * invW);
    }
    const ivec3 voxel = ivec3(column, k);
    imageStore(volume, voxel, imageLoad(volume, voxel) + vec4(sum));
  }
}
