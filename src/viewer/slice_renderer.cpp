#include "viewer/slice_renderer.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>

#include "device/gl/shader.h"
#include "device/gl/state_scope.h"

namespace glrecon::viewer {

std::array<Panel, 3> centralPanels(const std::array<int, 3>& n) {
  // Axial (y slice: x across, z up), coronal (z slice: x across, y up), sagittal (x slice: z across, y up).
  return {Panel{1, n[1] / 2, n[0], n[2]}, Panel{2, n[2] / 2, n[0], n[1]}, Panel{0, n[0] / 2, n[2], n[1]}};
}

gl::Program buildSliceProgram() {
  return gl::buildProgramFromSources({{{GL_VERTEX_SHADER, "slice_view.vert"}, gl::shaderSource("slice_view.vert")},
                                      {{GL_FRAGMENT_SHADER, "slice_view.frag"},
                                       gl::shaderSource("colour_maps.glsl") + "\n" + gl::shaderSource("slice_view.frag")}});
}

SliceRenderer::SliceRenderer(int cell, int textLines) : cell_(cell), textHeight_(4 + 18 * std::max(1, textLines)) {
  slices_ = buildSliceProgram();
  overlay_ = gl::buildProgram({{GL_VERTEX_SHADER, "slice_view.vert"}, {GL_FRAGMENT_SHADER, "overlay.frag"}});
  quad_ = gl::createVertexArray();
  text_ = gl::createTexture(GL_TEXTURE_2D);
  glTextureStorage2D(text_.id(), 1, GL_RGBA8, width(), textHeight_);
  glTextureParameteri(text_.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTextureParameteri(text_.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  surface_ = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width(), textHeight_);
}

SliceRenderer::~SliceRenderer() { cairo_surface_destroy(surface_); }

GLuint SliceRenderer::upload(const float* voxels, const std::array<int, 3>& n) {
  if (!hostVolume_ || hostSize_ != n) {
    hostVolume_ = gl::createTexture(GL_TEXTURE_2D_ARRAY);
    glTextureStorage3D(hostVolume_.id(), 1, GL_R32F, n[0], n[1], n[2]);
    hostSize_ = n;
  }
  gl::StateScope keep;
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  glTextureSubImage3D(hostVolume_.id(), 0, 0, 0, 0, n[0], n[1], n[2], GL_RED, GL_FLOAT, voxels);
  return hostVolume_.id();
}

void SliceRenderer::renderText(const FrameContent& frame) {
  cairo_t* cr = cairo_create(surface_);
  cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
  cairo_set_source_rgba(cr, 0.0, 0.0, 0.0, 0.85);
  cairo_paint(cr);
  cairo_set_operator(cr, CAIRO_OPERATOR_OVER);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 13);
  cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
  for (std::size_t i = 0; i < frame.lines.size(); ++i) {
    cairo_move_to(cr, 8, 15 + 18.0 * static_cast<double>(i));
    cairo_show_text(cr, frame.lines[i].c_str());
  }
  const std::vector<double>& curve = frame.curve;
  if (curve.size() > 1) {
    const double lo = *std::min_element(curve.begin(), curve.end()), hi = *std::max_element(curve.begin(), curve.end());
    const double x0 = width() - 260, w = 250, y0 = 4, h = textHeight_ - 8;
    cairo_set_source_rgb(cr, 0.3, 0.7, 1.0);
    for (std::size_t i = 0; i < curve.size(); ++i) {
      const double t = hi > lo && lo > 0 ? (std::log(curve[i]) - std::log(lo)) / (std::log(hi) - std::log(lo)) : 0.5;
      const double x = x0 + w * static_cast<double>(i) / static_cast<double>(curve.size() - 1), y = y0 + h * (1 - t);
      if (i == 0) cairo_move_to(cr, x, y);
      else cairo_line_to(cr, x, y);
    }
    cairo_stroke(cr);
  }
  cairo_destroy(cr);
  cairo_surface_flush(surface_);
  // cairo's ARGB32 is premultiplied, 32-bit native order: BGRA bytes on little-endian machines.
  glPixelStorei(GL_UNPACK_ROW_LENGTH, cairo_image_surface_get_stride(surface_) / 4);
  glTextureSubImage2D(text_.id(), 0, 0, 0, width(), textHeight_, GL_BGRA, GL_UNSIGNED_BYTE, cairo_image_surface_get_data(surface_));
}

void SliceRenderer::draw(const FrameContent& frame, GLuint framebuffer, int width, int height) {
  gl::StateScope keep;
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
  // An operator that writes the volume by image stores (compute, AG-GPU's subset update) is seen by texture fetches only
  // after this barrier.
  glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT);
  glDisable(GL_BLEND);
  glDisable(GL_STENCIL_TEST);
  glDisable(GL_DEPTH_TEST);
  glViewport(0, 0, width, height);
  glClearColor(0.05f, 0.05f, 0.05f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  const GLuint program = slices_.id();
  glUseProgram(program);
  glBindVertexArray(quad_.id());
  glBindTextureUnit(0, frame.volume);
  const auto uniform = [&](const char* name) { return glGetUniformLocation(program, name); };
  glUniform3i(uniform("size"), frame.size[0], frame.size[1], frame.size[2]);
  glUniform1f(uniform("scale"), frame.scale);
  glUniform1f(uniform("low"), static_cast<float>(frame.low));
  glUniform1f(uniform("high"), static_cast<float>(frame.high));
  glUniform1i(uniform("colourMap"), frame.colourMap);
  glUniform1f(uniform("progress"), -1.0f);
  for (int i = 0; i < 3; ++i) {
    const Panel& p = frame.panels[i];
    const int zoom = std::max(1, cell_ / std::max(p.across, p.up));
    glViewport(i * cell_, kBarHeight, p.across * zoom, p.up * zoom);
    glUniform1i(uniform("axis"), p.axis);
    glUniform1i(uniform("index"), p.index);
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  }
  glViewport(0, 0, width, kBarHeight);
  glUniform1f(uniform("progress"), static_cast<float>(frame.progress));
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);

  renderText(frame);
  glViewport(0, height - textHeight_, this->width(), textHeight_);
  glUseProgram(overlay_.id());
  glBindTextureUnit(0, text_.id());
  glEnable(GL_BLEND);
  glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);  // premultiplied alpha
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
}

std::vector<unsigned char> readFramebufferRgb(GLuint framebuffer, int width, int height) {
  gl::StateScope keep;
  std::vector<unsigned char> rgb(static_cast<std::size_t>(width) * height * 3), topFirst(rgb.size());
  glBindFramebuffer(GL_READ_FRAMEBUFFER, framebuffer);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
  const std::size_t row = static_cast<std::size_t>(width) * 3;
  for (int y = 0; y < height; ++y) std::copy_n(rgb.data() + static_cast<std::size_t>(height - 1 - y) * row, row, topFirst.data() + static_cast<std::size_t>(y) * row);
  return topFirst;
}

}  // namespace glrecon::viewer
