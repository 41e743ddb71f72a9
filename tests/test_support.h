#pragma once
// Helpers shared by the tests: a scratch directory per test, small file utilities.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "test_config.h"

namespace glrecon::test {

/// float's unit roundoff (2^-24): the relative error of one correctly rounded float operation.
inline constexpr double kFloatRoundoff = std::numeric_limits<float>::epsilon() / 2;

/// A fresh, empty directory for the running test (under the build tree, not the working directory).
inline std::filesystem::path scratchDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(GLRECON_TEST_SCRATCH) / info->test_suite_name() / info->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Runs `body`, expecting an exception of type E whose message contains every fragment.
template <typename E, typename F>
void expectError(F&& body, std::initializer_list<std::string> fragments) {
  try {
    body();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
  }
}

}  // namespace glrecon::test
