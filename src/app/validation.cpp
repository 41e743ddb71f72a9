#include "validation.h"

#include <cmath>
#include <cstdlib>
#include <map>

#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/operator.h"
#include "glrecon/parse.h"

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

void checkJobMemory(const std::string& command, const std::string& what, std::uint64_t bytes) {
  checkHostMemory(command, what, bytes);
}

std::vector<int> parseGpuList(const std::string& option, const std::string& text, const std::string& backend) {
  if (text == "all") {
    const std::optional<Backend> named = backendNamed(backend == "auto" ? "graphics" : backend);
    const int count = named ? deviceCount(*named) : 0;
    if (count < 1) throw UsageError(option + ": expected a device for the " + backend + " backend, found none");
    std::vector<int> all(count);
    for (int i = 0; i < count; ++i) all[i] = i;
    return all;
  }
  std::vector<int> list;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || end != item.c_str() + item.size() || value < 0 || value > 1023 || list.size() >= 64)
      throw UsageError(option + ": expected a device index from 0 (see glrecon devices), a list such as 0,1, or all, found '" +
                       quoted(text) + "'");
    list.push_back(static_cast<int>(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return list;
}

std::optional<Backend> parseBackend(const std::string& option, const std::string& text, bool allowAuto) {
  if (allowAuto && text == "auto") return std::nullopt;
  const std::optional<Backend> backend = backendNamed(text);
  if (backend && backendInfo(*backend).built) return backend;
  std::string known;
  for (Backend b : builtBackends()) known += std::string(backendInfo(b).name) + ", ";
  if (backend)
    throw UsageError(option + " " + text + ": this build has no " + text + " backend (CMake found no CUDA compiler; build with nvcc on the PATH)");
  if (allowAuto) throw UsageError(option + ": expected one of " + known + "auto; found '" + quoted(text) + "'");
  known.resize(known.size() - 2);
  throw UsageError(option + ": expected one of " + known + ", found '" + quoted(text) + "'");
}

// "256" or "256,256,128": one value for every axis, or one per axis.
std::vector<double> parseList(const std::string& option, const std::string& text, std::size_t axes) {
  std::vector<double> values = parseNumberList(option, text);
  if (values.size() == 1) values.assign(axes, values[0]);
  if (values.size() != axes)
    throw UsageError(option + ": expected 1 or " + std::to_string(axes) + " comma-separated values, found '" + text + "'");
  return values;
}

std::pair<double, double> parseRange(const std::string& option, const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) throw UsageError(option + ": expected LOW:HIGH, found '" + text + "'");
  const auto lo = parseList(option, text.substr(0, colon), 1)[0], hi = parseList(option, text.substr(colon + 1), 1)[0];
  if (!(hi > lo)) throw UsageError(option + ": expected LOW < HIGH, found '" + text + "'");
  return {lo, hi};
}

}  // namespace glrecon::app
