// The FDK filter on the GPU (glrecon::DeviceFilter; the CUDA kernel filterRows is the same algorithm):
// out[row][i] = sum_j x[row][j] taps[|i - j|], x the raw pixel times its cosine and column weights, for the
// rows of `layers` projections, each projection's detector rows [firstV, firstV + bandRows) (row r is projection
// r / bandRows, detector row firstV + r % bandRows; a slab samples only those), written into the layers
// [firstLayer, firstLayer + layers) of the projection texture the backprojection samples. A product with a
// Toeplitz matrix: a work group computes a 64 x 64 tile of (rows, columns) in 16-column steps of j from shared
// memory, each invocation a 4 x 4 sub-tile strided by 16 (neighbouring invocations read neighbouring taps).
// Every output sums j in ascending order.
layout(local_size_x = 256) in;

layout(std430, binding = 1) readonly buffer Raw { float raw[]; };          // layers x bandRows x nu
layout(std430, binding = 2) readonly buffer Cosine { float cosine[]; };    // nv x nu
layout(std430, binding = 3) readonly buffer Columns { float columns[]; };  // views x nu
layout(std430, binding = 4) readonly buffer Taps { float taps[]; };        // nu
layout(std430, binding = 5) readonly buffer Views { int views[]; };       // the geometry view of each layer
layout(binding = 2, r32f) uniform restrict writeonly image2DArray filtered;  // unit 2: the backprojectors keep 0 and 1
uniform int nu;
uniform int firstV;      // the first detector row sent
uniform int bandRows;    // detector rows sent per projection
uniform int rows;        // layers x bandRows
uniform int firstLayer;  // where layer 0 goes in the projection texture

const int TILE = 64, STEP = 16;
shared float xs[TILE][STEP + 1];
shared float ts[TILE + STEP];

void main() {
  const int thread = int(gl_LocalInvocationIndex), tx = thread % 16, ty = thread / 16;
  const int row0 = int(gl_WorkGroupID.y) * TILE, col0 = int(gl_WorkGroupID.x) * TILE;
  float sum[4][4];
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) sum[a][b] = 0.0;
  for (int j0 = 0; j0 < nu; j0 += STEP) {
    for (int e = thread; e < TILE * STEP; e += 256) {
      const int r = e / STEP, jj = e % STEP, row = row0 + r, j = j0 + jj;
      float x = 0.0;
      if (row < rows && j < nu) {
        const int layer = row / bandRows, v = firstV + row - layer * bandRows;
        x = raw[row * nu + j] * cosine[v * nu + j] * columns[views[layer] * nu + j];
      }
      xs[r][jj] = x;
    }
    for (int t = thread; t < TILE + STEP - 1; t += 256) {
      const int d = abs(col0 - j0 - (STEP - 1) + t);
      ts[t] = d < nu ? taps[d] : 0.0;
    }
    barrier();
    for (int jj = 0; jj < STEP; ++jj) {
      float x[4], t[4];
      for (int a = 0; a < 4; ++a) x[a] = xs[ty + 16 * a][jj];
      for (int b = 0; b < 4; ++b) t[b] = ts[tx + 16 * b - jj + STEP - 1];
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) sum[a][b] = fma(x[a], t[b], sum[a][b]);
    }
    barrier();
  }
  for (int a = 0; a < 4; ++a) {
    const int row = row0 + ty + 16 * a;
    if (row >= rows) continue;
    const int layer = row / bandRows, v = firstV + row - layer * bandRows;
    for (int b = 0; b < 4; ++b) {
      const int i = col0 + tx + 16 * b;
      if (i < nu) imageStore(filtered, ivec3(i, v, firstLayer + layer), vec4(sum[a][b]));
    }
  }
}
