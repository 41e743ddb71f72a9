// glrecon project: the forward projection (line integrals) of any volume for an RTK geometry: a scan of any volume.
#include <CLI/CLI.hpp>

#include <cstdio>

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
    c->add_option("--volume,-i", volumePath, "Volume to project (.mha, .mhd, .tif)")->required();
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file")->required();
    c->add_option("--output,-o", output, "Projection stack to write (.mha, .mhd or .tif), nu x nv x projections")->required();
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
    checkOutputFile(output, {".mha", ".mhd", ".tif", ".tiff"}, overwrite, "--output");
    const Image volume = readImage(volumePath);
    const Geometry geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), layout);
    const VolumeProjection made = projectVolume(projector.backend.projector(), geometry, volume.grid(), volume.data.data(),
                                                projector.operatorOptions());
    writeImage(output, made.projections, overwrite);
    if (!quiet) {
      const double samples = countRaySamples(geometry, volume.grid(), made.step);
      std::fprintf(stderr, "projected %zu views of %d x %d with %s (%s): %.3f s, %.1f projections/s, %.3f G ray-samples/s\n",
                   geometry.size(), layout.nu, layout.nv, made.description.c_str(), raySamplingDescription(made.step).c_str(), made.seconds, geometry.size() / made.seconds,
                   samples / made.seconds * 1e-9);
      std::fprintf(stderr, "wrote %s\n", output.c_str());
    }
  }
};

}  // namespace

std::unique_ptr<Command> makeProjectCommand() { return std::make_unique<ProjectCommand>(); }

}  // namespace glrecon::app
