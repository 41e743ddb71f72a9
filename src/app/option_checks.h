#pragma once
// The command line's validation layer: checks every command's option values get before any work (finite,
// in range, meaningful), and the subcommand name itself. Option groups check their own text (options.h).
#include <string>

namespace CLI {
class App;
}

namespace glrecon::app {

/// Attaches a range check to every numeric option of every subcommand, by option name (tables in
/// option_checks.cpp): NaN, infinity, negative counts and out-of-range values are refused with
/// "OPTION: expected ..., found '...'" (exit 2) before the command runs. Call after all commands are added.
void addOptionChecks(CLI::App& app);

/// When argv[1] is neither an option nor a known subcommand: "unknown command 'X' (expected one of ...)".
/// Returns the message, or "" when the command line starts well.
std::string unknownSubcommand(const CLI::App& app, int argc, char** argv);

}  // namespace glrecon::app
