// The glrecon command line: phantom, fdk, demo. CLI11 (Debian's libcli11-dev) gives subcommands, --help
// text and type checks in one place instead of a hand-written parser.
#include "commands.h"

#include "bench.h"
#include "iterative.h"
#include "live.h"
#include "validation.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "device/cuda/device.h"
#include "glrecon/operator.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/slab.h"
#include "glrecon/parse.h"
#include "glrecon/phantom.h"
#include "glrecon/preprocess.h"
#include "glrecon/progress.h"
#include "glrecon/sink.h"
#include "glrecon/source.h"
#include "recon/device_session.h"
#include "glrecon/validate.h"
#include "glrecon/limits.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

// Volume options shared by fdk and demo, with rtkfdk's names and defaults (256 voxels of 1 mm, centred).
struct VolumeOptions {
  std::string size = "256", spacing = "1", origin;
  void add(CLI::App* app) {
    app->add_option("--size,--dimension", size, "Volume size in voxels: N or NX,NY,NZ")->capture_default_str();
    app->add_option("--spacing", spacing, "Voxel spacing in mm: S or SX,SY,SZ")->capture_default_str();
    app->add_option("--origin", origin, "World position (mm) of voxel (0,0,0): X,Y,Z (default: volume centred on the origin)");
  }
  VolumeGrid grid() const { return parseVolumeGrid(size, spacing, origin); }
};

struct ScanOptions {
  int projections = 360;
  double arc = 360.0, firstAngle = 0.0, sid = 1000.0, sdd = 1536.0, outOfPlane = 0.0, inPlane = 0.0;
  bool shortScan = false;
  std::string detector = "256", detectorSpacing = "2", detectorOffset = "0", sourceOffset = "0";
  void add(CLI::App* app) {
    app->add_option("--projections", projections, "Number of projections")->capture_default_str();
    app->add_option("--arc", arc, "Angular range in degrees covered by the projections")->capture_default_str();
    app->add_flag("--short-scan", shortScan, "Scan 180 degrees plus the fan angle (overrides --arc)");
    app->add_option("--first-angle", firstAngle, "Gantry angle of the first projection (degrees)")->capture_default_str();
    app->add_option("--sid", sid, "Source-to-isocentre distance (mm)")->capture_default_str();
    app->add_option("--sdd", sdd, "Source-to-detector distance (mm)")->capture_default_str();
    app->add_option("--detector", detector, "Detector pixels: N or NU,NV")->capture_default_str();
    app->add_option("--detector-spacing", detectorSpacing, "Detector pixel spacing (mm): S or SU,SV")->capture_default_str();
    app->add_option("--detector-offset", detectorOffset, "Detector offset (mm), RTK's ProjectionOffsetX,Y")->capture_default_str();
    app->add_option("--source-offset", sourceOffset, "Source offset (mm), RTK's SourceOffsetX,Y")->capture_default_str();
    app->add_option("--out-of-plane", outOfPlane, "Out-of-plane (tilt) angle in degrees")->capture_default_str();
    app->add_option("--in-plane", inPlane, "In-plane (detector roll) angle in degrees")->capture_default_str();
  }
  Geometry geometry() const {
    CircularScanSpec spec;
    if (projections < 1) throw UsageError("--projections: expected at least 1, found " + std::to_string(projections));
    const auto d = parseList("--detector", detector, 2);
    for (double v : d)
      if (v < 1 || v != std::floor(v)) throw UsageError("--detector: expected positive whole pixel counts, found '" + detector + "'");
    const auto ds = parseList("--detector-spacing", detectorSpacing, 2);
    for (double v : ds)
      if (!(v > 0)) throw UsageError("--detector-spacing: expected positive lengths in mm, found '" + detectorSpacing + "'");
    const auto doff = parseList("--detector-offset", detectorOffset, 2), soff = parseList("--source-offset", sourceOffset, 2);
    if (!(sid > 0) || !(sdd > 0)) throw UsageError("--sid, --sdd: expected positive distances in mm");
    spec.sid = sid;
    spec.sdd = sdd;
    spec.projections = projections;
    spec.firstAngle = firstAngle;
    spec.nu = static_cast<int>(d[0]);
    spec.nv = static_cast<int>(d[1]);
    spec.spacingU = ds[0];
    spec.spacingV = ds[1];
    spec.projectionOffsetX = doff[0];
    spec.projectionOffsetY = doff[1];
    spec.sourceOffsetX = soff[0];
    spec.sourceOffsetY = soff[1];
    spec.outOfPlaneAngle = outOfPlane;
    spec.inPlaneAngle = inPlane;
    // A short scan's N projections span the needed arc from the first to the last one.
    spec.arc = shortScan ? shortScanArcDegrees(sdd, DetectorLayout::centred(spec.nu, spec.nv, ds[0], ds[1]), doff[0]) *
                               projections / std::max(1, projections - 1)
                         : arc;
    return makeCircularScan(spec);
  }
};

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

// "y:64" (axis and index) or "y" (the central slice).
struct SliceSpec {
  SliceAxis axis;
  std::optional<int> index;
};
SliceSpec parseSliceSpec(const std::string& text) {
  const auto colon = text.find(':');
  SliceSpec spec{parseSliceAxis(text.substr(0, colon)), std::nullopt};
  if (colon != std::string::npos) {
    const double index = parseList("--slice", text.substr(colon + 1), 1)[0];
    if (index < 0 || index != std::floor(index)) throw UsageError("--slice: expected AXIS:INDEX with a voxel index, found '" + text + "'");
    spec.index = static_cast<int>(index);
  }
  return spec;
}
int axisNumber(SliceAxis axis) { return axis == SliceAxis::X ? 0 : axis == SliceAxis::Y ? 1 : 2; }
const char* axisName(SliceAxis axis) { return axis == SliceAxis::X ? "x" : axis == SliceAxis::Y ? "y" : "z"; }

