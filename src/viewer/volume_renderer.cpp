// The 3D view on the GPU (volume_renderer.h): one compute dispatch, an invocation per pixel casting its ray into the
// view's image (shaders/volume_view.comp); the window shows the image as a texture.
#include "viewer/volume_renderer.h"

#include <algorithm>

#include "device/gl/shader.h"
#include "device/gl/state_scope.h"

namespace glrecon::viewer {

VolumeRenderer::VolumeRenderer() {
  program_ = gl::buildProgramFromSources(
      {{{GL_COMPUTE_SHADER, "volume_view.comp"}, gl::shaderSource("colour_maps.glsl") + "\n" + gl::shaderSource("volume_view.comp")}});
  for (auto& q : queries_) q = gl::createQuery(GL_TIMESTAMP);
}

std::optional<double> VolumeRenderer::gpuSeconds() {
  if (!timing_) return std::nullopt;
  GLint available = 0;
  glGetQueryObjectiv(queries_[1].id(), GL_QUERY_RESULT_AVAILABLE, &available);
  if (!available) return std::nullopt;
  GLuint64 begin = 0, end = 0;
  glGetQueryObjectui64v(queries_[0].id(), GL_QUERY_RESULT, &begin);
  glGetQueryObjectui64v(queries_[1].id(), GL_QUERY_RESULT, &end);
  timing_ = false;
  return end > begin ? 1e-9 * static_cast<double>(end - begin) : 0.0;
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
    width_ = width;
    height_ = height;
  }
  gl::StateScope keep;
  // An operator writing the volume by image stores (compute) is seen by texture fetches only after this barrier.
  glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT);
  const GLuint p = program_.id();
  glUseProgram(p);
  glBindTextureUnit(0, volume);
  // Image unit 0, restored after (an operator may keep its volume bound there between passes).
  GLint unit[5] = {};
  glGetIntegeri_v(GL_IMAGE_BINDING_NAME, 0, &unit[0]);
  glGetIntegeri_v(GL_IMAGE_BINDING_LEVEL, 0, &unit[1]);
  glGetIntegeri_v(GL_IMAGE_BINDING_LAYERED, 0, &unit[2]);
  glGetIntegeri_v(GL_IMAGE_BINDING_LAYER, 0, &unit[3]);
  glGetIntegeri_v(GL_IMAGE_BINDING_ACCESS, 0, &unit[4]);
  GLint unitFormat = GL_R32F;
  glGetIntegeri_v(GL_IMAGE_BINDING_FORMAT, 0, &unitFormat);
  glBindImageTexture(0, image_.id(), 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA32F);
  const auto at = [&](const char* name) { return glGetUniformLocation(p, name); };
  glUniform2i(at("viewSize"), width, height);
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
  if (!timing_) glQueryCounter(queries_[0].id(), GL_TIMESTAMP);
  glDispatchCompute(static_cast<GLuint>((width + 7) / 8), static_cast<GLuint>((height + 7) / 8), 1);
  if (!timing_) {
    glQueryCounter(queries_[1].id(), GL_TIMESTAMP);
    timing_ = true;
  }
  // What reads the image next: the window sampling it, a readback (glGetTextureImage), a framebuffer blit.
  glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT | GL_FRAMEBUFFER_BARRIER_BIT);
  glBindImageTexture(0, static_cast<GLuint>(unit[0]), unit[1], static_cast<GLboolean>(unit[2]), unit[3], static_cast<GLenum>(unit[4]),
                     static_cast<GLenum>(unitFormat));
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
