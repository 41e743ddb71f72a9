#pragma once
// Reconstructions without a window (scan-sim, view --headless or without a display): the stream run to its end with
// PNG snapshots of the central slices while the volume fills in, and the iterative methods with a snapshot per iteration.
#include <optional>
#include <string>
#include <utility>

#include "glrecon/iterative.h"
#include "glrecon/operator.h"
#include "glrecon/source.h"
#include "live_options.h"

namespace glrecon::app {

/// Runs the stream, with snapshots when asked (normalised by the projections applied so far, so the grey levels are
/// stable from the first snapshot on), writes the volume, and prints the stream's report.
void runStreamHeadless(const LiveOptions& live, ProjectionSource& source, const Geometry& geometry);

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
/// Before any work: the volume's name, and every file the run will write into the snapshot directory
/// (snapshot_itNNNN_* for each of `iterations`, residual.csv, residual.png) that exists already, refused without
/// --overwrite naming it.
void checkIterativeSnapshots(const IterativeSnapshots& live, int iterations);
/// After checkIterativeSnapshots. Every file it writes is removed if the run fails or is interrupted.
void runIterativeSnapshots(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeOptions& options,
                           const IterativeSnapshots& live);

}  // namespace glrecon::app
