#include <glob.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <regex>

#include "chunked_io.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/validate.h"

namespace glrecon {
namespace fs = std::filesystem;
namespace {

// "p_2.mha" before "p_10.mha": digit runs compare by value, as scanner software numbers its files.
bool naturalLess(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      const std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      const auto strip = [](const std::string& s) { return s.substr(std::min(s.find_first_not_of('0'), s.size())); };
      const std::string sa = strip(na), sb = strip(nb);
      if (sa.size() != sb.size()) return sa.size() < sb.size();
      if (sa != sb) return sa < sb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

bool isProjectionFile(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), ::tolower);
  return e == ".mha" || e == ".mhd" || e == ".tif" || e == ".tiff";
}

void sortNaturally(std::vector<std::string>& files) {
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    return naturalLess(fs::path(a).filename().string(), fs::path(b).filename().string());
  });
}

}  // namespace

std::vector<std::string> listProjectionFiles(const std::string& spec) {
  std::vector<std::string> files;
  if (fs::is_directory(spec)) {
    for (const auto& entry : fs::directory_iterator(spec))
      if (entry.is_regular_file() && isProjectionFile(entry.path())) files.push_back(entry.path().string());
    if (files.empty()) throwInputError(spec, "projections", "a directory holding .mha, .mhd, .tif or .tiff files", "none");
  } else if (spec.find_first_of("*?[") != std::string::npos && !fs::exists(spec)) {
    // An existing file whose name holds '[', '*' or '?' is taken literally: as a pattern it could select
    // other files.
    glob_t matches{};
    const int status = ::glob(spec.c_str(), 0, nullptr, &matches);
    for (std::size_t i = 0; status == 0 && i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
    globfree(&matches);
    if (files.empty()) throwInputError(spec, "projections", "a pattern matching projection files", "no match");
  } else {
    if (!fs::exists(spec)) throwInputError(spec, "projections", "an existing file, directory or glob", "no such path");
    return {spec};
  }
  sortNaturally(files);
  return files;
}

std::vector<std::string> listProjectionFiles(const std::string& directory, const std::string& regex) {
  if (!fs::is_directory(directory)) throwInputError(directory, field("path"), "a directory of projection files", "no such directory");
  std::regex pattern;
  try {
    pattern = std::regex(regex);
  } catch (const std::regex_error& e) {
    throwInputError(field("regexp"), "pattern", "a valid regular expression", "'" + quoted(regex) + "' (" + e.what() + ")");
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(directory))
    // regex_search, as ITK's RegularExpressionSeriesFileNames (which rtkfdk --regexp uses): the pattern matches
    // a part of the name ("\\.mha$" selects every .mha); anchor it with ^...$ for a whole-name match.
    if (entry.is_regular_file() && std::regex_search(entry.path().filename().string(), pattern))
      files.push_back(entry.path().string());
  if (files.empty()) throwInputError(directory, field("regexp"), "files whose names match '" + quoted(regex) + "'", "none");
  sortNaturally(files);
  return files;
}

Image readProjectionStack(const std::string& spec) { return readProjectionFiles(listProjectionFiles(spec)); }

}  // namespace glrecon
