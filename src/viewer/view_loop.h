#pragma once
// The viewer's loop: it owns the window and steps a reconstruction task (FDK as projections arrive, an iterative
// method subset by subset), drawing a frame at most every 16 ms between steps, so the window stays responsive and the
// task runs on the window's thread (a GL operator draws in the window's context). Nothing calls back into it.
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "viewer/slice_renderer.h"
#include "viewer/window.h"

namespace glrecon::viewer {

/// What a script (or a test) asks of a view, beyond a user's hands.
struct ViewScript {
  std::string screenshot;        ///< save a screenshot here once the task ends, then close
  std::size_t closeAfter = 0;    ///< close after this many steps' units (projections, subsets) are done, as a user would
  std::size_t screenshotAt = 0;  ///< also save a screenshot (glrecon-view-N.png) once this many are done
  std::optional<std::pair<double, double>> range;  ///< the grey range (default: the task suggests one)
  int cell = 360;                ///< panel size in pixels
  bool offscreen = false;        ///< frames into an offscreen framebuffer on a headless context
  /// How the front end names the library's fields in notes (glrecon/errors.h): the command line's --options.
  std::function<std::string(const std::string&)> fieldName = [](const std::string& name) { return name; };
};

/// A reconstruction the loop steps.
class ViewTask {
 public:
  virtual ~ViewTask() = default;
  /// Works for about `budget`, stopping at `until` units done at the latest (0: no bound). False once all is done.
  virtual bool step(std::chrono::milliseconds budget, std::size_t until) = 0;
  virtual std::size_t done() const = 0;
  virtual std::size_t total() const = 0;
  /// The volume to draw (the operator's texture where it has one, else a host copy the renderer uploads), its scale,
  /// the text lines and curve; called when a frame is due.
  virtual void frame(FrameContent& content, SliceRenderer& renderer) = 0;
  /// The volume so far as a texture (the operator's where it is drawable, else the host's uploaded through `renderer`),
  /// and what multiplies its voxels (FDK: the projections in the scan over those so far; 1 for the iterative methods).
  virtual GLuint texture(SliceRenderer& renderer) = 0;
  virtual float scale() const { return 1.0f; }
  /// A grey range once enough is in to choose one (the object's window of the volume so far, volume_histogram.h);
  /// nothing before. Asked again twice a second until the user sets one.
  virtual std::optional<std::pair<double, double>> suggestRange() = 0;
  /// After step() returned false: the result made final (written where asked).
  virtual void finish() = 0;
  /// The window closed early: stop, write nothing.
  virtual void cancel() = 0;
  /// V in the window once done: the volume to `path`.
  virtual void saveVolume(const std::string& path, bool overwrite) = 0;
};

struct ViewOutcome {
  bool closed = false;         ///< closed before the task was done (cancelled)
  std::size_t done = 0;        ///< units done when it ended
  std::size_t frames = 0;      ///< frames drawn while the task ran
  double seconds = 0.0;        ///< from the first step to the task's end
  double arrivingSeconds = 0;  ///< from the first unit done to the last
  std::size_t arrivingFrames = 0;
};

/// Steps `task` to its end in `window`, drawn by `renderer`, then (with a window, no screenshot asked) keeps showing it
/// until closed; V saves the volume (to `volumePath`, or glrecon-view.mha). Screenshots replace files only with
/// `overwrite`.
ViewOutcome runView(ViewWindow& window, SliceRenderer& renderer, ViewTask& task, const ViewScript& script, const std::string& volumePath,
                    bool overwrite);

}  // namespace glrecon::viewer
