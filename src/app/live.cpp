// scan-sim and view: streaming reconstruction with progress, timing split, latency, and PNG snapshots of the
// three central slices while the volume fills in (normalised by the projections applied so far, so the grey
// levels are stable from the first snapshot on).
#include "live.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/parse.h"
#include "glrecon/sink.h"
#include "glrecon/source.h"
#include "glrecon/validate.h"
#include "commands.h"
#include "validation.h"
#include "viewer/viewer.h"
#include "iterative.h"
#include "glrecon/fdk.h"
#include "glrecon/phantom.h"
#include "glrecon/operator.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

struct Snapshots {
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
    const struct {
      const char* name;
      SliceAxis axis;
      int a;
    } views[] = {{"axial", SliceAxis::Y, 1}, {"coronal", SliceAxis::Z, 2}, {"sagittal", SliceAxis::X, 0}};
    char stem[64];
    std::snprintf(stem, sizeof stem, "snapshot_%05zu_", done);
    for (const auto& v : views) {
      const std::string path = (fs::path(directory) / (std::string(stem) + v.name + ".png")).string();
      if (outputs) outputs->track(path);
      writeSlicePng(path, volume, v.axis, volume.size[v.a] / 2, range->first, range->second, overwrite);
    }
  }
};

}  // namespace

void printStreamReport(const FdkReport& r, std::size_t projections) {
  if (!r.autoNote.empty()) std::fprintf(stderr, "%s\n", renderFields(r.autoNote, optionName).c_str());
  char filtering[64] = "filter on the GPU";
  if (!r.filteredOnGpu) std::snprintf(filtering, sizeof filtering, "filtering %.2f thread-seconds", r.filterSeconds);
  std::fprintf(stderr,
               "backend %s: %zu projections in %.2f s end to end (%.1f projections/s); reading %.2f s, %s, "
               "backprojection (upload%s included) %.2f s (%.2f G voxel-updates/s), waiting for %s projections %.2f s; volume "
               "ready %.3f s after the last projection; at most %zu projections held between stages\n",
               r.backend.c_str(), projections, r.totalSeconds, projections / r.totalSeconds, r.readSeconds, filtering,
               r.filteredOnGpu ? ", filter" : "", r.backprojectSeconds, r.gigaUpdatesPerSecond(), r.filteredOnGpu ? "read" : "filtered",
               r.filterWaitSeconds, r.latencySeconds, r.peakQueued);
}

namespace {

// Options shared by scan-sim and view.
struct LiveOptions {
  std::string size = "128", spacing = "2", origin, backend = "auto", window = "auto", output, snapshots, range, filterOn = "auto";
  int gpu = 0, threads = 0, filterThreads = 0;
  std::size_t every = 30, depth = 16;
  bool overwrite = false, quiet = false;

  void add(CLI::App* c) {
    c->add_option("--size,--dimension", size, "Volume size in voxels: N or NX,NY,NZ")->capture_default_str();
    c->add_option("--spacing", spacing, "Voxel spacing in mm: S or SX,SY,SZ")->capture_default_str();
    c->add_option("--origin", origin, "World position (mm) of voxel (0,0,0): X,Y,Z (default: centred)");
    c->add_option("--backend", backend, "cpu, graphics, graphics-mp, compute, cuda or auto")->capture_default_str();
    c->add_option("--window", window, "GPU backends: projections per pass, a number, max or auto")->capture_default_str();
    c->add_option("--gpu", gpu, "EGL (or CUDA) device")->capture_default_str();
    c->add_option("--threads", threads, "CPU threads of the cpu backend (0: all)")->capture_default_str();
    c->add_option("--filter-threads", filterThreads, "FFTW filter threads (0: all)")->capture_default_str();
    c->add_option("--filter-on", filterOn,
                  "Where the filter runs: auto (on the GPU for cuda, compute and graphics on a hardware GPU, else on the FFTW "
                  "thread pool), cpu, or gpu (an error where it cannot)")
        ->capture_default_str();
    c->add_option("--queue", depth, "Projections held between pipeline stages, at most")->capture_default_str();
    c->add_option("--output,-o", output, "Write the final volume (.mha or .mhd)");
    c->add_option("--snapshots", snapshots, "Write axial, coronal and sagittal PNG slices into this directory while reconstructing");
    c->add_option("--every", every, "With --snapshots: every N projections (and at the end)")->capture_default_str();
    c->add_option("--slice-range", range, "Grey range LOW:HIGH of snapshots (default: percentiles of the first snapshot)");
    c->add_flag("--overwrite", overwrite, "Replace an existing output volume");
    c->add_flag("--quiet,-q", quiet, "No progress output");
  }

