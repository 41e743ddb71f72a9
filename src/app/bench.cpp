// glrecon bench: one simulated scan, filtered once, backprojected by every backend and window asked for;
// times, throughput, accuracy against the CPU reference and the phantom; a table, JSON and a chart.
// The chart uses cairo (Debian's libcairo2): bars with text, without a hand-written font rasterizer.
#include "bench.h"

#include "commands.h"

#include <cairo.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <thread>

#include "device/cuda/device.h"
#include "glrecon/operator.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/parallel.h"
#include "glrecon/phantom.h"
#include "glrecon/progress.h"
#include "glrecon/roi.h"
#include "glrecon/slab.h"
#include "glrecon/limits.h"
#include "validation.h"
#include <cstring>

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

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

// One repetition: a profiled pass (each step waited for, so the split is honest) and a whole FDK run (the
// pipeline as a user gets it: filtering overlapped with uploads and backprojection, then the readback).
struct Repetition {
  double upload = 0, compute = 0, readback = 0;  // profiled pass
  double gups = 0, backprojectionPps = 0;
  double fdkSeconds = 0, fdkPps = 0;             // whole FDK, from raw projections to the volume on the host
  double fdkFilter = 0, fdkWait = 0, fdkReadback = 0;
};

struct Stat {
  double median = 0, min = 0, max = 0;
  double spread() const { return median > 0 ? (max - min) / median : 0.0; }
};

Stat statOf(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  return s;
}

struct Run {
  std::string backend, description, error;
  std::string windowAsked;  // "1", "auto", "max", "-" for the CPU
  int window = 0;           // used (the final choice for auto)
  bool filteredOnGpu = false;  // the whole FDK's filter ran on the device (--filter-on)
  double setup = 0;         // making the operator the first time (context, programs, buffers)
  std::vector<Repetition> reps;
  Stat upload, compute, readback, gups, backprojectionPps, fdkSeconds, fdkPps;
  double maxDiff = 0, rmsDiff = 0, rmse = 0, psnr = 0;
  void summarise() {
    const auto over = [&](double Repetition::*field) {
      std::vector<double> v;
      for (const Repetition& r : reps) v.push_back(r.*field);
      return statOf(v);
    };
    upload = over(&Repetition::upload);
    compute = over(&Repetition::compute);
    readback = over(&Repetition::readback);
    gups = over(&Repetition::gups);
    backprojectionPps = over(&Repetition::backprojectionPps);
    fdkSeconds = over(&Repetition::fdkSeconds);
    fdkPps = over(&Repetition::fdkPps);
  }
};

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

struct Setup {
  int size = 0, projections = 0, detector = 0, threads = 0, repeat = 0;
  std::string gpu, driver, cpu;
  double filterSeconds = 0;
  double texturePeak = 0;  // G bilinear fetches/s the texture units can do, 0 when unknown
};

std::string statJson(const Stat& s) {
  return "{\"median\": " + jsonNumber(s.median) + ", \"min\": " + jsonNumber(s.min) + ", \"max\": " + jsonNumber(s.max) + "}";
}

