// glrecon fdk: a volume from cone-beam projection files (FDK), written to a file, with optional PNG slices and a side
// note; every option is checked before the reconstruction, the projections are opened beside the devices.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>

#include "app/command.h"
#include "app/fdk_report.h"
#include "app/options.h"
#include "app/slice_files.h"
#include "glrecon/cluster.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/preprocess.h"
#include "glrecon/progress.h"
#include "glrecon/sink.h"
#include "glrecon/source.h"
#include "recon/device_session.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

// The projections and the devices, opened side by side.
struct Opened {
  std::unique_ptr<ProjectionSource> source;
  LineIntegralSource* converted = nullptr;  // the source, where it converts intensities
  std::shared_ptr<DeviceSession> session;
};

// A chosen --slice and its file.
using SlicePng = std::pair<fs::path, SliceSpec>;

class FdkCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("fdk", "Reconstruct a volume from cone-beam projections (FDK)");
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file")->required();
    c->add_option("--projections,-p", projectionsPath,
                  "Projections: a MetaImage or TIFF stack, a directory of MetaImage or TIFF files, or a glob such as 'scan/*.tif'");
    c->add_option("--path", path, "rtkfdk style: directory of projection files (with --regexp)");
    c->add_option("--regexp", regexp, "rtkfdk style: regular expression the projection file names match (with --path)");
    c->add_option("--output,-o", output, "Output volume (.mha, .mhd, or .tif: float32 pages Fiji reads in mm)")->required();
    volume.add(c);
    addDeviceOptions(c);
    addRegionOptions(c);
    addFilterOptions(c);
    c->add_flag("--stream", stream,
                "Run as a pipeline: read projections in order, filter on a thread pool, backproject as they come; reports the "
                "latency after the last projection");
    c->add_option("--i0", i0, "Projections are raw intensities: convert with -ln(I / I0)");
    c->add_option("--flat", flat, "Projections are raw intensities: flat-field image(s) for -ln((I-dark)/(flat-dark))");
    c->add_option("--dark", dark, "Dark-field image(s) subtracted from projections and flat field");
    c->add_option("--slices", slices, "Also write PNG slices into this directory (default: central axial, coronal, sagittal)");
    c->add_option("--slice", sliceSpecs, "Slice to write with --slices: AXIS:INDEX (x, y or z; y slices are axial), repeatable");
    sliceRange.add(c, "--slice-range", "Grey range LOW:HIGH of the PNG slices (default: 0.5 and 99.5 percentiles)");
    c->add_option("--threads", threads, "CPU threads (0: all)")->capture_default_str();
    c->add_option("--batch", batch, "Projections filtered and backprojected together")->capture_default_str();
    c->add_flag("--overwrite", overwrite, "Replace existing output files");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->add_flag("--timeline", timeline, "After the run, each device's timeline (setup, slabs, readbacks, writes; under mpirun each rank's): what bounds several GPUs");
    c->callback([this] { run(); });
  }

 private:
  std::string geometryPath, projectionsPath, path, regexp, output, filter = "ram-lak", flat, dark, slices, roi, roiStencil = "slice",
      densityRange, gpuMemory, scratch, filterOn = "auto";
  VolumeGridOptions volume;
  BackendOption backend{"auto"};
  WindowOption window;
  GpuListOption gpu;
  RangeOption sliceRange;
  std::vector<std::string> sliceSpecs;
  double densityAfter = 0.25, cutoff = 1.0, hann = 0.0, i0 = 0.0;
  bool stream = false, noShortScan = false, overwrite = false, quiet = false, retune = false, timeline = false;
  int threads = 0, slabsPerRank = 4;
  std::string ranksPerDevice = "auto";
  CLI::Option* slabsPerRankOption = nullptr;
  std::size_t batch = 32;

  void addDeviceOptions(CLI::App* c) {
    backend.add(c,
                "Backprojector: cpu, graphics (OpenGL graphics pipeline, AG-GPU), graphics-mp (its fragment-only variant), "
                "compute (OpenGL compute shader), cuda (where built), or auto (the fastest measured on this GPU, once per device, "
                "driver and volume size class, remembered in $XDG_CACHE_HOME/glrecon/backends.txt; cpu on a software renderer)");
    window.add(c,
               "GPU backends: projections per pass: a number, max (the device's limit) or auto (measured on the first passes "
               "once per device, driver and problem size, then remembered in $XDG_CACHE_HOME/glrecon/windows.txt)");
    c->add_flag("--retune", retune,
                "With --window auto or --backend auto: measure again even where the window or backend cache has an answer");
    gpu.add(c,
            "GPU backends: device index (EGL for the GL backends, CUDA for cuda; see glrecon devices), a list such as 0,1 "
            "(slabs of the volume handed out to each; a device may repeat) or all");
    c->add_option("--gpu-memory", gpuMemory,
                  "Cap on the memory one device may use, e.g. 8G or 512M: a larger volume is reconstructed in slabs of y rows "
                  "(without it: slabs only when the volume does not fit the device's free memory)");
    slabsPerRankOption = c->add_option("--slabs-per-rank", slabsPerRank,
                                       "Under mpirun: at least this many slabs per rank (more even out ranks of different speeds; "
                                       "fewer, thicker slabs read fewer detector rows); a job of one rank runs as one process "
                                       "unless this is given")
                             ->capture_default_str();
    addRanksPerDeviceOption(c, ranksPerDevice);
    c->add_option("--scratch", scratch,
                  "Directory for the filtered projections of a slab reconstruction when they do not fit in memory");
  }

  void addRegionOptions(CLI::App* c) {
    c->add_option("--roi", roi,
                  "Reconstruct only a region (outside: 0): fov, fov-cylinder, cylinder:X,Z,R,Y0,Y1, box:X0,Y0,Z0,X1,Y1,Z1, sphere:X,Y,Z,R "
                  "(mm; rotation axis y) or a binary mask .mha on the output grid");
    c->add_option("--roi-stencil", roiStencil, "graphics: slice (a stencil mask per slice) or substack (the paper's 8 shared bits)")
        ->capture_default_str();
    c->add_option("--density-range", densityRange,
                  "Heuristic (off by default): after --density-after of the projections, stop updating voxels whose value "
                  "(scaled to the whole scan) lies outside LOW:HIGH widened by MARGIN; a heuristic, see docs/algorithms.md");
    c->add_option("--density-after", densityAfter, "Fraction of the projections applied before --density-range judges")->capture_default_str();
  }

  void addFilterOptions(CLI::App* c) {
    c->add_option("--filter", filter, "Ramp window: ram-lak, shepp-logan, cosine, hamming, hann")->capture_default_str();
    c->add_option("--cutoff", cutoff, "Window cut-off as a fraction of the Nyquist frequency (0, 1]")->capture_default_str();
    c->add_option("--hann", hann, "rtkfdk's option: Hann window with this cut-off (same as --filter hann --cutoff F)");
    c->add_option("--filter-on", filterOn,
                  "Where the filter runs: auto (on the GPU for cuda, compute and graphics on a hardware GPU, also with --stream, "
                  "else on a CPU thread pool with FFTW), cpu, or gpu (an error where it cannot)")
        ->capture_default_str();
    c->add_flag("--no-short-scan", noShortScan, "Do not apply Parker weights to a scan shorter than 360 degrees");
  }

  std::string notePath() const { return output + ".txt"; }
  // A .mhd output's data file beside it ("" for the other formats).
  std::string rawPath() const {
    std::string extension = fs::path(output).extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
    return extension == ".mhd" ? fs::path(output).replace_extension(".raw").string() : std::string();
  }

  void run() const {
    FdkOptions options = fdkOptions();
    // Under mpirun (glrecon/cluster.h): every rank runs this command; rank 0 makes the output and speaks. Ranks beyond
    // one per GPU of their host stand aside (RankRoles) and wait for the others. A job of one working rank has no other
    // to even out, so it runs as one process (one block, every GPU named, the projections streamed), as the iterative
    // methods' does: 1.37-1.41 s file to file against 1.49-1.62 s in four slabs at 1024^3 on an H100. Asking for
    // --slabs-per-rank keeps a lone rank's slabs (to measure what the ranks' machinery costs).
    // A cluster of several ranks, or a lone rank asked for its slabs, shares the work out; otherwise one process's plan.
    const auto sharesOut = [&](const Cluster* c) { return c && (c->size() > 1 || slabsPerRankOption->count() > 0); };
    Cluster* const joined = currentCluster();
    const std::size_t devicesGiven = options.gpus.size();
    if (sharesOut(joined) && !options.gpus.empty()) {
      // One device per rank: the ranks of a host share its devices out by their place on it.
      options.gpu = options.gpus[static_cast<std::size_t>(joined->localRank()) % options.gpus.size()];
      options.gpus.clear();
    }
    const RankRoles roles(joined, options.backend, options.gpu, devicesGiven, parseRanksPerDevice("--ranks-per-device", ranksPerDevice),
                          !quiet);
    if (roles.standsAside()) return;  // ~RankRoles waits for the working ranks
    Cluster* const working = roles.working();
    Cluster* const cluster = sharesOut(working) ? working : nullptr;
    options.cluster = cluster;
    const bool rankZero = !cluster || cluster->rank() == 0;
    const bool speak = !quiet && rankZero;
    const VolumeGrid grid = volume.grid();
    checkInputs();
    std::vector<SliceSpec> chosen;
    for (const std::string& spec : sliceSpecs) chosen.push_back(parseSliceSpec("--slice", spec));
    if (!chosen.empty() && slices.empty()) throw UsageError("--slice: expected together with --slices DIR");
    if (sliceRange.given() && slices.empty()) throw UsageError("--slice-range: expected together with --slices DIR");
    // Parsed now, so a bad range is refused before the reconstruction.
    const std::optional<std::pair<double, double>> fixedRange = sliceRange.range();
    if (stream && (!flat.empty() || !dark.empty() || i0 > 0 || !densityRange.empty()))
      throw UsageError("--stream: expected projections as line integrals, without --i0/--flat/--dark/--density-range (not "
                       "supported in the pipeline yet)");
    const std::vector<SlicePng> pngs = checkOutputs(grid, chosen);

    const std::vector<CircularParams> params = readRtkGeometry(geometryPath);
    RunOutputs outputs;  // volume, note and slices: all or nothing
    const auto start = std::chrono::steady_clock::now();
    const Opened opened = open(options);
    const Geometry geometry = Geometry::fromCircular(params, opened.source->detector());
    // The output file is made now, and its pages put into the page cache by background threads while the projections
    // are read and reconstructed: the final write is then a parallel copy (VolumeFileWriter::preparePages says why).
    // Under MPI rank 0 makes it and the other ranks write their slabs into it.
    if (rankZero) {
      outputs.track(output);
      if (!rawPath().empty()) outputs.track(rawPath());
    }
    // A cluster's rank 0 maps the file as one process does where every rank runs on its host (they share its page
    // cache): its slabs are read back into the file's pages rather than written with pwrite behind the file's lock.
    const bool ranksOnThisHost = !cluster || cluster->localSize() == cluster->size();
    std::unique_ptr<VolumeFileSink> made =
        rankZero ? std::make_unique<VolumeFileSink>(output, grid, overwrite, options.threads, /*mapped=*/ranksOnThisHost,
                                                    /*othersWrite=*/cluster && cluster->size() > 1)
                 : nullptr;
    if (cluster) {
      const std::string shared = cluster->broadcast(made ? made->temporaryData() : std::string());
      if (!made) made = std::make_unique<VolumeFileSink>(output, grid, VolumeFileWriter::JoinedFile{shared});
    }
    VolumeFileSink& sink = *made;
    options.streaming = stream;
    const FdkPlan plan = planFdk(geometry, grid, options, *opened.source, opened.session);
    trace("fdk: planned");
    if (speak) {
      std::cerr << "reconstructing " << grid.size[0] << " x " << grid.size[1] << " x " << grid.size[2] << " voxels from "
                << geometry.size() << " projections of " << geometry.detector.nu << " x " << geometry.detector.nv << '\n';
      if (!plan.slabs.slabs.empty()) std::cerr << describePlan(plan.slabs, plan.devices.size(), cluster ? cluster->size() : 0) << '\n';
    }
    FdkReconstructor reconstructor(plan);
    const FdkReport report = reconstructor.run(*opened.source, sink);
    if (cluster && !rankZero) {
      sink.commit();       // this rank's rows written back
      cluster->barrier();  // rank 0 renames the file once every rank's are
      return;
    }
    if (cluster) cluster->barrier();
    if (speak) printConversion(opened.converted);
    const std::string noteText = sideNote(report, grid, geometry.size(), !roi.empty());
    trace("fdk: reconstructed");
    const double writeSeconds = sink.commit();
    trace("fdk: written");
    const double fileToFileSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    writeSideNote(noteText, outputs);
    if (speak) printSummary(report, geometry.size(), opened.session->waitedSeconds(), writeSeconds, fileToFileSeconds, noteText);
    if (!slices.empty()) writeVolumeSlices(plan, sink, grid, chosen.empty(), pngs, fixedRange, outputs);
    outputs.keep();
  }

  // The options of the reconstruction itself, each parsed and checked.
  FdkOptions fdkOptions() const {
    FdkOptions options;
    options.filter.window = parseRampWindow(filter);
    options.filter.cutoff = cutoff;
    if (hann > 0.0) {
      options.filter.window = RampWindow::Hann;
      options.filter.cutoff = hann;
    }
    options.filter.shortScan = !noShortScan;
    options.filterOn = parseFilterPlace(filterOn);
    options.backend = backend.choice();
    options.gpus = gpu.devices(backend.text);
    options.gpu = options.gpus.front();
    if (options.gpus.size() == 1) options.gpus.clear();
    if (!gpuMemory.empty()) options.gpuMemory = parseByteSize("--gpu-memory", gpuMemory);
    options.scratch = scratch;
    options.slabsPerRank = slabsPerRank;
    if (!scratch.empty()) checkOutputDirectory(scratch, "--scratch");
    options.window = window.window();
    options.rememberWindow = true;
    options.retune = retune;
    options.threads = threads;
    options.batch = batch;
    options.progress = !quiet;
    options.roi = roi;
    if (roiStencil != "slice" && roiStencil != "substack")
      throw UsageError("--roi-stencil: expected slice or substack, found '" + roiStencil + "'");
    options.substackStencil = roiStencil == "substack";
    if (!densityRange.empty()) options.densityKill = densityKill();
    return options;
  }

  // --density-range LOW:HIGH or LOW:HIGH:MARGIN with --density-after.
  DensityKill densityKill() const {
    const auto parts = parseList("--density-range", [&] {
      std::string t = densityRange;
      std::replace(t.begin(), t.end(), ':', ',');
      return t;
    }(), std::count(densityRange.begin(), densityRange.end(), ':') + 1);
    if (parts.size() < 2 || parts.size() > 3)
      throw UsageError("--density-range: expected LOW:HIGH or LOW:HIGH:MARGIN, found '" + densityRange + "'");
    return {true, parts[0], parts[1], parts.size() == 3 ? parts[2] : 0.0, densityAfter};
  }

  void checkInputs() const {
    if (!dark.empty() && flat.empty() && !(i0 > 0)) throw UsageError("--dark: expected together with --flat or --i0");
    if (projectionsPath.empty() == (path.empty() && regexp.empty()))
      throw UsageError("fdk: expected either --projections or --path with --regexp");
    if (projectionsPath.empty() && (path.empty() || regexp.empty())) throw UsageError("fdk: --path and --regexp go together");
  }

  // Every output is checked before the reconstruction: a bad name or directory costs nothing. Returns the chosen slices' files.
  std::vector<SlicePng> checkOutputs(const VolumeGrid& grid, const std::vector<SliceSpec>& chosen) const {
    checkOutputFile(output, {".mha", ".mhd", ".tif", ".tiff"}, overwrite, "--output");
    if (!rawPath().empty()) refuseToOverwrite(rawPath(), overwrite);
    std::vector<SlicePng> pngs;
    if (!slices.empty()) {
      checkOutputDirectory(slices, "--slices");
      const std::string stem = fs::path(output).stem().string() + "_";
      if (chosen.empty())
        for (const char* view : {"axial", "coronal", "sagittal"}) refuseToOverwrite((fs::path(slices) / (stem + view + ".png")).string(), overwrite);
      for (const SliceSpec& spec : chosen) {
        const int index = sliceIndex("--slice", spec, grid.size);
        const fs::path png = fs::path(slices) / (stem + axisName(spec.axis) + std::to_string(index) + ".png");
        refuseToOverwrite(png.string(), overwrite);
        pngs.push_back({png, spec});
      }
    }
    // The side note a region or the density kill writes beside the volume.
    if (!roi.empty() || !densityRange.empty()) refuseToOverwrite(notePath(), overwrite);
    return pngs;
  }

  // The projections are opened (every header, the first chunk read and checked) on a thread of their own while the
  // devices open here: a tenth of a second for OpenGL's first context, a fifth for CUDA's (on its own thread).
  Opened open(const FdkOptions& options) const {
    trace("fdk: opening the projections and the devices");
    Opened opened;
    auto opening = std::async(std::launch::async, [&]() -> std::unique_ptr<ProjectionSource> {
      auto files = openProjectionFiles(projectionsPath.empty() ? listProjectionFiles(path, regexp) : listProjectionFiles(projectionsPath));
      if (flat.empty() && i0 <= 0) return files;
      auto wrapped = std::make_unique<LineIntegralSource>(std::move(files), flat.empty() ? Image{} : readProjectionStack(flat),
                                                          dark.empty() ? Image{} : readProjectionStack(dark), i0, flat, dark);
      opened.converted = wrapped.get();
      return wrapped;
    });
    opened.session = std::make_shared<DeviceSession>();
    opened.session->open(options.backend, options.gpu);
    trace("fdk: devices opened");
    opened.source = opening.get();
    trace("fdk: projections opened");
    return opened;
  }

  static void printConversion(const LineIntegralSource* converted) {
    if (converted && (converted->stats().clampedLow || converted->stats().deadPixels))
      std::cerr << "intensity conversion: " << converted->stats().clampedLow << " pixels without signal clamped to transmission "
                << kMinimumTransmission << ", " << converted->stats().deadPixels << " pixels with flat <= dark set to 0\n";
  }

  void writeSideNote(const std::string& text, RunOutputs& outputs) const {
    if (text.empty()) return;
    outputs.track(notePath());
    AtomicOutput out(notePath(), overwrite);
    writeFileBytes(notePath(), out.temporaryPath(), text.data(), text.size());
    out.commit();
  }

  void printSummary(const FdkReport& report, std::size_t projections, double gpuStartSeconds, double writeSeconds, double total,
                    const std::string& noteText) const {
    printReport(report, projections);
    if (stream) printStreamReport(report, projections);
    for (const DeviceShare& d : report.devices) {
      std::fprintf(stderr, "  device %d (%s): %d %s in %.2f s\n", d.gpu, d.description.c_str(), d.slabs, d.slabs == 1 ? "slab" : "slabs",
                   d.seconds);
      if (timeline) printDeviceTimeline(stderr, d.timeline);
    }
    if (timeline && report.devices.empty()) printDeviceTimeline(stderr, report.blockTimeline);
    if (report.slabs > 1 && report.wholeUploadBytes > 0 && report.uploadedBytes > 0)
      std::fprintf(stderr, "  uploaded %s of projection rows (%.0f%% of whole projections for every slab)%s\n",
                   formatBytes(static_cast<std::uint64_t>(report.uploadedBytes)).c_str(), 100.0 * report.uploadedBytes / report.wholeUploadBytes,
                   report.scratchFile ? "; filtered projections in a scratch file" : "");
    printFileSplit(report, gpuStartSeconds, writeSeconds, total, projections);
    printRanks(report, total, timeline);
    if (!noteText.empty()) std::cerr << noteText;
    std::cerr << "wrote " << output << (noteText.empty() ? "" : " and " + notePath()) << '\n';
  }

  // --slices from the volume in the page cache (mapped) or in memory; a slab run's was never whole in memory: read back.
  void writeVolumeSlices(const FdkPlan& plan, VolumeFileSink& sink, const VolumeGrid& grid, bool central, const std::vector<SlicePng>& pngs,
                         const std::optional<std::pair<double, double>>& fixedRange, RunOutputs& outputs) const {
    const float* voxels = plan.slabs.slabs.empty() ? sink.volume() : nullptr;
    if (voxels) {
      Image volumeImage(grid);
      std::copy_n(voxels, grid.voxelCount(), volumeImage.data.begin());
      writeSlices(volumeImage, central, pngs, fixedRange, outputs);
    } else {
      checkHostMemory("fdk", "--slices (the volume read back)", std::uint64_t{4} * grid.voxelCount());
      writeSlices(readImage(output), central, pngs, fixedRange, outputs);
    }
  }

  // The central three (`central`) or the chosen ones, in the grey range given or the percentiles.
  void writeSlices(const Image& result, bool central, const std::vector<SlicePng>& pngs,
                   const std::optional<std::pair<double, double>>& fixedRange, RunOutputs& outputs) const {
    outputs.createDirectories(slices);
    const auto range = fixedRange ? *fixedRange : percentileRange(result, 0.5, 99.5);
    if (central) writeOrthogonalSlices(result, slices, fs::path(output).stem().string() + "_", range, overwrite, {std::nullopt, &outputs, !quiet});
    for (const auto& [png, spec] : pngs) {
      const int index = spec.index.value_or(result.size[axisNumber(spec.axis)] / 2);
      outputs.track(png.string());
      writeSlicePng(png.string(), result, spec.axis, index, range.first, range.second, overwrite);
      if (!quiet) std::cerr << "wrote " << png.string() << '\n';
    }
  }
};

}  // namespace

std::unique_ptr<Command> makeFdkCommand() { return std::make_unique<FdkCommand>(); }

}  // namespace glrecon::app
