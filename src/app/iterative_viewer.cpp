// `glrecon view --method sart|sirt|cgls|osem` without a window: a line per iteration, and PNG slices of the volume
// after every iteration when a snapshot directory is given (with the residual curve as CSV and PNG at the end). The
// window is the viewer's (src/viewer).
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "iterative.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

void writeSlices(const Image& volume, const std::string& directory, const std::string& stem, std::pair<double, double> range) {
  const struct {
    const char* name;
    SliceAxis axis;
    int a;
  } views[] = {{"axial", SliceAxis::Y, 1}, {"coronal", SliceAxis::Z, 2}, {"sagittal", SliceAxis::X, 0}};
  for (const auto& v : views)
    writeSlicePng((fs::path(directory) / (stem + v.name + ".png")).string(), volume, v.axis, volume.size[v.a] / 2, range.first, range.second,
                  true);
}

}  // namespace

void runIterativeSnapshots(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeOptions& options,
                           const IterativeSnapshots& live) {
  if (!live.output.empty()) refuseToOverwrite(live.output, live.overwrite);
  const char* method = methodName(options.method);
  auto projector = makeOperator(live.backend, geometry, grid, live.operatorOptions);
  IterativeReport report;
  std::optional<std::pair<double, double>> range = live.range;
  if (!live.snapshots.empty()) fs::create_directories(live.snapshots);
  IterativeReconstructor reconstructor(*projector, geometry, projections, grid, options);
  double dataNorm = 0;
  for (float b : projections.data) dataNorm += static_cast<double>(b) * b;
  dataNorm = std::sqrt(dataNorm);
  for (bool more = true; more;) {
    more = reconstructor.step();
    const IterationRecord& r = reconstructor.last();
    if (r.subset != r.subsets) continue;
    if (!live.quiet)
      std::fprintf(stderr, "view: %s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", method, r.iteration, options.iterations, r.residual,
                   dataNorm > 0 ? r.residual / dataNorm : 0.0, r.seconds);
    if (live.snapshots.empty()) continue;
    Image v(grid);
    v.data = reconstructor.volume();
    if (!range) range = percentileRange(v, 0.5, 99.5);
    char stem[64];
    std::snprintf(stem, sizeof stem, "snapshot_it%04d_", r.iteration);
    writeSlices(v, live.snapshots, stem, *range);
  }
  const Image result = reconstructor.finish(&report);
  if (!live.snapshots.empty()) {
    writeResidualCsv((fs::path(live.snapshots) / "residual.csv").string(), report, true);
    writeResidualPng((fs::path(live.snapshots) / "residual.png").string(), report, std::string(method) + " on " + backendInfo(projector->backend()).name,
                     true);
    if (!live.quiet) std::fprintf(stderr, "view: wrote snapshots, residual.csv and residual.png into %s\n", live.snapshots.c_str());
  }
  if (!live.quiet)
    std::fprintf(stderr, "view: %s: %d iterations in %.2f s, final residual %.6g (%.4g of ||b||)\n", method, options.iterations, report.seconds,
                 report.finalResidual, dataNorm > 0 ? report.finalResidual / dataNorm : 0.0);
  if (!live.output.empty()) {
    writeMetaImage(live.output, result, live.overwrite);
    if (!live.quiet) std::fprintf(stderr, "view: wrote %s\n", live.output.c_str());
  }
}

}  // namespace glrecon::app
