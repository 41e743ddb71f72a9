// Which twin of the FDK filter a window's device gets: the window's kind says where it lives.
#include "device/gl/projection_window.h"
#include "glrecon/filter.h"

namespace glrecon {

std::unique_ptr<DeviceFdkFilter> makeGlFdkFilter(const DeviceFilter& tables, gl::ProjectionWindow& window, bool force);
#ifdef GLRECON_HAVE_CUDA
/// nullptr unless `window` is a CUDA window (src/device/cuda/projection_window.h, which needs nvcc to include).
std::unique_ptr<DeviceFdkFilter> makeCudaFdkFilter(const DeviceFilter& tables, DeviceProjections& window);
#endif

std::unique_ptr<DeviceFdkFilter> makeDeviceFdkFilter(const FdkFilter& filter, const Geometry& geometry, DeviceProjections& window,
                                                     bool force) {
  const DeviceFilter* tables = filter.deviceFilter();
  if (!tables) return nullptr;  // views that need their own cosine tables
  tables->requireMatches(geometry);
  if (auto* gl = dynamic_cast<gl::ProjectionWindow*>(&window)) return makeGlFdkFilter(*tables, *gl, force);
#ifdef GLRECON_HAVE_CUDA
  return makeCudaFdkFilter(*tables, window);
#else
  return nullptr;
#endif
}

}  // namespace glrecon
