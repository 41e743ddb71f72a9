// glrecon demo: a Shepp-Logan scan simulated, written as files, reconstructed from them as a user would with fdk,
// compared with the phantom (RMSE, PNG slices of both); with --view, reconstructed again in the live window.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/command.h"
#include "app/fdk_report.h"
#include "app/live_options.h"
#include "app/scan_options.h"
#include "app/slice_files.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/phantom.h"
#include "viewer/viewer.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

// The root mean square difference of two volumes on one grid.
double rmse(const Image& volume, const Image& truth) {
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < volume.data.size(); ++i) {
    const double d = volume.data[i] - truth.data[i];
    sum += d * d;
    ++n;
  }
  return std::sqrt(sum / n);
}

// The demo's scan reconstructed again in the live window (nothing when there is no display).
void viewFiles(const std::string& geometryPath, const std::string& projectionsPath, int size, double spacing) {
  if (!hasDisplay()) {
    std::fprintf(stderr, "demo --view: no display: showing nothing (the volume and slices are written as usual)\n");
    return;
  }
  FileScan scan = openFileScan(geometryPath, listProjectionFiles(projectionsPath));
  LiveOptions live("demo");
  live.volume.size = std::to_string(size);
  live.volume.spacing = std::to_string(spacing);
  viewer::ViewScript script;
  script.range = std::make_pair(0.95, 1.1);  // the phantom's soft tissue
  script.fieldName = optionName;
  viewer::viewFdk(*scan.source, scan.geometry, live.volume.grid(), live.streamOptions(), "", false, script);
}

class DemoCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("demo", "Simulate a Shepp-Logan scan, reconstruct it, and write the volume and PNG slices");
    c->add_option("--output,-o", output, "Output directory (re-running the demo replaces its own earlier output)")
        ->capture_default_str();
    scan.add(c);
    c->add_option("--threads", threads, "CPU threads (0: all)")->capture_default_str();
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->add_flag("--view", view, "Afterwards, reconstruct the scan again live in a window (glrecon view)");
    c->callback([this] { run(); });
  }

 private:
  static constexpr const char* kMarker = ".glrecon-demo";
  std::string output = "glrecon-demo";
  SampleScanOptions scan = SampleScanOptions::withVolume(128, 360, 256, 8);
  int threads = 0;
  bool quiet = false, view = false;

  std::string geometryPath() const { return (fs::path(output) / "scan" / "geometry.xml").string(); }
  std::string projectionsPath() const { return (fs::path(output) / "scan" / "projections.mha").string(); }

  void run() const {
    scan.check();
    // Projections (simulated and read back) and four volumes (reconstruction, its copies, the phantom).
    checkHostMemory("demo", "--size " + std::to_string(scan.size) + ", --detector " + std::to_string(scan.detector),
                    std::uint64_t{8} * scan.detector * scan.detector * scan.projections +
                        std::uint64_t{16} * scan.size * scan.size * scan.size);
    const fs::path dir(output);
    // The demo may replace what an earlier demo wrote (marked), never anything else.
    const bool ours = fs::exists(dir / kMarker);
    if (fs::exists(dir) && !ours && !fs::is_empty(dir))
      throwInputError(output, "demo output directory", "a new or empty directory (or one an earlier demo wrote)",
                      "a directory with other files");
    fs::create_directories(dir / "scan");
    std::ofstream(dir / kMarker) << "written by glrecon demo\n";

    const Phantom phantom = Phantom::sheppLogan();
    const Geometry geometry = simulate(phantom);
    FdkReport report;
    const Image volume = reconstruct(report);
    if (!quiet) std::cerr << "3/3 comparing with the phantom\n";
    const Image truth = voxelizePhantom(phantom, scan.grid(), 2, threads);
    writeMetaImage((dir / "phantom.mha").string(), truth, true);
    // The soft-tissue window shows the low-contrast ellipsoids (densities 1.00 to 1.06 inside the skull).
    // Slices through y = -32 mm, the plane of most of the phantom's small ellipsoids.
    const SliceWriting features{glm::dvec3(0.0, -0.25 * 128.0, 0.0), nullptr, !quiet};
    writeOrthogonalSlices(volume, dir, "volume_", {0.95, 1.10}, true, features);
    writeOrthogonalSlices(truth, dir, "phantom_", {0.95, 1.10}, true, features);
    printReport(report, geometry.size());
    std::printf("demo: reconstructed %d^3 voxels from %d projections; RMSE against the voxelized phantom %.4f "
                "(densities 0 to 2); output in %s/\n",
                scan.size, scan.projections, rmse(volume, truth), output.c_str());
    if (view) viewFiles(geometryPath(), projectionsPath(), scan.size, 256.0 / scan.size);
  }

  // A C-arm-like scan (1000 mm to the isocentre, 1536 mm to a 512 mm flat panel) of the phantom, written as files.
  Geometry simulate(const Phantom& phantom) const {
    const Geometry geometry = scan.geometry();
    ProjectionOptions popt;
    popt.threads = threads;
    if (!quiet) std::cerr << "1/3 simulating " << scan.projections << " projections of the Shepp-Logan phantom\n";
    const Image simulated = projectPhantom(phantom, geometry, popt);
    writeRtkGeometry(geometryPath(), geometry.circular, true);
    writeMetaImage(projectionsPath(), simulated, true);
    return geometry;
  }

  // Reconstructs from the files, as a user would with `glrecon fdk`, and writes volume.mha.
  Image reconstruct(FdkReport& report) const {
    if (!quiet) std::cerr << "2/3 reconstructing " << scan.size << "^3 voxels\n";
    const Image projectionsRead = readProjectionStack(projectionsPath());
    const Geometry geometryRead = Geometry::fromCircular(readRtkGeometry(geometryPath()), detectorLayoutOf(projectionsRead));
    FdkOptions options;
    options.threads = threads;
    options.progress = !quiet;
    Image volume = reconstructFdk(geometryRead, projectionsRead, scan.grid(), options, &report);
    writeMetaImage((fs::path(output) / "volume.mha").string(), volume, true);
    return volume;
  }
};

}  // namespace

std::unique_ptr<Command> makeDemoCommand() { return std::make_unique<DemoCommand>(); }

}  // namespace glrecon::app
