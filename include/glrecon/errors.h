#pragma once
/// Typed errors of glrecon. Every message names what was wrong and where: the file (or option),
/// the field, what was expected and what was found, so a user can fix the input without reading code.
#include <stdexcept>
#include <string>

namespace glrecon {

/// A file or value the user gave is unreadable or inconsistent.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An acquisition geometry that cannot be reconstructed (degenerate vectors, source on the detector, NaN).
struct GeometryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The command line asks for something impossible (the tool exits with 2, as for a parse error).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "<where>: <field>: expected <expected>, found <found>".
[[noreturn]] void throwInputError(const std::string& where, const std::string& field,
                                  const std::string& expected, const std::string& found);
[[noreturn]] void throwGeometryError(const std::string& where, const std::string& field,
                                     const std::string& expected, const std::string& found);

}  // namespace glrecon
