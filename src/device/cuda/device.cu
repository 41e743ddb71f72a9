#include "device/cuda/device.h"

#include <cuda_runtime.h>

#include <chrono>
#include <mutex>
#include <set>

namespace glrecon::cuda {

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
