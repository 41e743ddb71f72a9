// Where the GPU backends' setup goes: contexts, the FDK filter, the backprojectors (a one-off measurement for
// docs/benchmarks.md, not built by CMake). Build against a glrecon build directory:
//   cd build && g++ -O2 -std=c++20 -I../include -I/usr/local/cuda/include ../scripts/setup_times.cpp -o setup_times libglrecon.a \
//     $(the glrecon target's LINK_LIBRARIES from build.ninja)
// Run: setup_times [N] (an N^3 volume from 360 x 512^2; default 512).
#include <chrono>
#include <cstdio>
#include <thread>
#include "glrecon/compute_backprojector.h"
#include "glrecon/cuda_backprojector.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"
#include "device/gl/context.h"
#include "glrecon/phantom.h"
using namespace glrecon;
using clk = std::chrono::steady_clock;
static double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }
int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const int n = argc > 1 ? atoi(argv[1]) : 512;
  auto t = clk::now();
  { auto c = gl::Context::headless(0); std::printf("first context %.3f s\n", since(t)); }
  t = clk::now();
  { auto c = gl::Context::headless(0); std::printf("second context %.3f s\n", since(t)); }
  CircularScanSpec spec; spec.projections = 360; spec.nu = spec.nv = 512; spec.spacingU = spec.spacingV = 1.0;
  Geometry g = makeCircularScan(spec);
  VolumeGrid grid{{n, n, n}, {0.5, 0.5, 0.5}, {-(n - 1) * 0.25, -(n - 1) * 0.25, -(n - 1) * 0.25}};
  t = clk::now();
  FdkFilter filter(g, FilterOptions{});
  std::printf("FdkFilter %.3f s\n", since(t));
  t = clk::now();
  const DeviceFilter* df = filter.deviceFilter();
  std::printf("deviceFilter %.3f s\n", since(t));
  BackprojectorOptions bo;
  bo.window = 32;
  t = clk::now();
  auto ctx = gl::Context::headless(0);
  std::printf("third context %.3f s\n", since(t));
  t = clk::now();
  {
    ComputeBackprojector b(*ctx, g, grid, bo);
    std::printf("compute backprojector (borrowed context) %.3f s\n", since(t));
    t = clk::now();
    b.filterOnDevice(df, false);
    std::printf("filterOnDevice %.3f s\n", since(t));
  }
  t = clk::now();
  { ComputeBackprojector b(g, grid, bo); std::printf("compute backprojector (own context) %.3f s\n", since(t)); }
  t = clk::now();
  warmUpCuda(0);
  std::printf("cuda context %.3f s\n", since(t));
  t = clk::now();
  { CudaBackprojector b(g, grid, bo); std::printf("cuda backprojector %.3f s\n", since(t));
    t = clk::now(); b.filterOnDevice(df, false); std::printf("cuda filterOnDevice %.3f s\n", since(t)); }
}
