// Builds without CUDA (CMake found no CUDA compiler): no CUDA devices. The operator registry marks the cuda backend
// as not built, so nothing here is asked to make one.
#include "device/cuda/device.h"

namespace glrecon::cuda {
bool built() { return false; }
int deviceCount() { return 0; }
std::uint64_t freeMemory(int) { return 0; }
std::string deviceName(int) { return ""; }
double bilinearPeak(int) { return 0.0; }
double open(int) { return 0.0; }
}  // namespace glrecon::cuda
