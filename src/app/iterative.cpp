// The iterative commands: project (forward projection of any volume), sart / sirt / cgls / osem, compare (the OS-EM
// paper's numerical comparison of two volumes), bench-iterative (projector and iteration rates per backend).
#include "iterative.h"

#include <CLI/CLI.hpp>
#include <cairo.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>

#include "commands.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/parse.h"
#include "glrecon/phantom.h"
#include "glrecon/limits.h"
#include "glrecon/operator.h"
#include "validation.h"
#include "glrecon/roi.h"

namespace glrecon::app {
namespace fs = std::filesystem;
namespace {

std::string backendHelp() {
  std::string names;
  for (Backend b : builtBackends())
    if (b != Backend::GraphicsMp) names += (names.empty() ? "" : ", ") + std::string(backendInfo(b).name);
  return "Operator backend: " + names;
}

// The iterative commands' --backend: cpu, graphics, compute or cuda (graphics-mp differs from graphics in Fdk back only).
Backend projectorBackend(const std::string& name) {
  const std::optional<Backend> backend = name == "graphics-mp" ? std::nullopt : backendNamed(name);
  if (backend) return *parseBackend("--backend", name, false);
  std::string known;
  for (Backend b : builtBackends())
    if (b != Backend::GraphicsMp) known += (known.empty() ? "" : ", ") + std::string(backendInfo(b).name);
  throw UsageError("--backend: expected one of " + known + ", found '" + glrecon::quoted(name) + "'");
}

void refuseMissingDirectory(const std::string& output) {
  const fs::path p(output);
  if (p.has_parent_path() && !fs::is_directory(p.parent_path()))
    throwInputError(output, "output directory", "an existing directory", p.parent_path().string());
}

// ---- project ----
struct ProjectCommand {
  std::string volumePath, geometryPath, output, backend = "cpu", detector = "256", detectorSpacing = "2";
  int gpu = 0, threads = 0;
  double step = 0.0;
  bool overwrite = false, quiet = false;

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("project", "Forward-project a volume (line integrals) for an RTK geometry: simulate a scan of any volume");
    c->add_option("--volume,-i", volumePath, "Volume to project (.mha or .mhd)")->required();
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file")->required();
    c->add_option("--output,-o", output, "Projection stack to write (.mha or .mhd), nu x nv x projections")->required();
    c->add_option("--detector", detector, "Detector pixels: N or NU,NV (centred on the detector's (0,0) mm point)")->capture_default_str();
    c->add_option("--detector-spacing", detectorSpacing, "Detector pixel spacing (mm): S or SU,SV")->capture_default_str();
    c->add_option("--backend", backend, backendHelp())->capture_default_str();
    c->add_option("--gpu", gpu, "GPU backends: device index")->capture_default_str();
    c->add_option("--threads", threads, "cpu backend: threads (0: all)")->capture_default_str();
    c->add_option("--step", step, "Ray-marching step in mm (0: half the smallest voxel spacing)")->capture_default_str();
    c->add_flag("--overwrite", overwrite, "Replace an existing output file");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->callback([this] { run(); });
  }

  void run() const {
    const auto d = parseNumberList("--detector", detector), ds = parseNumberList("--detector-spacing", detectorSpacing);
    if ((d.size() != 1 && d.size() != 2) || (ds.size() != 1 && ds.size() != 2))
      throw UsageError("--detector, --detector-spacing: expected 1 or 2 comma-separated values");
    const double nu = d[0], nv = d.size() == 2 ? d[1] : d[0], su = ds[0], sv = ds.size() == 2 ? ds[1] : ds[0];
    if (nu < 1 || nv < 1 || nu != std::floor(nu) || nv != std::floor(nv))
      throw UsageError("--detector: expected positive whole pixel counts, found '" + detector + "'");
    if (!(su > 0) || !(sv > 0)) throw UsageError("--detector-spacing: expected positive lengths in mm, found '" + detectorSpacing + "'");
    refuseToOverwrite(output, overwrite);
    refuseMissingDirectory(output);
    const Image volume = readMetaImage(volumePath);
    const DetectorLayout layout = DetectorLayout::centred(static_cast<int>(nu), static_cast<int>(nv), su, sv);
    const Geometry geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), layout);
    OperatorOptions po;
    po.device = gpu;
    po.threads = threads;
    po.step = step;
    auto projector = makeOperator(projectorBackend(backend), geometry, volume.grid(), po);
    Image out({layout.nu, layout.nv, static_cast<int>(geometry.size())}, {layout.spacingU, layout.spacingV, 1.0},
              {layout.originU, layout.originV, 0.0});
    std::vector<std::size_t> views(geometry.size());
    std::iota(views.begin(), views.end(), std::size_t{0});
    const auto t0 = std::chrono::steady_clock::now();
    projector->setVolume(volume.data.data());
    projector->forward(views.data(), views.size(), out.data.data());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    writeMetaImage(output, out, overwrite);
    if (!quiet) {
      const double samples = countRaySamples(geometry, volume.grid(), projector->step());
      std::fprintf(stderr, "projected %zu views of %d x %d with %s (step %.4g mm, trilinear): %.3f s, %.1f projections/s, %.3f G ray-samples/s\n",
                   geometry.size(), layout.nu, layout.nv, projector->description().c_str(), projector->step(), seconds,
                   geometry.size() / seconds, samples / seconds * 1e-9);
      std::fprintf(stderr, "wrote %s\n", output.c_str());
    }
  }
};

