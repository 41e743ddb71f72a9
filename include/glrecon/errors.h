#pragma once
/// Typed errors of glrecon, one base: every message names what was wrong and where (the file, or the API field,
/// the field inside it, what was expected and what was found), so a user can fix the input without reading code.
///
/// Messages speak the library's own vocabulary: where one names a request field (FdkRequest::window,
/// IterativeOptions::iterations...), it is written field("iterations"), and each front end renders those names its
/// own way (Error::render): the command line as its options ("--iterations"), Python as its keywords
/// ("iterations="). what() shows the API's names ("iterations").
#include <functional>
#include <stdexcept>
#include <string>

namespace glrecon {

/// The base of every glrecon error.
class Error : public std::runtime_error {
 public:
  /// `text` may hold field references made by field().
  explicit Error(const std::string& text);
  /// The message with every field reference written as `name(field)` returns (the command line's option names,
  /// Python's keywords).
  std::string render(const std::function<std::string(const std::string& field)>& name) const;
  /// The message as it was built (field references still marked), for rethrowing with more context.
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

/// A reference to the API field `name` inside a message, rendered by each front end in its own words.
std::string field(const std::string& name);
/// `text` with every field reference written as `name(field)` returns (notes and reports hold them too).
std::string renderFields(const std::string& text, const std::function<std::string(const std::string& field)>& name);

/// A file or value the user gave is unreadable or inconsistent.
struct InputError : Error {
  using Error::Error;
};

/// An acquisition geometry that cannot be reconstructed (degenerate vectors, source on the detector, NaN).
struct GeometryError : Error {
  using Error::Error;
};

/// The request asks for something impossible (the command line exits with 2, as for a parse error).
struct UsageError : Error {
  using Error::Error;
};

/// A device cannot do what was asked: no usable OpenGL 4.5 or CUDA device, a driver call failed, a shader failed
/// to build. gl::GlError and CudaError derive from it.
struct DeviceError : Error {
  using Error::Error;
};

/// No CUDA device, a CUDA call failed, or this build has no CUDA (the message names the call and CUDA's reason).
struct CudaError : DeviceError {
  using DeviceError::DeviceError;
};

/// "<where>: <field>: expected <expected>, found <found>".
[[noreturn]] void throwInputError(const std::string& where, const std::string& field, const std::string& expected,
                                  const std::string& found);
[[noreturn]] void throwGeometryError(const std::string& where, const std::string& field, const std::string& expected,
                                     const std::string& found);

}  // namespace glrecon
