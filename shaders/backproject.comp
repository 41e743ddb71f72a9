// Compute-shader backprojection (the modern form of Xu & Mueller's MP-GPU; docs/algorithms.md, "The graphics-pipeline backprojector"):
// one invocation per (x, z) pair and a run of RUN consecutive y voxels (the work group's z index picks the
// run). RTK's gantry turns about y, so for an untilted detector u and w do not change along y: with
// Y_INVARIANT (the host checked every matrix of the window) u, 1/w and the weight are computed once per
// projection, and each voxel costs a multiply-add for v, a fetch and a multiply-add. Otherwise each voxel
// divides, as the general geometry needs. W projections per dispatch come from the texture array the
// graphics path samples; the volume is the same r32f texture array, read and written as an image (each
// voxel belongs to one invocation: no races). With a region, a voxel outside its column's z range is
// computed as any other but not stored, so inside the arithmetic does not depend on the region.
// Slabs: the volume image holds rows [slabFirst, slabFirst + volumeSize.y) of the grid's y; a voxel's
// arithmetic uses its global row (runs start at the same global rows, slabFirst being a multiple of RUN), so
// a slab's voxels get the bits of the whole grid's; loads, stores and the region's ranges use the local row.
// Defines: W, RUN, Y_INVARIANT (0 or 1), and the local size LX, LY.
layout(local_size_x = LX, local_size_y = LY) in;

layout(std140, binding = 0) uniform Matrices {
  vec4 rows[3 * W];
};
layout(binding = 0) uniform sampler2DArray projections;
layout(binding = 0, r32f) uniform restrict image2DArray volume;
uniform ivec3 volumeSize;  // x, the rows held (the slab's, or the grid's), z
uniform int slabFirst;     // the global row of local row 0 (0 without slabs)
uniform vec2 detectorSize;
uniform int layerBase;  // the window's first layer in the projection texture (two halves, used in turn)
// With a region of interest: per (x, y) column, the slices [x, y) holding all its inside voxels.
uniform bool useRange;
layout(binding = 1) uniform isampler2D zRange;

void main() {
  // j0: the run's first local row; its global row is slabFirst + j0.
  const int i = int(gl_GlobalInvocationID.x), k = int(gl_GlobalInvocationID.y), j0 = int(gl_WorkGroupID.z) * RUN;
  if (i >= volumeSize.x || k >= volumeSize.z) return;
  bool store[RUN];
  bool any = false;
  for (int r = 0; r < RUN; ++r) {
    const int j = j0 + r;
    store[r] = j < volumeSize.y;
    if (store[r] && useRange) {
      const ivec2 range = texelFetch(zRange, ivec2(i, j), 0).xy;
      store[r] = k >= range.x && k < range.y;
    }
    any = any || store[r];
  }
  if (!any) return;
  float sum[RUN];
  for (int r = 0; r < RUN; ++r) sum[r] = 0.0;
  const float fi = float(i), fk = float(k), fj0 = float(slabFirst + j0);
  const vec2 toTexture = 1.0 / detectorSize;
  for (int p = 0; p < W; ++p) {
    const vec4 r0 = rows[3 * p], r1 = rows[3 * p + 1], r2 = rows[3 * p + 2];
    const float layer = float(p + layerBase);
#if Y_INVARIANT
    const float invW = 1.0 / (r2.x * fi + r2.z * fk + r2.w);
    const float u = ((r0.x * fi + r0.z * fk + r0.w) * invW + 0.5) * toTexture.x;
    const float v0 = (r1.x * fi + r1.y * fj0 + r1.z * fk + r1.w) * invW + 0.5, vStep = r1.y * invW;
    const float weight = invW * invW;
    for (int r = 0; r < RUN; ++r) sum[r] += texture(projections, vec3(u, (v0 + float(r) * vStep) * toTexture.y, layer)).r * weight;
#else
    for (int r = 0; r < RUN; ++r) {
      const float fj = fj0 + float(r);
      const float invW = 1.0 / (r2.x * fi + r2.y * fj + r2.z * fk + r2.w);
      const vec2 uv = vec2(r0.x * fi + r0.y * fj + r0.z * fk + r0.w, r1.x * fi + r1.y * fj + r1.z * fk + r1.w) * invW;
      sum[r] += texture(projections, vec3((uv + 0.5) * toTexture, layer)).r * (invW * invW);
    }
#endif
  }
  for (int r = 0; r < RUN; ++r)
    if (store[r]) {
      const ivec3 voxel = ivec3(i, j0 + r, k);
      imageStore(volume, voxel, imageLoad(volume, voxel) + vec4(sum[r]));
    }
}
