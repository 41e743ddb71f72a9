// The viewer: a slice of the volume texture (read as it is being reconstructed), scaled to the whole scan,
// mapped through window/level and a colour map (colour_maps.glsl, prepended). Nearest voxel: what you see is what was reconstructed.
in vec2 position;
layout(binding = 0) uniform sampler2DArray volume;
uniform int axis;          // 0: x slice (z across, y up), 1: y slice, axial (x across, z up), 2: z slice (x across, y up)
uniform int index;         // the slice
uniform ivec3 size;        // volume size
uniform float scale;       // projections in the scan / projections so far
uniform float low, high;   // grey range
uniform int colourMap;     // colour_maps.glsl's colourOf
uniform float progress;    // < 0: no bar; else the fraction done, drawn as a bar along the bottom
out vec4 colour;

void main() {
  if (progress >= 0.0) {
    colour = position.x <= progress ? vec4(0.2, 0.6, 1.0, 1.0) : vec4(0.15, 0.15, 0.15, 1.0);
    return;
  }
  ivec3 voxel;
  if (axis == 1) voxel = ivec3(int(position.x * size.x), index, int(position.y * size.z));
  else if (axis == 2) voxel = ivec3(int(position.x * size.x), int(position.y * size.y), index);
  else voxel = ivec3(index, int(position.y * size.y), int(position.x * size.z));
  voxel = clamp(voxel, ivec3(0), size - 1);
  const float value = texelFetch(volume, ivec3(voxel.x, voxel.y, voxel.z), 0).r * scale;
  const float t = clamp((value - low) / (high - low), 0.0, 1.0);
  colour = vec4(colourOf(colourMap, t), 1.0);
}
