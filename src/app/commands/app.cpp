// glrecon app: the desktop app (viewer/app.h): open a scan or the simulated scanner, set the reconstruction up, watch
// slices and a 3D view fill in, save. Offscreen (--offscreen) it draws the same frames with no display, for scripts.
#include <CLI/CLI.hpp>

#include "app/command.h"
#include "app/live_options.h"
#include "app/options.h"
#include "app/scan_options.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/iterative.h"
#include "glrecon/phantom.h"
#include "viewer/app.h"

namespace glrecon::app {
namespace {

class AppCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("app",
                                     "The desktop app: open a scan (or the simulated scanner), set up and start the reconstruction, watch "
                                     "three slices and a 3D view fill in, save the volume, screenshots and a turning 3D series");
    c->add_option("--geometry,-g", setup.scan.geometry, "RTK geometry XML file (with --projections: the scan the app opens)");
    c->add_option("--projections,-p", setup.scan.projections, "Projections: a MetaImage stack, a directory, or a glob");
    c->add_option("--simulate", simulate, "The simulated scanner at this many projections per second (0: as fast as it can)");
    c->add_option("--size", setup.size, "Voxels per axis of the (cubic, centred) volume")->capture_default_str();
    c->add_option("--spacing", setup.spacing, "Voxel spacing in mm")->capture_default_str();
    c->add_option("--method", method,
                  "fdk (as projections arrive), or an iterative method drawn after every subset: sart, sirt, cgls, osem, asd-pocs, pdhg-tv (the "
                  "simulated scanner then scans 90 projections of 128^2)")
        ->capture_default_str();
    iterationsOption = c->add_option("--iterations,-n", parameters.iterations, "Iterative methods: iterations (default 10; pdhg-tv 300)");
    c->add_option("--subsets", parameters.subsets, "sart, osem, asd-pocs: ordered subsets (default: sart one projection each, osem 8)");
    c->add_option("--projector", pair,
                  "Iterative methods: interpolating, matched or distance-driven (default: matched for pdhg-tv, else interpolating)")
        ->check(CLI::IsMember({"interpolating", "matched", "distance-driven"}));
    c->add_option("--roi", setup.roi,
                  "Reconstruct only a region (outside: 0): fov, fov-cylinder, cylinder:X,Z,R,Y0,Y1, box:X0,Y0,Z0,X1,Y1,Z1, sphere:X,Y,Z,R "
                  "(mm; rotation axis y) or a binary mask .mha on the output grid");
    backend.add(c, "graphics, graphics-mp, compute, cpu or auto (the backends that draw in the window; iterative methods: auto is compute on a "
                   "GPU, cpu on a software renderer)");
    window.add(c, "GPU backends: projections per pass, a number or auto");
    c->add_option("--gpu", setup.options.gpu, "EGL device")->capture_default_str();
    c->add_option("--threads", setup.options.threads, "CPU threads (0: all)")->capture_default_str();
    c->add_option("--resolution", resolution, "The window's (or offscreen frame's) size in pixels, WIDTHxHEIGHT")->capture_default_str();
    c->add_flag("--offscreen", setup.offscreen,
                "Draw the frames offscreen on a headless context (no display; scripts, frames/s); without --start, the set-up panel "
                "(the grid's preview over the first projection) once into --screenshot");
    c->add_flag("--start", setup.start, "Start reconstructing at once");
    c->add_flag("--full-resolution", fullResolution, "The 3D view at every pixel of its panel (default: scaled to about 100 ms a drawing)");
    c->add_flag("--mip", setup.mip, "The 3D view by maximum intensity projection (default: direct volume rendering)");
    range.add(c, "--range", "Grey window LOW:HIGH (default: from the object's histogram, computed on the GPU)");
    c->add_option("--screenshot", setup.screenshot, "Once done: save the window's frame here (.png), then close");
    c->add_option("--screenshot-at", setup.screenshotAt,
                  "Take --screenshot mid-scan instead, once this many projections (iterative methods: subsets) are in; the run goes on");
    c->add_option("--output,-o", setup.saveVolume, "Once done: write the volume here (.mha or .mhd), then close");
    c->add_option("--series", setup.series, "Once done: write the 3D view turning once into this folder (view3d_NNNN.png), then close");
    c->add_option("--series-frames", setup.seriesFrames, "Frames of --series")->capture_default_str();
    c->add_option("--fps", setup.fps, "Frames per second aimed at while reconstructing (the steps fill the time between)")->capture_default_str();
    c->add_option("--redraw-3d", setup.redraw3dMs, "While projections arrive, draw the 3D view again at most every this many ms")
        ->capture_default_str();
    c->add_option("--measure", setup.measure,
                  "Measurement: this many rounds of the same reconstruction without frames (as fdk --stream runs it) then the app's, "
                  "each compared; needs --start");
    c->add_option("--close-after", setup.closeAfter,
                  "Close after this many projections (iterative methods: subsets), as a user closing the window would (scripts)");
    c->add_flag("--overwrite", setup.overwrite, "Replace existing outputs");
    c->add_option("--widget-map", setup.widgetMap, "Tests: each frame, the app's state and its widgets' rectangles, into this file")->group("");
    c->add_flag("--quiet,-q", setup.quiet, "No summary line");
    c->callback([this] { run(); });
  }

