// The live viewer: a GLFW window whose context also runs the graphics or compute backprojector, so the slices
// are drawn straight from the volume texture being reconstructed (no copy to the host while running). Frames are
// drawn between batches of projections on the same thread, at most 60 per second, so the window stays responsive.
// Offscreen (ViewerScript::offscreen), the same frames go to a framebuffer object on a headless context, paced
// as a swap chain two frames deep would pace them, so frames/s can be measured where there is no display.
// The overlay (projections done, rate, time left, grey range, keys) is text cairo renders into a texture,
// drawn in a band above the panels; a progress bar runs along the bottom.
#include "viewer.h"

#include <GL/glew.h>
#include <GLFW/glfw3.h>
#include <cairo.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "glrecon/errors.h"
#include "device/gl/shader.h"
#include "operators/gl/gl_operator.h"
#include "recon/device_session.h"
#include "glrecon/io.h"
#include "glrecon/parse.h"

namespace glrecon::app {
namespace {

constexpr int kBarHeight = 12;
constexpr int kTextHeight = 22;

struct Panel {
  int axis;   // 0 x, 1 y (axial), 2 z
  int index;  // current slice
  int across, up;
};

struct ViewerState {
  GLFWwindow* window = nullptr;
  Panel panels[3];
  int active = 0;
  int cell = 360;
  double low = 0, high = 1;
  bool rangeSet = false;
  int colourMap = 0;
  bool paused = false;
  bool dragging = false;
  double dragX = 0, dragY = 0;
  bool screenshotRequested = false;
  std::string screenshotPath;  // empty: glrecon-view-<projections>.png
  bool saveVolumeRequested = false;
};

ViewerState* stateOf(GLFWwindow* w) { return static_cast<ViewerState*>(glfwGetWindowUserPointer(w)); }

int zoomOf(const ViewerState& s, const Panel& p) { return std::max(1, s.cell / std::max(p.across, p.up)); }

int panelAt(const ViewerState& s, double x) { return std::clamp(static_cast<int>(x) / s.cell, 0, 2); }

// Keys, wheel and mouse of a window (offscreen frames take none).
void setUpWindowInput(ViewerState& state, GLFWwindow* window) {
  state.window = window;
  glfwSetWindowUserPointer(window, &state);
  glfwSwapInterval(0);  // frames are paced by the reconstruction, not the display
  glfwSetScrollCallback(window, [](GLFWwindow* w, double, double dy) {
    ViewerState& s = *stateOf(w);
    double x, y;
    glfwGetCursorPos(w, &x, &y);
    s.active = panelAt(s, x);
    s.panels[s.active].index += dy > 0 ? 1 : -1;
  });
  glfwSetKeyCallback(window, [](GLFWwindow* w, int key, int, int action, int) {
    if (action == GLFW_RELEASE) return;
    ViewerState& s = *stateOf(w);
    if (key == GLFW_KEY_UP || key == GLFW_KEY_RIGHT) s.panels[s.active].index += 1;
    if (key == GLFW_KEY_DOWN || key == GLFW_KEY_LEFT) s.panels[s.active].index -= 1;
    if (key == GLFW_KEY_TAB) s.active = (s.active + 1) % 3;
    if (key == GLFW_KEY_C) s.colourMap = 1 - s.colourMap;
    if (key == GLFW_KEY_SPACE) s.paused = !s.paused;
    if (key == GLFW_KEY_S) s.screenshotRequested = true;
    if (key == GLFW_KEY_V) s.saveVolumeRequested = true;
    if (key == GLFW_KEY_ESCAPE || key == GLFW_KEY_Q) glfwSetWindowShouldClose(w, GLFW_TRUE);
  });
  glfwSetMouseButtonCallback(window, [](GLFWwindow* w, int button, int action, int) {
    ViewerState& s = *stateOf(w);
    if (button != GLFW_MOUSE_BUTTON_LEFT) return;
    s.dragging = action == GLFW_PRESS;
    glfwGetCursorPos(w, &s.dragX, &s.dragY);
    s.active = panelAt(s, s.dragX);
  });
  glfwSetCursorPosCallback(window, [](GLFWwindow* w, double x, double y) {
    ViewerState& s = *stateOf(w);
    if (!s.dragging) return;
    // Drag right: wider window; drag up: higher level (as in radiology viewers).
    const double width = s.high - s.low, level = 0.5 * (s.high + s.low);
    const double newWidth = std::max(1e-6, width * std::exp((x - s.dragX) * 0.005));
    const double newLevel = level - (y - s.dragY) * width * 0.002;
    s.low = newLevel - 0.5 * newWidth;
    s.high = newLevel + 0.5 * newWidth;
    s.dragX = x;
    s.dragY = y;
  });
}

}  // namespace

void runViewer(ProjectionSource& source, const Geometry& geometry, const VolumeGrid& grid, FdkOptions options, const std::string& output,
               bool overwrite, const ViewerScript& script) {
  if (!output.empty()) refuseToOverwrite(output, overwrite);
  ViewerState state;
  state.cell = script.cell;
  const std::array<int, 3> n = grid.size;
  // Panels: axial (y slice: x across, z up), coronal (z slice: x across, y up), sagittal (x slice: z across, y up).
  state.panels[0] = {1, n[1] / 2, n[0], n[2]};
  state.panels[1] = {2, n[2] / 2, n[0], n[1]};
  state.panels[2] = {0, n[0] / 2, n[2], n[1]};
  const int depthOf[3] = {n[0], n[1], n[2]};
  if (!script.range.empty()) {
    const auto colon = script.range.find(':');
    if (colon == std::string::npos) throw UsageError("--slice-range: expected LOW:HIGH, found '" + script.range + "'");
    state.low = parseNumberList("--slice-range", script.range.substr(0, colon), script.range)[0];
    state.high = parseNumberList("--slice-range", script.range.substr(colon + 1), script.range)[0];
    state.rangeSet = true;
  }

  const int frameWidth = 3 * state.cell, frameHeight = state.cell + kBarHeight + kTextHeight;
  auto context = script.offscreen ? gl::Context::headless(options.gpu)
                                  : gl::Context::window(frameWidth, frameHeight, "glrecon view", script.screenshot.empty());
  // Offscreen: the frame's colour texture, and a fence per frame for the pacing.
  gl::Framebuffer offscreenFrame;
  gl::Texture offscreenColour;
  GLsync previousFrameDone = nullptr;
  struct FenceGuard {
    GLsync& fence;
    ~FenceGuard() {
      if (fence) glDeleteSync(fence);
    }
  } fenceGuard{previousFrameDone};
  if (script.offscreen) {
    offscreenFrame = gl::createFramebuffer();
    offscreenColour = gl::createTexture(GL_TEXTURE_2D);
    glTextureStorage2D(offscreenColour.id(), 1, GL_RGBA8, frameWidth, frameHeight);
    glNamedFramebufferTexture(offscreenFrame.id(), GL_COLOR_ATTACHMENT0, offscreenColour.id(), 0);
    if (glCheckNamedFramebufferStatus(offscreenFrame.id(), GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
      throw gl::GlError("view --offscreen: the offscreen framebuffer is incomplete");
  } else {
    setUpWindowInput(state, context->glfwWindow());
  }

  // The operator draws in this window's context; the viewer samples its volume texture.
  const Backend backend = options.backend.value_or(Backend::Graphics);
  if (backend == Backend::Cuda)
    throw UsageError(field("backend") + ": expected graphics, graphics-mp, compute, cpu or auto in a window (the slices are drawn from the "
                     "OpenGL operator's texture; cpu uploads them), found cuda");
  options.backend = backend;
  auto session = std::make_shared<DeviceSession>();
  session->useContext(options.gpu, *context);
  const FdkPlan plan = planFdk(geometry, grid, options, source, session);
  ImageSink sink(grid, options.threads);
  FdkReconstructor reconstructor(plan, context.get());
  ConeBeamOperator* backprojector = &reconstructor.firstOperator();
  auto* glOperator = dynamic_cast<GlOperator*>(backprojector);
  const unsigned liveTexture = glOperator ? glOperator->volumeTexture() : 0;  // 0 with the cpu backend
  const bool live = liveTexture != 0;
  // With the CPU backend the viewer keeps its own texture, refreshed from the host volume.
  gl::Texture hostVolume;
  if (!live) {
    hostVolume = gl::createTexture(GL_TEXTURE_2D_ARRAY);
    glTextureStorage3D(hostVolume.id(), 1, GL_R32F, n[0], n[1], n[2]);
  }
  gl::Program program = gl::buildProgram({{GL_VERTEX_SHADER, "slice_view.vert"}, {GL_FRAGMENT_SHADER, "slice_view.frag"}});
  gl::VertexArray quad = gl::createVertexArray();
  gl::Program overlayProgram = gl::buildProgram({{GL_VERTEX_SHADER, "slice_view.vert"}, {GL_FRAGMENT_SHADER, "overlay.frag"}});
  gl::Texture overlay = gl::createTexture(GL_TEXTURE_2D);
  const int overlayWidth = 3 * state.cell;
  glTextureStorage2D(overlay.id(), 1, GL_RGBA8, overlayWidth, kTextHeight);
  glTextureParameteri(overlay.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTextureParameteri(overlay.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  cairo_surface_t* text = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, overlayWidth, kTextHeight);
  struct SurfaceGuard {
    cairo_surface_t* s;
    ~SurfaceGuard() { cairo_surface_destroy(s); }
  } textGuard{text};
  const auto renderText = [&](const std::string& line) {
    cairo_t* cr = cairo_create(text);
    cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
    cairo_set_source_rgba(cr, 0.0, 0.0, 0.0, 0.85);
    cairo_paint(cr);
    cairo_set_operator(cr, CAIRO_OPERATOR_OVER);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 13);
    cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
    cairo_move_to(cr, 8, 15);
    cairo_show_text(cr, line.c_str());
    cairo_destroy(cr);
    cairo_surface_flush(text);
    // cairo's ARGB32 is premultiplied, 32-bit native order: BGRA bytes on little-endian machines.
    glPixelStorei(GL_UNPACK_ROW_LENGTH, cairo_image_surface_get_stride(text) / 4);
    glTextureSubImage2D(overlay.id(), 0, 0, 0, overlayWidth, kTextHeight, GL_BGRA, GL_UNSIGNED_BYTE, cairo_image_surface_get_data(text));
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  };

  const std::size_t total = geometry.size();
  std::size_t done = 0;
  std::size_t frames = 0;
  const auto start = std::chrono::steady_clock::now();
  auto lastFrame = start - std::chrono::seconds(1);
  double reconstructionSeconds = 0;
  std::size_t reconstructionFrames = 0;

  const auto readRange = [&] {
    Image v(grid);
    backprojector->readVolume(v.data.data());
    const double scale = done ? static_cast<double>(total) / done : 1.0;
    for (float& x : v.data) x = static_cast<float>(x * scale);
    const auto r = percentileRange(v, 0.5, 99.5);
    state.low = r.first;
    state.high = r.second;
    state.rangeSet = true;
  };

  const auto drawFrame = [&] {
    int width = frameWidth, height = frameHeight;
    if (!script.offscreen) glfwGetFramebufferSize(state.window, &width, &height);
    // Leave GL state as the backprojector expects it afterwards: the frame's framebuffer bound only here.
    glBindFramebuffer(GL_FRAMEBUFFER, script.offscreen ? offscreenFrame.id() : 0);
    // The compute backprojector writes the volume by image stores, which texture fetches see only after this.
    glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT);
    glDisable(GL_BLEND);
    glDisable(GL_STENCIL_TEST);
    glDisable(GL_DEPTH_TEST);
    glViewport(0, 0, width, height);
    glClearColor(0.05f, 0.05f, 0.05f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    glUseProgram(program.id());
    glBindVertexArray(quad.id());
    glBindTextureUnit(0, live ? liveTexture : hostVolume.id());
    glUniform3i(glGetUniformLocation(program.id(), "size"), n[0], n[1], n[2]);
    glUniform1f(glGetUniformLocation(program.id(), "scale"), done ? static_cast<float>(static_cast<double>(total) / done) : 0.0f);
    glUniform1f(glGetUniformLocation(program.id(), "low"), static_cast<float>(state.low));
    glUniform1f(glGetUniformLocation(program.id(), "high"), static_cast<float>(state.high));
    glUniform1i(glGetUniformLocation(program.id(), "colourMap"), state.colourMap);
    for (int i = 0; i < 3; ++i) {
      Panel& p = state.panels[i];
      p.index = std::clamp(p.index, 0, depthOf[p.axis] - 1);
      const int zoom = zoomOf(state, p);
      glViewport(i * state.cell, kBarHeight, p.across * zoom, p.up * zoom);
      glUniform1i(glGetUniformLocation(program.id(), "axis"), p.axis);
      glUniform1i(glGetUniformLocation(program.id(), "index"), p.index);
      glUniform1f(glGetUniformLocation(program.id(), "progress"), -1.0f);
      glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
    }
    glViewport(0, 0, width, kBarHeight);
    glUniform1f(glGetUniformLocation(program.id(), "progress"), static_cast<float>(done) / total);
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
    {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double rate = done ? done / elapsed : 0.0;
      char line[256];
      std::snprintf(line, sizeof line, "%zu/%zu projections  %.1f/s  %s  grey %.3g to %.3g%s  |  wheel/arrows: slice  drag: window/level  "
                    "C: colours  space: pause  S: screenshot  V: save volume",
                    done, total, rate,
                    done < total ? (rate > 0 ? (std::to_string(static_cast<int>((total - done) / rate + 0.5)) + " s left").c_str() : "starting")
                                 : "done",
                    state.low, state.high, state.paused ? "   (paused)" : "");
      renderText(line);
      glViewport(0, height - kTextHeight, overlayWidth, kTextHeight);
      glUseProgram(overlayProgram.id());
      glBindTextureUnit(0, overlay.id());
      glEnable(GL_BLEND);
      glBlendFunc(GL_ONE, GL_ONE_MINUS_SRC_ALPHA);  // premultiplied alpha
      glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
      glDisable(GL_BLEND);
    }
    if (state.screenshotRequested) {
      state.screenshotRequested = false;
      std::vector<unsigned char> rgb(static_cast<std::size_t>(width) * height * 3), flipped(rgb.size());
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
      for (int row = 0; row < height; ++row)
        std::copy_n(rgb.data() + static_cast<std::size_t>(height - 1 - row) * width * 3, width * 3, flipped.data() + static_cast<std::size_t>(row) * width * 3);
      char name[64];
      std::snprintf(name, sizeof name, "glrecon-view-%04zu.png", done);
      const std::string path = state.screenshotPath.empty() ? name : state.screenshotPath;
      // An existing file is replaced only with --overwrite; a refused screenshot does not end the session.
      try {
        writeRgbPng(path, width, height, flipped, overwrite);
        std::fprintf(stderr, "view: screenshot %s\n", path.c_str());
      } catch (const InputError& e) {
        std::fprintf(stderr, "view: screenshot not saved: %s\n", e.what());
      }
    }
    if (script.offscreen) {
      // As a swap chain two frames deep: this frame is queued once the one before it has been drawn.
      if (previousFrameDone) {
        glClientWaitSync(previousFrameDone, GL_SYNC_FLUSH_COMMANDS_BIT, GLuint64{10'000'000'000});
        glDeleteSync(previousFrameDone);
      }
      previousFrameDone = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
      glFlush();
    } else {
      glfwSwapBuffers(state.window);
    }
    ++frames;
  };

  const auto frameDue = [&] { return std::chrono::steady_clock::now() - lastFrame >= std::chrono::milliseconds(16); };
  bool midScanShotTaken = false;
  // The span while projections arrive (from the first to the last one backprojected) and the frames drawn in it:
  // the rate a user watching the scan sees, without the start (reading, filter warm-up) or the final readback.
  std::chrono::steady_clock::time_point firstBatch{}, lastBatch{};
  std::size_t framesAtFirstBatch = 0, framesAtLastBatch = 0;
  // The loop owns the window: a step of the reconstruction (about a frame's time), then events and a frame when due.
  reconstructor.start(source, sink);
  bool closed = false;
  for (bool more = true; more;) {
    // Steps stop where a script looks: the mid-scan screenshot, the projection count at which it closes.
    std::size_t until = 0;
    if (script.screenshotAt && !midScanShotTaken) until = script.screenshotAt;
    if (script.closeAfter && (until == 0 || script.closeAfter < until)) until = script.closeAfter;
    more = reconstructor.step(std::chrono::milliseconds(8), until < total ? until : 0);
    if (reconstructor.done() != done) {
      done = reconstructor.done();
      lastBatch = std::chrono::steady_clock::now();
      framesAtLastBatch = frames;
      if (firstBatch == std::chrono::steady_clock::time_point{}) {
        firstBatch = lastBatch;
        framesAtFirstBatch = frames;
      }
      if (script.screenshotAt && !midScanShotTaken && done >= script.screenshotAt) {
        midScanShotTaken = true;
        state.screenshotRequested = true;
        lastFrame = start - std::chrono::seconds(1);  // draw (and save) at once
      }
      if (!state.rangeSet && done >= std::max<std::size_t>(1, total / 10)) readRange();
      if (!live && frameDue()) {  // cpu backend: refresh the viewer's copy of the volume
        Image v(grid);
        backprojector->readVolume(v.data.data());
        glTextureSubImage3D(hostVolume.id(), 0, 0, 0, 0, n[0], n[1], n[2], GL_RED, GL_FLOAT, v.data.data());
      }
    }
    do {
      if (!script.offscreen) glfwPollEvents();
      if ((!script.offscreen && glfwWindowShouldClose(state.window)) || (script.closeAfter && done >= script.closeAfter)) {
        closed = true;
        break;
      }
      if (frameDue() || state.paused) {
        drawFrame();
        lastFrame = std::chrono::steady_clock::now();
      }
      if (state.paused) std::this_thread::sleep_for(std::chrono::milliseconds(16));
    } while (state.paused);
    if (closed) break;
  }
  if (closed) {
    reconstructor.cancel();
    std::fprintf(stderr, "view: %s closed after %zu of %zu projections: reconstruction cancelled, nothing written\n",
                 script.offscreen ? "offscreen frames" : "window", done, total);
    return;
  }
  const FdkReport report = reconstructor.finish();
  const Image volume = sink.take();
  reconstructionSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  reconstructionFrames = frames;
  done = total;
  if (!live) glTextureSubImage3D(hostVolume.id(), 0, 0, 0, 0, n[0], n[1], n[2], GL_RED, GL_FLOAT, volume.data.data());
  if (!state.rangeSet) readRange();
  const double arrivingSeconds = std::chrono::duration<double>(lastBatch - firstBatch).count();
  std::fprintf(stderr,
               "view: %s: %zu projections in %.2f s (%.1f projections/s), %zu frames while reconstructing (%.1f frames/s; %.1f frames/s "
               "over the %.2f s from the first projection backprojected to the last); volume ready %.3f s after the last projection\n",
               report.backend.c_str(), total, reconstructionSeconds, total / reconstructionSeconds, reconstructionFrames,
               reconstructionFrames / reconstructionSeconds, arrivingSeconds > 0 ? (framesAtLastBatch - framesAtFirstBatch) / arrivingSeconds : 0.0,
               arrivingSeconds, report.latencySeconds);
  if (!output.empty()) {
    writeMetaImage(output, volume, overwrite);
    std::fprintf(stderr, "view: wrote %s\n", output.c_str());
  }
  if (!script.screenshot.empty()) {
    state.screenshotRequested = true;
    state.screenshotPath = script.screenshot;
    drawFrame();
    return;
  }
  if (script.offscreen) return;
  // The scan is in: keep the window for looking until it is closed; V saves the volume.
  while (!glfwWindowShouldClose(state.window)) {
    glfwWaitEventsTimeout(0.05);
    if (state.saveVolumeRequested) {
      state.saveVolumeRequested = false;
      const std::string path = output.empty() ? "glrecon-view.mha" : output;
      try {
        writeMetaImage(path, volume, overwrite || path == output);
        std::fprintf(stderr, "view: wrote %s\n", path.c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "view: %s\n", e.what());
      }
    }
    drawFrame();
  }
}

}  // namespace glrecon::app
