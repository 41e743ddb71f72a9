// The 3D view on the GPU (volume_renderer.h): one full-view quad whose fragment shader casts the pixel's ray.
#include "viewer/volume_renderer.h"

#include <algorithm>

#include "device/gl/shader.h"
#include "device/gl/state_scope.h"

namespace glrecon::viewer {

VolumeRenderer::VolumeRenderer() {
  program_ = gl::buildProgramFromSources({{{GL_VERTEX_SHADER, "slice_view.vert"}, gl::shaderSource("slice_view.vert")},
                                          {{GL_FRAGMENT_SHADER, "volume_view.frag"},
                                           gl::shaderSource("colour_maps.glsl") + "\n" + gl::shaderSource("volume_view.frag")}});
  quad_ = gl::createVertexArray();
  frame_ = gl::createFramebuffer();
}

GLuint VolumeRenderer::render(GLuint volume, const VolumeGrid& grid, float scale, const OrbitCamera& camera, const VolumeStyle& style, int width,
                              int height) {
  width = std::max(1, width);
  height = std::max(1, height);
  const RayFrame f = rayFrame(grid, camera, style, width, height);
  if (width != width_ || height != height_) {
    image_ = gl::createTexture(GL_TEXTURE_2D);
    // Float: the tests compare what the shader computed, not its 8-bit rounding; the window samples it as any texture.
    glTextureStorage2D(image_.id(), 1, GL_RGBA32F, width, height);
    glTextureParameteri(image_.id(), GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTextureParameteri(image_.id(), GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glNamedFramebufferTexture(frame_.id(), GL_COLOR_ATTACHMENT0, image_.id(), 0);
    width_ = width;
    height_ = height;
  }
  gl::StateScope keep;
  // An operator writing the volume by image stores (compute) is seen by texture fetches only after this barrier.
  glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT);
  glBindFramebuffer(GL_FRAMEBUFFER, frame_.id());
  glDisable(GL_BLEND);
  glDisable(GL_DEPTH_TEST);
  glDisable(GL_STENCIL_TEST);
  glViewport(0, 0, width, height);
  const GLuint p = program_.id();
  glUseProgram(p);
  glBindVertexArray(quad_.id());
  glBindTextureUnit(0, volume);
  const auto at = [&](const char* name) { return glGetUniformLocation(p, name); };
  glUniform3fv(at("eye"), 1, f.eye.data());
  glUniform3fv(at("forward"), 1, f.forward.data());
  glUniform3fv(at("right"), 1, f.right.data());
  glUniform3fv(at("up"), 1, f.up.data());
  glUniform1f(at("t0"), f.t0);
  glUniform1f(at("dt"), f.dt);
  glUniform1i(at("samples"), f.samples);
  glUniform2f(at("halfSize"), f.halfWidth, f.halfHeight);
  glUniform3i(at("size"), f.size[0], f.size[1], f.size[2]);
  glUniform1f(at("scale"), scale);
  glUniform1i(at("mode"), style.mode == VolumeMode::Mip ? 0 : 1);
  glUniform1i(at("raw"), style.raw ? 1 : 0);
  glUniform1f(at("low"), f.low);
  glUniform1f(at("invWindow"), f.invWindow);
  glUniform1i(at("colourMap"), style.colourMap);
  glUniform1i(at("points"), f.points);
  glUniform1fv(at("density"), kMaxTransferPoints, f.density.data());
  glUniform4fv(at("colour"), kMaxTransferPoints, f.colour[0].data());
  glUniform4fv(at("slope"), kMaxTransferPoints, f.slope[0].data());
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  return image_.id();
}

std::vector<float> VolumeRenderer::read() const {
  std::vector<float> rgba(static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_) * 4);
  if (rgba.empty()) return rgba;
  gl::StateScope keep;
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glGetTextureImage(image_.id(), 0, GL_RGBA, GL_FLOAT, static_cast<GLsizei>(rgba.size() * sizeof(float)), rgba.data());
  return rgba;
}

std::vector<unsigned char> VolumeRenderer::readRgb() const {
  const std::vector<float> rgba = read();
  std::vector<unsigned char> rgb(static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_) * 3);
  for (int y = 0; y < height_; ++y)
    for (int x = 0; x < width_; ++x)
      for (int c = 0; c < 3; ++c) {
        const float v = rgba[(static_cast<std::size_t>(height_ - 1 - y) * width_ + x) * 4 + c];
        rgb[(static_cast<std::size_t>(y) * width_ + x) * 3 + c] = static_cast<unsigned char>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f);
      }
  return rgb;
}

}  // namespace glrecon::viewer