// ---- sart, sirt, cgls, osem ----
struct IterativeCommand {
  IterativeMethod method;
  std::string geometryPath, projectionsPath, output, backend = "cpu", roi, initial, residualCsv, residualPng;
  std::string size = "256", spacing = "1", origin;
  int iterations = 10, subsets = 0, gpu = 0, threads = 0;
  double lambda = 0.0, step = 0.0;
  bool positivity = false, overwrite = false, quiet = false;

  explicit IterativeCommand(IterativeMethod m) : method(m) {}

  void add(CLI::App& app) {
    const char* about = method == IterativeMethod::Sart   ? "Reconstruct with SART / OS-SART (additive, ordered subsets; --subsets 1 is SIRT)"
                        : method == IterativeMethod::Sirt ? "Reconstruct with SIRT (additive, all projections at once)"
                        : method == IterativeMethod::Cgls ? "Reconstruct with CGLS (conjugate gradients on the least-squares problem)"
                                                          : "Reconstruct with OS-EM (multiplicative, positive data; --subsets 1 is MLEM)";
    CLI::App* c = app.add_subcommand(methodName(method), about);
    c->add_option("--geometry,-g", geometryPath, "RTK geometry XML file")->required();
    c->add_option("--projections,-p", projectionsPath, "Projections (line integrals): a stack, a directory or a glob")->required();
    c->add_option("--output,-o", output, "Output volume (.mha or .mhd)")->required();
    c->add_option("--size,--dimension", size, "Volume size in voxels: N or NX,NY,NZ")->capture_default_str();
    c->add_option("--spacing", spacing, "Voxel spacing in mm: S or SX,SY,SZ")->capture_default_str();
    c->add_option("--origin", origin, "World position (mm) of voxel (0,0,0): X,Y,Z (default: volume centred on the origin)");
    c->add_option("--iterations,-n", iterations, "Iterations (passes over all projections)")->capture_default_str();
    if (method == IterativeMethod::Sart || method == IterativeMethod::Osem)
      c->add_option("--subsets", subsets,
                    method == IterativeMethod::Sart ? "Ordered subsets (1 to the number of projections; default: one projection per subset)"
                                                    : "Ordered subsets (1 to the number of projections; 1 is MLEM; default: 8)");
    if (method == IterativeMethod::Sart || method == IterativeMethod::Sirt)
      c->add_option("--lambda", lambda, "Relaxation in (0, 2) (default: 0.8 with one projection per subset, else 1)");
    if (method != IterativeMethod::Cgls)
      c->add_flag("--positivity", positivity, "Clamp negative voxels to 0 after every update");
    c->add_option("--initial", initial, "Starting volume on the output grid (e.g. an FDK result; default: 0, osem: a positive constant)");
    c->add_option("--roi", roi, "Reconstruct only a region (voxels outside stay 0): fov, fov-cylinder, cylinder:..., box:..., sphere:..., MASK.mha");
    c->add_option("--backend", backend, backendHelp())->capture_default_str();
    c->add_option("--gpu", gpu, "GPU backends: device index")->capture_default_str();
    c->add_option("--threads", threads, "cpu backend: threads (0: all)")->capture_default_str();
    c->add_option("--step", step, "Ray-marching step in mm (0: half the smallest voxel spacing)")->capture_default_str();
    c->add_option("--residual-csv", residualCsv, "Write the residual curve as CSV (iteration, subsets, residual, relative, seconds)");
    c->add_option("--residual-png", residualPng, "Write the residual curve as a PNG chart (log scale)");
    c->add_flag("--overwrite", overwrite, "Replace existing output files");
    c->add_flag("--quiet,-q", quiet, "No progress output");
    c->callback([this] { run(); });
  }

