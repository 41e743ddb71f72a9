// glrecon bench's statistics, table, JSON and chart (bench_report.h). The chart uses cairo (Debian's libcairo2): bars
// with text, without a hand-written font rasterizer.
#include "bench_report.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "glrecon/errors.h"
#include "glrecon/io.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

Stat statOf(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  return s;
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

std::string statJson(const Stat& s) {
  return "{\"median\": " + jsonNumber(s.median) + ", \"min\": " + jsonNumber(s.min) + ", \"max\": " + jsonNumber(s.max) + "}";
}

void writeRunJson(std::ostream& j, const BenchSetup& setup, const BenchRun& r) {
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
  j << "]}";
}

// The chart's value axis: log when the values span a wide range.
struct ChartAxis {
  int left, width;
  bool logScale;
  double axisLo, axisHi;
  double x(double v) const {
    const double f = logScale ? (std::log10(v) - std::log10(axisLo)) / (std::log10(axisHi) - std::log10(axisLo)) : v / axisHi;
    return left + f * (width - left - 90);
  }
};

ChartAxis chartAxis(const BenchSetup& setup, const std::vector<const BenchRun*>& ok, int left, int width) {
  double lo = 1e30, hi = 0;
  for (const BenchRun* r : ok) {
    lo = std::min(lo, r->gups.min);
    hi = std::max(hi, r->gups.max);
  }
  if (setup.texturePeak > 0) hi = std::max(hi, setup.texturePeak);
  const bool logScale = !ok.empty() && hi / lo > 30;
  const double axisLo = logScale ? std::pow(10, std::floor(std::log10(lo))) : 0.0;
  const double axisHi = logScale ? std::pow(10, std::ceil(std::log10(hi))) : (hi > 0 ? hi * 1.1 : 1.0);
  return {left, width, logScale, axisLo, axisHi};
}

void drawTitle(cairo_t* cr, const BenchSetup& setup) {
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
}

// One run's bar (the median), its whisker (min to max), its label and value, at height y.
void drawBar(cairo_t* cr, const ChartAxis& axis, const BenchRun& r, double y, int barHeight) {
  const int left = axis.left;
  const bool graphics = r.backend.rfind("graphics", 0) == 0;
  cairo_set_source_rgb(cr, r.backend == "cpu" ? 0.5 : graphics ? 0.2 : 0.85, r.backend == "cpu" ? 0.5 : graphics ? 0.45 : 0.45,
                       r.backend == "cpu" ? 0.5 : graphics ? 0.8 : 0.15);
  cairo_rectangle(cr, left, y + 4, std::max(1.0, axis.x(r.gups.median) - left), barHeight - 8);
  cairo_fill(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1.5);
  cairo_move_to(cr, axis.x(r.gups.min), y + barHeight / 2.0);
  cairo_line_to(cr, axis.x(r.gups.max), y + barHeight / 2.0);
  cairo_move_to(cr, axis.x(r.gups.min), y + 8);
  cairo_line_to(cr, axis.x(r.gups.min), y + barHeight - 8);
  cairo_move_to(cr, axis.x(r.gups.max), y + 8);
  cairo_line_to(cr, axis.x(r.gups.max), y + barHeight - 8);
  cairo_stroke(cr);
  const std::string label = r.backend + (r.windowAsked == "-" ? "" : " W=" + r.windowAsked + (r.windowAsked == "auto" || r.windowAsked == "max" ? " (" + std::to_string(r.window) + ")" : ""));
  cairo_move_to(cr, 10, y + barHeight - 9);
  cairo_show_text(cr, label.c_str());
  char value[32];
  std::snprintf(value, sizeof value, "%.3g", r.gups.median);
  cairo_move_to(cr, axis.x(r.gups.max) + 6, y + barHeight - 9);
  cairo_show_text(cr, value);
}

void drawPeak(cairo_t* cr, const ChartAxis& axis, double texturePeak, int top, double bottom) {
  cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
  cairo_move_to(cr, axis.x(texturePeak), top - 6);
  cairo_line_to(cr, axis.x(texturePeak), bottom);
  cairo_stroke(cr);
  char peak[64];
  std::snprintf(peak, sizeof peak, "texture peak %.0f", texturePeak);
  cairo_move_to(cr, axis.x(texturePeak) - 60, bottom + 16);
  cairo_show_text(cr, peak);
  cairo_set_source_rgb(cr, 0, 0, 0);
}

}  // namespace

