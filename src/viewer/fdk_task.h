#pragma once
// FDK as the viewer's loop steps it (view_loop.h's ViewTask): `glrecon view` and the app both run it.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/io.h"
#include "operators/gl/gl_operator.h"
#include "recon/device_session.h"
#include "viewer/view_loop.h"
#include "viewer/volume_histogram.h"

namespace glrecon::viewer {

/// FDK stepped by the viewer's loop (the view and the app): the scheduler on the window's thread; the volume to draw is
/// the GL operator's texture (the cpu backend's is uploaded from a host copy at most once a frame).
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

  /// What multiplies the texture's voxels: the projections in the scan over those so far (0 before the first).
  float scale() const override {
    const std::size_t n = done();
    return n ? static_cast<float>(static_cast<double>(total_) / static_cast<double>(n)) : 0.0f;
  }
  /// The volume as a texture: the operator's, or the host copy uploaded through `renderer` (the cpu backend).
  GLuint texture(SliceRenderer& renderer) override {
    if (liveTexture_) return liveTexture_;
    if (!finished_) {
      hostCopy_.resize(grid_.voxelCount());
      reconstructor_.firstOperator().readVolume(hostCopy_.data());
    }
    return renderer.upload(finished_ ? volume_.data.data() : hostCopy_.data(), grid_.size);
  }
  const VolumeGrid& grid() const { return grid_; }
  bool finished() const { return finished_; }
  /// Projections per second since the task was made.
  double rate() const {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
    return elapsed > 0 ? static_cast<double>(done()) / elapsed : 0.0;
  }

  void frame(FrameContent& content, SliceRenderer& renderer) override {
    content.size = grid_.size;
    const std::size_t n = done();
    content.scale = scale();
    content.volume = texture(renderer);
    const double rate = this->rate();
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

  /// The object's window (volume_histogram.h) once a fiftieth of the scan is in: from a histogram computed on the GPU
  /// where the volume is the operator's texture (a few KB read back), else from the host copy.
  std::optional<std::pair<double, double>> suggestRange() override {
    const std::size_t n = done();
    if (!finished_ && n < std::max<std::size_t>(1, total_ / 50)) return std::nullopt;
    if (liveTexture_) {
      if (!histogram_) histogram_ = std::make_unique<VolumeHistogram>();
      return objectWindow(histogram_->compute(liveTexture_, grid_.size, scale()));
    }
    if (!finished_) {
      hostCopy_.resize(grid_.voxelCount());
      reconstructor_.firstOperator().readVolume(hostCopy_.data());
    }
    return objectWindow(histogramOnHost(finished_ ? volume_.data.data() : hostCopy_.data(), grid_.size, scale()));
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
  std::unique_ptr<VolumeHistogram> histogram_;
  std::vector<float> hostCopy_;
  FdkReport report_;
  Image volume_;
  const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
};

}  // namespace glrecon::viewer