// Writes axial, coronal and sagittal slices through the world point `centre` (default: the volume's centre).
void writeCentralSlices(const Image& volume, const fs::path& directory, const std::string& prefix,
                        std::pair<double, double> range, bool overwrite, std::optional<glm::dvec3> centre = {},
                        RunOutputs* outputs = nullptr) {
  // Axial slices are x-z planes in RTK's frame (rotation axis y).
  const struct {
    const char* name;
    SliceAxis axis;
    int a;
  } views[] = {{"axial", SliceAxis::Y, 1}, {"coronal", SliceAxis::Z, 2}, {"sagittal", SliceAxis::X, 0}};
  for (const auto& v : views) {
    const fs::path path = directory / (prefix + v.name + ".png");
    int index = volume.size[v.a] / 2;
    if (centre) index = std::clamp(static_cast<int>(std::lround(((*centre)[v.a] - volume.origin[v.a]) / volume.spacing[v.a])), 0,
                                   volume.size[v.a] - 1);
    if (outputs) outputs->track(path.string());
    writeSlicePng(path.string(), volume, v.axis, index, range.first, range.second, overwrite);
    std::cerr << "wrote " << path.string() << '\n';
  }
}

void printReport(const FdkReport& r, std::size_t projections) {
  if (!r.autoNote.empty()) std::fprintf(stderr, "%s\n", renderFields(r.autoNote, optionName).c_str());
  if (!r.region.empty() || r.killedVoxels)
    std::fprintf(stderr,
                 "region %s: %zu voxels inside; %.1f%% of voxel updates culled, saving about %.2f s if time scales with the "
                 "updates computed (rates below count culled updates as done)\n",
                 r.region.c_str(), r.regionVoxels, 100.0 * r.culledFraction,
                 r.culledFraction < 1 ? r.backprojectSeconds * r.culledFraction / (1 - r.culledFraction) : 0.0);
  char filter[64];
  std::snprintf(filter, sizeof filter, r.filteredOnGpu ? "filter on the GPU" : "filter %.2f s", r.filterSeconds);
  std::fprintf(stderr,
               "backend %s%s: %s, backprojection %.2f s (%.2f G voxel-updates/s, %.1f projections/s), total %.2f s "
               "(%.1f projections/s)\n",
               r.backend.c_str(), r.shortScan ? " (short scan, Parker weights)" : "", filter, r.backprojectSeconds,
               r.gigaUpdatesPerSecond(), r.backprojectSeconds > 0 ? projections / r.backprojectSeconds : 0.0, r.totalSeconds,
               r.totalSeconds > 0 ? projections / r.totalSeconds : 0.0);
}

// From files to file: where the time went, and the stage that bounds it. The reading runs beside the reconstruction
// (the scheduler reads in chunks while the device works), the filter pool beside the backprojection; the GPU's start
// beside the reading. `total` runs from opening the projections to the renamed output.
void printFileSplit(const FdkReport& r, double gpuStartSeconds, double writeSeconds, double total, std::size_t projections) {
  const double upload = r.backprojectSeconds - r.readbackSeconds;
  const double other = std::max(0.0, total - gpuStartSeconds - r.setupSeconds - r.backprojectSeconds - writeSeconds);
  const std::pair<double, const char*> stages[] = {{r.readSeconds, "reading"},
                                                   {gpuStartSeconds, "the GPU's start"},
                                                   {r.setupSeconds, "setup"},
                                                   {std::max(r.filterSeconds, upload), r.filterWaitSeconds > 0.25 * upload
                                                                                            ? "reading and filtering"
                                                                                            : r.filteredOnGpu ? "the GPU's filter and backprojection"
                                                                                                              : "backprojection"},
                                                   {r.readbackSeconds, "readback"},
                                                   {writeSeconds, "writing"}};
  const auto bound = std::max_element(std::begin(stages), std::end(stages), [](auto& a, auto& b) { return a.first < b.first; });
  std::fprintf(stderr,
               "file to file %.2f s (%.1f projections/s): read %.2f (beside the reconstruction), GPU start %.2f, setup %.2f, filter %s, "
               "upload and backprojection %.2f (of which waiting for projections read%s %.2f), readback %.2f, write %.2f, other %.2f (of "
               "which waiting for the output's memory %.2f) s; bound by %s\n",
               total, projections / total, r.readSeconds, gpuStartSeconds, r.setupSeconds,
               r.filteredOnGpu ? "on the GPU" : (std::to_string(r.filterSeconds).substr(0, 4) + " (beside the GPU)").c_str(), upload,
               r.filteredOnGpu ? "" : " and filtered", r.filterWaitSeconds, r.readbackSeconds, writeSeconds, other, r.pageInWaitSeconds,
               bound->second);
}

