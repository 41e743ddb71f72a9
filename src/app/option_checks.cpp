// The numeric range checks every command's options get before any work (by option name), and the unknown-command message.
#include "option_checks.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "glrecon/limits.h"

namespace glrecon::app {
namespace {

struct Rule {
  double lowest, highest;
  bool lowestIncluded, whole;
  const char* expected;
};

// Every numeric option of every command, by name. A value outside its rule would otherwise hang (Poisson
// noise with a mean of 1e200), run for hours (supersampling 100000²), wrap around (--every -1 into an
// unsigned count) or write NaN volumes.
const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = {
      {"--threads", {0, 4096, true, true, "a whole number of threads from 0 (all) to 4096"}},
      {"--filter-threads", {0, 4096, true, true, "a whole number of threads from 0 (all) to 4096"}},
      {"--every", {1, 1e9, true, true, "a positive whole number of projections"}},
      {"--queue", {1, 1e6, true, true, "a whole number of projections from 1 to 1000000"}},
      {"--batch", {1, 1e6, true, true, "a whole number of projections from 1 to 1000000"}},
      {"--gpu", {0, 1023, true, true, "a device index from 0 (see glrecon devices)"}},
      {"--projections", {1, 1e6, true, true, "a whole number of projections from 1 to 1000000"}},
      {"--size", {1, 65536, true, true, "a whole number of voxels from 1 to 65536"}},
      {"--detector", {1, 65536, true, true, "a whole number of pixels from 1 to 65536"}},
      {"--supersample", {1, 16, true, true, "a whole number of rays per pixel side from 1 to 16"}},
      {"--noise-i0",
       {0, 1e12, true, false,
        "0 (no noise) or a photon count up to 1e12 (beyond, the noise is below float precision)"}},
      {"--density-scale", {-1e6, 1e6, true, false, "a finite factor within 1e6 in magnitude"}},
      {"--phantom-scale", {0, 1e7, false, false, "a positive size in mm up to 1e7"}},
      {"--sid", {0, 1e7, false, false, "a positive distance in mm up to 1e7"}},
      {"--sdd", {0, 1e7, false, false, "a positive distance in mm up to 1e7"}},
      {"--arc", {-1e5, 1e5, true, false, "a finite angle in degrees within 1e5"}},
      {"--first-angle", {-1e6, 1e6, true, false, "a finite angle in degrees within 1e6"}},
      {"--out-of-plane", {-1e6, 1e6, true, false, "a finite angle in degrees within 1e6"}},
      {"--in-plane", {-1e6, 1e6, true, false, "a finite angle in degrees within 1e6"}},
      {"--cutoff", {0, 1, false, false, "a fraction of the Nyquist frequency in (0, 1]"}},
      {"--hann", {0, 1, false, false, "a cut-off fraction in (0, 1]"}},
      {"--i0", {0, 3e38, false, false, "a positive finite unattenuated intensity"}},
      {"--density-after", {0, 1, false, false, "a fraction of the projections in (0, 1]"}},
      {"--rate", {0, 1e6, true, false, "0 (as fast as possible) or projections per second up to 1e6"}},
      {"--simulate", {0, 1e6, true, false, "0 (as fast as possible) or projections per second up to 1e6"}},
      {"--index", {0, 65535, true, true, "a voxel index from 0"}},
      {"--screenshot-at", {0, 1e9, true, true, "a whole number of projections"}},
      {"--close-after", {0, 1e9, true, true, "a whole number of projections"}},
  };
  return table;
}

bool numericType(const std::string& type) { return type == "INT" || type == "UINT" || type == "FLOAT"; }

CLI::Validator check(const std::string& name, const Rule& rule) {
  return CLI::Validator(
      [name, rule](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool parsed = !text.empty() && end == text.c_str() + text.size();
        const bool fine = parsed && std::isfinite(value) &&
                          (rule.lowestIncluded ? value >= rule.lowest : value > rule.lowest) &&
                          value <= rule.highest && (!rule.whole || value == std::floor(value));
        if (fine) return {};
        return std::string("expected ") + rule.expected + ", found '" + glrecon::quoted(text) + "'";
      },
      "", "range");
}

}  // namespace

void addOptionChecks(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; }))
    for (CLI::Option* option : command->get_options()) {
      // Numeric options only: fdk's --projections and --size are a path and a list, checked elsewhere.
      if (!numericType(option->get_type_name())) continue;
      if (const auto it = rules().find(option->get_name()); it != rules().end())
        option->check(check(it->first, it->second));
      else
        option->check(check(option->get_name(), Rule{-1e300, 1e300, true, false, "a finite number"}));
    }
}

std::string unknownSubcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return {};
  const std::string given = argv[1];
  std::string names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (command->get_name() == given) return {};
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  return "unknown command '" + glrecon::quoted(given) + "' (expected one of " + names + ")";
}

}  // namespace glrecon::app
