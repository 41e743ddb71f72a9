// AG-GPU backprojection (Xu & Mueller 2007, section 3): one proxy quad per volume slice, drawn face-on at
// slice resolution. The vertex shader maps the quad's corners into the detector of each of the W
// projections of the window, as homogeneous coordinates (u w, v w, w) = P (i, j, k, 1). They are affine
// across the slice, so the rasterizer's linear (noperspective) interpolation gives every voxel its exact
// coordinates. Prepended defines: W (projections per pass), PACKED (vec4s holding 3 W floats), LAYERED
// (gl_Layer selects the slice, so all slices go in one instanced draw), SLAB (slab mode: the quad is the whole
// slice's as without slabs, and the slice index rides along as component 3 W, a constant across the quad,
// which interpolation reproduces exactly; PACKED then holds 3 W + 1 floats).
#ifdef LAYERED
#extension GL_ARB_shader_viewport_layer_array : require
#endif

layout(std140, binding = 0) uniform Matrices {
  vec4 rows[3 * W];  // rows 3p, 3p+1, 3p+2: the 3x4 matrix of the window's projection p
};
uniform ivec2 sliceSize;  // nx, ny
uniform int firstSlice;

noperspective out vec4 coords[PACKED];

void main() {
  const vec2 corner = vec2(gl_VertexID & 1, gl_VertexID >> 1);
  const int k = firstSlice + gl_InstanceID;
  // Corners at voxel-index -0.5 and n - 0.5: fragment centres then land on integer voxel indices.
  const vec4 voxel = vec4(corner * vec2(sliceSize) - 0.5, float(k), 1.0);
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
#ifdef LAYERED
  gl_Layer = k;
#endif
  float h[PACKED * 4];
  for (int p = 0; p < W; ++p) {
    h[3 * p] = dot(rows[3 * p], voxel);
    h[3 * p + 1] = dot(rows[3 * p + 1], voxel);
    h[3 * p + 2] = dot(rows[3 * p + 2], voxel);
  }
#ifdef SLAB
  h[3 * W] = float(k);
  for (int i = 3 * W + 1; i < PACKED * 4; ++i) h[i] = 0.0;
#else
  for (int i = 3 * W; i < PACKED * 4; ++i) h[i] = 0.0;
#endif
  for (int i = 0; i < PACKED; ++i) coords[i] = vec4(h[4 * i], h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]);
}