  FdkOptions streamOptions() const {
    FdkOptions o;
    o.backend = parseBackend("--backend", backend);
    o.gpu = gpu;
    o.threads = threads;
    o.progress = !quiet;
    if (window == "max")
      o.window = kMaximumWindow;
    else if (window != "auto") {
      const auto w = parseNumberList("--window", window);
      if (w.size() != 1 || w[0] < 1 || w[0] > 4096 || w[0] != std::floor(w[0]))
        throw UsageError("--window: expected a whole number from 1 to 4096, max or auto, found '" + window + "'");
      o.window = static_cast<int>(w[0]);
    }
    o.filterOn = parseFilterPlace(filterOn);
    o.filterThreads = filterThreads;
    o.queueDepth = depth;
    o.streaming = true;
    return o;
  }

  // Outputs checked before the scan starts: the volume's name and directory, the snapshot directory (whose
  // earlier snapshots are replaced only with --overwrite).
  void checkOutputs() const {
    if (!output.empty()) checkOutputFile(output, {".mha", ".mhd"}, overwrite, "--output");
    if (!snapshots.empty()) {
      checkOutputDirectory(snapshots, "--snapshots");
      if (!overwrite && fs::is_directory(snapshots))
        for (const auto& entry : fs::directory_iterator(snapshots))
          if (entry.path().filename().string().rfind("snapshot_", 0) == 0)
            throwInputError(entry.path().string(), "--snapshots", "a directory without earlier snapshots (pass --overwrite to replace them)",
                            "an existing snapshot");
    }
    checkGridBounds(parseVolumeGrid(size, spacing, origin), "--size/--spacing/--origin");
    checkJobMemory("view", "--size " + size, std::uint64_t{3} * 4 * parseVolumeGrid(size, spacing, origin).voxelCount());
  }