  void run() const {
    IterativeOptions options;
    options.method = method;
    options.iterations = iterations;
    options.subsets = subsets;
    options.lambda = lambda;
    options.positivity = positivity;
    if (iterations < 1) throw UsageError("--iterations: expected at least 1, found " + std::to_string(iterations));
    const Backend chosen = projectorBackend(backend);  // before any reading: a bad name costs nothing
    const VolumeGrid grid = parseVolumeGrid(size, spacing, origin);
    for (const std::string& path : {output, residualCsv, residualPng}) {
      if (path.empty()) continue;
      refuseToOverwrite(path, overwrite);
      refuseMissingDirectory(path);
    }
    const Image projections = readProjectionStack(projectionsPath);
    const Geometry geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), detectorLayoutOf(projections));
    checkProjectionsMatch(geometry, projections, projectionsPath);
    Image initialVolume;
    if (!initial.empty()) {
      initialVolume = readMetaImage(initial);
      options.initial = &initialVolume;
    }
    if (!roi.empty()) options.mask = makeRegionOfInterest(roi, geometry, grid).mask;
    OperatorOptions po;
    po.device = gpu;
    po.threads = threads;
    po.step = step;
    auto projector = makeOperator(chosen, geometry, grid, po);
    if (!quiet)
      std::fprintf(stderr, "%s: %d x %d x %d voxels from %zu projections of %d x %d, %s, step %.4g mm\n", methodName(method), grid.size[0],
                   grid.size[1], grid.size[2], geometry.size(), geometry.detector.nu, geometry.detector.nv, projector->description().c_str(),
                   projector->step());
    IterativeReport report;
    double dataNorm = 0;
    for (float b : projections.data) dataNorm += static_cast<double>(b) * b;
    dataNorm = std::sqrt(dataNorm);
    const bool live = !quiet;
    const Image result = reconstructIterative(*projector, geometry, projections, grid, options, &report,
                                              [&](const IterationRecord& r, const std::vector<float>&) {
                                                if (!live || r.subset != r.subsets) return;
                                                std::fprintf(stderr, "%s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", methodName(method),
                                                             r.iteration, iterations, r.residual, dataNorm > 0 ? r.residual / dataNorm : 0.0,
                                                             r.seconds);
                                              });
    writeMetaImage(output, result, overwrite);
    if (!residualCsv.empty()) writeResidualCsv(residualCsv, report, overwrite);
    if (!residualPng.empty())
      writeResidualPng(residualPng, report, std::string(methodName(method)) + " on " + backendInfo(projector->backend()).name + ", " + std::to_string(report.subsets) +
                                                " subset(s)", overwrite);
    if (!quiet) {
      std::fprintf(stderr, "%s: %d iterations, %d subset(s), lambda %.3g: final residual %.6g (%.4g of ||b||); %.2f s (setup %.2f s; forward %.2f s, back %.2f s)\n",
                   methodName(method), iterations, report.subsets, report.lambda, report.finalResidual,
                   dataNorm > 0 ? report.finalResidual / dataNorm : 0.0, report.seconds, report.setupSeconds, projector->timings().forward,
                   projector->timings().back);
      std::fprintf(stderr, "wrote %s\n", output.c_str());
    }
  }
};

