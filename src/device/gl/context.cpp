#include "device/gl/context.h"

#include <GL/glew.h>
#include <EGL/egl.h>
#include <EGL/eglext.h>

#include <cstdio>

namespace glrecon::gl {

struct Context::Egl {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
};

namespace {

std::string eglErrorName(EGLint e) {
  switch (e) {
    case EGL_NOT_INITIALIZED: return "EGL_NOT_INITIALIZED";
    case EGL_BAD_ACCESS: return "EGL_BAD_ACCESS";
    case EGL_BAD_ALLOC: return "EGL_BAD_ALLOC";
    case EGL_BAD_ATTRIBUTE: return "EGL_BAD_ATTRIBUTE";
    case EGL_BAD_CONFIG: return "EGL_BAD_CONFIG";
    case EGL_BAD_CONTEXT: return "EGL_BAD_CONTEXT";
    case EGL_BAD_DISPLAY: return "EGL_BAD_DISPLAY";
    case EGL_BAD_MATCH: return "EGL_BAD_MATCH";
    case EGL_BAD_PARAMETER: return "EGL_BAD_PARAMETER";
    default: return "EGL error " + std::to_string(e);
  }
}

std::vector<EGLDeviceEXT> eglDevices() {
  auto query = reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
  if (!query) throw GlError("OpenGL: EGL has no eglQueryDevicesEXT (EGL_EXT_device_enumeration): no headless GPU access; install an EGL driver (Mesa's libegl-mesa0, or the GPU vendor's)");
  EGLint count = 0;
  if (!query(0, nullptr, &count) || count <= 0) throw GlError("OpenGL: EGL reports no devices: no GPU driver and no Mesa software device");
  std::vector<EGLDeviceEXT> devices(count);
  query(count, devices.data(), &count);
  devices.resize(count);
  return devices;
}

}  // namespace

bool isSoftwareRenderer(const std::string& renderer) {
  for (const char* s : {"llvmpipe", "softpipe", "swrast", "Software Rasterizer"})
    if (renderer.find(s) != std::string::npos) return true;
  return false;
}

std::unique_ptr<Context> Context::headless(int device) {
  const std::vector<EGLDeviceEXT> devices = eglDevices();
  if (device < 0 || device >= static_cast<int>(devices.size()))
    throw GlError(field("gpu") + " " + std::to_string(device) + ": expected a device index from 0 to " + std::to_string(devices.size() - 1) +
                  ", found " + std::to_string(device) + " (this machine has " + std::to_string(devices.size()) +
                  " EGL device" + (devices.size() == 1 ? "" : "s") + "; `glrecon devices` lists them)");
  auto platformDisplay = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (!platformDisplay) throw GlError("OpenGL: EGL has no eglGetPlatformDisplayEXT");
  std::unique_ptr<Context> c(new Context);
  c->egl_ = std::make_unique<Egl>();
  c->egl_->display = platformDisplay(EGL_PLATFORM_DEVICE_EXT, devices[device], nullptr);
  EGLint major = 0, minor = 0;
  if (c->egl_->display == EGL_NO_DISPLAY || !eglInitialize(c->egl_->display, &major, &minor))
    throw GlError("OpenGL: EGL device " + std::to_string(device) + " cannot be initialised (" + eglErrorName(eglGetError()) + ")");
  if (!eglBindAPI(EGL_OPENGL_API)) throw GlError("OpenGL: EGL device " + std::to_string(device) + " offers no desktop OpenGL");
  const EGLint configAttributes[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint configs = 0;
  eglChooseConfig(c->egl_->display, configAttributes, &config, 1, &configs);
  const EGLint contextAttributes[] = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 5, EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                      EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
#ifndef NDEBUG
                                      EGL_CONTEXT_OPENGL_DEBUG, EGL_TRUE,
#endif
                                      EGL_NONE};
  // Rendering goes to framebuffer objects only, so no surface (and no config, where EGL allows it).
  c->egl_->context = eglCreateContext(c->egl_->display, configs ? config : EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, contextAttributes);
  if (c->egl_->context == EGL_NO_CONTEXT)
    throw GlError("OpenGL: EGL device " + std::to_string(device) + ": no OpenGL 4.5 core context (" + eglErrorName(eglGetError()) +
                  "); glrecon needs OpenGL 4.5");
  c->makeCurrent();
  c->info_.index = device;
  c->initialise("device " + std::to_string(device));
  return c;
}

void Context::initialise(const std::string& where) {
  glewExperimental = GL_TRUE;
  const GLenum status = glewInit();
  // Under EGL, GLEW looks for a GLX display first and reports GLEW_ERROR_NO_GLX_DISPLAY although every GL
  // entry point is loaded: that is success here.
  if (status != GLEW_OK && status != GLEW_ERROR_NO_GLX_DISPLAY)
    throw GlError(std::string("OpenGL: GLEW failed: ") + reinterpret_cast<const char*>(glewGetErrorString(status)));
  glGetError();  // GLEW's probing may leave an error behind
  info_.renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  info_.version = reinterpret_cast<const char*>(glGetString(GL_VERSION));
  info_.software = isSoftwareRenderer(info_.renderer);
  glGetIntegerv(GL_MAX_VARYING_COMPONENTS, &info_.varyingComponents);
#ifndef NDEBUG
  // Debug builds: the driver's own account of errors and performance warnings, as they happen.
  if (GLEW_KHR_debug) {
    glEnable(GL_DEBUG_OUTPUT_SYNCHRONOUS);
    glDebugMessageCallback(
        [](GLenum, GLenum type, GLuint, GLenum severity, GLsizei, const GLchar* message, const void*) {
          if (severity == GL_DEBUG_SEVERITY_NOTIFICATION) return;
          std::fprintf(stderr, "OpenGL debug (%s): %s\n", type == GL_DEBUG_TYPE_ERROR ? "error" : "warning", message);
        },
        nullptr);
  }
#endif
  GLint glMajor = 0, glMinor = 0;
  glGetIntegerv(GL_MAJOR_VERSION, &glMajor);
  glGetIntegerv(GL_MINOR_VERSION, &glMinor);
  if (glMajor * 10 + glMinor < 45)
    throw GlError("OpenGL: " + where + " (" + info_.renderer + ") offers OpenGL " + info_.version + "; glrecon needs 4.5");
}

std::unique_ptr<Context> Context::adopt(std::unique_ptr<Surface> surface, const std::string& where) {
  std::unique_ptr<Context> c(new Context);
  c->surface_ = std::move(surface);
  c->initialise(where);
  return c;
}

std::vector<DeviceInfo> Context::listDevices() {
  std::vector<DeviceInfo> list;
  const std::size_t count = eglDevices().size();
  for (std::size_t i = 0; i < count; ++i) {
    try {
      list.push_back(headless(static_cast<int>(i))->info());
    } catch (const GlError& e) {
      list.push_back(DeviceInfo{static_cast<int>(i), std::string("(unusable: ") + e.what() + ")", "", false});
    }
  }
  return list;
}

void Context::makeCurrent() {
  if (surface_) {
    surface_->makeCurrent();
    return;
  }
  if (!eglMakeCurrent(egl_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, egl_->context))
    throw GlError("OpenGL: cannot make the context current (" + eglErrorName(eglGetError()) + ")");
}

long long freeDeviceMemory() {
  if (GLEW_NVX_gpu_memory_info) {
    GLint kib = 0;
    glGetIntegerv(0x9049 /* GPU_MEMORY_INFO_CURRENT_AVAILABLE_VIDMEM_NVX */, &kib);
    return static_cast<long long>(kib) * 1024;
  }
  if (GLEW_ATI_meminfo) {
    GLint info[4] = {0, 0, 0, 0};
    glGetIntegerv(0x87FC /* TEXTURE_FREE_MEMORY_ATI */, info);
    return static_cast<long long>(info[0]) * 1024;
  }
  return -1;
}

void Context::release() {
  if (surface_) {
    surface_->release();
    return;
  }
  eglMakeCurrent(egl_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
}

Context::~Context() {
  if (egl_ && egl_->display != EGL_NO_DISPLAY) {
    eglMakeCurrent(egl_->display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (egl_->context != EGL_NO_CONTEXT) eglDestroyContext(egl_->display, egl_->context);
    // The display is shared per device by EGL; terminating it would break other contexts on it.
  }
}

}  // namespace glrecon::gl
