#include "device/cuda/device.h"

#include "device/cuda/cuda.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include <sys/mman.h>

namespace glrecon::cuda {

PageLocked allocatePageLocked(std::size_t bytes) {
  if (bytes == 0) return {};
  static const bool mallocHost = [] {
    const char* asked = std::getenv("GLRECON_PINNED");
    return asked && std::string(asked) == "cudaMallocHost";
  }();
  // Where registering failed once it fails again (a driver or system that refuses it): straight to cudaMallocHost.
  static std::atomic<bool> registerRefused{false};
  if (!mallocHost && !registerRefused.load()) {
    // Huge pages where the kernel grants them (transparent, asked for by madvise): 512 times fewer faults.
    constexpr std::size_t kHugePage = std::size_t{2} << 20, kTouchChunk = std::size_t{8} << 20;
    constexpr int kTouchThreads = 8;  // as fast as more on the GPU hosts (26 ms for 256 MiB), and fewer to start
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    std::unique_ptr<void, void (*)(void*)> memory(std::aligned_alloc(kHugePage, rounded), std::free);
    if (memory) {
      char* begin = static_cast<char*>(memory.get());
      (void)madvise(begin, rounded, MADV_HUGEPAGE);  // advice: where refused, 4 KiB pages serve
      // Written first, on several threads: what made pinned memory dear on the GPU hosts was faulting fresh pages in
      // (one thread wrote 256 MiB in 144-193 ms there, 8 threads in 26 ms, huge pages in 43-66 ms; cudaMallocHost
      // took 130-250 ms for it), while registering pages that exist took 11-22 ms for 256 MiB
      // (scripts/cuda-host-memory.cu on two H200s, docs/benchmarks.md).
      try {
        parallelFor(rounded, kTouchChunk, std::min(kTouchThreads, resolveThreadCount(0)),
                    [&](std::size_t b, std::size_t e) { std::memset(begin + b, 0, e - b); });
      } catch (const std::system_error&) {
        std::memset(begin, 0, rounded);  // no thread to be had: this one writes it all
      }
      if (cudaHostRegister(begin, rounded, cudaHostRegisterPortable) == cudaSuccess) return PageLocked(memory.release(), {true});
      (void)cudaGetLastError();  // not sticky: cleared, and cudaMallocHost tried instead
      registerRefused = true;
      trace("cuda: cudaHostRegister refused; pinned buffers from cudaMallocHost");
    }
  }
  void* memory = nullptr;
  check(cudaMallocHost(&memory, bytes), "cudaMallocHost");
  return PageLocked(memory, {false});
}

void PageLockedRelease::operator()(void* memory) const noexcept {
  if (registered) {
    if (cudaHostUnregister(memory) != cudaSuccess) (void)cudaGetLastError();
    std::free(memory);
  } else if (cudaFreeHost(memory) != cudaSuccess) {
    (void)cudaGetLastError();
  }
}

bool built() { return true; }

int deviceCount() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess ? devices : 0;
}

std::uint64_t freeMemory(int device) {
  if (device < 0 || device >= deviceCount() || cudaSetDevice(device) != cudaSuccess) return 0;
  std::size_t freeBytes = 0, totalBytes = 0;
  return cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess ? freeBytes : 0;
}

std::string deviceName(int device) {
  cudaDeviceProp properties{};
  if (device < 0 || device >= deviceCount() || cudaGetDeviceProperties(&properties, device) != cudaSuccess) return "";
  return properties.name;
}

double bilinearPeak(int device) {
  int sms = 0, kiloHertz = 0;
  if (device < 0 || device >= deviceCount()) return 0.0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&kiloHertz, cudaDevAttrClockRate, device) != cudaSuccess)
    return 0.0;
  return 4.0 * sms * kiloHertz * 1e-6;
}

namespace {
std::mutex openMutex;
std::set<int> opened;
}  // namespace

double open(int device) {
  std::lock_guard lock(openMutex);
  if (opened.count(device)) return 0.0;
  const auto start = std::chrono::steady_clock::now();
  if (device < 0 || device >= deviceCount()) return 0.0;
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return 0.0;
  opened.insert(device);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace glrecon::cuda