void writeJson(const fs::path& path, const Setup& setup, const std::vector<Run>& runs) {
  std::ostringstream j;
  j << "{\n  \"problem\": {\"volume\": " << setup.size << ", \"projections\": " << setup.projections << ", \"detector\": " << setup.detector
    << "},\n  \"machine\": {\"gpu\": " << jsonString(setup.gpu) << ", \"driver\": " << jsonString(setup.driver)
    << ", \"cpu\": " << jsonString(setup.cpu) << ", \"cpu_threads\": " << setup.threads << "},\n"
    << "  \"repeat\": " << setup.repeat << ",\n  \"texture_peak_gfetches_per_second\": " << jsonNumber(setup.texturePeak) << ",\n"
    << "  \"filter_seconds\": " << jsonNumber(setup.filterSeconds) << ",\n  \"runs\": [\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    j << "    {\"backend\": " << jsonString(r.backend) << ", \"window_asked\": " << jsonString(r.windowAsked)
      << ", \"window\": " << r.window << ", \"description\": " << jsonString(r.description)
      << ", \"filter_on\": " << jsonString(r.filteredOnGpu ? "gpu" : "cpu")
      << ", \"error\": " << (r.error.empty() ? "null" : jsonString(r.error)) << ",\n     \"seconds\": {\"setup\": " << jsonNumber(r.setup)
      << ", \"filter\": " << jsonNumber(setup.filterSeconds) << ", \"upload\": " << statJson(r.upload)
      << ", \"backprojection\": " << statJson(r.compute) << ", \"readback\": " << statJson(r.readback)
      << ", \"whole_fdk\": " << statJson(r.fdkSeconds) << "},\n"
      << "     \"backprojection\": {\"gvoxel_updates_per_second\": " << statJson(r.gups)
      << ", \"projections_per_second\": " << statJson(r.backprojectionPps) << "},\n"
      << "     \"whole_fdk\": {\"projections_per_second\": " << statJson(r.fdkPps) << "},\n"
      << "     \"vs_cpu\": {\"max_abs\": " << jsonNumber(r.maxDiff) << ", \"rms\": " << jsonNumber(r.rmsDiff) << "},\n"
      << "     \"vs_phantom\": {\"rmse\": " << jsonNumber(r.rmse) << ", \"psnr_db\": " << jsonNumber(r.psnr) << "},\n"
      << "     \"repetitions\": [";
    for (std::size_t k = 0; k < r.reps.size(); ++k) {
      const Repetition& p = r.reps[k];
      j << (k ? ", " : "") << "{\"upload\": " << jsonNumber(p.upload) << ", \"backprojection\": " << jsonNumber(p.compute)
        << ", \"readback\": " << jsonNumber(p.readback) << ", \"gvoxel_updates_per_second\": " << jsonNumber(p.gups)
        << ", \"whole_fdk_seconds\": " << jsonNumber(p.fdkSeconds) << ", \"whole_fdk_projections_per_second\": " << jsonNumber(p.fdkPps)
        << ", \"whole_fdk_filter_seconds\": " << jsonNumber(p.fdkFilter) << ", \"whole_fdk_wait_seconds\": " << jsonNumber(p.fdkWait)
        << ", \"whole_fdk_readback_seconds\": " << jsonNumber(p.fdkReadback) << "}";
    }
    j << "]}" << (i + 1 < runs.size() ? ",\n" : "\n");
  }
  j << "  ]\n}\n";
  AtomicOutput out(path.string(), true);
  std::ofstream(out.temporaryPath()) << j.str();
  out.commit();
}

