// Density-range kill (Xu & Mueller 2007, 3.3): voxels whose value so far, normalised to the whole scan,
// lies outside [low, high] lose their stencil bit and receive no further updates. Fragments of voxels in
// range are discarded, so only out-of-range ones reach the stencil operation (which zeroes the bit); no
// early_fragment_tests here, or the stencil would change before the discard.
flat in int slice;
layout(binding = 1) uniform sampler2DArray current;  // a copy of the volume so far
uniform float scale;                                 // projections in the scan / projections so far
uniform float low, high;

void main() {
  const float value = texelFetch(current, ivec3(gl_FragCoord.xy, slice), 0).r * scale;
  if (value >= low && value <= high) discard;
}
