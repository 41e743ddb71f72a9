#pragma once
// Live reconstruction from the command line: `fdk --stream`, `scan-sim`, and `view` (headless snapshots,
// or a window where there is a display).
namespace CLI {
class App;
}

namespace glrecon::app {
void addLiveCommands(CLI::App& app);
}  // namespace glrecon::app
