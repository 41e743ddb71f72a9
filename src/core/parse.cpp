#include "glrecon/parse.h"

#include <cmath>
#include <sstream>

#include "glrecon/errors.h"
#include "glrecon/limits.h"

namespace glrecon {

std::vector<double> parseNumberList(const std::string& option, const std::string& text, const std::string& whole) {
  std::vector<double> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(v))
      throw UsageError(option + ": expected numbers separated by commas, found '" + quoted(whole.empty() ? text : whole) + "'");
    values.push_back(v);
  }
  if (values.empty()) throw UsageError(option + ": expected numbers separated by commas, found '" + quoted(whole.empty() ? text : whole) + "'");
  return values;
}

}  // namespace glrecon
