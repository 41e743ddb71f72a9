// AG-GPU backprojection, fragment stage: divide, sample bilinearly (border 0 outside the detector), weight
// by 1/w^2 and sum the window's W projections; additive float blending accumulates into the slice.
// Culled fragments (stencil region of interest) never run this shader.
layout(early_fragment_tests) in;

noperspective in vec4 coords[PACKED];

layout(binding = 0) uniform sampler2DArray projections;  // layer p: the window's projection p, filtered
uniform vec2 detectorSize;  // nu, nv
uniform int layerBase;      // the window's first layer in the projection texture (two halves, used in turn)

layout(location = 0) out float accumulated;

float component(int i) { return coords[i >> 2][i & 3]; }

void main() {
  float sum = 0.0;
  for (int p = 0; p < W; ++p) {
    const float invW = 1.0 / component(3 * p + 2);
    const vec2 uv = vec2(component(3 * p), component(3 * p + 1)) * invW;
    // Pixel centres sit at integer (u, v); texel centres at (index + 0.5) / size.
    const float q = texture(projections, vec3((uv + 0.5) / detectorSize, float(p + layerBase))).r;
    sum += q * (invW * invW);
  }
  accumulated = sum;
}