// ---- phantom ----
struct PhantomCommand {
  std::string output;
  ScanOptions scan;
  PhantomOptions phantom;
  VolumeOptions volume;
  bool groundTruth = false, overwrite = false, quiet = false;
  int threads = 0;

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("phantom", "Simulate a cone-beam scan of the 3D Shepp-Logan phantom");
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
  void run() const {
    const Geometry geometry = scan.geometry();
    // A detector in front of the isocentre cuts every ray before the phantom: all-zero projections.
    if (!(scan.sdd > scan.sid))
      throw UsageError("--sdd: expected more than --sid (the detector behind the object), found --sdd " +
                       std::to_string(scan.sdd) + " with --sid " + std::to_string(scan.sid));
    checkScanBounds(geometry, "phantom");
    const Phantom p = phantom.make();
    const fs::path dir(output);
    const fs::path geometryPath = dir / "geometry.xml", projectionsPath = dir / "projections.mha", truthPath = dir / "phantom.mha";
    // Check every output before writing any, so a refusal leaves nothing half-written.
    checkOutputDirectory(output, "--output");
    for (const fs::path& f : {geometryPath, projectionsPath}) refuseToOverwrite(f.string(), overwrite);
    if (groundTruth) refuseToOverwrite(truthPath.string(), overwrite);
    const VolumeGrid grid = groundTruth ? volume.grid() : VolumeGrid{};
    // The projections in memory, the simulated batch and the file's copy; the ground truth twice.
    const std::uint64_t projectionBytes = std::uint64_t{4} * geometry.detector.nu * geometry.detector.nv * geometry.size();
    checkJobMemory("phantom", "--detector " + scan.detector + " with --projections " + std::to_string(scan.projections),
                   2 * projectionBytes + (groundTruth ? 2 * 4 * grid.voxelCount() : 0));
    RunOutputs outputs;  // nothing of a failed or interrupted run stays
    if (!fs::exists(dir)) outputs.track(dir.string());
    fs::create_directories(dir);
    ProjectionOptions options;
    options.supersample = phantom.supersample;
    options.noiseI0 = phantom.noiseI0;
    options.seed = phantom.seed;
    options.threads = threads;
    if (!quiet) std::cerr << "simulating " << geometry.size() << " projections of " << geometry.detector.nu << " x "
                          << geometry.detector.nv << " pixels\n";
    // In batches of views, so long simulations show progress.
    Image projections({geometry.detector.nu, geometry.detector.nv, static_cast<int>(geometry.size())},
                      {geometry.detector.spacingU, geometry.detector.spacingV, 1.0},
                      {geometry.detector.originU, geometry.detector.originV, 0.0});
    Progress progress("phantom", geometry.size(), "proj", !quiet);
    constexpr std::size_t kBatch = 16;
    for (std::size_t first = 0; first < geometry.size(); first += kBatch) {
      const std::size_t last = std::min(geometry.size(), first + kBatch);
      Geometry part;
      part.detector = geometry.detector;
      part.views.assign(geometry.views.begin() + first, geometry.views.begin() + last);
      ProjectionOptions partOptions = options;
      partOptions.seed = options.seed + first;  // distinct noise per batch, reproducible
      const Image simulated = projectPhantom(p, part, partOptions);
      std::copy(simulated.data.begin(), simulated.data.end(), projections.slice(static_cast<int>(first)));
      progress.update(last);
    }
    progress.finish();
    Image truth;
    if (groundTruth) truth = voxelizePhantom(p, grid, 2, threads);
    checkFiniteValues(projections, "phantom", "simulated projection", kMaxProjectionValue);
    for (const fs::path& f : {geometryPath, projectionsPath, truthPath}) outputs.track(f.string());
    writeRtkGeometry(geometryPath.string(), geometry.circular, overwrite);
    writeMetaImage(projectionsPath.string(), projections, overwrite);
    if (groundTruth) writeMetaImage(truthPath.string(), truth, overwrite);
    outputs.keep();
    if (!quiet) std::cerr << "wrote " << geometryPath.string() << ", " << projectionsPath.string()
                          << (groundTruth ? ", " + truthPath.string() : "") << '\n';
  }
};

