// glrecon bench-iterative: the projector pair and one SART and one OS-EM iteration timed per backend on a simulated
// Shepp-Logan scan.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "app/command.h"
#include "app/options.h"
#include "app/scan_options.h"
#include "glrecon/io.h"
#include "glrecon/iterative.h"
#include "glrecon/operator.h"
#include "glrecon/phantom.h"

namespace glrecon::app {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class BenchIterativeCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("bench-iterative",
                                     "Time the projector pair and one SART and one OS-EM iteration per backend on a simulated Shepp-Logan scan");
    scan.add(c);
    c->add_option("--backends", backends, "Comma-separated backends to run (those that cannot run are reported and skipped)")->capture_default_str();
    c->add_option("--gpu", gpu, "GPU backends: device index")->capture_default_str();
    c->add_option("--threads", threads, "cpu backend: threads (0: all)")->capture_default_str();
    c->callback([this] { run(); });
  }

 private:
  SampleScanOptions scan = SampleScanOptions::withVolume(64, 90, 128, 1);
  int gpu = 0, threads = 0;
  std::string backends = "cpu,graphics,compute,cuda";

  void run() const {
    const Geometry geometry = scan.geometry();
    const VolumeGrid grid = scan.grid();
    const Phantom phantom = Phantom::sheppLogan(SheppLoganVariant::Rtk, 100.0);
    ProjectionOptions popts;
    popts.threads = threads;
    const Image b = projectPhantom(phantom, geometry, popts);
    const Image truth = voxelizePhantom(phantom, grid, 2, threads);
    std::printf("%d^3 voxels, %d projections of %d^2 (%s)\n", scan.size, scan.projections, scan.detector, "Shepp-Logan, RTK table, scale 100 mm");
    std::printf("%-10s %12s %14s %12s %12s %14s %14s\n", "backend", "forward s", "G samples/s", "proj/s", "back s", "SART iter s", "OS-EM iter s");
    for (const std::string& name : splitList(backends)) {
      try {
        measure(name, geometry, grid, b, truth);
      } catch (const std::exception& e) {
        std::printf("%-10s skipped: %s\n", name.c_str(), e.what());
      }
      std::fflush(stdout);
    }
    std::printf("SART and OS-EM: 10 ordered subsets, one iteration each (per subset a forward and two back projections, B(c) and "
                "B(1); on the GPU backends the iterate stays on the device, only projections and corrections cross)\n");
  }

  // One backend's row: forward from a host volume (its upload counted) to host projections; back from host projections
  // to a host volume; one iteration of SART and of OS-EM.
  void measure(const std::string& name, const Geometry& geometry, const VolumeGrid& grid, const Image& b, const Image& truth) const {
    OperatorOptions po;
    po.device = gpu;
    po.threads = threads;
    BackendOption backend(name);
    auto p = makeOperator(backend.projector(), geometry, grid, po);
    std::vector<std::size_t> views(geometry.size());
    std::iota(views.begin(), views.end(), std::size_t{0});
    std::vector<float> out(geometry.size() * geometry.detector.nu * geometry.detector.nv), vol(grid.voxelCount());
    p->setVolume(truth.data.data());
    p->forward(views.data(), 1, out.data());  // warm-up: compile, allocate
    auto t0 = std::chrono::steady_clock::now();
    p->setVolume(truth.data.data());
    p->forward(views.data(), views.size(), out.data());
    const double fwd = since(t0);
    std::fill(vol.begin(), vol.end(), 0.0f);
    p->setVolume(vol.data());
    t0 = std::chrono::steady_clock::now();
    p->back(out.data(), views.data(), views.size(), Weighting::Adjoint);
    p->readVolume(vol.data());
    const double bck = since(t0);
    IterativeOptions io;
    io.iterations = 1;
    io.method = IterativeMethod::Sart;
    io.subsets = std::min(scan.projections, 10);
    IterativeReport sart, osem;
    reconstructIterative(*p, geometry, b, grid, io, &sart);
    io.method = IterativeMethod::Osem;
    reconstructIterative(*p, geometry, b, grid, io, &osem);
    const double samples = countRaySamples(geometry, grid, p->step());
    std::printf("%-10s %12.3f %14.3f %12.1f %12.3f %14.3f %14.3f   %s\n", name.c_str(), fwd, samples / fwd * 1e-9, scan.projections / fwd, bck,
                sart.iterations[0].seconds, osem.iterations[0].seconds, p->description().c_str());
  }
};

}  // namespace

std::unique_ptr<Command> makeBenchIterativeCommand() { return std::make_unique<BenchIterativeCommand>(); }

}  // namespace glrecon::app
