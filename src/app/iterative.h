#pragma once
// Iterative reconstruction from the command line: project, sart, sirt, cgls, osem, compare.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "glrecon/iterative.h"

namespace CLI {
class App;
}

namespace glrecon::app {
void addIterativeCommands(CLI::App& app);
/// The residual curve as CSV (iteration, subset, residual, relative, seconds) and as a PNG chart (log scale).
void writeResidualCsv(const std::string& path, const IterativeReport& report, bool overwrite);
void writeResidualPng(const std::string& path, const IterativeReport& report, const std::string& title, bool overwrite);

/// `view --method`: a window (`window`) or headless progress lines with PNG snapshots after every iteration.
struct IterativeLiveOptions {
  bool window = false;
  std::string snapshots;   ///< headless: directory for snapshot_itNNNN_{axial,coronal,sagittal}.png and residual.csv/.png
  std::string screenshot;  ///< window: save a screenshot when done, then close
  std::string output;      ///< the final volume (optional)
  bool overwrite = false;
  bool quiet = false;  ///< no per-iteration lines
  std::optional<std::pair<double, double>> range;  ///< grey range (default: percentiles of the first iteration)
  Backend projectorBackend = Backend::Cpu;  ///< created here: in a window, GL operators share the window's context
  OperatorOptions projectorOptions;
};
void runIterativeLive(const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                      const IterativeOptions& options, const IterativeLiveOptions& live);
}  // namespace glrecon::app