// ---- fdk ----
struct FdkCommand {
  std::string geometryPath, projectionsPath, path, regexp, output, backend = "auto", filter = "ram-lak", flat, dark, slices,
      sliceRange, window = "auto", roi, roiStencil = "slice", densityRange, gpu = "0", gpuMemory, scratch, filterOn = "auto";
  double densityAfter = 0.25;
  bool stream = false;
  std::vector<std::string> sliceSpecs;
  double cutoff = 1.0, hann = 0.0, i0 = 0.0;
  bool noShortScan = false, overwrite = false, quiet = false, retune = false;
  int threads = 0;
  std::size_t batch = 32;
  VolumeOptions volume;

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("fdk", "Reconstruct a volume from cone-beam projections (FDK)");
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file")->required();
    c->add_option("--projections,-p", projectionsPath,
                  "Projections: a MetaImage or TIFF stack, a directory of MetaImage or TIFF files, or a glob such as 'scan/*.tif'");
    c->add_option("--path", path, "rtkfdk style: directory of projection files (with --regexp)");
    c->add_option("--regexp", regexp, "rtkfdk style: regular expression the projection file names match (with --path)");
    c->add_option("--output,-o", output, "Output volume (.mha, .mhd, or .tif: float32 pages Fiji reads in mm)")->required();
    volume.add(c);
    c->add_option("--backend", backend,
                  "Backprojector: cpu, graphics (OpenGL graphics pipeline, AG-GPU), graphics-mp (its fragment-only variant), "
                  "compute (OpenGL compute shader), cuda (where built), or auto (the fastest measured on this GPU, once per device, "
                  "driver and volume size class, remembered in $XDG_CACHE_HOME/glrecon/backends.txt; cpu on a software renderer)")
        ->capture_default_str();
    c->add_option("--window", window,
                  "GPU backends: projections per pass: a number, max (the device's limit) or auto (measured on the first passes "
                  "once per device, driver and problem size, then remembered in $XDG_CACHE_HOME/glrecon/windows.txt)")
        ->capture_default_str();
    c->add_flag("--retune", retune,
                "With --window auto or --backend auto: measure again even where the window or backend cache has an answer");
    c->add_option("--gpu", gpu,
                  "GPU backends: device index (EGL for the GL backends, CUDA for cuda; see glrecon devices), a list such as 0,1 "
                  "(slabs of the volume handed out to each; a device may repeat) or all")
        ->capture_default_str();
    c->add_option("--gpu-memory", gpuMemory,
                  "Cap on the memory one device may use, e.g. 8G or 512M: a larger volume is reconstructed in slabs of y rows "
                  "(without it: slabs only when the volume does not fit the device's free memory)");
    c->add_option("--scratch", scratch,
                  "Directory for the filtered projections of a slab reconstruction when they do not fit in memory");
    c->add_option("--roi", roi,
                  "Reconstruct only a region (outside: 0): fov, fov-cylinder, cylinder:X,Z,R,Y0,Y1, box:X0,Y0,Z0,X1,Y1,Z1, sphere:X,Y,Z,R "
                  "(mm; rotation axis y) or a binary mask .mha on the output grid");
    c->add_option("--roi-stencil", roiStencil, "graphics: slice (a stencil mask per slice) or substack (the paper's 8 shared bits)")
        ->capture_default_str();
    c->add_option("--density-range", densityRange,
                  "Heuristic (off by default): after --density-after of the projections, stop updating voxels whose value "
                  "(scaled to the whole scan) lies outside LOW:HIGH widened by MARGIN; see README");
    c->add_option("--density-after", densityAfter, "Fraction of the projections applied before --density-range judges")->capture_default_str();
    c->add_option("--filter", filter, "Ramp window: ram-lak, shepp-logan, cosine, hamming, hann")->capture_default_str();
    c->add_option("--cutoff", cutoff, "Window cut-off as a fraction of the Nyquist frequency (0, 1]")->capture_default_str();
    c->add_option("--hann", hann, "rtkfdk's option: Hann window with this cut-off (same as --filter hann --cutoff F)");
    c->add_option("--filter-on", filterOn,
                  "Where the filter runs: auto (on the GPU for cuda, compute and graphics on a hardware GPU, also with --stream, "
                  "else on a CPU thread pool with FFTW), cpu, or gpu (an error where it cannot)")
        ->capture_default_str();
    c->add_flag("--no-short-scan", noShortScan, "Do not apply Parker weights to a scan shorter than 360 degrees");
    c->add_flag("--stream", stream,
                "Run as a pipeline: read projections in order, filter on a thread pool, backproject as they come; reports the "
                "latency after the last projection");
    c->add_option("--i0", i0, "Projections are raw intensities: convert with -ln(I / I0)");
    c->add_option("--flat", flat, "Projections are raw intensities: flat-field image(s) for -ln((I-dark)/(flat-dark))");
    c->add_option("--dark", dark, "Dark-field image(s) subtracted from projections and flat field");
    c->add_option("--slices", slices, "Also write PNG slices into this directory (default: central axial, coronal, sagittal)");
    c->add_option("--slice", sliceSpecs, "Slice to write with --slices: AXIS:INDEX (x, y or z; y slices are axial), repeatable");
    c->add_option("--slice-range", sliceRange, "Grey range LOW:HIGH of the PNG slices (default: 0.5 and 99.5 percentiles)");
    c->add_option("--threads", threads, "CPU threads (0: all)")->capture_default_str();
    c->add_option("--batch", batch, "Projections filtered and backprojected together")->capture_default_str();
    c->add_flag("--overwrite", overwrite, "Replace existing output files");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->callback([this] { run(); });
  }

  void run() const {
    FdkOptions options;
    options.filter.window = parseRampWindow(filter);
    options.filter.cutoff = cutoff;
    if (hann > 0.0) {
      options.filter.window = RampWindow::Hann;
      options.filter.cutoff = hann;
    }
    options.filter.shortScan = !noShortScan;
    options.filterOn = parseFilterPlace(filterOn);
    options.backend = parseBackend("--backend", backend);
    options.gpus = parseGpuList("--gpu", gpu, backend);
    options.gpu = options.gpus.front();
    if (options.gpus.size() == 1) options.gpus.clear();
    if (!gpuMemory.empty()) options.gpuMemory = parseByteSize("--gpu-memory", gpuMemory);
    options.scratch = scratch;
    if (!scratch.empty()) checkOutputDirectory(scratch, "--scratch");
    if (window == "max") {
      options.window = kMaximumWindow;
    } else if (window != "auto") {
      const double w = parseList("--window", window, 1)[0];
      if (w < 1 || w > 4096 || w != std::floor(w))
        throw UsageError("--window: expected a whole number from 1 to 4096, max or auto, found '" + window + "'");
      options.window = static_cast<int>(w);
    }
    options.rememberWindow = true;
    options.retune = retune;
    options.threads = threads;
    options.batch = batch;
    options.progress = !quiet;
    options.roi = roi;
    if (roiStencil != "slice" && roiStencil != "substack")
      throw UsageError("--roi-stencil: expected slice or substack, found '" + roiStencil + "'");
    options.substackStencil = roiStencil == "substack";
    if (!densityRange.empty()) {
      const auto parts = parseList("--density-range", [&] {
        std::string t = densityRange;
        std::replace(t.begin(), t.end(), ':', ',');
        return t;
      }(), std::count(densityRange.begin(), densityRange.end(), ':') + 1);
      if (parts.size() < 2 || parts.size() > 3)
        throw UsageError("--density-range: expected LOW:HIGH or LOW:HIGH:MARGIN, found '" + densityRange + "'");
      options.densityKill = {true, parts[0], parts[1], parts.size() == 3 ? parts[2] : 0.0, densityAfter};
    }
    const VolumeGrid grid = volume.grid();
    if (!dark.empty() && flat.empty() && !(i0 > 0))
      throw UsageError("--dark: expected together with --flat or --i0");
    const fs::path outputPath(output);
    if (projectionsPath.empty() == (path.empty() && regexp.empty()))
      throw UsageError("fdk: expected either --projections or --path with --regexp");
    if (projectionsPath.empty() && (path.empty() || regexp.empty()))
      throw UsageError("fdk: --path and --regexp go together");
    std::vector<SliceSpec> chosen;
    for (const std::string& spec : sliceSpecs) chosen.push_back(parseSliceSpec(spec));
    if (!chosen.empty() && slices.empty()) throw UsageError("--slice: expected together with --slices DIR");
    if (!sliceRange.empty() && slices.empty()) throw UsageError("--slice-range: expected together with --slices DIR");
    // Parsed now, so a bad range is refused before the reconstruction.
    const std::pair<double, double> fixedRange = sliceRange.empty() ? std::pair(0.0, 0.0) : parseRange("--slice-range", sliceRange);
    if (stream && (!flat.empty() || !dark.empty() || i0 > 0 || !densityRange.empty()))
      throw UsageError("--stream: expected projections as line integrals, without --i0/--flat/--dark/--density-range (not "
                       "supported in the pipeline yet)");

    // Every output is checked before the reconstruction: a bad name or directory costs nothing.
    checkOutputFile(output, {".mha", ".mhd", ".tif", ".tiff"}, overwrite, "--output");
    std::string extension = outputPath.extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
    if (extension == ".mhd") refuseToOverwrite(fs::path(outputPath).replace_extension(".raw").string(), overwrite);
    std::vector<std::pair<fs::path, SliceSpec>> pngs;
    if (!slices.empty()) {
      checkOutputDirectory(slices, "--slices");
      const std::string stem = outputPath.stem().string() + "_";
      if (chosen.empty())
        for (const char* view : {"axial", "coronal", "sagittal"}) refuseToOverwrite((fs::path(slices) / (stem + view + ".png")).string(), overwrite);
      for (const SliceSpec& spec : chosen) {
        const int a = axisNumber(spec.axis);
        const int index = spec.index.value_or(grid.size[a] / 2);
        if (index >= grid.size[a])
          throw UsageError("--slice: expected an index from 0 to " + std::to_string(grid.size[a] - 1) + " along " +
                           axisName(spec.axis) + ", found " + std::to_string(index));
        const fs::path png = fs::path(slices) / (stem + axisName(spec.axis) + std::to_string(index) + ".png");
        refuseToOverwrite(png.string(), overwrite);
        pngs.push_back({png, spec});
      }
    }
    // The side note a region or the density kill writes beside the volume.
    const std::string note = output + ".txt";
    if (!roi.empty() || !densityRange.empty()) refuseToOverwrite(note, overwrite);

    const std::vector<CircularParams> params = readRtkGeometry(geometryPath);
    RunOutputs outputs;  // volume, note and slices: all or nothing
    const std::string projectionsName = projectionsPath.empty() ? path : projectionsPath;
    // The projections are opened (every header, the first chunk read and checked) on a thread of their own while the
    // devices open here: a tenth of a second for OpenGL's first context, a fifth for CUDA's (on its own thread).
    trace("fdk: opening the projections and the devices");
    const auto start = std::chrono::steady_clock::now();
    LineIntegralSource* converted = nullptr;
    auto opening = std::async(std::launch::async, [&]() -> std::unique_ptr<ProjectionSource> {
      auto files = openProjectionFiles(projectionsPath.empty() ? listProjectionFiles(path, regexp) : listProjectionFiles(projectionsPath));
      if (flat.empty() && i0 <= 0) return files;
      auto wrapped = std::make_unique<LineIntegralSource>(std::move(files), flat.empty() ? Image{} : readProjectionStack(flat),
                                                          dark.empty() ? Image{} : readProjectionStack(dark), i0, flat, dark);
      converted = wrapped.get();
      return wrapped;
    });
    auto session = std::make_shared<DeviceSession>();
    session->open(options.backend, options.gpu);
    trace("fdk: devices opened");
    const std::unique_ptr<ProjectionSource> source = opening.get();
    trace("fdk: projections opened");
    const Geometry geometry = Geometry::fromCircular(params, source->detector());
    // The output file is made now, and its pages put into the page cache by background threads while the projections
    // are read and reconstructed: the final write is then a parallel copy (VolumeFileWriter::preparePages says why).
    outputs.track(output);
    if (extension == ".mhd") outputs.track(fs::path(outputPath).replace_extension(".raw").string());
    VolumeFileSink sink(output, grid, overwrite, options.threads);
    options.streaming = stream;
    const FdkPlan plan = planFdk(geometry, grid, options, *source, session);
    trace("fdk: planned");
    if (!quiet) {
      std::cerr << "reconstructing " << grid.size[0] << " x " << grid.size[1] << " x " << grid.size[2] << " voxels from "
                << geometry.size() << " projections of " << geometry.detector.nu << " x " << geometry.detector.nv << '\n';
      if (!plan.slabs.slabs.empty()) std::cerr << describePlan(plan.slabs, plan.devices.size()) << '\n';
    }
    FdkReconstructor reconstructor(plan);
    const FdkReport report = reconstructor.run(*source, sink);
    if (converted && !quiet && (converted->stats().clampedLow || converted->stats().deadPixels))
      std::cerr << "intensity conversion: " << converted->stats().clampedLow << " pixels without signal clamped to transmission "
                << kMinimumTransmission << ", " << converted->stats().deadPixels << " pixels with flat <= dark set to 0\n";
    const std::string noteText = sideNote(report, grid, geometry.size());
    trace("fdk: reconstructed");
    const double writeSeconds = sink.commit();
    trace("fdk: written");
    const double fileToFileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    writeSideNote(noteText, outputs);
    if (!quiet) {
      printReport(report, geometry.size());
      if (stream) printStreamReport(report, geometry.size());
      for (const DeviceShare& d : report.devices)
        std::fprintf(stderr, "  device %d (%s): %d %s in %.2f s\n", d.gpu, d.description.c_str(), d.slabs, d.slabs == 1 ? "slab" : "slabs",
                     d.seconds);
      if (report.slabs > 1 && report.wholeUploadBytes > 0 && report.uploadedBytes > 0)
        std::fprintf(stderr, "  uploaded %s of projection rows (%.0f%% of whole projections for every slab)%s\n",
                     formatBytes(static_cast<std::uint64_t>(report.uploadedBytes)).c_str(), 100.0 * report.uploadedBytes / report.wholeUploadBytes,
                     report.scratchFile ? "; filtered projections in a scratch file" : "");
      printFileSplit(report, session->waitedSeconds(), writeSeconds, fileToFileSeconds, geometry.size());
      if (!noteText.empty()) std::cerr << noteText;
      std::cerr << "wrote " << output << (noteText.empty() ? "" : " and " + note) << '\n';
    }
    if (!slices.empty()) {
      // The volume is in the page cache (mapped) or in memory; a slab run's was never whole in memory: read back.
      const float* voxels = plan.slabs.slabs.empty() ? sink.volume() : nullptr;
      if (voxels) {
        Image volumeImage(grid);
        std::copy_n(voxels, grid.voxelCount(), volumeImage.data.begin());
        writeSlices(volumeImage, chosen.empty(), pngs, fixedRange, outputs);
      } else {
        checkJobMemory("fdk", "--slices (the volume read back)", std::uint64_t{4} * grid.voxelCount());
        writeSlices(readImage(output), chosen.empty(), pngs, fixedRange, outputs);
      }
    }
    outputs.keep();
  }

  // A region leaves zeros outside it, the density kill scales partial sums: a side note beside the volume says
  // so (viewers ignore it). "" when there is nothing to say.
  std::string sideNote(const FdkReport& report, const VolumeGrid& grid, std::size_t projections) const {
    std::string text;
    if (!report.region.empty() && !roi.empty())
      text += "glrecon: voxels outside the region '" + report.region + "' are 0 (not reconstructed); " +
              std::to_string(report.regionVoxels) + " of " + std::to_string(grid.voxelCount()) + " voxels are inside.\n";
    if (report.killedVoxels)
      text += "glrecon: density-range kill: " + std::to_string(report.killedVoxels) + " voxels stopped after " +
              std::to_string(report.killedAfter) + " of " + std::to_string(projections) +
              " projections, their partial sums scaled to the whole scan (a heuristic: see README).\n";
    return text;
  }

  void writeSideNote(const std::string& text, RunOutputs& outputs) const {
    if (text.empty()) return;
    const std::string note = output + ".txt";
    outputs.track(note);
    AtomicOutput out(note, overwrite);
    writeFileBytes(note, out.temporaryPath(), text.data(), text.size());
    out.commit();
  }

  // --slices: the central three (`central`) or the chosen ones, in the grey range given or the percentiles.
  void writeSlices(const Image& result, bool central, const std::vector<std::pair<fs::path, SliceSpec>>& pngs,
                   std::pair<double, double> fixedRange, RunOutputs& outputs) const {
    if (!fs::exists(slices)) outputs.track(slices);
    fs::create_directories(slices);
    const auto range = sliceRange.empty() ? percentileRange(result, 0.5, 99.5) : fixedRange;
    if (central) writeCentralSlices(result, slices, fs::path(output).stem().string() + "_", range, overwrite, {}, &outputs);
    for (const auto& [png, spec] : pngs) {
      const int index = spec.index.value_or(result.size[axisNumber(spec.axis)] / 2);
      outputs.track(png.string());
      writeSlicePng(png.string(), result, spec.axis, index, range.first, range.second, overwrite);
      if (!quiet) std::cerr << "wrote " << png.string() << '\n';
    }
  }

  static std::string describePlan(const SlabPlan& plan, std::size_t devices) {
    return "slabs: " + std::to_string(plan.slabs.size()) + " of " + std::to_string(plan.rowsPerSlab) + " rows of y, " +
           (plan.budgetBytes == UINT64_MAX ? std::string("device memory not limited") : formatBytes(plan.budgetBytes) + " per device") +
           (devices > 1 ? ", " + std::to_string(devices) + " devices" : "");
  }
};