// Horizontal bars of backprojection throughput (the median of the repetitions, a whisker from the slowest to the
// fastest), one per run, on a log axis when values span a wide range; a red line marks the texture units' peak.
void writeChart(const fs::path& path, const Setup& setup, const std::vector<Run>& runs) {
  std::vector<const Run*> ok;
  for (const Run& r : runs)
    if (r.error.empty() && r.gups.median > 0) ok.push_back(&r);
  const int barHeight = 26, top = 70, left = 260, width = 1000, height = top + std::max<int>(1, ok.size()) * barHeight + 50;
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 16);
  cairo_move_to(cr, 10, 24);
  const std::string title = "glrecon bench: " + std::to_string(setup.size) + "^3 from " + std::to_string(setup.projections) + " x " +
                            std::to_string(setup.detector) + "^2, backprojection G voxel-updates/s";
  cairo_show_text(cr, title.c_str());
  cairo_set_font_size(cr, 12);
  cairo_move_to(cr, 10, 44);
  const std::string machine = "GPU: " + setup.gpu + " | CPU: " + setup.cpu + " (" + std::to_string(setup.threads) + " threads)";
  cairo_show_text(cr, machine.c_str());
  double lo = 1e30, hi = 0;
  for (const Run* r : ok) {
    lo = std::min(lo, r->gups.min);
    hi = std::max(hi, r->gups.max);
  }
  if (setup.texturePeak > 0) hi = std::max(hi, setup.texturePeak);
  const bool logScale = !ok.empty() && hi / lo > 30;
  const double axisLo = logScale ? std::pow(10, std::floor(std::log10(lo))) : 0.0;
  const double axisHi = logScale ? std::pow(10, std::ceil(std::log10(hi))) : (hi > 0 ? hi * 1.1 : 1.0);
  const auto x = [&](double v) {
    const double f = logScale ? (std::log10(v) - std::log10(axisLo)) / (std::log10(axisHi) - std::log10(axisLo)) : v / axisHi;
    return left + f * (width - left - 90);
  };
  for (std::size_t i = 0; i < ok.size(); ++i) {
    const Run& r = *ok[i];
    const double y = top + i * barHeight;
    const bool graphics = r.backend.rfind("graphics", 0) == 0;
    cairo_set_source_rgb(cr, r.backend == "cpu" ? 0.5 : graphics ? 0.2 : 0.85, r.backend == "cpu" ? 0.5 : graphics ? 0.45 : 0.45,
                         r.backend == "cpu" ? 0.5 : graphics ? 0.8 : 0.15);
    cairo_rectangle(cr, left, y + 4, std::max(1.0, x(r.gups.median) - left), barHeight - 8);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1.5);
    cairo_move_to(cr, x(r.gups.min), y + barHeight / 2.0);
    cairo_line_to(cr, x(r.gups.max), y + barHeight / 2.0);
    cairo_move_to(cr, x(r.gups.min), y + 8);
    cairo_line_to(cr, x(r.gups.min), y + barHeight - 8);
    cairo_move_to(cr, x(r.gups.max), y + 8);
    cairo_line_to(cr, x(r.gups.max), y + barHeight - 8);
    cairo_stroke(cr);
    const std::string label = r.backend + (r.windowAsked == "-" ? "" : " W=" + r.windowAsked + (r.windowAsked == "auto" || r.windowAsked == "max" ? " (" + std::to_string(r.window) + ")" : ""));
    cairo_move_to(cr, 10, y + barHeight - 9);
    cairo_show_text(cr, label.c_str());
    char value[32];
    std::snprintf(value, sizeof value, "%.3g", r.gups.median);
    cairo_move_to(cr, x(r.gups.max) + 6, y + barHeight - 9);
    cairo_show_text(cr, value);
  }
  if (setup.texturePeak > 0) {
    cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
    cairo_move_to(cr, x(setup.texturePeak), top - 6);
    cairo_line_to(cr, x(setup.texturePeak), top + ok.size() * barHeight);
    cairo_stroke(cr);
    char peak[64];
    std::snprintf(peak, sizeof peak, "texture peak %.0f", setup.texturePeak);
    cairo_move_to(cr, x(setup.texturePeak) - 60, top + ok.size() * barHeight + 16);
    cairo_show_text(cr, peak);
    cairo_set_source_rgb(cr, 0, 0, 0);
  }
  cairo_move_to(cr, left, height - 20);
  const std::string scale = std::string(logScale ? "log scale" : "linear scale") + "; bars: median of " + std::to_string(setup.repeat) +
                            " runs, whiskers: min to max";
  cairo_show_text(cr, scale.c_str());
  cairo_destroy(cr);
  AtomicOutput out(path.string(), true);
  const cairo_status_t status = cairo_surface_write_to_png(surface, out.temporaryPath().c_str());
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS) throwInputError(path.string(), "output", "a writable PNG", cairo_status_to_string(status));
  out.commit();
}

struct BenchCommand {
  int size = 128, projections = 360, detector = 256, threads = 0, repeat = 3;
  double texturePeak = 0;
  std::string backends = "cpu,graphics,graphics-mp,compute,cuda", windows = "1,8,16,auto", output, gpuList = "0", gpuMemory,
              filterOn = "auto";
  bool quiet = false;

