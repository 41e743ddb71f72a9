#pragma once
// The viewer's window: a GLFW window on the desktop (or under Xvfb), or, offscreen, a framebuffer of the same size on a
// headless context, paced as a swap chain two frames deep would pace it (the frames/s a window would get, where there
// is no display). Its OpenGL context is glrecon's (gl::Context::adopt), so operators draw in it too. The user's input
// (keys, wheel, mouse) is gathered here, per window: no globals. GLFW is private to the viewer component.
#include <GL/glew.h>

#include <memory>
#include <string>
#include <utility>

#include "device/gl/context.h"
#include "device/gl/objects.h"

struct GLFWwindow;

namespace glrecon::viewer {

/// What the user asked for since the frame before: the loop applies it to what it shows.
struct ViewInput {
  int active = 0;                 ///< the panel with the focus (0 axial, 1 coronal, 2 sagittal)
  int sliceSteps[3] = {0, 0, 0};  ///< slices to move per panel (wheel, arrows)
  bool toggleColours = false;
  bool paused = false;
  bool screenshot = false;        ///< S
  bool saveVolume = false;        ///< V
  double widthFactor = 1.0;       ///< drag right: a wider grey window (multiplies it)
  double levelShift = 0.0;        ///< drag up: a higher level (in grey-window widths)
};

class ViewWindow {
 public:
  /// A window of `width` x `height` pixels (hidden where `visible` is false), or an offscreen framebuffer of that size on
  /// EGL device `gpu`. Its context is current on the calling thread. Throws gl::GlError without a display or OpenGL 4.5.
  /// `viewKeys`: the view's keys and mouse (ViewInput); the app leaves its window's input to its widgets (Dear ImGui).
  ViewWindow(int width, int height, const std::string& title, bool visible, bool offscreen, int gpu, bool viewKeys = true);
  ~ViewWindow();
  ViewWindow(const ViewWindow&) = delete;
  ViewWindow& operator=(const ViewWindow&) = delete;

  gl::Context& context() { return *context_; }
  bool offscreen() const { return window_ == nullptr; }
  /// The framebuffer frames are drawn into (0: the window's).
  GLuint framebuffer() const { return frame_.id(); }
  std::pair<int, int> framebufferSize() const;
  /// Panels are `cell` pixels wide, side by side: the wheel and the mouse act on the one under the pointer.
  void setCell(int cell) { cell_ = cell; }

  void pollEvents();
  void waitEvents(double seconds);
  bool closeRequested() const;
  /// Shows the frame drawn: swaps a window's buffers; offscreen, waits for the frame before the last to be done.
  void present();
  ViewInput& input() { return input_; }
  /// The GLFW window (null offscreen), for a widget library's backend.
  GLFWwindow* glfwWindow() const { return window_; }
  /// The screen's content scale (1 on a 96 dpi screen, 2 on a HiDPI one; 1 offscreen).
  float contentScale() const;
  void requestClose();

 private:
  void connectInput();
  // The window first and the context next: every GL object below goes before them, the context before its window.
  struct WindowHandle {
    GLFWwindow* window = nullptr;
    ~WindowHandle();
  } handle_;
  GLFWwindow*& window_ = handle_.window;
  std::unique_ptr<gl::Context> context_;
  int width_ = 0, height_ = 0, cell_ = 1;
  gl::Framebuffer frame_;
  gl::Texture frameColour_;
  gl::Fence previousFrame_;
  ViewInput input_;
  bool dragging_ = false, closeAsked_ = false;
  double dragX_ = 0, dragY_ = 0;
};

}  // namespace glrecon::viewer
