// glrecon bench: one simulated scan, filtered once, backprojected by every backend and window asked for; times,
// throughput, accuracy against the CPU reference and the phantom; a table, JSON and a chart (bench_report.h). With
// --gpu-memory or several --gpu it measures slabs instead (bench_slabs.h).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "app/bench_report.h"
#include "app/bench_slabs.h"
#include "app/command.h"
#include "app/options.h"
#include "app/scan_options.h"
#include "device/cuda/device.h"
#include "device/gl/context.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/phantom.h"
#include "glrecon/progress.h"
#include "glrecon/roi.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The whole-FDK runs' volume: a preallocated image (paged in once, as fdk pages its output in while the scan runs).
struct IntoImage final : VolumeSink {
  explicit IntoImage(Image& i) : image(i) {}
  std::string name() const override { return "bench's volume"; }
  float* wholeVolume() override { return image.data.data(); }
  void writeRows(int, int, const float*) override { throw std::logic_error("bench: a one-block run came by rows"); }
  Image& image;
};

// The scan every run reconstructs, the phantom it shows, and the volume the runs write into.
struct Problem {
  Geometry geometry;
  VolumeGrid grid;
  Image raw, filtered, truth;
  RegionOfInterest fov;
  Image volume;     // the whole-FDK runs' output, paged in once (as fdk pages it in while the scan runs)
  Image reference;  // the first run's volume: the CPU reference
  FilterPlace filterPlace = FilterPlace::Auto;
  int gpu = 0;
};

// Unknown backend names are refused before anything runs (exit 2); a known backend that cannot run on this machine (no
// CUDA, no GL device) is still reported in the table while the others run.
CLI::Validator knownBackends() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::stringstream in(text);
        std::string name;
        const std::vector<std::string> known = {"cpu", "graphics", "graphics-mp", "compute", "cuda"};
        while (std::getline(in, name, ','))
          if (std::find(known.begin(), known.end(), name) == known.end())
            return "expected backends among cpu, graphics, graphics-mp, compute, cuda, found '" + glrecon::quoted(name) + "'";
        return {};
      },
      "", "backends");
}

class BenchCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("bench", "Run the same reconstruction through every backend and window; compare speed and accuracy");
    scan.add(c);
    c->add_option("--backends", backends, "Comma-separated: cpu, graphics, graphics-mp, compute, cuda")->capture_default_str()->check(knownBackends());
    windows.add(c, "Comma-separated windows for the GPU backends: numbers, max, auto");
    gpu.add(c, "Device (EGL for the GL backends, CUDA for cuda); a list such as 0,1 or all measures slabs on several devices");
    c->add_option("--gpu-memory", gpuMemory,
                  "Measure slabs instead: the whole FDK with this cap per device (e.g. 8G) against one block, per backend");
    c->add_option("--threads", threads, "CPU threads (0: all)")->capture_default_str();
    c->add_option("--filter-on", filterOn,
                  "Whole FDK: where the filter runs, as fdk's option: auto (the GPU where the backend can), cpu or gpu")
        ->capture_default_str();
    c->add_option("--repeat", repeat, "Timed runs of each configuration after one warm-up; the table gives medians")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    c->add_option("--texture-peak", texturePeak,
                  "The GPU's bilinear texture fetches per second in G, drawn on the chart (default: computed for CUDA devices)");
    c->add_option("--output,-o", output, "Also write DIR/bench.json and DIR/bench.png");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->add_flag("--overwrite", overwrite, "Replace bench.json and bench.png in the --output directory");
    c->parse_complete_callback([this, c] { checkJob(c); });
    c->callback([this] { run(); });
  }

 private:
  SampleScanOptions scan = SampleScanOptions::withVolume(128, 360, 256, 4);
  std::string backends = "cpu,graphics,graphics-mp,compute,cuda", output, gpuMemory, filterOn = "auto";
  WindowListOption windows{"1,8,16,auto"};
  GpuListOption gpu;
  int threads = 0, repeat = 3;
  double texturePeak = 0;
  bool quiet = false, overwrite = false;

  // As soon as the command line is read: the memory the job needs, and the outputs.
  void checkJob(CLI::App* c) const {
    const int size = c->get_option("--size")->as<int>(), detector = c->get_option("--detector")->as<int>(),
              projections = c->get_option("--projections")->as<int>();
    // Filtered projections, the phantom, the reference and a result volume.
    checkHostMemory("bench", "--size " + std::to_string(size), std::uint64_t{8} * detector * detector * projections +
                                                                   std::uint64_t{16} * size * size * size);
    const CLI::Option* outputOption = c->get_option("--output");
    if (outputOption->count() == 0) return;
    const std::string dir = outputOption->as<std::string>();
    checkOutputDirectory(dir, "--output");
    for (const char* name : {"bench.json", "bench.png"}) refuseToOverwrite((fs::path(dir) / name).string(), overwrite);
  }

  void run() const {
    scan.check();
    const std::vector<std::string> backendList = splitList(backends);
    const std::vector<std::pair<std::string, int>> windowList = windows.windows();
    if (backendList.empty() || windowList.empty()) throw UsageError("bench: expected at least one backend and one window");
    const FilterPlace filterPlace = parseFilterPlace(filterOn);
    const std::vector<int> gpus = gpu.devices(backendList.back());
    if (!gpuMemory.empty() || gpus.size() > 1)
      return runSlabBench({scan, backendList, windowList.front(), gpus, gpu.text, gpuMemory, filterPlace, threads, repeat, quiet});
    BenchSetup setup = machine(gpus.front());
    Problem problem = makeProblem(setup, filterPlace, gpus.front());
    std::vector<BenchRun> runs;
    // The CPU backend runs first: it is the reference every other run is compared with.
    runs.push_back(measure(problem, "cpu", "-", 0));
    const bool cpuAsked = std::find(backendList.begin(), backendList.end(), "cpu") != backendList.end();
    for (const std::string& backend : backendList)
      if (backend != "cpu")
        for (const auto& [asked, window] : windowList) runs.push_back(measure(problem, backend, asked, window));
    if (!cpuAsked) runs.front().backend = "cpu";  // kept: the reference; marked in the table below
    printBenchTable(setup, runs, cpuAsked);
    if (!output.empty()) {
      fs::create_directories(output);
      writeBenchJson(fs::path(output) / "bench.json", setup, runs);
      writeBenchChart(fs::path(output) / "bench.png", setup, runs);
      std::fprintf(stderr, "wrote %s/bench.json and %s/bench.png\n", output.c_str(), output.c_str());
    }
  }

  BenchSetup machine(int device) const {
    BenchSetup setup;
    setup.size = scan.size;
    setup.projections = scan.projections;
    setup.detector = scan.detector;
    setup.threads = resolveThreadCount(threads);
    setup.cpu = cpuModel();
    try {
      const auto context = gl::Context::headless(device);
      setup.gpu = context->info().renderer;
      setup.driver = context->info().version;
    } catch (const gl::GlError& e) {
      setup.gpu = "none (" + std::string(e.what()) + ")";
    }
    return setup;
  }

  // The scan simulated; the profiled passes use projections filtered once here (timed), the whole-FDK runs filter the
  // raw ones themselves.
  Problem makeProblem(BenchSetup& setup, FilterPlace filterPlace, int device) const {
    Problem p;
    p.geometry = scan.geometry();
    p.grid = scan.grid();
    p.filterPlace = filterPlace;
    p.gpu = device;
    const Phantom phantom = Phantom::sheppLogan();
    if (!quiet) std::fprintf(stderr, "bench: simulating %d projections of %d^2\n", scan.projections, scan.detector);
    ProjectionOptions popt;
    popt.threads = threads;
    p.raw = projectPhantom(phantom, p.geometry, popt);
    p.filtered = p.raw;
    const FdkFilter filter(p.geometry, {});
    auto t = std::chrono::steady_clock::now();
    parallelFor(p.geometry.size(), 1, threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) filter.apply(i, p.filtered.slice(static_cast<int>(i)));
    });
    setup.filterSeconds = since(t);
    setup.repeat = repeat;
    setup.texturePeak = texturePeak > 0 ? texturePeak : cuda::bilinearPeak(device);
    p.truth = voxelizePhantom(phantom, p.grid, 2, threads);
    p.fov = fieldOfView(p.geometry, p.grid);
    p.volume = Image(p.grid);
    return p;
  }

  // One backend at one window: two operators, made once and reset between runs (setup is paid once, as a resident service
  // would): one profiled (waits after each step, for the split), one as fdk runs it. Failures are reported, not thrown.
  BenchRun measure(Problem& p, const std::string& backend, const std::string& windowAsked, int window) const {
    BenchRun r;
    r.backend = backend;
    r.windowAsked = windowAsked;
    try {
      const std::optional<Backend> named = backendNamed(backend);
      if (!named) throw UsageError("--backends: unknown backend '" + backend + "'");
      OperatorOptions o;
      o.threads = threads;
      o.device = p.gpu;
      o.window = window;
      auto start = std::chrono::steady_clock::now();
      auto whole = makeOperator(*named, p.geometry, p.grid, o);
      r.setup = since(start);
      o.profile = true;
      auto profiled = makeOperator(*named, p.geometry, p.grid, o);
      FdkOptions fdkOptions;
      fdkOptions.threads = threads;
      fdkOptions.backend = named;
      fdkOptions.gpu = p.gpu;
      fdkOptions.window = o.window;
      fdkOptions.filterOn = backend == "cpu" ? FilterPlace::Cpu : p.filterPlace;  // the reference always filters with FFTW
      fdkOptions.drainBeside = false;  // one block, on the operator made once (cuda would otherwise take slabs from 2 GiB)
      // The whole FDK as fdk runs it, on the operator made once above (its setup paid once, as a resident service would).
      auto rawSource = memorySource(p.raw, "projections");
      const FdkPlan plan = planFdk(p.geometry, p.grid, fdkOptions, *rawSource);
      FdkReconstructor reconstructor(plan, *whole);
      repeatRuns(r, p, *profiled, reconstructor, *rawSource);
      r.description = whole->description();
      r.window = whole->window();  // the final choice for auto (the window the description names)
      r.summarise();
      if (p.reference.data.empty()) p.reference = p.volume;  // the first run is the CPU reference
      compare(r, p);
    } catch (const std::exception& e) {
      r.error = e.what();
      std::fprintf(stderr, "bench: %s%s: %s (the other backends still run)\n", backend.c_str(),
                   windowAsked == "-" ? "" : (" W=" + windowAsked).c_str(), e.what());
    }
    return r;
  }

  // A warm-up and --repeat timed repetitions (repetition 0 is the warm-up: first-use costs stay out of the figures).
  void repeatRuns(BenchRun& r, Problem& p, ConeBeamOperator& profiled, FdkReconstructor& reconstructor, ProjectionSource& rawSource) const {
    IntoImage into(p.volume);
    Progress progress("bench " + r.backend + (r.windowAsked == "-" ? "" : " W=" + r.windowAsked), repeat + 1, "runs", !quiet);
    for (int rep = 0; rep <= repeat; ++rep) {
      Repetition x = profiledPass(p, profiled);
      const auto begin = std::chrono::steady_clock::now();
      const FdkReport report = reconstructor.run(rawSource, into);
      x.fdkSeconds = since(begin);
      x.fdkPps = p.geometry.size() / x.fdkSeconds;
      x.fdkFilter = report.filterSeconds;
      x.fdkWait = report.filterWaitSeconds;
      x.fdkReadback = report.readbackSeconds;
      r.filteredOnGpu = report.filteredOnGpu;
      if (rep > 0) r.reps.push_back(x);
      progress.update(rep + 1);
    }
    progress.finish();
  }

  // The pre-filtered projections backprojected in batches, each step waited for, and read back.
  static Repetition profiledPass(Problem& p, ConeBeamOperator& profiled) {
    const std::size_t batch = 32, pixels = p.filtered.sliceStride();
    std::vector<std::size_t> views(batch);
    const double updates = static_cast<double>(p.grid.voxelCount()) * p.geometry.size();
    Repetition x;
    profiled.reset();
    for (std::size_t first = 0; first < p.geometry.size(); first += batch) {
      const std::size_t n = std::min(batch, p.geometry.size() - first);
      std::iota(views.begin(), views.begin() + n, first);
      profiled.back(p.filtered.data.data() + first * pixels, views.data(), n, Weighting::Fdk);
    }
    profiled.readVolume(p.volume.data.data());
    const OperatorTimings timings = profiled.timings();
    x.upload = timings.upload;
    x.compute = timings.compute;
    x.readback = timings.readback;
    x.gups = updates / x.compute * 1e-9;
    x.backprojectionPps = p.geometry.size() / x.compute;
    return x;
  }

  // The run's volume against the CPU reference (everywhere) and the phantom (in the field of view).
  static void compare(BenchRun& r, const Problem& p) {
    double sq = 0, sqTruth = 0;
    std::size_t inFov = 0;
    for (std::size_t i = 0; i < p.volume.data.size(); ++i) {
      const double d = p.volume.data[i] - p.reference.data[i];
      r.maxDiff = std::max(r.maxDiff, std::abs(d));
      sq += d * d;
      if (p.fov.mask[i]) {
        const double e = p.volume.data[i] - p.truth.data[i];
        sqTruth += e * e;
        ++inFov;
      }
    }
    r.rmsDiff = std::sqrt(sq / p.volume.data.size());
    r.rmse = std::sqrt(sqTruth / std::max<std::size_t>(1, inFov));
    r.psnr = 20 * std::log10(2.0 / r.rmse);  // the phantom's densities span 0 to 2
  }
};

}  // namespace

std::unique_ptr<Command> makeBenchCommand() { return std::make_unique<BenchCommand>(); }

}  // namespace glrecon::app
