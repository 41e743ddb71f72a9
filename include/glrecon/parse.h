#pragma once
/// Parsing of the command line's comma-separated number lists ("256", "1,1.5,2"), shared by the tool and the
/// region-of-interest specs, so every option rejects the same malformed input with the same message.
#include <string>
#include <vector>

namespace glrecon {

/// The finite numbers in `text`, separated by commas. Throws UsageError naming `option` and quoting `whole`
/// (the full option value, when `text` is a part of it) for anything that is not such a list.
std::vector<double> parseNumberList(const std::string& option, const std::string& text, const std::string& whole = "");

}  // namespace glrecon