// ---- slice ----
struct SliceCommand {
  std::string input, output, axis = "y", range;
  int index = -1;
  bool overwrite = false;

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("slice", "Write one slice of a volume as a PNG image");
    c->add_option("--input,-i", input, "Volume (.mha, .mhd or .tif)")->required();
    c->add_option("--output,-o", output, "PNG file")->required();
    c->add_option("--axis", axis, "x, y or z (y slices are axial: x across, z up)")->capture_default_str();
    c->add_option("--index", index, "Voxel index along the axis (default: the central slice)");
    c->add_option("--range", range, "Grey range LOW:HIGH, i.e. level -/+ window/2 (default: 0.5 and 99.5 percentiles)");
    c->add_flag("--overwrite", overwrite, "Replace an existing PNG");
    c->callback([this] { run(); });
  }
  void run() const {
    const SliceAxis a = parseSliceAxis(axis);
    const auto r = range.empty() ? std::optional<std::pair<double, double>>{} : parseRange("--range", range);
    checkOutputFile(output, {".png"}, overwrite, "--output");
    const Image volume = readImage(input);
    const int i = index >= 0 ? index : volume.size[axisNumber(a)] / 2;
    const auto grey = r ? *r : percentileRange(volume, 0.5, 99.5);
    writeSlicePng(output, volume, a, i, grey.first, grey.second, overwrite);
    std::cerr << "wrote " << output << " (" << axis << " = " << i << ", grey " << grey.first << " to " << grey.second << ")\n";
  }
};

