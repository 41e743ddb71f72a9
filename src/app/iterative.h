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

/// `view --method` without a window: a line per iteration, PNG snapshots after every iteration.
struct IterativeSnapshots {
  std::string snapshots;   ///< directory for snapshot_itNNNN_{axial,coronal,sagittal}.png and residual.csv/.png
  std::string output;      ///< the final volume (optional)
  bool overwrite = false;
  bool quiet = false;  ///< no per-iteration lines
  std::optional<std::pair<double, double>> range;  ///< grey range (default: percentiles of the first iteration)
  Backend backend = Backend::Cpu;
  OperatorOptions operatorOptions;
};
void runIterativeSnapshots(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeOptions& options,
                           const IterativeSnapshots& live);
}  // namespace glrecon::app
