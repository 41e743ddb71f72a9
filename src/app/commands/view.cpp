// glrecon view: a reconstruction shown while it fills in (FDK as projections arrive, or an iterative method after
// every subset) in the viewer's window, offscreen, or headless with snapshots where there is no display.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "app/command.h"
#include "app/live_options.h"
#include "app/scan_options.h"
#include "app/snapshots.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "glrecon/validate.h"
#include "viewer/viewer.h"

namespace glrecon::app {
namespace {

class ViewCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("view",
                                     "Reconstruct while showing axial, coronal and sagittal slices filling in (a window; headless with "
                                     "--snapshots or without a display)");
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file");
    c->add_option("--projections,-p", projectionsPath, "Projections: a MetaImage stack, a directory, or a glob");
    c->add_option("--simulate", simulate, "Instead of files: a simulated scanner at this many projections per second");
    c->add_flag("--headless", headless, "No window even where there is a display (use with --snapshots)");
    c->add_flag("--offscreen", offscreen,
                "Draw the window's frames into an offscreen framebuffer on the GPU (--gpu) instead of a window: the frames/s a "
                "window would get, measured where there is no display; --screenshot saves the last frame");
    c->add_option("--screenshot", screenshot, "Window: save a screenshot here when the reconstruction ends, then close (scripts)");
    c->add_option("--screenshot-at", screenshotAt, "Window: also save a screenshot (glrecon-view-N.png) once N projections are in");
    c->add_option("--close-after", closeAfter, "Window: close after this many projections, as a user closing it would (scripts)");
    c->add_option("--method", method,
                  "fdk (streaming), or an iterative method shown after every subset: sart, sirt, cgls, osem, asd-pocs, pdhg-tv (--backend auto means cpu "
                  "for these; --simulate then scans 90 projections of 128^2)")
        ->capture_default_str();
    c->add_option("--iterations,-n", parameters.iterations, "Iterative methods: iterations")->capture_default_str();
    c->add_option("--projector", pair,
                  "Iterative methods: interpolating, matched or distance-driven (default: matched for pdhg-tv, else interpolating, as "
                  "their commands)")
        ->check(CLI::IsMember({"interpolating", "matched", "distance-driven"}));
    c->add_option("--subsets", parameters.subsets, "sart, osem: ordered subsets (default: sart one projection each, osem 8)");
    c->add_option("--lambda", parameters.lambda, "sart, sirt: relaxation in (0, 2) (default: sart 0.8 with one projection per subset, else 1)");
    parameters.addPositivity(c, "sart, sirt, osem: ");
    parameters.addStoppingRules(c);
    parameters.addPrimalDual(c);
    live.add(c);
    c->callback([this] { run(); });
  }

 private:
  LiveOptions live{"view"};
  std::string geometryPath, projectionsPath, screenshot, method = "fdk", pair;
  double simulate = -1;
  bool headless = false, offscreen = false;
  std::size_t closeAfter = 0, screenshotAt = 0;
  IterativeParameters parameters;

  void requireFiles() const {
    if (geometryPath.empty() || projectionsPath.empty()) throw UsageError("view: expected --geometry and --projections, or --simulate RATE");
  }

  void run() const {
    if (offscreen && (headless || !live.snapshots.empty()))
      throw UsageError("--offscreen: expected without --headless and --snapshots (it draws the window's frames, offscreen)");
    if (offscreen && method != "fdk") throw UsageError("--offscreen: expected with --method fdk, found '" + method + "'");
    if (!pair.empty() && method == "fdk")
      throw UsageError("--projector: expected with an iterative --method (FDK backprojects with no projector pair), found --method fdk");
    if (method != "fdk") return runIterative();
    const Phantom phantom = Phantom::sheppLogan();
    FileScan scan;
    if (simulate >= 0) {
      scan.geometry = sampleScan(360, 256);
      scan.source = simulatedScanner(phantom, scan.geometry, simulate);
    } else {
      requireFiles();
      scan = openFileScan(geometryPath, listProjectionFiles(projectionsPath));
    }
    const bool display = hasDisplay();
    if (!offscreen && (headless || !display || !live.snapshots.empty())) {
      if (!display && !headless && live.snapshots.empty() && !live.quiet)
        std::fprintf(stderr, "view: no display: reconstructing headless (add --snapshots DIR to see slices)\n");
      return runStreamHeadless(live, *scan.source, scan.geometry);
    }
    viewFdk(*scan.source, scan.geometry);
  }

  // FDK in the window (or offscreen).
  void viewFdk(ProjectionSource& source, const Geometry& geometry) const {
    viewer::ViewScript script;
    script.screenshot = screenshot;
    script.closeAfter = closeAfter;
    script.screenshotAt = screenshotAt;
    script.range = live.range.range();
    script.offscreen = offscreen;
    script.fieldName = optionName;
    live.checkOutputs();
    if (!screenshot.empty()) checkOutputFile(screenshot, {".png"}, live.overwrite, "--screenshot");
    const VolumeGrid grid = live.volume.grid();
    checkVolumeInBeam(geometry, grid, "view");
    viewer::viewFdk(source, geometry, grid, live.streamOptions(), live.output, live.overwrite, script);
  }

  // The iterative methods' scan: a simulated one (90 projections of 128^2) or the files.
  void loadScan(Geometry& geometry, Image& projections) const {
    if (simulate >= 0) {
      geometry = sampleScan(90, 128);
      projections = projectPhantom(Phantom::sheppLogan(), geometry, {});
      return;
    }
    requireFiles();
    projections = readProjectionStack(projectionsPath);
    geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), detectorLayoutOf(projections));
    checkProjectionsMatch(geometry, projections, projectionsPath);
  }

  void runIterative() const {
    const IterativeOptions o = parameters.options(parseIterativeMethod(method));
    const VolumeGrid grid = live.volume.grid();
    OperatorOptions po;
    po.device = live.gpu;
    po.threads = live.threads;
    // As the commands: PDHG-TV's guarantee asks for the matched pair, the others take the fast one.
    po.pair = !pair.empty() ? parseProjectorPair(pair) : method == "pdhg-tv" ? ProjectorPair::Matched : ProjectorPair::Interpolating;
    const Backend backend = live.backend.orWhenAuto(Backend::Cpu);
    const std::optional<std::pair<double, double>> range = live.range.range();
    const bool window = hasDisplay() && !headless && live.snapshots.empty();
    const IterativeSnapshots headlessRun{live.snapshots, live.output, live.overwrite, live.quiet, range, backend, po};
    if (!window) checkIterativeSnapshots(headlessRun, o.iterations);  // before the scan is read or simulated
    Geometry geometry;
    Image projections;
    loadScan(geometry, projections);
    if (window) {
      viewer::IterativeView view{backend, po, o, live.output, live.overwrite, live.quiet};
      viewer::ViewScript script;
      script.screenshot = screenshot;
      script.range = range;
      script.fieldName = optionName;
      viewer::viewIterative(geometry, projections, grid, view, script);
      return;
    }
    runIterativeSnapshots(geometry, projections, grid, o, headlessRun);
  }
};

}  // namespace

std::unique_ptr<Command> makeViewCommand() { return std::make_unique<ViewCommand>(); }

}  // namespace glrecon::app
