#pragma once
// Iterative reconstruction from the command line: project, sart, sirt, cgls, osem, compare.
#include <string>
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
}  // namespace glrecon::app
