// `glrecon view --method sart|sirt|cgls|osem`: the volume after every subset (window) or every iteration (headless
// snapshots), with the residual. The window draws the three central slices from a texture refreshed from the host
// volume after each subset (the algorithms keep the volume on the host between projector calls), with the
// iteration, subset, residual and the residual curve in the overlay. Uses the live viewer's shaders.
#include "iterative.h"

#include <GL/glew.h>
#include <GLFW/glfw3.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "glrecon/errors.h"
#include "device/gl/context.h"
#include "device/gl/objects.h"
#include "device/gl/shader.h"
#include "glrecon/io.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

struct Cancelled {};

constexpr int kTextHeight = 40;

void writeSlices(const Image& volume, const std::string& directory, const std::string& stem, std::pair<double, double> range) {
  const struct {
    const char* name;
    SliceAxis axis;
    int a;
  } views[] = {{"axial", SliceAxis::Y, 1}, {"coronal", SliceAxis::Z, 2}, {"sagittal", SliceAxis::X, 0}};
  for (const auto& v : views)
    writeSlicePng((fs::path(directory) / (stem + v.name + ".png")).string(), volume, v.axis, volume.size[v.a] / 2, range.first, range.second,
                  true);
}

}  // namespace

void runIterativeLive(const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                      const IterativeOptions& options, const IterativeLiveOptions& live) {
  for (const std::string& path : {live.output}) if (!path.empty()) refuseToOverwrite(path, live.overwrite);
  const char* method = methodName(options.method);
  double dataNorm = 0;
  for (float b : projections.data) dataNorm += static_cast<double>(b) * b;
  dataNorm = std::sqrt(dataNorm);
  std::vector<double> curve;  // residual after each completed iteration
  IterativeReport report;
  Image result;

  if (!live.window) {
    auto owned = makeOperator(live.projectorBackend, geometry, grid, live.projectorOptions);
    ConeBeamOperator& projector = *owned;
    // Headless: a line per iteration, and PNG slices after every iteration when a snapshot directory is given.
    std::optional<std::pair<double, double>> range = live.range;
    if (!live.snapshots.empty()) fs::create_directories(live.snapshots);
    result = reconstructIterative(projector, geometry, projections, grid, options, &report,
                                  [&](const IterationRecord& r, const std::vector<float>& x) {
                                    if (r.subset != r.subsets) return;
                                    if (!live.quiet)
                                      std::fprintf(stderr, "view: %s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", method, r.iteration,
                                                 options.iterations, r.residual, dataNorm > 0 ? r.residual / dataNorm : 0.0, r.seconds);
                                    if (live.snapshots.empty()) return;
                                    Image v(grid);
                                    v.data = x;
                                    if (!range) range = percentileRange(v, 0.5, 99.5);
                                    char stem[64];
                                    std::snprintf(stem, sizeof stem, "snapshot_it%04d_", r.iteration);
                                    writeSlices(v, live.snapshots, stem, *range);
                                  });
    if (!live.snapshots.empty()) {
      writeResidualCsv((fs::path(live.snapshots) / "residual.csv").string(), report, true);
      writeResidualPng((fs::path(live.snapshots) / "residual.png").string(), report, std::string(method) + " on " + backendInfo(projector.backend()).name, true);
      if (!live.quiet) std::fprintf(stderr, "view: wrote snapshots, residual.csv and residual.png into %s\n", live.snapshots.c_str());
    }
  } else {
    const int cell = 360;
    const std::array<int, 3> n = grid.size;
    auto context = gl::Context::window(3 * cell, cell + kTextHeight, std::string("glrecon view: ") + method, live.screenshot.empty());
    GLFWwindow* window = context->glfwWindow();
    // GL projectors draw in the window's context: one context current on this thread, no switching between EGL and GLX.
    OperatorOptions po = live.projectorOptions;
    po.context = context.get();
    auto owned = makeOperator(live.projectorBackend, geometry, grid, po);
    ConeBeamOperator& projector = *owned;
    context->makeCurrent();
    glfwSwapInterval(0);
    struct Panel {
      int axis, index, across, up;
    } panels[3] = {{1, n[1] / 2, n[0], n[2]}, {2, n[2] / 2, n[0], n[1]}, {0, n[0] / 2, n[2], n[1]}};
    static int active = 0, step = 0;
    active = 0;
    step = 0;
    glfwSetKeyCallback(window, [](GLFWwindow* w, int key, int, int action, int) {
      if (action == GLFW_RELEASE) return;
      if (key == GLFW_KEY_UP || key == GLFW_KEY_RIGHT) step += 1;
      if (key == GLFW_KEY_DOWN || key == GLFW_KEY_LEFT) step -= 1;
      if (key == GLFW_KEY_TAB) active = (active + 1) % 3;
      if (key == GLFW_KEY_ESCAPE || key == GLFW_KEY_Q) glfwSetWindowShouldClose(w, GLFW_TRUE);
    });
    gl::Texture volume = gl::createTexture(GL_TEXTURE_2D_ARRAY);
    glTextureStorage3D(volume.id(), 1, GL_R32F, n[0], n[1], n[2]);
    gl::Program program = gl::buildProgram({{GL_VERTEX_SHADER, "slice_view.vert"}, {GL_FRAGMENT_SHADER, "slice_view.frag"}});
    gl::Program overlayProgram = gl::buildProgram({{GL_VERTEX_SHADER, "slice_view.vert"}, {GL_FRAGMENT_SHADER, "overlay.frag"}});
    gl::VertexArray quad = gl::createVertexArray();
    gl::Texture overlay = gl::createTexture(GL_TEXTURE_2D);
    const int overlayWidth = 3 * cell;
    glTextureStorage2D(overlay.id(), 1, GL_RGBA8, overlayWidth, kTextHeight);
    cairo_surface_t* text = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, overlayWidth, kTextHeight);
    struct Guard {
      cairo_surface_t* s;
      ~Guard() { cairo_surface_destroy(s); }
    } guard{text};
    std::pair<double, double> range = live.range.value_or(std::make_pair(0.0, 1.0));
    bool rangeSet = live.range.has_value();
    std::string line = std::string(method) + ": starting";

    auto draw = [&](bool screenshot) {
      context->makeCurrent();  // GL projectors run in contexts of their own
      int width, height;
      glfwGetFramebufferSize(window, &width, &height);
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      glDisable(GL_BLEND);
      glViewport(0, 0, width, height);
      glClearColor(0.05f, 0.05f, 0.05f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      glUseProgram(program.id());
      glBindVertexArray(quad.id());
      glBindTextureUnit(0, volume.id());
      glUniform3i(glGetUniformLocation(program.id(), "size"), n[0], n[1], n[2]);
      glUniform1f(glGetUniformLocation(program.id(), "scale"), 1.0f);
      glUniform1f(glGetUniformLocation(program.id(), "low"), static_cast<float>(range.first));
      glUniform1f(glGetUniformLocation(program.id(), "high"), static_cast<float>(range.second));
      glUniform1i(glGetUniformLocation(program.id(), "colourMap"), 0);
      glUniform1f(glGetUniformLocation(program.id(), "progress"), -1.0f);
      panels[active].index += step;
      step = 0;
      for (int i = 0; i < 3; ++i) {
        Panel& p = panels[i];
        p.index = std::clamp(p.index, 0, n[p.axis] - 1);
        const int zoom = std::max(1, cell / std::max(p.across, p.up));
        glViewport(i * cell, 0, p.across * zoom, p.up * zoom);
        glUniform1i(glGetUniformLocation(program.id(), "axis"), p.axis);
        glUniform1i(glGetUniformLocation(program.id(), "index"), p.index);
        glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
      }
      // Overlay: the status line and, on the right, the residual curve so far (log scale).
      cairo_t* cr = cairo_create(text);
      cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
      cairo_set_source_rgba(cr, 0.0, 0.0, 0.0, 0.85);
      cairo_paint(cr);
      cairo_set_operator(cr, CAIRO_OPERATOR_OVER);
      cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
      cairo_set_font_size(cr, 13);
      cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
      cairo_move_to(cr, 8, 16);
      cairo_show_text(cr, line.c_str());
      cairo_move_to(cr, 8, 34);
      cairo_show_text(cr, "arrows: slice  tab: panel  esc: stop (nothing written)");
      if (curve.size() > 1) {
        const double lo = *std::min_element(curve.begin(), curve.end()), hi = *std::max_element(curve.begin(), curve.end());
        const double x0 = overlayWidth - 260, w = 250, y0 = 4, h = kTextHeight - 8;
        cairo_set_source_rgb(cr, 0.3, 0.7, 1.0);
        for (std::size_t i = 0; i < curve.size(); ++i) {
          const double t = hi > lo ? (std::log(curve[i]) - std::log(lo)) / (std::log(hi) - std::log(lo)) : 0.5;
          const double x = x0 + w * i / (curve.size() - 1), y = y0 + h * (1 - t);
          if (i == 0) cairo_move_to(cr, x, y);
          else cairo_line_to(cr, x, y);
        }
        cairo_stroke(cr);
      }
      cairo_destroy(cr);
      cairo_surface_flush(text);
      glPixelStorei(GL_UNPACK_ROW_LENGTH, cairo_image_surface_get_stride(text) / 4);
      glTextureSubImage2D(overlay.id(), 0, 0, 0, overlayWidth, kTextHeight, GL_BGRA, GL_UNSIGNED_BYTE, cairo_image_surface_get_data(text));
      glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
      glViewport(0, height - kTextHeight, overlayWidth, kTextHeight);
      glUseProgram(overlayProgram.id());
      glBindTextureUnit(0, overlay.id());
      glEnable(GL_BLEND);
      glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
      glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
      glDisable(GL_BLEND);
      if (screenshot) {
        std::vector<unsigned char> rgb(static_cast<std::size_t>(width) * height * 3), flipped(rgb.size());
        glPixelStorei(GL_PACK_ALIGNMENT, 1);
        glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
        for (int row = 0; row < height; ++row)
          std::copy_n(rgb.data() + static_cast<std::size_t>(height - 1 - row) * width * 3, width * 3,
                      flipped.data() + static_cast<std::size_t>(row) * width * 3);
        writeRgbPng(live.screenshot, width, height, flipped, true);
        std::fprintf(stderr, "view: screenshot %s\n", live.screenshot.c_str());
      }
      glfwSwapBuffers(window);
    };

    try {
      IterativeOptions everySubset = options;
      everySubset.everySubset = true;  // the window shows the volume after every subset
      result = reconstructIterative(projector, geometry, projections, grid, everySubset, &report,
                                    [&](const IterationRecord& r, const std::vector<float>& x) {
                                      context->makeCurrent();
                                      glTextureSubImage3D(volume.id(), 0, 0, 0, 0, n[0], n[1], n[2], GL_RED, GL_FLOAT, x.data());
                                      if (!rangeSet) {
                                        Image v(grid);
                                        v.data = x;
                                        range = percentileRange(v, 0.5, 99.5);
                                        rangeSet = r.subset == r.subsets;  // settle on the first whole iteration
                                      }
                                      if (r.subset == r.subsets) {
                                        curve.push_back(r.residual);
                                        if (!live.quiet)
                                          std::fprintf(stderr, "view: %s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", method,
                                                     r.iteration, options.iterations, r.residual, dataNorm > 0 ? r.residual / dataNorm : 0.0,
                                                     r.seconds);
                                      }
                                      char buffer[256];
                                      std::snprintf(buffer, sizeof buffer, "%s on %s: iteration %d/%d, subset %d/%d, residual %.4g (%.3g of ||b||)",
                                                    method, backendInfo(projector.backend()).name, r.iteration, options.iterations, r.subset, r.subsets,
                                                    r.residual, dataNorm > 0 ? r.residual / dataNorm : 0.0);
                                      line = buffer;
                                      glfwPollEvents();
                                      if (glfwWindowShouldClose(window)) throw Cancelled{};
                                      draw(false);
                                    });
    } catch (const Cancelled&) {
      std::fprintf(stderr, "view: window closed: %s cancelled, nothing written\n", method);
      return;
    }
    line = std::string(method) + ": done, final residual " + std::to_string(report.finalResidual);
    if (!live.screenshot.empty()) {
      draw(true);
    } else {
      while (!glfwWindowShouldClose(window)) {
        glfwWaitEventsTimeout(0.05);
        draw(false);
      }
    }
  }
  if (!live.quiet)
    std::fprintf(stderr, "view: %s: %d iterations in %.2f s, final residual %.6g (%.4g of ||b||)\n", method, options.iterations, report.seconds,
               report.finalResidual, dataNorm > 0 ? report.finalResidual / dataNorm : 0.0);
  if (!live.output.empty()) {
    writeMetaImage(live.output, result, live.overwrite);
    if (!live.quiet) std::fprintf(stderr, "view: wrote %s\n", live.output.c_str());
  }
}

}  // namespace glrecon::app
