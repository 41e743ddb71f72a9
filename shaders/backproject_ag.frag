// AG-GPU backprojection, fragment stage: divide, sample bilinearly (border 0 outside the detector), weight
// by 1/w^2 and sum the window's W projections; additive float blending accumulates into the slice.
// Culled fragments (stencil region of interest) never run this shader.
// SLAB (slab mode): the framebuffer has no attachments and the whole slice's size, so the rasterizer sees the
// same window coordinates as without slabs (interpolation is not translation-invariant bit for bit: llvmpipe
// evaluates it from the framebuffer's origin); a scissor keeps the slab's rows, and the sum is added into the
// slab's volume by image load and store at the local row (the same float addition additive blending does).
// A region is a per-voxel mask texture there, tested before any work.
layout(early_fragment_tests) in;

noperspective in vec4 coords[PACKED];

layout(binding = 0) uniform sampler2DArray projections;  // layer p: the window's projection p, filtered
uniform vec2 detectorSize;  // nu, nv
uniform int layerBase;      // the window's first layer in the projection texture (two halves, used in turn)

#ifdef SLAB
layout(binding = 0, r32f) uniform restrict image2DArray volume;  // the slab's rows
layout(binding = 2) uniform usampler2DArray region;               // with useRegion: 1 where voxels are updated
uniform bool useRegion;
uniform int slabFirst;  // the global row of the volume's local row 0
#else
layout(location = 0) out float accumulated;
#endif

float component(int i) { return coords[i >> 2][i & 3]; }

void main() {
#ifdef SLAB
  const ivec3 voxel = ivec3(int(gl_FragCoord.x), int(gl_FragCoord.y) - slabFirst, int(floor(component(3 * W) + 0.5)));
  if (useRegion && texelFetch(region, voxel, 0).r == 0u) return;
#endif
  float sum = 0.0;
  for (int p = 0; p < W; ++p) {
    const float invW = 1.0 / component(3 * p + 2);
    const vec2 uv = vec2(component(3 * p), component(3 * p + 1)) * invW;
    // Pixel centres sit at integer (u, v); texel centres at (index + 0.5) / size.
    const float q = texture(projections, vec3((uv + 0.5) / detectorSize, float(p + layerBase))).r;
    sum += q * (invW * invW);
  }
#ifdef SLAB
  imageStore(volume, voxel, imageLoad(volume, voxel) + vec4(sum));
#else
  accumulated = sum;
#endif
}
