// An iterative method in the viewer: the task steps IterativeReconstructor a subset at a time on the window's thread.
// A GL operator computes in the window's context, so where the iterate lives in its volume (the subset methods) the
// slices come from that texture; otherwise (cpu, cuda, CGLS) from the iterate on the host, uploaded once a frame.
#include <cmath>
#include <cstdio>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "operators/gl/gl_operator.h"
#include "viewer/viewer.h"
#include "viewer/volume_histogram.h"

namespace glrecon::viewer {
namespace {

class IterativeViewTask final : public ViewTask {
 public:
  IterativeViewTask(ConeBeamOperator& op, const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeView& view)
      : view_(view), grid_(grid), reconstructor_(op, geometry, projections, grid, view.options) {
    auto* gl = dynamic_cast<GlOperator*>(&op);
    operatorTexture_ = gl ? gl->volumeTexture() : 0;
    double squares = 0;
    for (float b : projections.data) squares += static_cast<double>(b) * b;
    dataNorm_ = std::sqrt(squares);
  }

  bool step(std::chrono::milliseconds, std::size_t until) override {
    if (until && done_ >= until) return true;
    const bool more = reconstructor_.step();
    ++done_;
    const IterationRecord& r = reconstructor_.last();
    if (r.subset == r.subsets) {
      curve_.push_back(r.residual);
      if (!view_.quiet)
        std::fprintf(stderr, "view: %s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", methodName(view_.options.method), r.iteration,
                     view_.options.iterations, r.residual, relative(r.residual), r.seconds);
    }
    return more;
  }
  std::size_t done() const override { return done_; }
  std::size_t total() const override { return static_cast<std::size_t>(view_.options.iterations) * reconstructor_.subsets(); }

  void frame(FrameContent& content, SliceRenderer& renderer) override {
    content.size = grid_.size;
    content.scale = 1.0f;
    if (finished_) {
      content.volume = renderer.upload(result_.data.data(), grid_.size);
    } else if (operatorTexture_ && reconstructor_.iterateOnOperator()) {
      content.volume = operatorTexture_;
    } else {
      content.volume = renderer.upload(reconstructor_.volume().data(), grid_.size);
    }
    const IterationRecord& r = reconstructor_.last();
    char line[256];
    if (finished_)
      std::snprintf(line, sizeof line, "%s: done, final residual %.6g (%.3g of ||b||)", methodName(view_.options.method), report_.finalResidual,
                    relative(report_.finalResidual));
    else
      std::snprintf(line, sizeof line, "%s on %s: iteration %d/%d, subset %d/%d, residual %.4g (%.3g of ||b||)", methodName(view_.options.method),
                    backendInfo(view_.backend).name, r.iteration, view_.options.iterations, r.subset, r.subsets, r.residual, relative(r.residual));
    content.lines = {line, "arrows: slice  tab: panel  drag: window/level  C: colours  space: pause  S: screenshot  esc: stop (nothing written)"};
    content.curve = curve_;
  }

  std::optional<std::pair<double, double>> suggestRange() override {
    // From the first whole iteration on: the earlier subsets' volumes are far from the result's range.
    if (!finished_ && curve_.empty()) return std::nullopt;
    return objectWindow(histogramOnHost(finished_ ? result_.data.data() : reconstructor_.volume().data(), grid_.size, 1.0f));
  }

  void finish() override {
    result_ = reconstructor_.finish(&report_);
    finished_ = true;
  }
  void cancel() override {}
  void saveVolume(const std::string& path, bool overwrite) override { writeMetaImage(path, result_, overwrite); }

  const IterativeReport& report() const { return report_; }
  const Image& result() const { return result_; }
  double relative(double residual) const { return dataNorm_ > 0 ? residual / dataNorm_ : 0.0; }

 private:
  const IterativeView& view_;
  VolumeGrid grid_;
  IterativeReconstructor reconstructor_;
  unsigned operatorTexture_ = 0;
  std::size_t done_ = 0;
  std::vector<double> curve_;
  double dataNorm_ = 0;
  bool finished_ = false;
  IterativeReport report_;
  Image result_;
};

}  // namespace

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
  IterativeViewTask task(*op, geometry, projections, grid, view);
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
