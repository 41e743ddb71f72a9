// MP-GPU backprojection, fragment stage: voxel index from the fragment position, then for each of the W
// projections the matrix product, division, bilinear sample and 1/w^2 weight, summed.
layout(std140, binding = 0) uniform Matrices {
  vec4 rows[3 * W];
};
flat in int slice;
// Culled fragments (stencil region of interest) never run this shader.
layout(early_fragment_tests) in;

layout(binding = 0) uniform sampler2DArray projections;
uniform vec2 detectorSize;
uniform int layerBase;  // the window's first layer in the projection texture (two halves, used in turn)
uniform int slabFirst;  // slabs: the global row of the framebuffer's row 0 (0 without slabs)

layout(location = 0) out float accumulated;

void main() {
  // gl_FragCoord.y - 0.5 is the local row exactly; adding the slab's first row is exact too.
  const vec4 voxel = vec4(gl_FragCoord.x - 0.5, gl_FragCoord.y - 0.5 + float(slabFirst), float(slice), 1.0);
  float sum = 0.0;
  for (int p = 0; p < W; ++p) {
    const float invW = 1.0 / dot(rows[3 * p + 2], voxel);
    const vec2 uv = vec2(dot(rows[3 * p], voxel), dot(rows[3 * p + 1], voxel)) * invW;
    const float q = texture(projections, vec3((uv + 0.5) / detectorSize, float(p + layerBase))).r;
    sum += q * (invW * invW);
  }
  accumulated = sum;
}