  void runSlabs(const std::vector<std::string>& backendList, const std::vector<std::string>& windowList, const std::vector<int>& gpus,
                FilterPlace filterPlace) const;

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("bench", "Run the same reconstruction through every backend and window; compare speed and accuracy");
    c->add_option("--size", size, "Volume size per axis (covering 256 mm)")->capture_default_str();
    c->add_option("--projections", projections, "Projections over 360 degrees")->capture_default_str();
    c->add_option("--detector", detector, "Detector pixels per axis (covering 512 mm)")->capture_default_str();
    c->add_option("--backends", backends, "Comma-separated: cpu, graphics, graphics-mp, compute, cuda")->capture_default_str();
    c->add_option("--window", windows, "Comma-separated windows for the GPU backends: numbers, max, auto")->capture_default_str();
    c->add_option("--gpu", gpuList,
                  "Device (EGL for the GL backends, CUDA for cuda); a list such as 0,1 or all measures slabs on several devices")
        ->capture_default_str();
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
    c->callback([this] { run(); });
  }

  void run() const {
    if (size < 4 || projections < 4 || detector < 4) throw UsageError("bench: --size, --projections and --detector: expected at least 4");
    const std::vector<std::string> backendList = splitList(backends), windowList = splitList(windows);
    if (backendList.empty() || windowList.empty()) throw UsageError("bench: expected at least one backend and one window");
    const FilterPlace filterPlace = parseFilterPlace(filterOn);
    const std::vector<int> gpus = parseGpuList("--gpu", gpuList, backendList.back());
    const int gpu = gpus.front();
    if (!gpuMemory.empty() || gpus.size() > 1) return runSlabs(backendList, windowList, gpus, filterPlace);
    Setup setup;
    setup.size = size;
    setup.projections = projections;
    setup.detector = detector;
    setup.threads = resolveThreadCount(threads);
    setup.cpu = cpuModel();
    try {
      const auto context = gl::Context::headless(gpu);
      setup.gpu = context->info().renderer;
      setup.driver = context->info().version;
    } catch (const gl::GlError& e) {
      setup.gpu = "none (" + std::string(e.what()) + ")";
    }

    const Geometry geometry = sampleScan(projections, detector);
    const VolumeGrid grid = VolumeGrid::centred({size, size, size}, glm::dvec3(256.0 / size));
    const Phantom phantom = Phantom::sheppLogan();
    if (!quiet) std::fprintf(stderr, "bench: simulating %d projections of %d^2\n", projections, detector);
    ProjectionOptions popt;
    popt.threads = threads;
    const Image raw = projectPhantom(phantom, geometry, popt);
    // The profiled passes use projections filtered once here; the whole-FDK runs filter the raw ones themselves.
    Image filtered = raw;
    const FdkFilter filter(geometry, {});
    auto t = std::chrono::steady_clock::now();
    parallelFor(geometry.size(), 1, threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b; p < e; ++p) filter.apply(p, filtered.slice(static_cast<int>(p)));
    });
    setup.filterSeconds = since(t);
    setup.repeat = repeat;
    setup.texturePeak = texturePeak > 0 ? texturePeak : cuda::bilinearPeak(gpu);
    const Image truth = voxelizePhantom(phantom, grid, 2, threads);
    const RegionOfInterest fov = fieldOfView(geometry, grid);
    Image volume(grid);  // the whole-FDK runs' output, paged in once (as fdk pages it in while the scan runs)

    std::vector<Run> runs;
    Image reference;
    const auto execute = [&](const std::string& backend, const std::string& windowAsked) {
      Run r;
      r.backend = backend;
      r.windowAsked = windowAsked;
      try {
        const std::optional<Backend> named = backendNamed(backend);
        if (!named) throw UsageError("--backends: unknown backend '" + backend + "'");
        OperatorOptions o;
        o.threads = threads;
        o.device = gpu;
        if (windowAsked == "max")
          o.window = kMaximumWindow;
        else if (windowAsked != "auto" && windowAsked != "-") {
          std::size_t used = 0;
          int w = 0;
          try {
            w = std::stoi(windowAsked, &used);
          } catch (const std::exception&) {
          }
          if (used != windowAsked.size() || w < 1) throw UsageError("--window: expected numbers, max or auto, found '" + windowAsked + "'");
          o.window = w;
        }
        // Two operators, made once and reset between runs (setup is paid once, as a resident service
        // would): one profiled (waits after each step, for the split), one as fdk runs it.
        auto start = std::chrono::steady_clock::now();
        auto whole = makeOperator(*named, geometry, grid, o);
        r.setup = since(start);
        o.profile = true;
        auto profiled = makeOperator(*named, geometry, grid, o);
        const std::size_t batch = 32, pixels = filtered.sliceStride();
        std::vector<std::size_t> views(batch);
        const double updates = static_cast<double>(grid.voxelCount()) * geometry.size();
        FdkOptions fdkOptions;
        fdkOptions.threads = threads;
        fdkOptions.backend = named;
        fdkOptions.gpu = gpu;
        fdkOptions.window = o.window;
        fdkOptions.filterOn = backend == "cpu" ? FilterPlace::Cpu : filterPlace;  // the reference always filters with FFTW
        // The whole FDK as fdk runs it, on the operator made once above (its setup paid once, as a resident service would).
        auto rawSource = memorySource(raw, "projections");
        const FdkPlan plan = planFdk(geometry, grid, fdkOptions, *rawSource);
        FdkReconstructor reconstructor(plan, *whole);
        IntoImage into(volume);
        Progress progress("bench " + backend + (windowAsked == "-" ? "" : " W=" + windowAsked), repeat + 1, "runs", !quiet);
        for (int rep = 0; rep <= repeat; ++rep) {  // repetition 0 is the warm-up: first-use costs stay out of the figures
          Repetition x;
          profiled->reset();
          for (std::size_t first = 0; first < geometry.size(); first += batch) {
            const std::size_t n = std::min(batch, geometry.size() - first);
            std::iota(views.begin(), views.begin() + n, first);
            profiled->back(filtered.data.data() + first * pixels, views.data(), n, Weighting::Fdk);
          }
          profiled->readVolume(volume.data.data());
          const OperatorTimings timings = profiled->timings();
          x.upload = timings.upload;
          x.compute = timings.compute;
          x.readback = timings.readback;
          x.gups = updates / x.compute * 1e-9;
          x.backprojectionPps = geometry.size() / x.compute;

          const auto begin = std::chrono::steady_clock::now();
          const FdkReport report = reconstructor.run(*rawSource, into);
          x.fdkSeconds = since(begin);
          x.fdkPps = geometry.size() / x.fdkSeconds;
          x.fdkFilter = report.filterSeconds;
          x.fdkWait = report.filterWaitSeconds;
          x.fdkReadback = report.readbackSeconds;
          r.filteredOnGpu = report.filteredOnGpu;
          if (rep > 0) r.reps.push_back(x);
          progress.update(rep + 1);
        }
        progress.finish();
        r.description = whole->description();
        const auto w = r.description.find("window ");
        r.window = w == std::string::npos ? 0 : std::atoi(r.description.c_str() + w + 7);
        r.summarise();
        if (reference.data.empty()) reference = volume;  // the first run is the CPU reference (see below)
        double sq = 0, sqTruth = 0;
        std::size_t inFov = 0;
        for (std::size_t i = 0; i < volume.data.size(); ++i) {
          const double d = volume.data[i] - reference.data[i];
          r.maxDiff = std::max(r.maxDiff, std::abs(d));
          sq += d * d;
          if (fov.mask[i]) {
            const double e = volume.data[i] - truth.data[i];
            sqTruth += e * e;
            ++inFov;
          }
        }
        r.rmsDiff = std::sqrt(sq / volume.data.size());
        r.rmse = std::sqrt(sqTruth / std::max<std::size_t>(1, inFov));
        r.psnr = 20 * std::log10(2.0 / r.rmse);  // the phantom's densities span 0 to 2
      } catch (const std::exception& e) {
        r.error = e.what();
        std::fprintf(stderr, "bench: %s%s: %s (the other backends still run)\n", backend.c_str(),
                     windowAsked == "-" ? "" : (" W=" + windowAsked).c_str(), e.what());
      }
      runs.push_back(r);
    };
    // The CPU backend runs first: it is the reference every other run is compared with.
    execute("cpu", "-");
    const bool cpuAsked = std::find(backendList.begin(), backendList.end(), "cpu") != backendList.end();
    for (const std::string& backend : backendList)
      if (backend != "cpu")
        for (const std::string& w : windowList) execute(backend, w);
    if (!cpuAsked) runs.front().backend = "cpu";  // kept: the reference; marked in the table below

    std::printf("glrecon bench: %d^3 voxels from %d projections of %d^2 (Shepp-Logan), median of %d runs after a warm-up\n"
                "GPU: %s | %s\nCPU: %s, %d threads\nfiltering alone (FFTW, all threads): %.3f s\n",
                size, projections, detector, repeat, setup.gpu.c_str(), setup.driver.c_str(), setup.cpu.c_str(), setup.threads,
                setup.filterSeconds);
    if (setup.texturePeak > 0) std::printf("texture units' peak: %.0f G bilinear fetches/s\n", setup.texturePeak);
    std::printf("\nbackprojection: a profiled pass of pre-filtered projections, each step waited for; whole FDK: raw projections to the\n"
                "volume on the host, filtering overlapped with backprojection, operator made once (setup) and reset per run\n\n");
    std::printf("%-12s %-9s %8s %8s %9s %8s %11s %7s %6s %10s %10s %8s %10s %10s %8s %7s\n", "backend", "window", "setup s", "upload s",
                "backproj s", "readbk s", "G upd/s", "spread", "filter", "FDK s", "FDK proj/s", "spread", "max|d|cpu", "rms d cpu", "RMSE", "PSNR");
    bool noisy = false;
    for (const Run& r : runs) {
      if (!r.error.empty()) {
        std::printf("%-12s %-9s failed: %s\n", r.backend.c_str(), r.windowAsked.c_str(), r.error.c_str());
        continue;
      }
      const std::string w = r.windowAsked == "-" ? "-" : r.windowAsked + (r.windowAsked == "auto" || r.windowAsked == "max" ? "=" + std::to_string(r.window) : "");
      std::printf("%-12s %-9s %8.3f %8.3f %9.3f %8.3f %11.3f %6.1f%% %6s %10.3f %10.1f %6.1f%% %10.2e %10.2e %8.4f %7.2f\n", r.backend.c_str(),
                  w.c_str(), r.setup, r.upload.median, r.compute.median, r.readback.median, r.gups.median, 100 * r.gups.spread(),
                  r.filteredOnGpu ? "gpu" : "cpu", r.fdkSeconds.median, r.fdkPps.median, 100 * r.fdkPps.spread(), r.maxDiff, r.rmsDiff, r.rmse, r.psnr);
      noisy = noisy || r.gups.spread() > 0.1 || r.fdkPps.spread() > 0.1;
    }
    if (!cpuAsked) std::printf("(the cpu row is the reference the others are compared with)\n");
    if (setup.texturePeak > 0)
      for (const Run& r : runs)
        if (r.error.empty() && r.backend != "cpu")
          std::printf("%s %s: %.0f%% of the texture peak\n", r.backend.c_str(), r.windowAsked.c_str(), 100 * r.gups.median / setup.texturePeak);
    if (noisy)
      std::fprintf(stderr, "bench: warning: some runs spread by more than 10%% (max - min over the median): more --repeat, or a quieter machine\n");
    if (!output.empty()) {
      fs::create_directories(output);
      writeJson(fs::path(output) / "bench.json", setup, runs);
      writeChart(fs::path(output) / "bench.png", setup, runs);
      std::fprintf(stderr, "wrote %s/bench.json and %s/bench.png\n", output.c_str(), output.c_str());
    }
  }
};

}  // namespace

