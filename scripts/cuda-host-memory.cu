// Where a CUDA device's setup goes on a GPU host: page-locked host memory (cudaMallocHost, or memory written first and
// then registered, with 4 KiB or huge pages, on one thread or several), device memory and arrays; one device, then
// two at once. It showed that fresh host pages, not the locking, made glrecon's pinned buffers dear on the GPU hosts
// (docs/benchmarks.md). Build and run where the GPUs are (or carry the binary, docs/gpu-measurement.md):
//   nvcc -O2 -std=c++17 -o cuda-host-memory scripts/cuda-host-memory.cu && ./cuda-host-memory
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <thread>
#include <vector>
#include <string>
using clk = std::chrono::steady_clock;
static double ms(clk::time_point a) { return std::chrono::duration<double, std::milli>(clk::now() - a).count(); }
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
static const size_t MiB = 1 << 20;
static void steps(int dev, const char* tag) {
  CK(cudaSetDevice(dev));
  char out[4096]; int o = 0;
  auto t = clk::now(); void* p[4];
  for (int i = 0; i < 2; ++i) CK(cudaMallocHost(&p[i], 128 * MiB));
  o += sprintf(out + o, "mallocHost 2x128MiB %.0f ms; ", ms(t));
  t = clk::now(); for (int i = 0; i < 2; ++i) CK(cudaFreeHost(p[i]));
  o += sprintf(out + o, "freeHost %.0f; ", ms(t));
  t = clk::now(); for (int i = 0; i < 2; ++i) CK(cudaMallocHost(&p[i], 128 * MiB));
  o += sprintf(out + o, "again %.0f; ", ms(t));
  for (int i = 0; i < 2; ++i) CK(cudaFreeHost(p[i]));
  t = clk::now(); for (int i = 0; i < 2; ++i) { p[i] = aligned_alloc(4096, 128 * MiB); memset(p[i], 0, 128 * MiB); }
  o += sprintf(out + o, "alloc+memset %.0f; ", ms(t));
  t = clk::now(); for (int i = 0; i < 2; ++i) CK(cudaHostRegister(p[i], 128 * MiB, cudaHostRegisterPortable));
  o += sprintf(out + o, "register %.0f; ", ms(t));
  t = clk::now(); for (int i = 0; i < 2; ++i) { CK(cudaHostUnregister(p[i])); }
  o += sprintf(out + o, "unregister %.0f; ", ms(t));
  t = clk::now(); for (int i = 0; i < 2; ++i) CK(cudaHostRegister(p[i], 128 * MiB, 0));
  o += sprintf(out + o, "register again(default flag) %.0f; ", ms(t));
  for (int i = 0; i < 2; ++i) { cudaHostUnregister(p[i]); free(p[i]); }
  t = clk::now(); for (int i = 0; i < 2; ++i) { p[i] = mmap(nullptr, 128 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0); }
  o += sprintf(out + o, "mmap populate %.0f; ", ms(t));
  t = clk::now(); for (int i = 0; i < 2; ++i) CK(cudaHostRegister(p[i], 128 * MiB, 0));
  o += sprintf(out + o, "register %.0f; ", ms(t));
  for (int i = 0; i < 2; ++i) { cudaHostUnregister(p[i]); munmap(p[i], 128 * MiB); }
  {
    // Huge pages (transparent, asked for with madvise): 2 MiB faults instead of 4 KiB ones.
    const size_t huge = 2 * MiB;
    t = clk::now(); for (int i = 0; i < 2; ++i) { p[i] = aligned_alloc(huge, 128 * MiB); madvise(p[i], 128 * MiB, MADV_HUGEPAGE); memset(p[i], 0, 128 * MiB); }
    o += sprintf(out + o, "huge alloc+memset %.0f; ", ms(t));
    t = clk::now(); for (int i = 0; i < 2; ++i) CK(cudaHostRegister(p[i], 128 * MiB, cudaHostRegisterPortable));
    o += sprintf(out + o, "register %.0f; ", ms(t));
    for (int i = 0; i < 2; ++i) { cudaHostUnregister(p[i]); free(p[i]); }
  }
  {
    // Many threads touching: does the VM's fault rate scale?
    t = clk::now(); for (int i = 0; i < 2; ++i) { p[i] = aligned_alloc(4096, 128 * MiB); std::vector<std::thread> ts;
      for (int k = 0; k < 8; ++k) ts.emplace_back([&, k] { memset(static_cast<char*>(p[i]) + k * 16 * MiB, 0, 16 * MiB); });
      for (auto& th : ts) th.join(); }
    o += sprintf(out + o, "8-thread alloc+memset %.0f; ", ms(t));
    for (int i = 0; i < 2; ++i) free(p[i]);
  }
  t = clk::now(); void* d; CK(cudaMalloc(&d, 16ull << 30));
  o += sprintf(out + o, "cudaMalloc 16GiB %.0f; ", ms(t));
  t = clk::now(); CK(cudaMemset(d, 0, 16ull << 30)); CK(cudaDeviceSynchronize());
  o += sprintf(out + o, "memset %.0f; ", ms(t));
  t = clk::now(); CK(cudaFree(d));
  o += sprintf(out + o, "free %.0f; ", ms(t));
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>(); cudaArray_t a[2];
  t = clk::now(); for (int i = 0; i < 2; ++i) CK(cudaMalloc3DArray(&a[i], &f, make_cudaExtent(1024, 1024, 32), cudaArrayLayered | cudaArraySurfaceLoadStore));
  o += sprintf(out + o, "2 layered arrays %.0f; ", ms(t));
  for (int i = 0; i < 2; ++i) cudaFreeArray(a[i]);
  t = clk::now(); cudaStream_t s; CK(cudaStreamCreate(&s)); cudaEvent_t ev; CK(cudaEventCreate(&ev));
  o += sprintf(out + o, "stream+event %.0f", ms(t));
  printf("%s device %d: %s\n", tag, dev, out);
}
int main() {
  int n = 0; CK(cudaGetDeviceCount(&n));
  auto t = clk::now(); CK(cudaFree(0)); printf("context device 0: %.0f ms\n", ms(t));
  steps(0, "one device, context of 0 only:");
  if (n < 2) return 0;
  t = clk::now(); CK(cudaSetDevice(1)); CK(cudaFree(0)); printf("context device 1: %.0f ms\n", ms(t));
  steps(0, "after both contexts, alone:");
  std::thread a(steps, 0, "both at once:"), b(steps, 1, "both at once:"); a.join(); b.join();
  // peer access on: does it make pinned memory dearer?
  CK(cudaSetDevice(0)); cudaDeviceEnablePeerAccess(1, 0); CK(cudaSetDevice(1)); cudaDeviceEnablePeerAccess(0, 0);
  steps(0, "peer access on, alone:");
  return 0;
}
