// The headless live runs (snapshots.h): FDK streamed with snapshots every N projections, and the iterative methods
// with a snapshot per iteration. The window is the viewer's (src/viewer).
#include "snapshots.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "fdk_report.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/sink.h"
#include "glrecon/validate.h"
#include "residual_plot.h"
#include "slice_files.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

struct StreamSnapshots {
  std::string directory;
  std::size_t every = 0;
  std::optional<std::pair<double, double>> range;
  bool overwrite = false;
  RunOutputs* outputs = nullptr;  // this run's snapshots: removed if the run fails or is interrupted

  void write(Image volume, std::size_t done, std::size_t total) {
    // Normalised to the whole scan: a voxel `done` of `total` projections in holds about done/total of its value.
    const float scale = static_cast<float>(static_cast<double>(total) / done);
    for (float& v : volume.data) v *= scale;
    if (!range) range = percentileRange(volume, 0.5, 99.5);  // fixed from the first snapshot on
    char stem[64];
    std::snprintf(stem, sizeof stem, "snapshot_%05zu_", done);
    writeOrthogonalSlices(volume, directory, stem, *range, overwrite, {std::nullopt, outputs, false});
  }
};

// Steps that stop at every multiple of `every`, where a snapshot is taken of the volume so far.
void stepWithSnapshots(FdkReconstructor& reconstructor, StreamSnapshots& shots, const VolumeGrid& grid, std::size_t total) {
  const bool snapshots = !shots.directory.empty();
  std::size_t next = snapshots ? shots.every : 0;
  while (reconstructor.step(std::chrono::milliseconds(1000), next < total ? next : 0)) {
    if (!snapshots || reconstructor.done() < next || next >= total) continue;
    Image soFar(grid);
    reconstructor.firstOperator().readVolume(soFar.data.data());
    shots.write(std::move(soFar), reconstructor.done(), total);
    next = (reconstructor.done() / shots.every + 1) * shots.every;
  }
}

void printIteration(const char* method, const IterationRecord& r, int iterations, double norm) {
  std::fprintf(stderr, "view: %s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", method, r.iteration, iterations, r.residual,
               norm > 0 ? r.residual / norm : 0.0, r.seconds);
}

// Every step of the reconstruction, a line and (with a directory) the three slices after each iteration.
void iterateWithSnapshots(IterativeReconstructor& reconstructor, const VolumeGrid& grid, const IterativeOptions& options,
                          const IterativeSnapshots& live, double norm) {
  std::optional<std::pair<double, double>> range = live.range;
  for (bool more = true; more;) {
    more = reconstructor.step();
    const IterationRecord& r = reconstructor.last();
    if (r.subset != r.subsets) continue;
    if (!live.quiet) printIteration(methodName(options.method), r, options.iterations, norm);
    if (live.snapshots.empty()) continue;
    Image v(grid);
    v.data = reconstructor.volume();
    if (!range) range = percentileRange(v, 0.5, 99.5);
    char stem[64];
    std::snprintf(stem, sizeof stem, "snapshot_it%04d_", r.iteration);
    writeOrthogonalSlices(v, live.snapshots, stem, *range, true);
  }
}

}  // namespace

void runStreamHeadless(const LiveOptions& live, ProjectionSource& source, const Geometry& geometry) {
  const VolumeGrid grid = live.volume.grid();
  live.checkOutputs();
  checkVolumeInBeam(geometry, grid, live.command);
  const FdkOptions o = live.streamOptions();
  RunOutputs outputs;
  StreamSnapshots shots{live.snapshots, live.every, live.range.range(), live.overwrite, &outputs};
  if (!live.snapshots.empty()) {
    if (live.every == 0) throw UsageError("--every: expected a positive number of projections");
    if (!fs::exists(live.snapshots)) outputs.track(live.snapshots);
    fs::create_directories(live.snapshots);
  }
  const FdkPlan plan = planFdk(geometry, grid, o, source);
  ImageSink sink(grid, live.threads);
  FdkReconstructor reconstructor(plan);
  reconstructor.start(source, sink);
  stepWithSnapshots(reconstructor, shots, grid, geometry.size());
  const FdkReport report = reconstructor.finish();
  const Image volume = sink.take();
  if (!live.snapshots.empty()) shots.write(volume, geometry.size(), geometry.size());
  if (!live.output.empty()) {
    outputs.track(live.output);
    writeMetaImage(live.output, volume, live.overwrite);
  }
  outputs.keep();
  if (!live.quiet) {
    printStreamReport(report, geometry.size());
    if (!live.snapshots.empty()) std::fprintf(stderr, "wrote snapshots into %s\n", live.snapshots.c_str());
    if (!live.output.empty()) std::fprintf(stderr, "wrote %s\n", live.output.c_str());
  }
}

void runIterativeSnapshots(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeOptions& options,
                           const IterativeSnapshots& live) {
  if (!live.output.empty()) refuseToOverwrite(live.output, live.overwrite);
  const char* method = methodName(options.method);
  auto projector = makeOperator(live.backend, geometry, grid, live.operatorOptions);
  IterativeReport report;
  if (!live.snapshots.empty()) fs::create_directories(live.snapshots);
  IterativeReconstructor reconstructor(*projector, geometry, projections, grid, options);
  const double norm = dataNorm(projections);
  iterateWithSnapshots(reconstructor, grid, options, live, norm);
  const Image result = reconstructor.finish(&report);
  if (!live.snapshots.empty()) {
    writeResidualCsv((fs::path(live.snapshots) / "residual.csv").string(), report, true);
    writeResidualPng((fs::path(live.snapshots) / "residual.png").string(), report,
                     std::string(method) + " on " + backendInfo(projector->backend()).name, true);
    if (!live.quiet) std::fprintf(stderr, "view: wrote snapshots, residual.csv and residual.png into %s\n", live.snapshots.c_str());
  }
  if (!live.quiet)
    std::fprintf(stderr, "view: %s: %d iterations in %.2f s, final residual %.6g (%.4g of ||b||)\n", method, options.iterations, report.seconds,
                 report.finalResidual, norm > 0 ? report.finalResidual / norm : 0.0);
  if (!live.output.empty()) {
    writeMetaImage(live.output, result, live.overwrite);
    if (!live.quiet) std::fprintf(stderr, "view: wrote %s\n", live.output.c_str());
  }
}

}  // namespace glrecon::app
