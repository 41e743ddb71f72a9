#include "core/user_cache.h"

#include <cstdlib>
#include <fstream>

namespace glrecon {

std::filesystem::path userCachePath(const std::string& name) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) return std::filesystem::path(xdg) / "glrecon" / name;
  if (home && *home) return std::filesystem::path(home) / ".cache" / "glrecon" / name;
  return {};
}

std::optional<std::string> rememberedValue(const std::string& name, const std::string& key) {
  const std::filesystem::path path = userCachePath(name);
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  const std::string prefix = key + "\t";
  std::optional<std::string> found;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) found = line.substr(prefix.size());
  return found;
}

void remember(const std::string& name, const std::string& key, const std::string& value) {
  const std::filesystem::path path = userCachePath(name);
  if (path.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  std::ofstream(path, std::ios::app) << key << '\t' << value << '\n';
}

}  // namespace glrecon
