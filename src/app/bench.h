#pragma once
namespace CLI {
class App;
}

namespace glrecon::app {
/// `glrecon bench`: the same reconstruction through every backend and window, timed and compared.
void addBenchCommand(CLI::App& app);
}  // namespace glrecon::app
