#include "glrecon/errors.h"

namespace glrecon {
namespace {
std::string compose(const std::string& where, const std::string& field, const std::string& expected,
                    const std::string& found) {
  std::string message = where;
  if (!field.empty()) message += ": " + field;
  message += ": expected " + expected + ", found " + found;
  return message;
}
}  // namespace

void throwInputError(const std::string& where, const std::string& field, const std::string& expected,
                     const std::string& found) {
  throw InputError(compose(where, field, expected, found));
}

void throwGeometryError(const std::string& where, const std::string& field, const std::string& expected,
                        const std::string& found) {
  throw GeometryError(compose(where, field, expected, found));
}

}  // namespace glrecon
