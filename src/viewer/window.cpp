#include "viewer/window.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>
#include <mutex>

namespace glrecon::viewer {
namespace {

// GLFW's last error, for the message when a window cannot be made (GLFW reports it through a callback; it is set and
// read on the viewer's thread).
std::string& lastGlfwError() {
  static std::string message;
  return message;
}

bool startGlfw() {
  static std::once_flag once;
  static bool started = false;
  std::call_once(once, [] {
    glfwSetErrorCallback([](int, const char* description) { lastGlfwError() = description; });
    started = glfwInit() == GLFW_TRUE;
  });
  return started;
}

struct GlfwSurface final : gl::Context::Surface {
  explicit GlfwSurface(GLFWwindow* w) : window(w) {}
  void makeCurrent() override { glfwMakeContextCurrent(window); }
  void release() override { glfwMakeContextCurrent(nullptr); }
  GLFWwindow* window;
};

ViewWindow& viewOf(GLFWwindow* w) { return *static_cast<ViewWindow*>(glfwGetWindowUserPointer(w)); }

}  // namespace

ViewWindow::ViewWindow(int width, int height, const std::string& title, bool visible, bool offscreen, int gpu, bool viewKeys)
    : width_(width), height_(height) {
  if (offscreen) {
    context_ = gl::Context::headless(gpu);
    frame_ = gl::createFramebuffer();
    frameColour_ = gl::createTexture(GL_TEXTURE_2D);
    glTextureStorage2D(frameColour_.id(), 1, GL_RGBA8, width, height);
    glNamedFramebufferTexture(frame_.id(), GL_COLOR_ATTACHMENT0, frameColour_.id(), 0);
    if (glCheckNamedFramebufferStatus(frame_.id(), GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
      throw gl::GlError("view --offscreen: the offscreen framebuffer is incomplete");
    return;
  }
  if (!startGlfw()) throw gl::GlError("OpenGL window: GLFW cannot start (" + lastGlfwError() + "); is there a display (DISPLAY, or xvfb-run)?");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 5);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
  window_ = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
  if (!window_) throw gl::GlError("OpenGL window: no OpenGL 4.5 core window (" + lastGlfwError() + ")");
  glfwMakeContextCurrent(window_);
  context_ = gl::Context::adopt(std::make_unique<GlfwSurface>(window_), "the window's context");
  glfwSwapInterval(0);  // frames are paced by the reconstruction, not the display
  if (viewKeys) connectInput();
}

ViewWindow::WindowHandle::~WindowHandle() {
  if (window) glfwDestroyWindow(window);
}

ViewWindow::~ViewWindow() {
  if (context_) context_->makeCurrent();  // the members' GL objects go in this context
}

std::pair<int, int> ViewWindow::framebufferSize() const {
  if (!window_) return {width_, height_};
  int w = 0, h = 0;
  glfwGetFramebufferSize(window_, &w, &h);
  return {w, h};
}

void ViewWindow::pollEvents() {
  if (window_) glfwPollEvents();
}

void ViewWindow::waitEvents(double seconds) {
  if (window_) glfwWaitEventsTimeout(seconds);
}

float ViewWindow::contentScale() const {
  if (!window_) return 1.0f;
  float x = 1.0f, y = 1.0f;
  glfwGetWindowContentScale(window_, &x, &y);
  return std::max(1.0f, std::max(x, y));
}

void ViewWindow::requestClose() {
  if (window_) glfwSetWindowShouldClose(window_, GLFW_TRUE);
  closeAsked_ = true;
}

bool ViewWindow::closeRequested() const { return closeAsked_ || (window_ && glfwWindowShouldClose(window_)); }

void ViewWindow::present() {
  if (window_) {
    glfwSwapBuffers(window_);
    return;
  }
  // As a swap chain two frames deep: this frame is queued once the one before it has been drawn.
  previousFrame_.wait();
  previousFrame_ = gl::Fence::insert();
  glFlush();
}

void ViewWindow::connectInput() {
  glfwSetWindowUserPointer(window_, this);
  glfwSetScrollCallback(window_, [](GLFWwindow* w, double, double dy) {
    ViewWindow& view = viewOf(w);
    double x, y;
    glfwGetCursorPos(w, &x, &y);
    view.input_.active = std::clamp(static_cast<int>(x) / view.cell_, 0, 2);
    view.input_.sliceSteps[view.input_.active] += dy > 0 ? 1 : -1;
  });
  glfwSetKeyCallback(window_, [](GLFWwindow* w, int key, int, int action, int) {
    if (action == GLFW_RELEASE) return;
    ViewInput& in = viewOf(w).input_;
    if (key == GLFW_KEY_UP || key == GLFW_KEY_RIGHT) in.sliceSteps[in.active] += 1;
    if (key == GLFW_KEY_DOWN || key == GLFW_KEY_LEFT) in.sliceSteps[in.active] -= 1;
    if (key == GLFW_KEY_TAB) in.active = (in.active + 1) % 3;
    if (key == GLFW_KEY_C) in.toggleColours = true;
    if (key == GLFW_KEY_SPACE) in.paused = !in.paused;
    if (key == GLFW_KEY_S) in.screenshot = true;
    if (key == GLFW_KEY_V) in.saveVolume = true;
    if (key == GLFW_KEY_ESCAPE || key == GLFW_KEY_Q) glfwSetWindowShouldClose(w, GLFW_TRUE);
  });
  glfwSetMouseButtonCallback(window_, [](GLFWwindow* w, int button, int action, int) {
    if (button != GLFW_MOUSE_BUTTON_LEFT) return;
    ViewWindow& view = viewOf(w);
    view.dragging_ = action == GLFW_PRESS;
    glfwGetCursorPos(w, &view.dragX_, &view.dragY_);
    view.input_.active = std::clamp(static_cast<int>(view.dragX_) / view.cell_, 0, 2);
  });
  glfwSetCursorPosCallback(window_, [](GLFWwindow* w, double x, double y) {
    ViewWindow& view = viewOf(w);
    if (!view.dragging_) return;
    // Drag right: a wider window; drag up: a higher level (as in radiology viewers).
    view.input_.widthFactor *= std::exp((x - view.dragX_) * 0.005);
    view.input_.levelShift -= (y - view.dragY_) * 0.002;
    view.dragX_ = x;
    view.dragY_ = y;
  });
}

}  // namespace glrecon::viewer
