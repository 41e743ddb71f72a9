// glrecon project: the forward projection (line integrals) of any volume for an RTK geometry: a scan of any volume.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "app/command.h"
#include "app/options.h"
#include "app/scan_options.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/operator.h"

namespace glrecon::app {
namespace {

class ProjectCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("project", "Forward-project a volume (line integrals) for an RTK geometry: simulate a scan of any volume");
    c->add_option("--volume,-i", volumePath, "Volume to project (.mha or .mhd)")->required();
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file")->required();
    c->add_option("--output,-o", output, "Projection stack to write (.mha or .mhd), nu x nv x projections")->required();
    detector.add(c, "Detector pixels: N or NU,NV (centred on the detector's (0,0) mm point)");
    projector.add(c);
    c->add_flag("--overwrite", overwrite, "Replace an existing output file");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->callback([this] { run(); });
  }

 private:
  std::string volumePath, geometryPath, output;
  DetectorOptions detector;
  ProjectorOptions projector;
  bool overwrite = false, quiet = false;

  void run() const {
    const DetectorLayout layout = detector.layout();
    refuseToOverwrite(output, overwrite);
    refuseMissingDirectory(output);
    const Image volume = readMetaImage(volumePath);
    const Geometry geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), layout);
    auto op = makeOperator(projector.backend.projector(), geometry, volume.grid(), projector.operatorOptions());
    Image out({layout.nu, layout.nv, static_cast<int>(geometry.size())}, {layout.spacingU, layout.spacingV, 1.0},
              {layout.originU, layout.originV, 0.0});
    std::vector<std::size_t> views(geometry.size());
    std::iota(views.begin(), views.end(), std::size_t{0});
    const auto t0 = std::chrono::steady_clock::now();
    op->setVolume(volume.data.data());
    op->forward(views.data(), views.size(), out.data.data());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    writeMetaImage(output, out, overwrite);
    if (!quiet) {
      const double samples = countRaySamples(geometry, volume.grid(), op->step());
      std::fprintf(stderr, "projected %zu views of %d x %d with %s (step %.4g mm, trilinear): %.3f s, %.1f projections/s, %.3f G ray-samples/s\n",
                   geometry.size(), layout.nu, layout.nv, op->description().c_str(), op->step(), seconds, geometry.size() / seconds,
                   samples / seconds * 1e-9);
      std::fprintf(stderr, "wrote %s\n", output.c_str());
    }
  }
};

}  // namespace

std::unique_ptr<Command> makeProjectCommand() { return std::make_unique<ProjectCommand>(); }

}  // namespace glrecon::app
