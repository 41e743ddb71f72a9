// Choosing a backprojector by name.
#include "glrecon/backprojector.h"
#include "glrecon/errors.h"
#include "glrecon/compute_backprojector.h"
#include "glrecon/cuda_backprojector.h"
#include "glrecon/graphics_backprojector.h"
#include "device/gl/context.h"

#include <GL/glew.h>

namespace glrecon {

#ifndef GLRECON_HAVE_CUDA
bool cudaBackendBuilt() { return false; }
double cudaBilinearPeak(int) { return 0.0; }
void warmUpCuda(int) {}

// Without CUDA the class still links (the shared test body names it) and refuses to construct.
struct CudaBackprojector::Impl {};
CudaBackprojector::CudaBackprojector(const Geometry&, const VolumeGrid&, const BackprojectorOptions&) {
  throw CudaError("cuda backend: this build has no CUDA backend (CMake found no CUDA compiler)");
}
CudaBackprojector::~CudaBackprojector() = default;
std::string CudaBackprojector::description() const { return "cuda (not built)"; }
void CudaBackprojector::backproject(const float*, const std::size_t*, std::size_t) {}
Image CudaBackprojector::volume() { return {}; }
void CudaBackprojector::readVolume(float*) {}
int cudaDeviceCount() { return 0; }
std::uint64_t cudaFreeMemory(int) { return 0; }
void CudaBackprojector::reset() {}
void CudaBackprojector::setSlab(int, int) {}
double CudaBackprojector::uploadedBytes() const { return 0.0; }
bool CudaBackprojector::filterOnDevice(const DeviceFilter* filter, bool) { return filter == nullptr; }
bool CudaBackprojector::filterProjections(const DeviceFilter&, const float*, const std::size_t*, std::size_t, float*, bool) { return false; }
void CudaBackprojector::setRegion(const RegionOfInterest&) {}
void CudaBackprojector::killOutsideRange(double, double, double) {}
std::vector<std::uint8_t> CudaBackprojector::activeMask() { return {}; }
double CudaBackprojector::culledFraction() const { return 0.0; }
BackprojectorTimings CudaBackprojector::timings() const { return {}; }
#endif

void Backprojector::setSlab(int, int) {
  throw UsageError("slabs: the " + name() + " backend does not reconstruct in slabs");
}

std::uint64_t deviceMemoryAvailable(const std::string& backend, int gpu) {
  if (backend == "cuda") return cudaFreeMemory(gpu);
  if (backend == "cpu") return UINT64_MAX;
  auto context = gl::Context::headless(gpu);
  if (GLEW_NVX_gpu_memory_info) {
    GLint kib = 0;
    glGetIntegerv(0x9049 /* GPU_MEMORY_INFO_CURRENT_AVAILABLE_VIDMEM_NVX */, &kib);
    return static_cast<std::uint64_t>(kib) * 1024;
  }
  if (GLEW_ATI_meminfo) {
    GLint info[4] = {0, 0, 0, 0};
    glGetIntegerv(0x87FC /* TEXTURE_FREE_MEMORY_ATI */, info);
    return static_cast<std::uint64_t>(info[0]) * 1024;
  }
  return UINT64_MAX;
}

int deviceCount(const std::string& backend) {
  if (backend == "cuda") return cudaDeviceCount();
  if (backend == "cpu") return 1;
  return static_cast<int>(gl::Context::listDevices().size());
}

std::vector<std::string> availableBackends() {
  std::vector<std::string> names = {"cpu", "graphics", "graphics-mp", "compute"};
  if (cudaBackendBuilt()) names.push_back("cuda");
  return names;
}

std::unique_ptr<Backprojector> makeBackprojector(const std::string& name, const Geometry& geometry, const VolumeGrid& grid,
                                                 const BackprojectorOptions& options, std::string* autoNote) {
  if (name == "cpu") return std::make_unique<CpuBackprojector>(geometry, grid, options);
  if (name == "graphics") return std::make_unique<GraphicsBackprojector>(geometry, grid, options, false);
  if (name == "graphics-mp") return std::make_unique<GraphicsBackprojector>(geometry, grid, options, true);
  if (name == "compute") return std::make_unique<ComputeBackprojector>(geometry, grid, options);
#ifdef GLRECON_HAVE_CUDA
  if (name == "cuda") return std::make_unique<CudaBackprojector>(geometry, grid, options);
#else
  if (name == "cuda")
    throw UsageError(field("backend") + " cuda: this build has no CUDA backend (CMake found no CUDA compiler; build with nvcc on the PATH)");
#endif
  if (name == "auto") {
    // A software rasterizer runs the graphics path far slower than the vectorized CPU backend, so auto takes
    // the graphics pipeline only on a hardware GPU.
    std::string reason;
    try {
      // A bare context tells the renderer before any volume-sized allocation.
      const gl::DeviceInfo device = gl::Context::headless(options.gpu)->info();
      if (device.software) {
        reason = "only a software renderer (" + device.renderer + ")";
      } else {
        auto graphics = std::make_unique<GraphicsBackprojector>(geometry, grid, options, false);
        if (autoNote) *autoNote = "auto: graphics backend on the hardware GPU " + device.renderer;
        return graphics;
      }
    } catch (const gl::GlError& e) {
      reason = std::string("no usable OpenGL: ") + e.what();
    } catch (const InputError& e) {
      reason = std::string("the volume does not fit the GPU: ") + e.what();
    }
    if (autoNote) *autoNote = "auto: cpu backend, " + reason;
    return std::make_unique<CpuBackprojector>(geometry, grid, options);
  }
  std::string known;
  for (const std::string& b : availableBackends()) known += b + ", ";
  throw UsageError(field("backend") + ": expected one of " + known + "auto; found '" + name + "'");
}

}  // namespace glrecon
