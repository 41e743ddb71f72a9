#pragma once
// Per-user caches of what glrecon measured on this machine, like FFTW's wisdom: the window a GL backend's search
// chose (windows.txt), the backend --backend auto chose (backends.txt). One file each under $XDG_CACHE_HOME/glrecon
// (or ~/.cache/glrecon), a line per entry, "KEY<tab>VALUE"; the last line for a key wins. A cache that cannot be read
// or written costs the next run a measurement, nothing more, so its errors are ignored. Internal to glrecon.
#include <filesystem>
#include <optional>
#include <string>

namespace glrecon {

/// The cache file `name`; empty where neither XDG_CACHE_HOME nor HOME is set.
std::filesystem::path userCachePath(const std::string& name);
/// The value last remembered for `key` in cache file `name`.
std::optional<std::string> rememberedValue(const std::string& name, const std::string& key);
/// Appends `key` -> `value` to cache file `name` (keys and values without tabs or newlines).
void remember(const std::string& name, const std::string& key, const std::string& value);

}  // namespace glrecon