// ---- compare ----
struct CompareCommand {
  std::string a, b, png, slice = "y";
  std::vector<std::string> rois;
  bool overwrite = false;

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("compare", "Compare two volumes on one grid: max, mean and RMS difference, per region, difference PNG");
    c->add_option("first", a, "First volume (.mha or .mhd), e.g. the cpu result")->required();
    c->add_option("second", b, "Second volume on the same grid, e.g. a GPU result")->required();
    c->add_option("--roi", rois, "Also report inside a region: cylinder:..., box:..., sphere:..., MASK.mha (repeatable)");
    c->add_option("--png", png, "Write |first - second| of one slice as a PNG (black 0, white the largest difference)");
    c->add_option("--slice", slice, "Slice of the PNG: AXIS or AXIS:INDEX (y slices are axial; default: the central axial slice)")->capture_default_str();
    c->add_flag("--overwrite", overwrite, "Replace an existing PNG");
    c->callback([this] { run(); });
  }

  struct Stats {
    std::size_t count = 0;
    double max = 0, sum = 0, squares = 0, sumA = 0, maxA = 0;
  };

  void run() const {
    if (!png.empty()) {
      refuseToOverwrite(png, overwrite);
      refuseMissingDirectory(png);
    }
    const Image ia = readMetaImage(a), ib = readMetaImage(b);
    auto vec = [](auto v) { return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]); };
    if (ia.size != ib.size) throwInputError(b, "DimSize", vec(ia.size) + " (as " + a + ")", vec(ib.size));
    for (int k = 0; k < 3; ++k) {
      if (std::abs(ia.spacing[k] - ib.spacing[k]) > 1e-6 * std::abs(ia.spacing[k]))
        throwInputError(b, "ElementSpacing", vec(ia.spacing) + " (as " + a + ")", vec(ib.spacing));
      if (std::abs(ia.origin[k] - ib.origin[k]) > 1e-6 * std::max(1.0, std::abs(ia.origin[k])))
        throwInputError(b, "Offset", vec(ia.origin) + " (as " + a + ")", vec(ib.origin));
    }
    std::vector<RegionOfInterest> regions;
    for (const std::string& spec : rois) {
      if (spec.rfind("fov", 0) == 0)
        throw UsageError("--roi: compare knows no scan geometry: expected cylinder:..., box:..., sphere:... or a mask file, found '" + spec + "'");
      regions.push_back(makeRegionOfInterest(spec, Geometry{}, ia.grid()));
    }
    auto stats = [&](const RegionOfInterest* region) {
      Stats s;
      for (std::size_t i = 0; i < ia.data.size(); ++i) {
        if (region && !region->mask[i]) continue;
        const double d = std::abs(static_cast<double>(ia.data[i]) - ib.data[i]);
        if (!std::isfinite(d)) throwInputError(std::isfinite(ia.data[i]) ? b : a, "voxel " + std::to_string(i), "a finite value", "NaN or infinity");
        ++s.count;
        s.max = std::max(s.max, d);
        s.sum += d;
        s.squares += d * d;
        s.sumA += std::abs(ia.data[i]);
        s.maxA = std::max(s.maxA, static_cast<double>(std::abs(ia.data[i])));
      }
      return s;
    };
    auto print = [](const std::string& name, const Stats& s) {
      const double n = std::max<std::size_t>(1, s.count);
      std::printf("%-28s voxels %10zu  max |diff| %.6g  mean |diff| %.6g  RMS diff %.6g  (max |first| %.6g, mean |first| %.6g)\n",
                  name.c_str(), s.count, s.max, s.sum / n, std::sqrt(s.squares / n), s.maxA, s.sumA / n);
    };
    print("whole volume", stats(nullptr));
    for (const RegionOfInterest& r : regions) print(r.description, stats(&r));
    if (!png.empty()) {
      Image diff = ia;
      double maxDiff = 0;
      for (std::size_t i = 0; i < diff.data.size(); ++i) {
        diff.data[i] = std::abs(ia.data[i] - ib.data[i]);
        maxDiff = std::max(maxDiff, static_cast<double>(diff.data[i]));
      }
      const auto colon = slice.find(':');
      const SliceAxis axis = parseSliceAxis(slice.substr(0, colon));
      const int axisIndex = axis == SliceAxis::X ? 0 : axis == SliceAxis::Y ? 1 : 2;
      int index = ia.size[axisIndex] / 2;
      if (colon != std::string::npos) {
        const auto v = parseNumberList("--slice", slice.substr(colon + 1));
        if (v.size() != 1 || v[0] < 0 || v[0] >= ia.size[axisIndex] || v[0] != std::floor(v[0]))
          throw UsageError("--slice: expected AXIS:INDEX with 0 <= INDEX < " + std::to_string(ia.size[axisIndex]) + ", found '" + slice + "'");
        index = static_cast<int>(v[0]);
      }
      writeSlicePng(png, diff, axis, index, 0.0, maxDiff > 0 ? maxDiff : 1.0, overwrite);
      std::fprintf(stderr, "wrote %s (white = %.6g)\n", png.c_str(), maxDiff);
    }
  }
};

