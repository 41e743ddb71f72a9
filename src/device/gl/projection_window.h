#pragma once
// A window of projections on an OpenGL device: layers of an R32F texture array (bilinear, border 0), and the part of a
// persistently mapped pixel-unpack buffer that stages them from host memory. Made by the GL operators (GlVolume),
// filled by the FDK filter's GL twin (src/filter/gl) or by the operator's own upload.
#include <GL/glew.h>

#include "device/gl/context.h"
#include "glrecon/device_projections.h"

namespace glrecon::gl {

struct ProjectionWindow final : DeviceProjections {
  Context* context = nullptr;   // current while the window is filled
  GLuint texture = 0;           // R32F 2D array
  int firstLayer = 0;           // the window's projection i is layer firstLayer + i
  int width = 0, height = 0;    // detector pixels
  GLuint stagingBuffer = 0;     // pixel-unpack buffer, persistently mapped
  std::size_t stagingOffset = 0;  // bytes: where the window's projection 0 is staged
  float* staging = nullptr;     // its mapping, at stagingOffset
};

}  // namespace glrecon::gl
