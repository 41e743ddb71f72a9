// glrecon phantom: a cone-beam (or parallel-beam) scan of the 3D Shepp-Logan phantom, simulated ray by ray, with its
// RTK geometry.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <iostream>

#include "app/command.h"
#include "app/options.h"
#include "app/scan_options.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/phantom.h"
#include "glrecon/validate.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

struct PhantomOptions {
  std::string phantom = "shepp-logan";
  double scale = 128.0, densityScale = 1.0, noiseI0 = 0.0;
  int supersample = 1;
  std::uint64_t seed = 1;
  void add(CLI::App* app) {
    app->add_option("--phantom", phantom, "shepp-logan (RTK's 3D table) or modified (high contrast)")->capture_default_str();
    app->add_option("--phantom-scale", scale, "Phantom scale in mm (RTK's default 128)")->capture_default_str();
    app->add_option("--density-scale", densityScale, "Multiply every density (e.g. 0.01 for realistic attenuation with noise)")
        ->capture_default_str();
    app->add_option("--supersample", supersample, "Rays per detector pixel along each axis")->capture_default_str();
    app->add_option("--noise-i0", noiseI0, "Add Poisson noise for this unattenuated photon count (0: none)")->capture_default_str();
    app->add_option("--seed", seed, "Random seed for the noise")->capture_default_str();
  }
  Phantom make() const {
    if (!(scale > 0)) throw UsageError("--phantom-scale: expected a positive size in mm");
    Phantom p = Phantom::sheppLogan(parseSheppLoganVariant(phantom), scale);
    p.scaleDensities(densityScale);
    return p;
  }
};

class PhantomCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("phantom", "Simulate a cone-beam (or --parallel) scan of the 3D Shepp-Logan phantom");
    c->add_option("--output,-o", output, "Output directory: geometry.xml and projections.mha go there")->required();
    scan.add(c);
    phantom.add(c);
    c->add_flag("--ground-truth", groundTruth, "Also write the voxelized phantom (phantom.mha) on the --size/--spacing grid");
    volume.add(c);
    c->add_option("--threads", threads, "CPU threads (0: all)")->capture_default_str();
    c->add_flag("--overwrite", overwrite, "Replace existing output files");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->callback([this] { run(); });
  }

 private:
  std::string output;
  CircularScanOptions scan;
  PhantomOptions phantom;
  VolumeGridOptions volume;
  bool groundTruth = false, overwrite = false, quiet = false;
  int threads = 0;

  fs::path geometryPath() const { return fs::path(output) / "geometry.xml"; }
  fs::path projectionsPath() const { return fs::path(output) / "projections.mha"; }
  fs::path truthPath() const { return fs::path(output) / "phantom.mha"; }

  void run() const {
    const Geometry geometry = scan.geometry();
    // A detector in front of the isocentre cuts every ray before the phantom: all-zero projections. (Parallel beam
    // has no source-to-detector distance: its rays are whole lines.)
    if (!scan.parallel && !(scan.sdd > scan.sid))
      throw UsageError("--sdd: expected more than --sid (the detector behind the object), found --sdd " +
                       std::to_string(scan.sdd) + " with --sid " + std::to_string(scan.sid));
    checkScanBounds(geometry, "phantom");
    const Phantom p = phantom.make();
    // Check every output before writing any, so a refusal leaves nothing half-written.
    checkOutputDirectory(output, "--output");
    for (const fs::path& f : {geometryPath(), projectionsPath()}) refuseToOverwrite(f.string(), overwrite);
    if (groundTruth) refuseToOverwrite(truthPath().string(), overwrite);
    const VolumeGrid grid = groundTruth ? volume.grid() : VolumeGrid{};
    // The projections in memory, the simulated batch and the file's copy; the ground truth twice.
    const std::uint64_t projectionBytes = std::uint64_t{4} * geometry.detector.nu * geometry.detector.nv * geometry.size();
    checkHostMemory("phantom", "--detector " + scan.detector.pixels + " with --projections " + std::to_string(scan.projections),
                    2 * projectionBytes + (groundTruth ? 2 * 4 * grid.voxelCount() : 0));
    RunOutputs outputs;  // nothing of a failed or interrupted run stays
    outputs.createDirectories(output);  // recorded as this run's: a signal removes them only while they hold what it made
    const Image projections = simulate(p, geometry);
    Image truth;
    if (groundTruth) truth = voxelizePhantom(p, grid, 2, threads);
    checkFiniteValues(projections, "phantom", "simulated projection", kMaxProjectionValue);
    write(geometry, projections, truth, outputs);
  }

  // In batches of views, so long simulations show progress (simulateScan).
  Image simulate(const Phantom& p, const Geometry& geometry) const {
    ProjectionOptions options;
    options.supersample = phantom.supersample;
    options.noiseI0 = phantom.noiseI0;
    options.seed = phantom.seed;
    options.threads = threads;
    if (!quiet) std::cerr << "simulating " << geometry.size() << " projections of " << geometry.detector.nu << " x "
                          << geometry.detector.nv << " pixels\n";
    return simulateScan(p, geometry, options, !quiet);
  }

  void write(const Geometry& geometry, const Image& projections, const Image& truth, RunOutputs& outputs) const {
    for (const fs::path& f : {geometryPath(), projectionsPath(), truthPath()}) outputs.track(f.string());
    writeRtkGeometry(geometryPath().string(), geometry.circular, overwrite);
    writeMetaImage(projectionsPath().string(), projections, overwrite);
    if (groundTruth) writeMetaImage(truthPath().string(), truth, overwrite);
    outputs.keep();
    if (!quiet) std::cerr << "wrote " << geometryPath().string() << ", " << projectionsPath().string()
                          << (groundTruth ? ", " + truthPath().string() : "") << '\n';
  }
};

}  // namespace

std::unique_ptr<Command> makePhantomCommand() { return std::make_unique<PhantomCommand>(); }

}  // namespace glrecon::app