// ---- bench-iterative ----
struct IterativeBenchCommand {
  int size = 64, projections = 90, detector = 128, gpu = 0, threads = 0;
  std::string backends = "cpu,graphics,compute,cuda";

  void add(CLI::App& app) {
    CLI::App* c = app.add_subcommand("bench-iterative",
                                     "Time the projector pair and one SART and one OS-EM iteration per backend on a simulated Shepp-Logan scan");
    c->add_option("--size", size, "Volume size per axis (covering 256 mm)")->capture_default_str();
    c->add_option("--projections", projections, "Projections over 360 degrees")->capture_default_str();
    c->add_option("--detector", detector, "Detector pixels per axis (covering 512 mm)")->capture_default_str();
    c->add_option("--backends", backends, "Comma-separated backends to run (those that cannot run are reported and skipped)")->capture_default_str();
    c->add_option("--gpu", gpu, "GPU backends: device index")->capture_default_str();
    c->add_option("--threads", threads, "cpu backend: threads (0: all)")->capture_default_str();
    c->callback([this] { run(); });
  }

  void run() const {
    if (size < 1 || projections < 1 || detector < 1) throw UsageError("--size, --projections, --detector: expected positive numbers");
    const Geometry geometry = sampleScan(projections, detector);
    const VolumeGrid grid = VolumeGrid::centred({size, size, size}, glm::dvec3(256.0 / size));
    const Phantom phantom = Phantom::sheppLogan(SheppLoganVariant::Rtk, 100.0);
    ProjectionOptions popts;
    popts.threads = threads;
    const Image b = projectPhantom(phantom, geometry, popts);
    const Image truth = voxelizePhantom(phantom, grid, 2, threads);
    std::vector<std::size_t> views(geometry.size());
    std::iota(views.begin(), views.end(), std::size_t{0});
    std::printf("%d^3 voxels, %d projections of %d^2 (%s)\n", size, projections, detector, "Shepp-Logan, RTK table, scale 100 mm");
    std::printf("%-10s %12s %14s %12s %12s %14s %14s\n", "backend", "forward s", "G samples/s", "proj/s", "back s", "SART iter s", "OS-EM iter s");
    std::string list = backends + ",";
    for (std::size_t pos = 0; (pos = list.find(',')) != std::string::npos; list.erase(0, pos + 1)) {
      const std::string name = list.substr(0, pos);
      if (name.empty()) continue;
      try {
        OperatorOptions po;
        po.device = gpu;
        po.threads = threads;
        auto p = makeOperator(projectorBackend(name), geometry, grid, po);
        std::vector<float> out(geometry.size() * geometry.detector.nu * geometry.detector.nv), vol(grid.voxelCount());
        p->setVolume(truth.data.data());
        p->forward(views.data(), 1, out.data());  // warm-up: compile, allocate
        // Forward from a host volume (its upload counted) to host projections; back from host projections to a host volume.
        auto t0 = std::chrono::steady_clock::now();
        p->setVolume(truth.data.data());
        p->forward(views.data(), views.size(), out.data());
        const double fwd = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fill(vol.begin(), vol.end(), 0.0f);
        p->setVolume(vol.data());
        t0 = std::chrono::steady_clock::now();
        p->back(out.data(), views.data(), views.size(), Weighting::Adjoint);
        p->readVolume(vol.data());
        const double bck = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        IterativeOptions io;
        io.iterations = 1;
        io.method = IterativeMethod::Sart;
        io.subsets = std::min(projections, 10);
        IterativeReport sart, osem;
        reconstructIterative(*p, geometry, b, grid, io, &sart);
        io.method = IterativeMethod::Osem;
        reconstructIterative(*p, geometry, b, grid, io, &osem);
        const double samples = countRaySamples(geometry, grid, p->step());
        std::printf("%-10s %12.3f %14.3f %12.1f %12.3f %14.3f %14.3f   %s\n", name.c_str(), fwd, samples / fwd * 1e-9, projections / fwd, bck,
                    sart.iterations[0].seconds, osem.iterations[0].seconds, p->description().c_str());
      } catch (const std::exception& e) {
        std::printf("%-10s skipped: %s\n", name.c_str(), e.what());
      }
      std::fflush(stdout);
    }
    std::printf("SART and OS-EM: 10 ordered subsets, one iteration each (per subset a forward and two back projections, B(c) and "
                "B(1); on the GPU backends the iterate stays on the device, only projections and corrections cross)\n");
  }
};

}  // namespace

