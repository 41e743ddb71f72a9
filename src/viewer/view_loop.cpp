#include "viewer/view_loop.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "glrecon/errors.h"
#include "glrecon/io.h"

namespace glrecon::viewer {
namespace {

using Clock = std::chrono::steady_clock;

// What the loop shows: the panels, the grey range, the colour map; changed by the user's input.
struct Shown {
  std::array<Panel, 3> panels{};
  std::array<int, 3> size{};
  double low = 0, high = 1;
  bool rangeSet = false;
  bool rangeByUser = false;  // a --slice-range or a drag: the task's suggestions no longer replace it
  int colourMap = 0;

  void apply(ViewInput& in) {
    const int depth[3] = {size[0], size[1], size[2]};
    for (int i = 0; i < 3; ++i) {
      panels[i].index = std::clamp(panels[i].index + in.sliceSteps[i], 0, depth[panels[i].axis] - 1);
      in.sliceSteps[i] = 0;
    }
    if (in.toggleColours) colourMap = (colourMap + 1) % 4;  // grey, hot, viridis, inferno
    in.toggleColours = false;
    if (in.widthFactor != 1.0 || in.levelShift != 0.0) {
      const double width = high - low, level = 0.5 * (high + low) + in.levelShift * width;
      const double newWidth = std::max(1e-6, width * in.widthFactor);
      low = level - 0.5 * newWidth;
      high = level + 0.5 * newWidth;
      in.widthFactor = 1.0;
      in.levelShift = 0.0;
      rangeByUser = true;
    }
  }
};

void saveScreenshot(ViewWindow& window, const std::string& path, bool overwrite) {
  const auto [width, height] = window.framebufferSize();
  // An existing file is replaced only with --overwrite; a refused screenshot does not end the session.
  try {
    writeRgbPng(path, width, height, readFramebufferRgb(window.framebuffer(), width, height), overwrite);
    std::fprintf(stderr, "view: screenshot %s\n", path.c_str());
  } catch (const InputError& e) {
    std::fprintf(stderr, "view: screenshot not saved: %s\n", e.what());
  }
}

}  // namespace

ViewOutcome runView(ViewWindow& window, SliceRenderer& renderer, ViewTask& task, const ViewScript& script, const std::string& volumePath,
                    bool overwrite) {
  window.setCell(renderer.cell());
  ViewOutcome outcome;
  Shown shown;
  FrameContent probe;
  task.frame(probe, renderer);
  shown.size = probe.size;
  shown.panels = centralPanels(probe.size);
  if (script.range) {
    std::tie(shown.low, shown.high) = *script.range;
    shown.rangeSet = shown.rangeByUser = true;
  }
  auto lastSuggestion = Clock::now() - std::chrono::seconds(1);
  std::string pendingShot;  // a screenshot to save with the next frame ("" none)
  const auto drawFrame = [&] {
    ViewInput& in = window.input();
    shown.apply(in);
    FrameContent content;
    content.panels = shown.panels;
    content.low = shown.low;
    content.high = shown.high;
    content.colourMap = shown.colourMap;
    task.frame(content, renderer);  // the volume, its scale, the text (which may show the grey range)
    content.progress = task.total() ? static_cast<double>(task.done()) / static_cast<double>(task.total()) : 0.0;
    if (in.paused && !content.lines.empty()) content.lines.front() += "   (paused)";
    const auto [width, height] = window.framebufferSize();
    renderer.draw(content, window.framebuffer(), width, height);
    if (in.screenshot) {
      in.screenshot = false;
      char name[64];
      std::snprintf(name, sizeof name, "glrecon-view-%04zu.png", task.done());
      pendingShot = name;
    }
    if (!pendingShot.empty()) {
      saveScreenshot(window, pendingShot, overwrite);
      pendingShot.clear();
    }
    window.present();
  };

  const auto start = Clock::now();
  auto lastFrame = start - std::chrono::seconds(1);
  const auto frameDue = [&] { return Clock::now() - lastFrame >= std::chrono::milliseconds(16); };
  Clock::time_point firstUnit{}, lastUnit{};
  std::size_t framesAtFirst = 0, framesAtLast = 0, done = 0;
  bool midShotTaken = false;
  for (bool more = true; more;) {
    // Steps stop where a script looks: the mid-scan screenshot, the count at which it closes.
    std::size_t until = 0;
    if (script.screenshotAt && !midShotTaken) until = script.screenshotAt;
    if (script.closeAfter && (until == 0 || script.closeAfter < until)) until = script.closeAfter;
    more = task.step(std::chrono::milliseconds(8), until < task.total() ? until : 0);
    if (task.done() != done) {
      done = task.done();
      lastUnit = Clock::now();
      framesAtLast = outcome.frames;
      if (firstUnit == Clock::time_point{}) {
        firstUnit = lastUnit;
        framesAtFirst = outcome.frames;
      }
      if (script.screenshotAt && !midShotTaken && done >= script.screenshotAt) {
        midShotTaken = true;
        window.input().screenshot = true;
        lastFrame = start - std::chrono::seconds(1);  // draw (and save) at once
      }
      // The task's grey window, twice a second as the volume fills in, until the user sets one.
      if (!shown.rangeByUser && Clock::now() - lastSuggestion >= std::chrono::milliseconds(500))
        if (const auto range = task.suggestRange()) {
          std::tie(shown.low, shown.high) = *range;
          shown.rangeSet = true;
          lastSuggestion = Clock::now();
        }
    }
    do {
      window.pollEvents();
      if (window.closeRequested() || (script.closeAfter && done >= script.closeAfter)) {
        task.cancel();
        outcome.closed = true;
        outcome.done = done;
        return outcome;
      }
      if (frameDue() || window.input().paused) {
        drawFrame();
        ++outcome.frames;
        lastFrame = Clock::now();
      }
      if (window.input().paused) std::this_thread::sleep_for(std::chrono::milliseconds(16));
    } while (window.input().paused);
  }
  task.finish();
  outcome.done = task.done();
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  outcome.arrivingSeconds = std::chrono::duration<double>(lastUnit - firstUnit).count();
  outcome.arrivingFrames = framesAtLast - framesAtFirst;
  if (!shown.rangeByUser)
    if (const auto range = task.suggestRange()) std::tie(shown.low, shown.high) = *range;
  if (!script.screenshot.empty()) {
    pendingShot = script.screenshot;
    drawFrame();
    return outcome;
  }
  if (window.offscreen()) return outcome;
  // The task is done: keep the window for looking until it is closed; V saves the volume.
  while (!window.closeRequested()) {
    window.waitEvents(0.05);
    if (window.input().saveVolume) {
      window.input().saveVolume = false;
      const std::string path = volumePath.empty() ? "glrecon-view.mha" : volumePath;
      try {
        task.saveVolume(path, overwrite || path == volumePath);
        std::fprintf(stderr, "view: wrote %s\n", path.c_str());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "view: %s\n", e.what());
      }
    }
    drawFrame();
  }
  return outcome;
}

}  // namespace glrecon::viewer
