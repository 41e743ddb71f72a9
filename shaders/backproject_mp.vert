// MP-GPU backprojection (Xu & Mueller's comparison configuration): the vertex shader only places the slice's
// proxy quad; the fragment shader computes the detector coordinates itself. Defines: W, LAYERED.
#ifdef LAYERED
#extension GL_ARB_shader_viewport_layer_array : require
#endif

uniform int firstSlice;
flat out int slice;

void main() {
  const vec2 corner = vec2(gl_VertexID & 1, gl_VertexID >> 1);
  slice = firstSlice + gl_InstanceID;
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
#ifdef LAYERED
  gl_Layer = slice;
#endif
}