void writeResidualCsv(const std::string& path, const IterativeReport& report, bool overwrite) {
  AtomicOutput out(path, overwrite);
  {
    std::ofstream f(out.temporaryPath());
    f << "iteration,subsets,residual,relative_residual,seconds\n";
    for (const IterationRecord& r : report.iterations)
      f << r.iteration << ',' << r.subsets << ',' << r.residual << ',' << (report.dataNorm > 0 ? r.residual / report.dataNorm : 0.0) << ','
        << r.seconds << '\n';
    f << "final,," << report.finalResidual << ',' << (report.dataNorm > 0 ? report.finalResidual / report.dataNorm : 0.0) << ','
      << report.seconds << '\n';
    if (!f) throwInputError(path, "output", "a writable file", "a write error");
  }
  out.commit();
}

void writeResidualPng(const std::string& path, const IterativeReport& report, const std::string& title, bool overwrite) {
  const int width = 640, height = 400, left = 80, right = 20, top = 40, bottom = 50;
  std::vector<double> values;
  for (const IterationRecord& r : report.iterations) values.push_back(r.residual);
  values.push_back(report.finalResidual);
  double lo = 1e300, hi = 0;
  for (double v : values)
    if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(hi > 0)) lo = 1e-3, hi = 1;
  if (hi <= lo * 1.0001) lo = hi / 10;
  const double llo = std::floor(std::log10(lo)), lhi = std::ceil(std::log10(hi));
  auto x = [&](double i) { return left + (width - left - right) * (values.size() > 1 ? i / (values.size() - 1) : 0.5); };
  auto y = [&](double v) { return top + (height - top - bottom) * (1 - (std::log10(std::max(v, lo)) - llo) / std::max(1e-9, lhi - llo)); };
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, 14);
  cairo_move_to(cr, 10, 22);
  cairo_show_text(cr, ("residual ||b - A x|| per iteration: " + title).c_str());
  cairo_set_font_size(cr, 11);
  cairo_set_line_width(cr, 1);
  for (double e = llo; e <= lhi; e += 1) {  // decades
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    cairo_move_to(cr, left, y(std::pow(10, e)));
    cairo_line_to(cr, width - right, y(std::pow(10, e)));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    char label[32];
    std::snprintf(label, sizeof label, "1e%+d", static_cast<int>(e));
    cairo_move_to(cr, 10, y(std::pow(10, e)) + 4);
    cairo_show_text(cr, label);
  }
  cairo_move_to(cr, left, height - 20);
  cairo_show_text(cr, "iteration 1 ... last, then the final volume (log scale)");
  cairo_set_source_rgb(cr, 0.1, 0.35, 0.75);
  cairo_set_line_width(cr, 2);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i == 0) cairo_move_to(cr, x(i), y(values[i]));
    else cairo_line_to(cr, x(i), y(values[i]));
  }
  cairo_stroke(cr);
  cairo_destroy(cr);
  AtomicOutput out(path, overwrite);
  const cairo_status_t status = cairo_surface_write_to_png(surface, out.temporaryPath().c_str());
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS) throwInputError(path, "output", "a writable PNG", cairo_status_to_string(status));
  out.commit();
}

void addIterativeCommands(CLI::App& app) {
  // CLI11 keeps pointers into the command objects: they live as long as the program.
  static ProjectCommand project;
  static IterativeCommand sart(IterativeMethod::Sart), sirt(IterativeMethod::Sirt), cgls(IterativeMethod::Cgls), osem(IterativeMethod::Osem);
  static CompareCommand compare;
  static IterativeBenchCommand bench;
  project.add(app);
  sart.add(app);
  sirt.add(app);
  cgls.add(app);
  osem.add(app);
  compare.add(app);
  bench.add(app);
}

}  // namespace glrecon::app