  // Runs the stream headless, with snapshots when asked, and writes the volume.
  void runHeadless(ProjectionSource& source, const Geometry& geometry) const {
    const VolumeGrid grid = parseVolumeGrid(size, spacing, origin);
    checkOutputs();
    checkVolumeInBeam(geometry, grid, "view");
    const FdkOptions o = streamOptions();
    RunOutputs outputs;
    Snapshots shots{snapshots, every, std::nullopt, overwrite, &outputs};
    if (!range.empty()) {
      const auto colon = range.find(':');
      if (colon == std::string::npos) throw UsageError("--slice-range: expected LOW:HIGH, found '" + range + "'");
      shots.range = std::make_pair(parseNumberList("--slice-range", range.substr(0, colon), range)[0],
                                   parseNumberList("--slice-range", range.substr(colon + 1), range)[0]);
    }
    if (!snapshots.empty()) {
      if (every == 0) throw UsageError("--every: expected a positive number of projections");
      if (!fs::exists(snapshots)) outputs.track(snapshots);
      fs::create_directories(snapshots);
    }
    const FdkPlan plan = planFdk(geometry, grid, o, source);
    ImageSink sink(grid, threads);
    FdkReconstructor reconstructor(plan);
    reconstructor.start(source, sink);
    // Steps that stop at every multiple of `every`, where a snapshot is taken of the volume so far.
    const std::size_t total = geometry.size();
    std::size_t next = snapshots.empty() ? 0 : every;
    while (reconstructor.step(std::chrono::milliseconds(1000), next < total ? next : 0)) {
      if (snapshots.empty() || reconstructor.done() < next || next >= total) continue;
      Image soFar(grid);
      reconstructor.firstOperator().readVolume(soFar.data.data());
      shots.write(std::move(soFar), reconstructor.done(), total);
      next = (reconstructor.done() / every + 1) * every;
    }
    const FdkReport report = reconstructor.finish();
    const Image volume = sink.take();
    if (!snapshots.empty()) shots.write(volume, geometry.size(), geometry.size());
    if (!output.empty()) {
      outputs.track(output);
      writeMetaImage(output, volume, overwrite);
    }
    outputs.keep();
    if (!quiet) {
      printStreamReport(report, geometry.size());
      if (!snapshots.empty()) std::fprintf(stderr, "wrote snapshots into %s\n", snapshots.c_str());
      if (!output.empty()) std::fprintf(stderr, "wrote %s\n", output.c_str());
    }
  }
};

struct ScanSimCommand {
  LiveOptions live;
  int projections = 360, detector = 256;
  double rate = 30.0;
  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("scan-sim",
                                     "Simulate a scanner delivering Shepp-Logan projections at a frame rate, and reconstruct them as they arrive");
    c->add_option("--rate", rate, "Projections per second the simulated detector delivers (0: as fast as possible)")->capture_default_str();
    c->add_option("--projections", projections, "Projections over 360 degrees")->capture_default_str();
    c->add_option("--detector", detector, "Detector pixels per axis (covering 512 mm)")->capture_default_str();
    live.add(c);
    c->callback([this] { run(); });
  }
  void run() const {
    if (projections < 2 || detector < 4) throw UsageError("scan-sim: expected at least 2 projections and 4 detector pixels");
    if (rate < 0) throw UsageError("--rate: expected a rate >= 0");
    const Geometry geometry = sampleScan(projections, detector);
    const Phantom phantom = Phantom::sheppLogan();
    auto source = simulatedScanner(phantom, geometry, rate);
    live.runHeadless(*source, geometry);
  }
};