// The slab measurement: per backend, the whole FDK (raw projections in memory to the volume in memory, setup
// included, as reconstructFdk runs it) in one block and in slabs (--gpu-memory, --gpu list), median of --repeat
// runs each, the slab result compared with the one-block result bit for bit.
void BenchCommand::runSlabs(const std::vector<std::string>& backendList, const std::vector<std::string>& windowList,
                            const std::vector<int>& gpus, FilterPlace filterPlace) const {
  const Geometry geometry = sampleScan(projections, detector);
  const VolumeGrid grid = VolumeGrid::centred({size, size, size}, glm::dvec3(256.0 / size));
  if (!quiet) std::fprintf(stderr, "bench: simulating %d projections of %d^2\n", projections, detector);
  ProjectionOptions popt;
  popt.threads = threads;
  const Image raw = projectPhantom(Phantom::sheppLogan(), geometry, popt);
  std::string device = "?";
  try {
    device = gl::Context::headless(gpus.front())->info().renderer;
  } catch (const gl::GlError&) {
  }
  std::printf("glrecon bench (slabs): %d^3 voxels (%s) from %d projections of %d^2, median of %d runs (setup included)\n"
              "GPU: %s; CPU: %s, %d threads; devices %s; --gpu-memory %s\n\n",
              size, formatBytes(grid.voxelCount() * 4).c_str(), projections, detector, repeat, device.c_str(), cpuModel().c_str(),
              resolveThreadCount(threads), gpuList.c_str(), gpuMemory.empty() ? "(measured)" : gpuMemory.c_str());
  std::printf("%-10s %-7s %10s %12s %8s %10s %12s %9s %9s %8s\n", "backend", "window", "one block s", "one proj/s", "slabs", "slabs s",
              "slabs proj/s", "vs block", "uploaded", "bits");
  for (const std::string& backend : backendList) {
    if (backend == "cpu" && backendList.size() > 1) continue;
    FdkOptions options;
    options.backend = backendNamed(backend);
    if (!options.backend) throw UsageError("--backends: unknown backend '" + backend + "'");
    options.threads = threads;
    // Both runs filter where --filter-on says (the same kernels in one block and in slabs: the same bits).
    options.filterOn = filterPlace;
    options.gpu = gpus.front();
    const std::string w = windowList.front();
    options.window = w == "auto" ? 0 : w == "max" ? kMaximumWindow : std::atoi(w.c_str());
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    try {
      Image block;
      std::vector<double> blockTimes, slabTimes;
      std::string blockNote;
      for (int rep = 0; rep < repeat; ++rep) {
        try {
          const auto t = std::chrono::steady_clock::now();
          Image again = reconstructFdk(geometry, raw, grid, options);
          blockTimes.push_back(since(t));
          if (!block.data.empty() && std::memcmp(block.data.data(), again.data.data(), block.data.size() * sizeof(float)) != 0)
            std::printf("    one block: run %d differs from run %d\n", rep + 1, rep);
          block = std::move(again);
        } catch (const std::exception& e) {
          blockNote = e.what();
          break;
        }
      }
      FdkOptions slabbed = options;
      if (!gpuMemory.empty()) slabbed.gpuMemory = parseByteSize("--gpu-memory", gpuMemory);
      if (gpus.size() > 1) slabbed.gpus = gpus;
      auto rawSource = memorySource(raw, "projections");
      const SlabPlan plan = planFdk(geometry, grid, slabbed, *rawSource).slabs;
      if (plan.slabs.empty()) throw UsageError("the volume fits: no slabs to measure (a smaller --gpu-memory, or several --gpu)");
      Image result;
      FdkReport report;
      for (int rep = 0; rep < repeat; ++rep) {
        const auto t = std::chrono::steady_clock::now();
        Image again = reconstructFdk(geometry, raw, grid, slabbed, &report);
        slabTimes.push_back(since(t));
        if (!result.data.empty() && std::memcmp(result.data.data(), again.data.data(), result.data.size() * sizeof(float)) != 0)
          std::printf("    slabs: run %d differs from run %d\n", rep + 1, rep);
        result = std::move(again);
      }
      const double slabSeconds = median(slabTimes);
      std::string bits = "-";
      std::string differences;
      if (!block.data.empty()) {
        bits = std::memcmp(block.data.data(), result.data.data(), block.data.size() * sizeof(float)) == 0 ? "identical" : "DIFFER";
        if (bits == "DIFFER") {
          // Where: how many voxels, the largest difference, and the y rows holding differences.
          std::size_t count = 0;
          double worst = 0, scale = 0;
          int lowRow = grid.size[1], highRow = -1;
          const std::size_t nx = grid.size[0], ny = grid.size[1];
          for (std::size_t i = 0; i < block.data.size(); ++i) {
            scale = std::max(scale, static_cast<double>(std::abs(block.data[i])));
            if (block.data[i] != result.data[i]) {
              ++count;
              worst = std::max(worst, static_cast<double>(std::abs(block.data[i] - result.data[i])));
              const int j = static_cast<int>((i / nx) % ny);
              lowRow = std::min(lowRow, j);
              highRow = std::max(highRow, j);
            }
          }
          differences = "    differences: " + std::to_string(count) + " voxels, max |d| " + std::to_string(worst) + " (largest value " +
                        std::to_string(scale) + "), in y rows " + std::to_string(lowRow) + " to " + std::to_string(highRow) + "\n";
        }
      }
      const double blockSeconds = blockTimes.empty() ? 0.0 : median(blockTimes);
      std::printf("%-10s %-7s %10s %12s %8d %10.3f %12.1f %9s %8.0f%% %8s\n", backend.c_str(), w.c_str(),
                  blockTimes.empty() ? "-" : std::to_string(blockSeconds).substr(0, 6).c_str(),
                  blockTimes.empty() ? "-" : std::to_string(projections / blockSeconds).substr(0, 7).c_str(), report.slabs, slabSeconds,
                  projections / slabSeconds,
                  blockTimes.empty() ? "-" : (std::to_string(static_cast<int>(std::lround(100.0 * (slabSeconds / blockSeconds - 1)))) + "%").c_str(),
                  report.wholeUploadBytes > 0 ? 100.0 * report.uploadedBytes / report.wholeUploadBytes : 0.0, bits.c_str());
      for (const DeviceShare& d : report.devices)
        std::printf("    device %d: %d %s, %.3f s (%s)\n", d.gpu, d.slabs, d.slabs == 1 ? "slab" : "slabs", d.seconds, d.description.c_str());
      if (!blockNote.empty()) std::printf("    one block: %s\n", blockNote.c_str());
      std::printf("%s", differences.c_str());
      std::printf("    slab plan: %d rows per slab, %s per device; filter %.3f s (busy), readback %.3f s, setup %.3f s\n", report.rowsPerSlab,
                  report.slabBudget == UINT64_MAX ? "no limit" : formatBytes(report.slabBudget).c_str(), report.filterSeconds,
                  report.readbackSeconds, report.setupSeconds);
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::printf("%-10s failed: %s\n", backend.c_str(), e.what());
    }
  }
}

void addBenchCommand(CLI::App& app) {
  static BenchCommand bench;  // CLI11 keeps references to its options: the command lives as long as the program
  bench.add(app);
}

}  // namespace glrecon::app