 private:
  viewer::AppSetup setup;
  BackendOption backend{"auto"};
  WindowOption window;
  RangeOption range;
  double simulate = -1;
  bool fullResolution = false;
  std::string method = "fdk", pair;
  CLI::Option* iterationsOption = nullptr;
  IterativeParameters parameters;
  std::string resolution = "1600x960";
  Phantom phantom = Phantom::sheppLogan();

  void run() {
    setup.options.backend = backend.choice();
    setup.options.window = window.window();
    setup.range = range.range();
    setup.autoResolution = !fullResolution;
    if (setup.options.backend == Backend::Cuda)
      throw UsageError("--backend: expected graphics, graphics-mp, compute, cpu or auto in the app (its views are drawn from the OpenGL "
                       "operator's texture), found cuda");
    int w = 0, h = 0;
    char x = 0, rest = 0;
    if (std::sscanf(resolution.c_str(), "%d%c%d%c", &w, &x, &h, &rest) != 3 || x != 'x' || w < 320 || h < 240 || w > 16384 || h > 16384)
      throw UsageError("--resolution: expected WIDTHxHEIGHT of at least 320x240, found '" + resolution + "'");
    setup.width = w;
    setup.height = h;
    if (setup.size < 1) throw UsageError("--size: expected a number of voxels >= 1, found " + std::to_string(setup.size));
    if (!(setup.spacing > 0)) throw UsageError("--spacing: expected mm > 0, found " + std::to_string(setup.spacing));
    if (setup.scan.geometry.empty() != setup.scan.projections.empty())
      throw UsageError("app: expected --geometry and --projections together, found only " + std::string(setup.scan.geometry.empty() ? "--projections" : "--geometry"));
    const bool files = !setup.scan.geometry.empty();
    if (files && simulate >= 0) throw UsageError("app: expected files (--geometry, --projections) or --simulate, found both");
    setup.scan.simulate = !files;
    setup.scan.rate = simulate >= 0 ? simulate : 0.0;
    if (!setup.offscreen && !hasDisplay())
      throw UsageError("app: no display (DISPLAY and WAYLAND_DISPLAY are unset): expected a desktop session, xvfb-run, or --offscreen");
    if (setup.offscreen && !setup.start && (setup.screenshot.empty() || !setup.saveVolume.empty() || !setup.series.empty() || setup.closeAfter))
      throw UsageError("--offscreen: expected with --start (nothing can press Start offscreen), or without it with --screenshot alone (the "
                       "set-up panel's frame)");
    if (method != "fdk") {
      try {
        setup.method = parseIterativeMethod(method);
      } catch (const UsageError&) {
        throw UsageError("--method: expected fdk, sart, sirt, cgls, osem, asd-pocs or pdhg-tv, found '" + method + "'");
      }
    }
    const bool pdhg = setup.method == IterativeMethod::PdhgTv;
    const bool iterationsGiven = iterationsOption->count() > 0;
    if (!setup.method && (iterationsGiven || parameters.subsets || !pair.empty()))
      throw UsageError(std::string(iterationsGiven ? "--iterations" : parameters.subsets ? "--subsets" : "--projector") +
                       ": expected with an iterative --method (sart, sirt, cgls, osem, asd-pocs, pdhg-tv), found --method fdk");
    if (!iterationsGiven) parameters.iterations = pdhg ? 300 : 10;
    if (setup.method) {
      if (parameters.subsets && *setup.method != IterativeMethod::Sart && *setup.method != IterativeMethod::Osem &&
          *setup.method != IterativeMethod::AsdPocs)
        throw UsageError("--subsets: expected with sart, osem or asd-pocs (the methods of ordered subsets), found --method " + method);
      if (parameters.subsets < 0) throw UsageError("--subsets: expected a whole number >= 1, found " + std::to_string(parameters.subsets));
      setup.iterative = parameters.options(*setup.method);
      setup.pair = pair.empty() ? (pdhg ? ProjectorPair::Matched : ProjectorPair::Interpolating) : parseProjectorPair(pair);
      if (setup.measure > 0) throw UsageError("--measure: expected with --method fdk (it compares the app with fdk --stream), found " + method);
    }
    if (!(setup.fps >= 1 && setup.fps <= 1000)) throw UsageError("--fps: expected 1 to 1000 frames per second, found " + std::to_string(setup.fps));
    if (!(setup.redraw3dMs >= 0 && setup.redraw3dMs <= 60000))
      throw UsageError("--redraw-3d: expected 0 to 60000 ms, found " + std::to_string(setup.redraw3dMs));
    if (setup.measure < 0 || setup.measure > 100) throw UsageError("--measure: expected 0 to 100 rounds, found " + std::to_string(setup.measure));
    if (setup.measure > 0 && !setup.start) throw UsageError("--measure: expected with --start");
    if (setup.measure > 0 && setup.closeAfter) throw UsageError("--measure: expected without --close-after (it measures whole reconstructions)");
    if (setup.screenshotAt && (setup.screenshot.empty() || !setup.start))
      throw UsageError("--screenshot-at: expected with --screenshot and --start (it says when the screenshot is taken), found " +
                       std::string(setup.screenshot.empty() ? "no --screenshot" : "no --start"));
    if (setup.screenshotAt && setup.closeAfter)
      throw UsageError("--screenshot-at: expected without --close-after (a window closed mid-scan writes nothing)");
    CommandOutputs outputs(setup.overwrite);
    outputs.add(setup.screenshot, {".png"}, "--screenshot");
    outputs.add(setup.saveVolume, {".mha", ".mhd"}, "--output");
    setup.open = [this](const viewer::ScanChoice& choice) {
      viewer::OpenedScan scan;
      if (choice.simulate) {
        // An iterative method reads the whole scan before its first step, and steps through it many times: a smaller
        // one (as view --method scans), as fast as it simulates.
        scan.geometry = std::make_shared<const Geometry>(choice.iterative ? sampleScan(90, 128) : sampleScan(360, 256));
        scan.source = simulatedScanner(phantom, *scan.geometry, choice.iterative ? 0.0 : choice.rate);
        return scan;
      }
      if (choice.geometry.empty()) throw InputError("geometry: expected an RTK XML file, found an empty name");
      if (choice.projections.empty()) throw InputError("projections: expected a MetaImage stack, a directory or a glob, found an empty name");
      FileScan files = openFileScan(choice.geometry, listProjectionFiles(choice.projections));
      scan.geometry = std::make_shared<const Geometry>(std::move(files.geometry));
      scan.source = std::move(files.source);
      return scan;
    };
    viewer::runApp(setup);
  }
};

}  // namespace

std::unique_ptr<Command> makeAppCommand() { return std::make_unique<AppCommand>(); }

}  // namespace glrecon::app