struct ViewCommand {
  LiveOptions live;
  std::string geometryPath, projectionsPath;
  double simulate = -1;
  bool headless = false, offscreen = false;
  std::string screenshot;
  std::size_t closeAfter = 0, screenshotAt = 0;
  std::string method = "fdk";
  int iterations = 10, subsets = 0;
  double lambda = 0.0;
  bool positivity = false;
  void add(CLI::App& app) {
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
                  "fdk (streaming), or an iterative method shown after every subset: sart, sirt, cgls, osem (--backend auto means cpu "
                  "for these; --simulate then scans 90 projections of 128^2)")
        ->capture_default_str();
    c->add_option("--iterations,-n", iterations, "Iterative methods: iterations")->capture_default_str();
    c->add_option("--subsets", subsets, "sart, osem: ordered subsets (default: sart one projection each, osem 8)");
    c->add_option("--lambda", lambda, "sart, sirt: relaxation in (0, 2) (default: sart 0.8 with one projection per subset, else 1)");
    c->add_flag("--positivity", positivity, "sart, sirt, osem: clamp negative voxels to 0 after every update");
    live.add(c);
    c->callback([this] { run(); });
  }
  void runIterative() const {
    IterativeOptions o;
    o.method = parseIterativeMethod(method);
    o.iterations = iterations;
    o.subsets = subsets;
    o.lambda = lambda;
    o.positivity = positivity;
    if (iterations < 1) throw UsageError("--iterations: expected at least 1, found " + std::to_string(iterations));
    const VolumeGrid grid = parseVolumeGrid(live.size, live.spacing, live.origin);
    Geometry geometry;
    Image projections;
    if (simulate >= 0) {
      geometry = sampleScan(90, 128);
      projections = projectPhantom(Phantom::sheppLogan(), geometry, {});
    } else {
      if (geometryPath.empty() || projectionsPath.empty()) throw UsageError("view: expected --geometry and --projections, or --simulate RATE");
      projections = readProjectionStack(projectionsPath);
      geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), detectorLayoutOf(projections));
      checkProjectionsMatch(geometry, projections, projectionsPath);
    }
    OperatorOptions po;
    po.device = live.gpu;
    po.threads = live.threads;
    const Backend backend = live.backend == "auto" ? Backend::Cpu : *parseBackend("--backend", live.backend, false);
    const std::optional<std::pair<double, double>> range = live.range.empty() ? std::nullopt : std::optional(parseRange("--slice-range", live.range));
    const bool display = std::getenv("DISPLAY") != nullptr || std::getenv("WAYLAND_DISPLAY") != nullptr;
    if (display && !headless && live.snapshots.empty()) {
      viewer::IterativeView view{backend, po, o, live.output, live.overwrite, live.quiet};
      viewer::ViewScript script;
      script.screenshot = screenshot;
      script.range = range;
      script.fieldName = optionName;
      viewer::viewIterative(geometry, projections, grid, view, script);
      return;
    }
    runIterativeSnapshots(geometry, projections, grid, o, {live.snapshots, live.output, live.overwrite, live.quiet, range, backend, po});
  }

  void run() const {
    if (offscreen && (headless || !live.snapshots.empty()))
      throw UsageError("--offscreen: expected without --headless and --snapshots (it draws the window's frames, offscreen)");
    if (offscreen && method != "fdk") throw UsageError("--offscreen: expected with --method fdk, found '" + method + "'");
    if (method != "fdk") {
      runIterative();
      return;
    }
    const Phantom phantom = Phantom::sheppLogan();
    FileScan scan;
    if (simulate >= 0) {
      scan.geometry = sampleScan(360, 256);
      scan.source = simulatedScanner(phantom, scan.geometry, simulate);
    } else {
      if (geometryPath.empty() || projectionsPath.empty())
        throw UsageError("view: expected --geometry and --projections, or --simulate RATE");
      scan = openFileScan(geometryPath, listProjectionFiles(projectionsPath));
    }
    ProjectionSource& source = *scan.source;
    const Geometry& geometry = scan.geometry;
    const bool display = std::getenv("DISPLAY") != nullptr || std::getenv("WAYLAND_DISPLAY") != nullptr;
    if (!offscreen && (headless || !display || !live.snapshots.empty())) {
      if (!display && !headless && live.snapshots.empty() && !live.quiet)
        std::fprintf(stderr, "view: no display: reconstructing headless (add --snapshots DIR to see slices)\n");
      live.runHeadless(source, geometry);
      return;
    }
    viewer::ViewScript script;
    script.screenshot = screenshot;
    script.closeAfter = closeAfter;
    script.screenshotAt = screenshotAt;
    if (!live.range.empty()) script.range = parseRange("--slice-range", live.range);
    script.offscreen = offscreen;
    script.fieldName = optionName;
    live.checkOutputs();
    if (!screenshot.empty()) checkOutputFile(screenshot, {".png"}, live.overwrite, "--screenshot");
    const VolumeGrid grid = parseVolumeGrid(live.size, live.spacing, live.origin);
    checkVolumeInBeam(geometry, grid, "view");
    viewer::viewFdk(source, geometry, grid, live.streamOptions(), live.output, live.overwrite, script);
  }
};

}  // namespace

void viewFiles(const std::string& geometryPath, const std::string& projectionsPath, int size, double spacing) {
  const bool display = std::getenv("DISPLAY") != nullptr || std::getenv("WAYLAND_DISPLAY") != nullptr;
  if (!display) {
    std::fprintf(stderr, "demo --view: no display: showing nothing (the volume and slices are written as usual)\n");
    return;
  }
  FileScan scan = openFileScan(geometryPath, listProjectionFiles(projectionsPath));
  LiveOptions live;
  live.size = std::to_string(size);
  live.spacing = std::to_string(spacing);
  viewer::ViewScript script;
  script.range = std::make_pair(0.95, 1.1);  // the phantom's soft tissue
  script.fieldName = optionName;
  viewer::viewFdk(*scan.source, scan.geometry, parseVolumeGrid(live.size, live.spacing, ""), live.streamOptions(), "", false, script);
}

void addLiveCommands(CLI::App& app) {
  static ScanSimCommand scanSim;
  static ViewCommand view;
  scanSim.add(app);
  view.add(app);
}

}  // namespace glrecon::app
