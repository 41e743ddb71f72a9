#pragma once
// The command line's validation layer: checks every command's option values get before any work (finite,
// in range, meaningful), and the subcommand name itself.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "glrecon/operator.h"

namespace glrecon::app {

/// Attaches a range check to every numeric option of every subcommand, by option name (tables in
/// validation.cpp): NaN, infinity, negative counts and out-of-range values are refused with
/// "OPTION: expected ..., found '...'" (exit 2) before the command runs. Call after all commands are added.
void addOptionChecks(CLI::App& app);

/// When argv[1] is neither an option nor a known subcommand: "unknown command 'X' (expected one of ...)".
/// Returns the message, or "" when the command line starts well.
std::string unknownSubcommand(const CLI::App& app, int argc, char** argv);

/// Host memory check for a job: `bytes` estimated from the sizes, before anything is allocated.
void checkJobMemory(const std::string& command, const std::string& what, std::uint64_t bytes);

/// --gpu's value: an index, a list of indices ("0,1"; one may repeat, to test the slab queue on one device) or
/// "all" (every device the backend can use). Throws UsageError naming `option` for anything else.
std::vector<int> parseGpuList(const std::string& option, const std::string& text, const std::string& backend);

/// --backend's value: a backend of this build, or (allowAuto) auto, as an empty optional. Throws UsageError naming
/// `option` and the backends known.
std::optional<Backend> parseBackend(const std::string& option, const std::string& text, bool allowAuto = true);

/// "256" or "256,256,128": one value for every axis, or one per axis (UsageError naming `option` otherwise).
std::vector<double> parseList(const std::string& option, const std::string& text, std::size_t axes);

/// "LOW:HIGH" with LOW < HIGH (UsageError naming `option` otherwise).
std::pair<double, double> parseRange(const std::string& option, const std::string& text);

}  // namespace glrecon::app
