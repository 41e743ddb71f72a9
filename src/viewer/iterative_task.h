#pragma once
// An iterative method as the viewer's loop steps it (view_loop.h's ViewTask): `glrecon view --method` and the app both
// run it. IterativeReconstructor is stepped a subset at a time on the window's thread; a GL operator computes in the
// window's context, so where the iterate lives in its volume (the subset methods) the slices come from that texture;
// otherwise (cpu, CGLS, PDHG-TV) from the iterate on the host, uploaded once a frame.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "glrecon/io.h"
#include "glrecon/iterative.h"
#include "operators/gl/gl_operator.h"
#include "viewer/view_loop.h"
#include "viewer/volume_histogram.h"

namespace glrecon::viewer {

class IterativeViewTask final : public ViewTask {
 public:
  /// `op`, `geometry` and `projections` outlive the task. `who` starts the line printed after each iteration ("view",
  /// "app"); none with `quiet`.
  IterativeViewTask(ConeBeamOperator& op, const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeOptions& options,
                    std::string who, bool quiet)
      : options_(options), who_(std::move(who)), quiet_(quiet), backend_(op.backend()), grid_(grid),
        reconstructor_(op, geometry, projections, grid, options) {
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
      if (!quiet_)
        std::fprintf(stderr, "%s: %s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", who_.c_str(), methodName(options_.method), r.iteration,
                     options_.iterations, r.residual, relative(r.residual), r.seconds);
    }
    return more;
  }
  std::size_t done() const override { return done_; }
  std::size_t total() const override { return static_cast<std::size_t>(options_.iterations) * reconstructor_.subsets(); }

  /// The iterate as a texture: the operator's where it lives there (drawn as it is), else the host's uploaded.
  GLuint texture(SliceRenderer& renderer) override {
    if (finished_) return renderer.upload(result_.data.data(), grid_.size);
    if (operatorTexture_ && reconstructor_.iterateOnOperator()) return operatorTexture_;
    return renderer.upload(reconstructor_.volume().data(), grid_.size);
  }
  /// Whether texture() is the operator's own volume (else an upload of the iterate on the host, once a frame).
  bool drawsOperatorTexture() const { return !finished_ && operatorTexture_ && reconstructor_.iterateOnOperator(); }

  void frame(FrameContent& content, SliceRenderer& renderer) override {
    content.size = grid_.size;
    content.scale = 1.0f;
    content.volume = texture(renderer);
    const IterationRecord& r = reconstructor_.last();
    char line[256];
    if (finished_)
      std::snprintf(line, sizeof line, "%s: done, final residual %.6g (%.3g of ||b||)", methodName(options_.method), report_.finalResidual,
                    relative(report_.finalResidual));
    else
      std::snprintf(line, sizeof line, "%s on %s: iteration %d/%d, subset %d/%d, residual %.4g (%.3g of ||b||)", methodName(options_.method),
                    backendInfo(backend_).name, r.iteration, options_.iterations, r.subset, r.subsets, r.residual, relative(r.residual));
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

  const IterativeOptions& options() const { return options_; }
  Backend backend() const { return backend_; }
  bool finished() const { return finished_; }
  /// The last step's record (iteration, subsets done of how many, the residual so far).
  const IterationRecord& last() const { return reconstructor_.last(); }
  /// The residual after each whole iteration so far.
  const std::vector<double>& curve() const { return curve_; }
  const IterativeReport& report() const { return report_; }
  const Image& result() const { return result_; }
  double relative(double residual) const { return dataNorm_ > 0 ? residual / dataNorm_ : 0.0; }

 private:
  IterativeOptions options_;
  std::string who_;
  bool quiet_;
  Backend backend_;
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

}  // namespace glrecon::viewer