// ---- devices ----
struct DevicesCommand {
  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("devices", "List the GPUs (EGL devices) the GPU backends can use, for --gpu");
    c->callback([] { run(); });
  }
  static void run() {
    for (const gl::DeviceInfo& d : gl::Context::listDevices()) {
      std::printf("%d: %s%s%s%s", d.index, d.renderer.c_str(), d.version.empty() ? "" : " | OpenGL ", d.version.c_str(),
                  d.software ? " (software renderer)" : "");
      if (d.varyingComponents > 0)
        std::printf(" | largest graphics window %d (%d varying components)", d.varyingComponents / 3, d.varyingComponents);
      std::printf("\n");
    }
  }
};

// ---- demo ----
struct DemoCommand {
  std::string output = "glrecon-demo";
  int size = 128, projections = 360, detector = 256, threads = 0;
  bool quiet = false, view = false;
  static constexpr const char* kMarker = ".glrecon-demo";

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("demo", "Simulate a Shepp-Logan scan, reconstruct it, and write the volume and PNG slices");
    c->add_option("--output,-o", output, "Output directory (re-running the demo replaces its own earlier output)")
        ->capture_default_str();
    c->add_option("--size", size, "Volume size in voxels per axis (covering 256 mm)")->capture_default_str();
    c->add_option("--projections", projections, "Number of projections over 360 degrees")->capture_default_str();
    c->add_option("--detector", detector, "Detector pixels per axis (covering 512 mm)")->capture_default_str();
    c->add_option("--threads", threads, "CPU threads (0: all)")->capture_default_str();
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->add_flag("--view", view, "Afterwards, reconstruct the scan again live in a window (glrecon view)");
    c->callback([this] { run(); });
  }

  void run() const {
    if (size < 8 || detector < 8 || projections < 8)
      throw UsageError("demo: --size, --detector and --projections: expected at least 8 each");
    // Projections (simulated and read back) and four volumes (reconstruction, its copies, the phantom).
    checkJobMemory("demo", "--size " + std::to_string(size) + ", --detector " + std::to_string(detector),
                   std::uint64_t{8} * detector * detector * projections + std::uint64_t{16} * size * size * size);
    const fs::path dir(output);
    // The demo may replace what an earlier demo wrote (marked), never anything else.
    const bool ours = fs::exists(dir / kMarker);
    if (fs::exists(dir) && !ours && !fs::is_empty(dir))
      throwInputError(output, "demo output directory", "a new or empty directory (or one an earlier demo wrote)",
                      "a directory with other files");
    fs::create_directories(dir / "scan");
    std::ofstream(dir / kMarker) << "written by glrecon demo\n";

    // A C-arm-like scan: 1000 mm to the isocentre, 1536 mm to a 512 mm flat panel.
    const Geometry geometry = sampleScan(projections, detector);
    const Phantom phantom = Phantom::sheppLogan();
    ProjectionOptions popt;
    popt.threads = threads;
    if (!quiet) std::cerr << "1/3 simulating " << projections << " projections of the Shepp-Logan phantom\n";
    const Image simulated = projectPhantom(phantom, geometry, popt);
    const std::string geometryPath = (dir / "scan" / "geometry.xml").string(), projectionsPath = (dir / "scan" / "projections.mha").string();
    writeRtkGeometry(geometryPath, geometry.circular, true);
    writeMetaImage(projectionsPath, simulated, true);

    // Reconstruct from the files, as a user would with `glrecon fdk`.
    if (!quiet) std::cerr << "2/3 reconstructing " << size << "^3 voxels\n";
    const Image projectionsRead = readProjectionStack(projectionsPath);
    const Geometry geometryRead = Geometry::fromCircular(readRtkGeometry(geometryPath), detectorLayoutOf(projectionsRead));
    const VolumeGrid grid = VolumeGrid::centred({size, size, size}, glm::dvec3(256.0 / size));
    FdkOptions options;
    options.threads = threads;
    options.progress = !quiet;
    FdkReport report;
    const Image volume = reconstructFdk(geometryRead, projectionsRead, grid, options, &report);
    writeMetaImage((dir / "volume.mha").string(), volume, true);

    if (!quiet) std::cerr << "3/3 comparing with the phantom\n";
    const Image truth = voxelizePhantom(phantom, grid, 2, threads);
    writeMetaImage((dir / "phantom.mha").string(), truth, true);
    // The soft-tissue window shows the low-contrast ellipsoids (densities 1.00 to 1.06 inside the skull).
    // Slices through y = -32 mm, the plane of most of the phantom's small ellipsoids.
    const glm::dvec3 features(0.0, -0.25 * 128.0, 0.0);
    writeCentralSlices(volume, dir, "volume_", {0.95, 1.10}, true, features);
    writeCentralSlices(truth, dir, "phantom_", {0.95, 1.10}, true, features);
    double sum = 0.0;
    std::size_t n = 0;
    for (std::size_t i = 0; i < volume.data.size(); ++i) {
      const double d = volume.data[i] - truth.data[i];
      sum += d * d;
      ++n;
    }
    printReport(report, geometry.size());
    std::printf("demo: reconstructed %d^3 voxels from %d projections; RMSE against the voxelized phantom %.4f "
                "(densities 0 to 2); output in %s/\n",
                size, projections, std::sqrt(sum / n), output.c_str());
    if (view) viewFiles(geometryPath, projectionsPath, size, 256.0 / size);
  }
};

