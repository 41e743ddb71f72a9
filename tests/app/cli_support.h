#pragma once
// What the command-line tests share: the small scan they reconstruct (cli_test.cpp, cli_gl_test.cpp) and the check
// that a refused command left everything as it was (bad_input_test.cpp, bad_input_signals_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>

#include "test_support.h"

namespace glrecon::test {

// A small scan every test can reconstruct in well under a second.
inline const std::string kSmallScan = "phantom -o scan --projections 60 --detector 64 --detector-spacing 8 -q";

// Every file under `dir` with its contents: "nothing was left or changed" is an equal snapshot.
inline std::map<std::string, std::string> filesUnder(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    files[std::filesystem::relative(e.path(), dir).string()] = e.is_regular_file() ? readText(e.path()) : "<dir>";
  return files;
}

// Expects exit `code` from the command run with `environment` (NAME=value), every fragment in its output, no sign of
// the work having begun (`workMarker`, which the command prints once it starts: "reconstructing", "iteration"), and
// the directory exactly as before.
inline void expectRefused(const std::filesystem::path& dir, const std::string& arguments, int code, std::initializer_list<std::string> fragments,
                          const std::string& environment = "", const std::string& workMarker = "reconstructing") {
  const auto before = filesUnder(dir);
  const CliRun r = runCli(dir, arguments, environment);
  EXPECT_EQ(r.exitCode, code) << arguments << "\n" << r.output;
  for (const std::string& f : fragments)
    EXPECT_TRUE(contains(r.output, f)) << "'" << f << "' not in the output of " << arguments << ":\n" << r.output;
  EXPECT_FALSE(contains(r.output, workMarker)) << "refused only after the work began: " << arguments << "\n" << r.output;
  EXPECT_TRUE(filesUnder(dir) == before) << "files left or changed by: " << arguments;
}

}  // namespace glrecon::test