void BenchRun::summarise() {
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

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

void printBenchTable(const BenchSetup& setup, const std::vector<BenchRun>& runs, bool cpuAsked) {
  std::printf("glrecon bench: %d^3 voxels from %d projections of %d^2 (Shepp-Logan), median of %d runs after a warm-up\n"
              "GPU: %s | %s\nCPU: %s, %d threads\nfiltering alone (FFTW, all threads): %.3f s\n",
              setup.size, setup.projections, setup.detector, setup.repeat, setup.gpu.c_str(), setup.driver.c_str(), setup.cpu.c_str(),
              setup.threads, setup.filterSeconds);
  if (setup.texturePeak > 0) std::printf("texture units' peak: %.0f G bilinear fetches/s\n", setup.texturePeak);
  std::printf("\nbackprojection: a profiled pass of pre-filtered projections, each step waited for; whole FDK: raw projections to the\n"
              "volume on the host, filtering overlapped with backprojection, operator made once (setup) and reset per run\n\n");
  std::printf("%-12s %-9s %8s %8s %9s %8s %11s %7s %6s %10s %10s %8s %10s %10s %8s %7s\n", "backend", "window", "setup s", "upload s",
              "backproj s", "readbk s", "G upd/s", "spread", "filter", "FDK s", "FDK proj/s", "spread", "max|d|cpu", "rms d cpu", "RMSE", "PSNR");
  bool noisy = false;
  for (const BenchRun& r : runs) {
    if (!r.error.empty()) {
      std::printf("%-12s %-9s failed: %s\n", r.backend.c_str(), r.windowAsked.c_str(), r.error.c_str());
      continue;
    }
    std::string w = r.windowAsked;  // "-" for the CPU
    if (r.windowAsked == "auto" || r.windowAsked == "max") w += '=' + std::to_string(r.window);
    std::printf("%-12s %-9s %8.3f %8.3f %9.3f %8.3f %11.3f %6.1f%% %6s %10.3f %10.1f %6.1f%% %10.2e %10.2e %8.4f %7.2f\n", r.backend.c_str(),
                w.c_str(), r.setup, r.upload.median, r.compute.median, r.readback.median, r.gups.median, 100 * r.gups.spread(),
                r.filteredOnGpu ? "gpu" : "cpu", r.fdkSeconds.median, r.fdkPps.median, 100 * r.fdkPps.spread(), r.maxDiff, r.rmsDiff, r.rmse, r.psnr);
    noisy = noisy || r.gups.spread() > 0.1 || r.fdkPps.spread() > 0.1;
  }
  if (!cpuAsked) std::printf("(the cpu row is the reference the others are compared with)\n");
  if (setup.texturePeak > 0)
    for (const BenchRun& r : runs)
      if (r.error.empty() && r.backend != "cpu")
        std::printf("%s %s: %.0f%% of the texture peak\n", r.backend.c_str(), r.windowAsked.c_str(), 100 * r.gups.median / setup.texturePeak);
  if (noisy)
    std::fprintf(stderr, "bench: warning: some runs spread by more than 10%% (max - min over the median): more --repeat, or a quieter machine\n");
}

void writeBenchJson(const fs::path& path, const BenchSetup& setup, const std::vector<BenchRun>& runs) {
  std::ostringstream j;
  j << "{\n  \"problem\": {\"volume\": " << setup.size << ", \"projections\": " << setup.projections << ", \"detector\": " << setup.detector
    << "},\n  \"machine\": {\"gpu\": " << jsonString(setup.gpu) << ", \"driver\": " << jsonString(setup.driver)
    << ", \"cpu\": " << jsonString(setup.cpu) << ", \"cpu_threads\": " << setup.threads << "},\n"
    << "  \"repeat\": " << setup.repeat << ",\n  \"texture_peak_gfetches_per_second\": " << jsonNumber(setup.texturePeak) << ",\n"
    << "  \"filter_seconds\": " << jsonNumber(setup.filterSeconds) << ",\n  \"runs\": [\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    writeRunJson(j, setup, runs[i]);
    j << (i + 1 < runs.size() ? ",\n" : "\n");
  }
  j << "  ]\n}\n";
  AtomicOutput out(path.string(), true);
  std::ofstream(out.temporaryPath()) << j.str();
  out.commit();
}

void writeBenchChart(const fs::path& path, const BenchSetup& setup, const std::vector<BenchRun>& runs) {
  std::vector<const BenchRun*> ok;
  for (const BenchRun& r : runs)
    if (r.error.empty() && r.gups.median > 0) ok.push_back(&r);
  const int barHeight = 26, top = 70, left = 260, width = 1000, height = top + std::max<int>(1, ok.size()) * barHeight + 50;
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t* cr = cairo_create(surface);
  drawTitle(cr, setup);
  const ChartAxis axis = chartAxis(setup, ok, left, width);
  for (std::size_t i = 0; i < ok.size(); ++i) drawBar(cr, axis, *ok[i], top + i * barHeight, barHeight);
  if (setup.texturePeak > 0) drawPeak(cr, axis, setup.texturePeak, top, top + ok.size() * barHeight);
  cairo_move_to(cr, left, height - 20);
  const std::string scale = std::string(axis.logScale ? "log scale" : "linear scale") + "; bars: median of " + std::to_string(setup.repeat) +
                            " runs, whiskers: min to max";
  cairo_show_text(cr, scale.c_str());
  cairo_destroy(cr);
  AtomicOutput out(path.string(), true);
  const cairo_status_t status = cairo_surface_write_to_png(surface, out.temporaryPath().c_str());
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS) throwInputError(path.string(), "output", "a writable PNG", cairo_status_to_string(status));
  out.commit();
}

}  // namespace glrecon::app
