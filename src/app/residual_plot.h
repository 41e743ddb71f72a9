#pragma once
// The residual curve of an iterative run, for sart/sirt/cgls/osem --residual-csv/--residual-png and view's snapshots.
#include <string>

#include "glrecon/iterative.h"

namespace glrecon::app {

/// The residual curve as CSV (iteration, subset, residual, relative, seconds) and as a PNG chart (log scale), either
/// path empty for none: both staged and published together (both, or neither where one cannot be written).
void writeResidualFiles(const std::string& csvPath, const std::string& pngPath, const IterativeReport& report, const std::string& title,
                        bool overwrite);
/// One of them alone.
void writeResidualCsv(const std::string& path, const IterativeReport& report, bool overwrite);
void writeResidualPng(const std::string& path, const IterativeReport& report, const std::string& title, bool overwrite);

/// ||b||, for the relative residual of the per-iteration lines (the report has it only at the end).
double dataNorm(const Image& projections);

}  // namespace glrecon::app
