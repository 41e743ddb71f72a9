// glrecon scan-sim: a simulated scanner delivering Shepp-Logan projections at a frame rate, reconstructed headless as
// they arrive (progress, timing split, latency, snapshots).
#include <CLI/CLI.hpp>

#include "app/command.h"
#include "app/live_options.h"
#include "app/scan_options.h"
#include "app/snapshots.h"
#include "glrecon/errors.h"
#include "glrecon/phantom.h"

namespace glrecon::app {
namespace {

class ScanSimCommand final : public Command {
 public:
  void add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand("scan-sim",
                                     "Simulate a scanner delivering Shepp-Logan projections at a frame rate, and reconstruct them as they arrive");
    c->add_option("--rate", rate, "Projections per second the simulated detector delivers (0: as fast as possible)")->capture_default_str();
    scan.add(c);
    live.add(c);
    c->callback([this] { run(); });
  }

 private:
  LiveOptions live{"scan-sim"};
  SampleScanOptions scan = SampleScanOptions::scanOnly(360, 256, 2, 4);
  double rate = 30.0;

  void run() const {
    const Geometry geometry = scan.geometry();
    if (rate < 0) throw UsageError("--rate: expected a rate >= 0");
    const Phantom phantom = Phantom::sheppLogan();
    auto source = simulatedScanner(phantom, geometry, rate);
    runStreamHeadless(live, *source, geometry);
  }
};

}  // namespace

std::unique_ptr<Command> makeScanSimCommand() { return std::make_unique<ScanSimCommand>(); }

}  // namespace glrecon::app
