#pragma once
/// OpenGL 4.5 core contexts. Headless: EGL on the device platform (eglQueryDevicesEXT), so a GPU is used
/// with no display; on a machine without one, Mesa's software device (llvmpipe) answers the same way.
/// A window system's context (the viewer's GLFW window, src/viewer/window.cpp) is adopted: this module knows no
/// window system. After creation every context is used the same way (GLEW-loaded entry points, one thread).
/// Tested through the operators' tests (tests/operators/operator_gl_test.cpp and the other *_gl_test.cpp files).
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "glrecon/errors.h"

namespace glrecon::gl {

/// No usable OpenGL: no EGL device, no 4.5 core context, a missing extension, a GL error.
struct GlError : DeviceError {
  using DeviceError::DeviceError;
};

struct DeviceInfo {
  int index = 0;
  std::string renderer;  ///< GL_RENDERER, e.g. "NVIDIA H200/PCIe/SSE2" or "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string version;   ///< GL_VERSION
  bool software = false; ///< a CPU rasterizer (llvmpipe, softpipe, swrast)
  int varyingComponents = 0;  ///< GL_MAX_VARYING_COMPONENTS: bounds the AG-GPU window at a third of it
};

class Context {
 public:
  /// A headless 4.5 core context on EGL device `device` (0-based, in eglQueryDevicesEXT's order), made
  /// current on the calling thread. Throws GlError naming the device and what failed.
  static std::unique_ptr<Context> headless(int device = 0);
  /// How a window system makes its context current and releases it.
  struct Surface {
    virtual ~Surface() = default;
    virtual void makeCurrent() = 0;
    virtual void release() = 0;
  };
  /// A window system's context (current on the calling thread), used as glrecon's: entry points loaded, 4.5 required
  /// (GlError naming `where` otherwise). The surface goes with the context.
  static std::unique_ptr<Context> adopt(std::unique_ptr<Surface> surface, const std::string& where);
  /// Every EGL device with its renderer (each probed with a short-lived context).
  static std::vector<DeviceInfo> listDevices();

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  void makeCurrent();
  /// Leaves no context current on the calling thread, so that another thread can make this one current (a context
  /// made beside the reading, then used by the run's thread).
  void release();

 private:
  Context() = default;
  /// The common part after creation: load entry points, read the renderer, require 4.5.
  void initialise(const std::string& where);
  struct Egl;
  std::unique_ptr<Egl> egl_;
  std::unique_ptr<Surface> surface_;
  DeviceInfo info_;
};

/// Free memory of the current context's device in bytes, where the driver tells it (NVIDIA's NVX_gpu_memory_info, AMD's
/// ATI_meminfo); -1 where it does not (Mesa).
long long freeDeviceMemory();

/// True for renderer strings of CPU rasterizers.
bool isSoftwareRenderer(const std::string& renderer);

}  // namespace glrecon::gl
