#pragma once
// Live reconstruction from the command line: `fdk --stream`, `scan-sim`, and `view` (headless snapshots,
// or a window where there is a display).
#include <string>

namespace CLI {
class App;
}

namespace glrecon::app {
void addLiveCommands(CLI::App& app);
/// `demo --view`: the demo's scan reconstructed again in the live window (nothing when there is no display).
void viewFiles(const std::string& geometryPath, const std::string& projectionsPath, int size, double spacing);
}  // namespace glrecon::app
