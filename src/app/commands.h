#pragma once

namespace glrecon::app {
/// Parses the command line, runs the subcommand, and maps errors to exit codes (0, 1 failure, 2 usage).
int run(int argc, char** argv);
}  // namespace glrecon::app