// bench lives in bench.cpp; its up-front checks are added here, with the other commands' validation.
// Unknown backend names are refused before anything runs (exit 2); a known backend that cannot run on this
// machine (no CUDA, no GL device) is still reported in the table while the others run.
void addBenchChecks(CLI::App& app) {
  CLI::App* bench = app.get_subcommand("bench");
  static bool overwrite = false;
  bench->add_flag("--overwrite", overwrite, "Replace bench.json and bench.png in the --output directory");
  bench->get_option("--backends")->check(CLI::Validator(
      [](std::string& text) -> std::string {
        std::stringstream in(text);
        std::string name;
        const std::vector<std::string> known = {"cpu", "graphics", "graphics-mp", "compute", "cuda"};
        while (std::getline(in, name, ','))
          if (std::find(known.begin(), known.end(), name) == known.end())
            return "expected backends among cpu, graphics, graphics-mp, compute, cuda, found '" + glrecon::quoted(name) + "'";
        return {};
      },
      "", "backends"));
  bench->get_option("--window")->check(CLI::Validator(
      [](std::string& text) -> std::string {
        std::stringstream in(text);
        std::string item;
        while (std::getline(in, item, ',')) {
          if (item == "max" || item == "auto") continue;
          char* end = nullptr;
          const double w = std::strtod(item.c_str(), &end);
          if (item.empty() || end != item.c_str() + item.size() || !(w >= 1 && w <= 4096) || w != std::floor(w))
            return "expected windows from 1 to 4096, max or auto, found '" + glrecon::quoted(item) + "'";
        }
        return {};
      },
      "", "windows"));
  bench->parse_complete_callback([bench] {
    const int size = bench->get_option("--size")->as<int>(), detector = bench->get_option("--detector")->as<int>(),
              projections = bench->get_option("--projections")->as<int>();
    // Filtered projections, the phantom, the reference and a result volume.
    checkJobMemory("bench", "--size " + std::to_string(size), std::uint64_t{8} * detector * detector * projections +
                                                                  std::uint64_t{16} * size * size * size);
    const CLI::Option* output = bench->get_option("--output");
    if (output->count() == 0) return;
    const std::string dir = output->as<std::string>();
    checkOutputDirectory(dir, "--output");
    for (const char* name : {"bench.json", "bench.png"}) refuseToOverwrite((fs::path(dir) / name).string(), overwrite);
  });
}

}  // namespace

