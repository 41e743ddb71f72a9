// One triangle covering the viewport (corners from gl_VertexID, no vertex buffer): a fragment per detector pixel
// (forward projection) or per voxel of a slice (the proxy slice of the backprojection).
void main() {
  const vec2 corner = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
