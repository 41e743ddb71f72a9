// The viewer: one quad filling the current viewport (a panel).
out vec2 position;  // 0..1 across the panel
void main() {
  const vec2 corner = vec2(gl_VertexID & 1, gl_VertexID >> 1);
  position = corner;
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
