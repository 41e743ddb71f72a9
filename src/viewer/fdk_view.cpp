// FDK in the viewer: the task steps the scheduler (FdkReconstructor) on the window's thread; a GL operator draws in the
// window's context, so the slices come straight from its volume texture (no copy to the host while it runs).
#include <cstdio>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "operators/gl/gl_operator.h"
#include "recon/device_session.h"
#include "viewer/viewer.h"

namespace glrecon::viewer {
namespace {

class FdkViewTask final : public ViewTask {
 public:
  FdkViewTask(const FdkPlan& plan, gl::Context& context, ProjectionSource& source)
      : source_(source), grid_(plan.grid), total_(plan.projections), reconstructor_(plan, &context), sink_(plan.grid, plan.options.threads) {
    auto* gl = dynamic_cast<GlOperator*>(&reconstructor_.firstOperator());
    liveTexture_ = gl ? gl->volumeTexture() : 0;  // 0: the cpu backend, drawn from a host copy
  }

  bool step(std::chrono::milliseconds budget, std::size_t until) override {
    if (!started_) {
      reconstructor_.start(source_, sink_);
      started_ = true;
    }
    return reconstructor_.step(budget, until);
  }
  std::size_t done() const override { return finished_ ? total_ : reconstructor_.done(); }
  std::size_t total() const override { return total_; }

  void frame(FrameContent& content, SliceRenderer& renderer) override {
    content.size = grid_.size;
    const std::size_t n = done();
    content.scale = n ? static_cast<float>(static_cast<double>(total_) / static_cast<double>(n)) : 0.0f;
    if (liveTexture_) {
      content.volume = liveTexture_;
    } else {
      if (!finished_) {
        hostCopy_.resize(grid_.voxelCount());
        reconstructor_.firstOperator().readVolume(hostCopy_.data());
      }
      content.volume = renderer.upload(finished_ ? volume_.data.data() : hostCopy_.data(), grid_.size);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
    const double rate = n ? static_cast<double>(n) / elapsed : 0.0;
    char line[320];
    std::snprintf(line, sizeof line,
                  "%zu/%zu projections  %.1f/s  %s  grey %.3g to %.3g  |  wheel/arrows: slice  drag: window/level  C: colours  space: pause  "
                  "S: screenshot  V: save volume",
                  n, total_, rate,
                  n < total_ ? (rate > 0 ? (std::to_string(static_cast<int>(static_cast<double>(total_ - n) / rate + 0.5)) + " s left").c_str() : "starting")
                             : "done",
                  content.low, content.high);
    content.lines = {line};
  }

  std::optional<std::pair<double, double>> suggestRange() override {
    if (finished_) return percentileRange(volume_, 0.5, 99.5);
    const std::size_t n = done();
    if (n < std::max<std::size_t>(1, total_ / 10)) return std::nullopt;  // a tenth of the scan in: a stable choice
    Image soFar(grid_);
    reconstructor_.firstOperator().readVolume(soFar.data.data());
    const float scale = static_cast<float>(static_cast<double>(total_) / static_cast<double>(n));
    for (float& v : soFar.data) v *= scale;
    return percentileRange(soFar, 0.5, 99.5);
  }

  void finish() override {
    report_ = reconstructor_.finish();
    volume_ = sink_.take();
    finished_ = true;
  }
  void cancel() override { reconstructor_.cancel(); }
  void saveVolume(const std::string& path, bool overwrite) override { writeMetaImage(path, volume_, overwrite); }

  const FdkReport& report() const { return report_; }
  const Image& volume() const { return volume_; }

 private:
  ProjectionSource& source_;
  VolumeGrid grid_;
  std::size_t total_;
  FdkReconstructor reconstructor_;
  ImageSink sink_;
  unsigned liveTexture_ = 0;
  bool started_ = false, finished_ = false;
  std::vector<float> hostCopy_;
  FdkReport report_;
  Image volume_;
  const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
};

}  // namespace

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
