// Backprojection through the raster pipeline (the proxy-slice path): one fragment per voxel of slice `slice`,
// summing the `count` views of the batch; additive blending accumulates batches.
uniform int slice;
uniform int count;
layout(location = 0) out float accumulated;
void main() { accumulated = backVoxel(vec3(gl_FragCoord.xy - 0.5, float(slice)), count); }
