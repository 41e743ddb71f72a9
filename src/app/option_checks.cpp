// The numeric range checks every command's options get before any work (by option name), and the unknown-command message.
#include "option_checks.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <cctype>
#include <string>

#include "glrecon/limits.h"

namespace glrecon::app {
namespace {

bool numericType(const std::string& type) { return type == "INT" || type == "UINT" || type == "FLOAT"; }

CLI::Validator check(const ValueBounds& bounds) {
  return CLI::Validator(
      [bounds](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (!text.empty() && end == text.c_str() + text.size() && withinBounds(bounds, value)) return {};
        return std::string("expected ") + bounds.expected + ", found '" + glrecon::quoted(text) + "'";
      },
      "", "range");
}

// The library's field name of an option: --noise-i0 is noiseI0 (the inverse of optionName).
std::string fieldOf(const std::string& option) {
  std::string name;
  bool upper = false;
  for (char c : option.substr(option.rfind("--", 0) == 0 ? 2 : 0)) {
    if (c == '-') {
      upper = true;
    } else {
      name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return name;
}

}  // namespace

void addOptionChecks(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; }))
    for (CLI::Option* option : command->get_options()) {
      // Numeric options only: fdk's --projections and --size are a path and a list, checked elsewhere.
      if (!numericType(option->get_type_name())) continue;
      // The bounds the library checks too (glrecon/limits.h), by the option's field name; any finite number elsewhere.
      static const ValueBounds finite{-1e300, 1e300, true, false, "a finite number"};
      const ValueBounds* bounds = valueBounds(fieldOf(option->get_name()));
      option->check(check(bounds ? *bounds : finite));
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