Geometry sampleScan(int projections, int detector) {
  CircularScanSpec spec;  // sid 1000, sdd 1536 by default
  spec.projections = projections;
  spec.nu = spec.nv = detector;
  spec.spacingU = spec.spacingV = 512.0 / detector;
  return makeCircularScan(spec);
}

FileScan openFileScan(const std::string& geometryPath, const std::vector<std::string>& files) {
  FileScan scan;
  scan.source = openProjectionFiles(files);
  scan.geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), scan.source->detector());
  return scan;
}

VolumeGrid parseVolumeGrid(const std::string& size, const std::string& spacing, const std::string& origin) {
  const auto s = parseList("--size", size, 3);
  std::array<int, 3> n{};
  for (int a = 0; a < 3; ++a) {
    if (s[a] < 1 || s[a] != std::floor(s[a]) || s[a] > 65536)
      throw UsageError("--size: expected positive whole numbers of voxels, found '" + size + "'");
    n[a] = static_cast<int>(s[a]);
  }
  const auto sp = parseList("--spacing", spacing, 3);
  for (double v : sp)
    if (!(v > 0)) throw UsageError("--spacing: expected positive lengths in mm, found '" + spacing + "'");
  VolumeGrid grid = VolumeGrid::centred(n, {sp[0], sp[1], sp[2]});
  if (!origin.empty()) {
    const auto o = parseList("--origin", origin, 3);
    grid.origin = {o[0], o[1], o[2]};
  }
  return grid;
}

// The library names request fields in its messages (glrecon/errors.h); the command line shows them as its options:
// camelCase becomes --kebab-case (gpuMemory: --gpu-memory, noiseI0: --noise-i0).
std::string optionName(const std::string& field) {
  std::string option = "--";
  for (char c : field) {
    if (c >= 'A' && c <= 'Z') {
      option += '-';
      option += static_cast<char>(c - 'A' + 'a');
    } else {
      option += c;
    }
  }
  return option;
}

namespace {

// GL_OUT_OF_MEMORY from a driver: say what it means.
std::string explainGlError(const std::string& text) {
  if (text.find("0x505") == std::string::npos) return "";
  return " (GL_OUT_OF_MEMORY: the GPU has too little memory for this volume; try a smaller --size or --backend cpu)";
}
}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"glrecon: cone-beam CT reconstruction (FDK) with a CPU reference backend.\n"
               "Geometry and projections follow RTK's conventions, so RTK files work as they are."};
  app.set_version_flag("--version", "glrecon 0.1.0");
  app.require_subcommand(1);
  PhantomCommand phantom;
  FdkCommand fdk;
  DemoCommand demo;
  SliceCommand slice;
  DevicesCommand devices;
  devices.add(app);
  addBenchCommand(app);
  addBenchChecks(app);
  addLiveCommands(app);
  addIterativeCommands(app);
  phantom.add(app);
  fdk.add(app);
  demo.add(app);
  slice.add(app);
  addOptionChecks(app);
  // Outputs written in this run are staged or temporary until complete: a signal removes them.
  installCleanupSignalHandlers();
  if (const std::string unknown = unknownSubcommand(app, argc, argv); !unknown.empty()) {
    std::cerr << "glrecon: usage error: " << unknown << "\nRun with --help for more information.\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const UsageError& e) {
    std::cerr << "glrecon: usage error: " << e.render(optionName) << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "glrecon: error: " << e.render(optionName) << explainGlError(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // What the budget checks did not foresee (they count the main arrays only).
    std::cerr << "glrecon: error: out of memory: the job needs more than the " << formatBytes(availableHostMemory())
              << " available; try a smaller --size, --detector or fewer projections\n";
    return 1;
  } catch (const std::length_error&) {
    std::cerr << "glrecon: error: out of memory: a size computed from the input exceeds what can be allocated; check "
                 "--size, --detector and the input headers\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "glrecon: error: " << e.path1().string() << ": " << e.code().message() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "glrecon: error: " << e.what() << explainGlError(e.what()) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace glrecon::app
