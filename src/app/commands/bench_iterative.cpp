// glrecon bench-iterative: the projector pair and one iteration of each method (SART, OS-EM, SIRT, CGLS, ASD-POCS, PDHG-TV)
// timed per backend on a simulated Shepp-Logan scan.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "app/command.h"
#include "app/options.h"
#include "app/scan_options.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/iterative.h"
#include "glrecon/operator.h"
#include "glrecon/phantom.h"
#include "glrecon/split.h"

namespace glrecon::app {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class BenchIterativeCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("bench-iterative",
                                     "Time the projector pair and one iteration of each method per backend on a simulated Shepp-Logan scan");
    scan.add(c);
    c->add_option("--backends", backends, "Comma-separated backends to run (those that cannot run are reported and skipped)")->capture_default_str();
    c->add_option("--gpu", gpu, "GPU backends: device index; cpu and cuda: a list such as 0,1 or all, each device holding slabs of the volume")
        ->capture_default_str();
    c->add_option("--slabs", slabs, "cpu and cuda: the volume in N slabs of y rows, each its own operator, on the --gpu devices in turn "
                                    "(default: one per device), as the iterative commands' --slabs")
        ->check(CLI::Range(1, 1 << 20));
    c->add_option("--threads", threads, "cpu backend: threads (0: all)")->capture_default_str();
    c->add_option("--projector", pair, "Projector pair: interpolating, matched or distance-driven")
        ->check(CLI::IsMember({"interpolating", "matched", "distance-driven"}))
        ->capture_default_str();
    c->callback([this] { run(); });
  }

 private:
  SampleScanOptions scan = SampleScanOptions::withVolume(64, 90, 128, 1);
  std::string gpu = "0";
  int threads = 0, slabs = 0;
  std::string backends = "cpu,graphics,compute,cuda";
  std::string pair = "interpolating";

  void run() const {
    const Geometry geometry = scan.geometry();
    const VolumeGrid grid = scan.grid();
    const Phantom phantom = Phantom::sheppLogan(SheppLoganVariant::Rtk, 100.0);
    ProjectionOptions popts;
    popts.threads = threads;
    const Image b = projectPhantom(phantom, geometry, popts);
    const Image truth = voxelizePhantom(phantom, grid, 2, threads);
    std::printf("%d^3 voxels, %d projections of %d^2 (%s), %s pair\n", scan.size, scan.projections, scan.detector,
                "Shepp-Logan, RTK table, scale 100 mm", pair.c_str());
    std::printf("%-10s %10s %12s %10s %9s %12s %12s %11s %11s %14s %13s %13s %11s\n", "backend", "forward s", "G samples/s", "proj/s", "back s",
                "SART iter s", "OS-EM iter s", "SIRT iter s", "CGLS iter s", "ASD-POCS iter s", "PDHG-TV iter s", "on-device A s", "G rays/s");
    for (const std::string& name : splitList(backends)) {
      try {
        measure(name, geometry, grid, b, truth);
      } catch (const Error& e) {
        std::printf("%-10s skipped: %s\n", name.c_str(), e.render(optionName).c_str());  // fields named as their options
      } catch (const std::exception& e) {
        std::printf("%-10s skipped: %s\n", name.c_str(), e.what());
      }
      std::fflush(stdout);
    }
    std::printf("Each method's second iteration (the first also computes B_S(1), which the GPU backends then keep per subset; CGLS's "
                "computes r = b - A x). SART, OS-EM and ASD-POCS: 10 ordered subsets (per subset a forward projection and B(c); on "
                "the GPU backends the iterate stays on the device, only projections and corrections cross; ASD-POCS adds 20 TV steps, "
                "on the device's vectors where the operator keeps them). SIRT: one subset. CGLS and PDHG-TV (a forward and a back "
                "projection of every view, its TV dual): their vectors on the device where the operator keeps them (cuda), else on the "
                "host. On-device A: "
                "the forward projection of every view with the data on the device (cuda), in G rays/s.\n");
  }

  // One backend's row: forward from a host volume (its upload counted) to host projections; back from host projections
  // to a host volume; one iteration of SART and of OS-EM.
  void measure(const std::string& name, const Geometry& geometry, const VolumeGrid& grid, const Image& b, const Image& truth) const {
    OperatorOptions po;
    po.threads = threads;
    po.pair = parseProjectorPair(pair);
    BackendOption backend(name);
    // Several devices or slabs: the split operator, as the iterative commands make it.
    auto p = makeOperatorOrSplit(backend.projector(), geometry, grid, po, SplitOptions{slabs, parseGpuList("--gpu", gpu, name), nullptr});
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
    // Two iterations each, the second timed: the first also fills the GPU backends' cache of B_S(1) (CGLS's computes
    // r = b - A x).
    IterativeOptions io;
    io.iterations = 2;
    io.method = IterativeMethod::Sart;
    io.subsets = std::min(scan.projections, 10);
    IterativeReport sart, osem, sirt, cgls, asd, pdhg;
    reconstructIterative(*p, geometry, b, grid, io, &sart);
    io.method = IterativeMethod::Osem;
    reconstructIterative(*p, geometry, b, grid, io, &osem);
    io.method = IterativeMethod::AsdPocs;
    reconstructIterative(*p, geometry, b, grid, io, &asd);
    io.method = IterativeMethod::Sirt;
    io.subsets = 1;
    reconstructIterative(*p, geometry, b, grid, io, &sirt);
    io.method = IterativeMethod::Cgls;
    reconstructIterative(*p, geometry, b, grid, io, &cgls);
    io.method = IterativeMethod::PdhgTv;
    reconstructIterative(*p, geometry, b, grid, io, &pdhg);
    // The forward projection where the data stay on the device (cuda: A x and the correction of every view, nothing
    // crossing to the host but a sum): the figure to hold beside the peers' kernel times. "-" where the backend keeps
    // no data on its device. Timed the second time (the first allocates).
    double onDevice = 0.0;
    std::vector<float> lengths(out.size(), 1.0f);
    p->setVolume(truth.data.data());
    if (p->setSubsetData(b.data.data(), lengths.data(), 0.0f, false)) {
      p->correctSubset(views.data(), views.size());
      t0 = std::chrono::steady_clock::now();
      p->correctSubset(views.data(), views.size());
      onDevice = since(t0);
    }
    const double samples = countRaySamples(geometry, grid, p->step());
    const double rays = static_cast<double>(out.size());
    char device[64] = "            -           -";
    if (onDevice > 0) std::snprintf(device, sizeof device, "%13.4f %11.3f", onDevice, rays / onDevice * 1e-9);
    std::printf("%-10s %10.3f %12.3f %10.1f %9.3f %12.3f %12.3f %11.3f %11.3f %14.3f %13.3f %s   %s\n", name.c_str(), fwd, samples / fwd * 1e-9,
                scan.projections / fwd, bck, sart.iterations.back().seconds, osem.iterations.back().seconds, sirt.iterations.back().seconds,
                cgls.iterations.back().seconds, asd.iterations.back().seconds, pdhg.iterations.back().seconds, device, p->description().c_str());
  }
};

}  // namespace

std::unique_ptr<Command> makeBenchIterativeCommand() { return std::make_unique<BenchIterativeCommand>(); }

}  // namespace glrecon::app
