// FDK in the viewer: the task steps the scheduler (FdkReconstructor) on the window's thread; a GL operator draws in the
// window's context, so the slices come straight from its volume texture (no copy to the host while it runs).
#include <cstdio>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "operators/gl/gl_operator.h"
#include "recon/device_session.h"
#include "viewer/fdk_task.h"
#include "viewer/viewer.h"

namespace glrecon::viewer {

void viewFdk(ProjectionSource& source, const Geometry& geometry, const VolumeGrid& grid, FdkOptions options, const std::string& output,
             bool overwrite, const ViewScript& script) {
  if (!output.empty()) refuseToOverwrite(output, overwrite);
  if (options.backend == Backend::Cuda)
    throw UsageError(field("backend") + ": expected graphics, graphics-mp, compute, cpu or auto in a window (the slices are drawn from the "
                     "OpenGL operator's texture; cpu uploads them), found cuda");
  options.autoGlOnly = true;
  const int textLines = 1;
  const int width = 3 * script.cell, height = script.cell + SliceRenderer::kBarHeight + 4 + 18 * textLines;
  ViewWindow window(width, height, "glrecon view", script.screenshot.empty(), script.offscreen, options.gpu);
  SliceRenderer renderer(script.cell, textLines);
  // The operator computes in the window's context; the viewer samples its volume texture.
  auto session = std::make_shared<DeviceSession>();
  session->useContext(options.gpu, window.context());
  const FdkPlan plan = planFdk(geometry, grid, options, source, session);
  FdkViewTask task(plan, window.context(), source);
  const ViewOutcome outcome = runView(window, renderer, task, script, output, overwrite);
  const std::size_t total = geometry.size();
  if (outcome.closed) {
    std::fprintf(stderr, "view: %s closed after %zu of %zu projections: reconstruction cancelled, nothing written\n",
                 script.offscreen ? "offscreen frames" : "window", outcome.done, total);
    return;
  }
  const FdkReport& report = task.report();
  if (!report.autoNote.empty()) std::fprintf(stderr, "%s\n", renderFields(report.autoNote, script.fieldName).c_str());
  std::fprintf(stderr,
               "view: %s: %zu projections in %.2f s (%.1f projections/s), %zu frames while reconstructing (%.1f frames/s; %.1f frames/s "
               "over the %.2f s from the first projection backprojected to the last); volume ready %.3f s after the last projection\n",
               report.backend.c_str(), total, outcome.seconds, static_cast<double>(total) / outcome.seconds, outcome.frames,
               static_cast<double>(outcome.frames) / outcome.seconds,
               outcome.arrivingSeconds > 0 ? static_cast<double>(outcome.arrivingFrames) / outcome.arrivingSeconds : 0.0, outcome.arrivingSeconds,
               report.latencySeconds);
  if (!output.empty()) {
    writeMetaImage(output, task.volume(), overwrite);
    std::fprintf(stderr, "view: wrote %s\n", output.c_str());
  }
}

}  // namespace glrecon::viewer
