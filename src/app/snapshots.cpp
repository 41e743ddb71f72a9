// The headless live runs (snapshots.h): FDK streamed with snapshots every N projections, and the iterative methods
// with a snapshot per iteration. The window is the viewer's (src/viewer).
#include "snapshots.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "fdk_report.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/sink.h"
#include "glrecon/validate.h"
#include "options.h"
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

// view --method's snapshot files: DIR/snapshot_itNNNN_{axial,coronal,sagittal}.png, writeOrthogonalSlices's three.
std::string iterationStem(long iteration) {
  char stem[64];
  std::snprintf(stem, sizeof stem, "snapshot_it%04ld_", iteration);
  return stem;
}

// A name among the files a run of `iterations` iterations writes into its snapshot directory.
bool isIterativeOutput(const std::string& name, int iterations) {
  if (name == "residual.csv" || name == "residual.png") return true;
  const std::string prefix = "snapshot_it";
  const std::size_t end = name.find('_', prefix.size());
  if (name.rfind(prefix, 0) != 0 || end == std::string::npos) return false;
  const std::string digits = name.substr(prefix.size(), end - prefix.size());
  if (digits.empty() || digits.size() > 10 || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
    return false;
  const long iteration = std::stol(digits);
  if (iteration < 1 || iteration > iterations || iterationStem(iteration) != name.substr(0, end + 1)) return false;
  const std::string view = name.substr(end + 1);
  return view == "axial.png" || view == "coronal.png" || view == "sagittal.png";
}

// Absolute and lexically normal, without a trailing separator: one directory however it is spelt ("snaps/", "./snaps").
fs::path normalDirectory(const fs::path& directory) {
  fs::path p = fs::absolute(directory).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

// Every step of the reconstruction, a line and (with a directory) the three slices after each iteration.
void iterateWithSnapshots(IterativeReconstructor& reconstructor, const VolumeGrid& grid, const IterativeOptions& options,
                          const IterativeSnapshots& live, double norm, RunOutputs& outputs) {
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
    writeOrthogonalSlices(v, live.snapshots, iterationStem(r.iteration), *range, live.overwrite, {std::nullopt, &outputs, false});
  }
}

// residual.csv and residual.png, staged and published together (both, or neither): a full disk that stops the chart
// leaves no CSV without it.
void writeResiduals(const IterativeSnapshots& live, const IterativeReport& report, const std::string& title, RunOutputs& outputs) {
  const std::string csv = (fs::path(live.snapshots) / "residual.csv").string();
  const std::string png = (fs::path(live.snapshots) / "residual.png").string();
  outputs.track(csv);
  outputs.track(png);
  writeResidualFiles(csv, png, report, title, live.overwrite);
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
    outputs.createDirectories(live.snapshots);
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

void checkIterativeSnapshots(const IterativeSnapshots& live, int iterations) {
  std::error_code error;
  if (!live.output.empty()) {
    const fs::path output(live.output);
    const fs::path parent = output.has_parent_path() ? output.parent_path() : fs::path(".");
    if (!live.snapshots.empty() && !fs::exists(parent, error) && normalDirectory(parent) == normalDirectory(live.snapshots)) {
      // In the snapshot directory this run makes: only the name to check (the directory is, as the snapshots').
      std::string extension = output.extension().string();
      std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
      if (extension != ".mha" && extension != ".mhd")
        throwInputError(live.output, "--output", "a file name ending in .mha or .mhd",
                        extension.empty() ? std::string("no extension") : std::string("'").append(output.extension().string()).append("'"));
    } else {
      checkOutputFile(live.output, {".mha", ".mhd"}, live.overwrite, "--output");
      if (!mhdDataPath(live.output).empty()) refuseToOverwrite(mhdDataPath(live.output), live.overwrite);
    }
  }
  // The volume (.mha, .mhd, .raw) never has a snapshot's name (.png, .csv): only the directory's files to check.
  if (live.snapshots.empty()) return;
  checkOutputDirectory(live.snapshots, "--snapshots");
  if (!fs::is_directory(live.snapshots, error)) return;
  for (const auto& entry : fs::directory_iterator(live.snapshots)) {
    if (!isIterativeOutput(entry.path().filename().string(), iterations)) continue;
    if (entry.is_directory(error))
      throwInputError(entry.path().string(), "--snapshots", "a file name this run writes, not a directory", "an existing directory");
    if (!live.overwrite)
      throwInputError(entry.path().string(), "--snapshots", "a directory without the files this run writes (pass --overwrite to replace them)",
                      "an existing file");
  }
}

void runIterativeSnapshots(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeOptions& options,
                           const IterativeSnapshots& live) {
  const char* method = methodName(options.method);
  auto projector = makeOperator(live.backend, geometry, grid, live.operatorOptions);
  IterativeReport report;
  RunOutputs outputs;  // snapshots, residual files and volume: all or nothing, also on a signal
  if (!live.snapshots.empty()) outputs.createDirectories(live.snapshots);
  IterativeReconstructor reconstructor(*projector, geometry, projections, grid, options);
  const double norm = dataNorm(projections);
  iterateWithSnapshots(reconstructor, grid, options, live, norm, outputs);
  const Image result = reconstructor.finish(&report);
  if (!live.snapshots.empty()) writeResiduals(live, report, std::string(method) + " on " + backendInfo(projector->backend()).name, outputs);
  if (!live.output.empty()) {
    outputs.track(live.output);
    if (!mhdDataPath(live.output).empty()) outputs.track(mhdDataPath(live.output));
    writeMetaImage(live.output, result, live.overwrite);
  }
  outputs.keep();
  if (live.quiet) return;
  if (!live.snapshots.empty()) std::fprintf(stderr, "view: wrote snapshots, residual.csv and residual.png into %s\n", live.snapshots.c_str());
  std::fprintf(stderr, "view: %s: %d iterations in %.2f s, final residual %.6g (%.4g of ||b||)\n", method, options.iterations, report.seconds,
               report.finalResidual, norm > 0 ? report.finalResidual / norm : 0.0);
  if (!live.output.empty()) std::fprintf(stderr, "view: wrote %s\n", live.output.c_str());
}

}  // namespace glrecon::app
