#include "glrecon/errors.h"

namespace glrecon {
namespace {

// Field references travel inside the message between two control characters: quoted() escapes those in untrusted
// text, and no message or path of glrecon's own holds them.
constexpr char kOpen = '\x01', kClose = '\x02';

std::string renderText(const std::string& text, const std::function<std::string(const std::string&)>& name) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::size_t close = text[i] == kOpen ? text.find(kClose, i + 1) : std::string::npos;
    if (close == std::string::npos) {
      out += text[i];
      continue;
    }
    out += name(text.substr(i + 1, close - i - 1));
    i = close;
  }
  return out;
}

std::string compose(const std::string& where, const std::string& part, const std::string& expected, const std::string& found) {
  std::string message = where;
  if (!part.empty()) message += ": " + part;
  message += ": expected " + expected + ", found " + found;
  return message;
}

}  // namespace

Error::Error(const std::string& text)
    : std::runtime_error(renderText(text, [](const std::string& name) { return name; })), text_(text) {}

std::string Error::render(const std::function<std::string(const std::string&)>& name) const { return renderText(text_, name); }

std::string field(const std::string& name) { return kOpen + name + kClose; }

std::string renderFields(const std::string& text, const std::function<std::string(const std::string&)>& name) { return renderText(text, name); }

void throwInputError(const std::string& where, const std::string& part, const std::string& expected, const std::string& found) {
  throw InputError(compose(where, part, expected, found));
}

void throwGeometryError(const std::string& where, const std::string& part, const std::string& expected, const std::string& found) {
  throw GeometryError(compose(where, part, expected, found));
}

}  // namespace glrecon
