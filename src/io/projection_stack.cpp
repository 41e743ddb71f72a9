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

Image readProjectionFiles(const std::vector<std::string>& files) {
  Image stack;
  // The first value out of range: its index in the stack and its file. MetaImage files are checked chunk by
  // chunk as they are read (while the values are in cache), TIFF files after reading.
  std::size_t firstBad = SIZE_MAX, badFile = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    std::size_t outside = 0;
    Image part;
    if (isTiffPath(files[f])) {
      part = readTiff(files[f]);
      outside = firstValueOutsideParallel(part.data.data(), part.data.size(), kMaxProjectionValue);
    } else {
      part = readMetaImageChecked(files[f], kMaxProjectionValue, &outside);
    }
    if (outside < part.data.size() && firstBad == SIZE_MAX) {
      firstBad = stack.data.size() + outside;
      badFile = f;
    }
    if (f == 0) {
      stack = std::move(part);
    } else {
      const auto same = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a)); };
      if (part.size[0] != stack.size[0] || part.size[1] != stack.size[1])
        throwInputError(files[f], "DimSize",
                        std::to_string(stack.size[0]) + " x " + std::to_string(stack.size[1]) + " pixels as in " + files[0],
                        std::to_string(part.size[0]) + " x " + std::to_string(part.size[1]));
      if (!same(part.spacing[0], stack.spacing[0]) || !same(part.spacing[1], stack.spacing[1]) ||
          !same(part.origin[0], stack.origin[0]) || !same(part.origin[1], stack.origin[1]))
        throwInputError(files[f], "ElementSpacing/Offset", "the detector spacing and origin of " + files[0],
                        "a different detector layout");
      stack.data.insert(stack.data.end(), part.data.begin(), part.data.end());
      stack.size[2] += part.size[2];
    }
  }
  // Refused once every file's layout is known good (glrecon/validate.h says why).
  if (firstBad != SIZE_MAX)
    throwBadProjectionValue(files[badFile], firstBad / stack.sliceStride(), firstBad % stack.sliceStride(), stack.size[0], stack.data[firstBad]);
  return stack;
}

}  // namespace glrecon
