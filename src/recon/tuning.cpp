#include "recon/tuning.h"

#include "recon/device_session.h"

namespace glrecon {

Backend chooseBackend(const VolumeGrid&, int device, DeviceSession& session, bool, std::string* note) {
  // A software rasterizer runs the graphics path far slower than the vectorized CPU backend, so auto takes the
  // graphics pipeline only on a hardware GPU.
  std::string reason;
  try {
    const gl::DeviceInfo& info = session.glContext(device).info();
    if (!info.software) {
      if (note) *note = "auto: graphics backend on the hardware GPU " + info.renderer;
      return Backend::Graphics;
    }
    reason = "only a software renderer (" + info.renderer + ")";
  } catch (const gl::GlError& e) {
    reason = std::string("no usable OpenGL: ") + e.what();
  }
  if (note) *note = "auto: cpu backend, " + reason;
  return Backend::Cpu;
}

}  // namespace glrecon
