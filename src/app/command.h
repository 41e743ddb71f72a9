#pragma once
// A glrecon subcommand as an object: main's run() owns every command for the program's life (CLI11 keeps pointers to
// the option variables each command binds), and the factories below are the whole list, one file each in commands/.
#include <memory>

#include "glrecon/iterative.h"

namespace CLI {
class App;
}

namespace glrecon::app {

class Command {
 public:
  virtual ~Command() = default;
  /// Declares the subcommand, its options and the callback that runs it.
  virtual void add(CLI::App& app) = 0;
};

std::unique_ptr<Command> makeDevicesCommand();         // commands/devices.cpp
std::unique_ptr<Command> makeBenchCommand();           // commands/bench.cpp
std::unique_ptr<Command> makeScanSimCommand();         // commands/scan_sim.cpp
std::unique_ptr<Command> makeViewCommand();            // commands/view.cpp
std::unique_ptr<Command> makeAppCommand();             // commands/app.cpp (built where Dear ImGui is found: GLRECON_APP)
std::unique_ptr<Command> makeProjectCommand();         // commands/project.cpp
std::unique_ptr<Command> makeIterativeMethodCommand(IterativeMethod method);  // commands/iterative_methods.cpp
std::unique_ptr<Command> makeCompareCommand();         // commands/compare.cpp
std::unique_ptr<Command> makeBenchIterativeCommand();  // commands/bench_iterative.cpp
std::unique_ptr<Command> makePhantomCommand();         // commands/phantom.cpp
std::unique_ptr<Command> makeFdkCommand();             // commands/fdk.cpp
std::unique_ptr<Command> makeDemoCommand();            // commands/demo.cpp
std::unique_ptr<Command> makeSliceCommand();           // commands/slice.cpp

}  // namespace glrecon::app
