// An iterative method in the viewer: the task (iterative_task.h, which the app steps too) runs IterativeReconstructor a
// subset at a time on the window's thread; a GL operator computes in the window's context, so the slices come from its
// volume texture where the iterate lives there.
#include <cstdio>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "viewer/iterative_task.h"
#include "viewer/viewer.h"

namespace glrecon::viewer {

void viewIterative(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeView& view, const ViewScript& script) {
  if (!view.output.empty()) refuseToOverwrite(view.output, view.overwrite);
  const char* method = methodName(view.options.method);
  const int textLines = 2;
  ViewWindow window(3 * script.cell, script.cell + SliceRenderer::kBarHeight + 4 + 18 * textLines, std::string("glrecon view: ") + method,
                    script.screenshot.empty(), script.offscreen, view.operatorOptions.device);
  SliceRenderer renderer(script.cell, textLines);
  // GL operators compute in the window's context: one context current on this thread.
  OperatorOptions po = view.operatorOptions;
  po.context = &window.context();
  auto op = makeOperator(view.backend, geometry, grid, po);
  IterativeViewTask task(*op, geometry, projections, grid, view.options, "view", view.quiet);
  const ViewOutcome outcome = runView(window, renderer, task, script, view.output, view.overwrite);
  if (outcome.closed) {
    std::fprintf(stderr, "view: window closed: %s cancelled, nothing written\n", method);
    return;
  }
  const IterativeReport& report = task.report();
  if (!view.quiet)
    std::fprintf(stderr, "view: %s: %d iterations in %.2f s, final residual %.6g (%.4g of ||b||)\n", method, view.options.iterations, report.seconds,
                 report.finalResidual, task.relative(report.finalResidual));
  if (!view.output.empty()) {
    writeMetaImage(view.output, task.result(), view.overwrite);
    if (!view.quiet) std::fprintf(stderr, "view: wrote %s\n", view.output.c_str());
  }
}

}  // namespace glrecon::viewer
