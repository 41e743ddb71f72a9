// The command-line tool's GPU side as a user runs it: the backends and devices it lists and takes, and bench's JSON
// and chart with backends that fail. On the GL fixture (tests/support/device_fixtures.h).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <chrono>
#include <cstdlib>

#include "glrecon/io.h"
#include "device_fixtures.h"
#include "test_support.h"

#include "cli_support.h"

namespace glrecon {
namespace {

using Cli = test::GlTest;
using namespace test;  // cli_support.h
namespace fs = std::filesystem;
using test::CliRun;
using test::contains;
using test::runCli;

TEST_F(Cli, GpuBackendsAndDevices) {
  const auto dir = test::scratchDir();
  const CliRun devices = runCli(dir, "devices");
  if (devices.exitCode != 0 || devices.output.find("0: ") == std::string::npos) GTEST_SKIP() << "no OpenGL device: " << devices.output;
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string fdk = "fdk -g scan/geometry.xml -p scan/projections.mha --size 16 --spacing 16 ";
  CliRun r = runCli(dir, fdk + "-o g.mha --backend graphics --window 4");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "backend graphics on ") && contains(r.output, "window 4")) << r.output;
  r = runCli(dir, fdk + "-o m.mha --backend graphics-mp --window max");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "backend graphics-mp on ") && contains(r.output, "(max)")) << r.output;
  r = runCli(dir, fdk + "-o a.mha --backend auto");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "auto: ")) << r.output;  // says what it chose and why
  r = runCli(dir, fdk + "-o x.mha --backend graphics --gpu 7");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "--gpu 7")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.mha"));
  r = runCli(dir, fdk + "-o y.mha --backend graphics --window 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(contains(r.output, "--window")) << r.output;
}

// A strict JSON syntax check (RFC 8259 grammar, no extensions): enough to call the bench output well-formed.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : s_(text) {}
  bool valid() {
    skip();
    if (!value()) return false;
    skip();
    return i_ == s_.size();
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool literal(const char* word) {
    const std::string w = word;
    if (s_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  bool string() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '\\') {
        ++i_;
        continue;
      }
      if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
      if (s_[i_] == '"') {
        ++i_;
        return true;
      }
    }
    return false;
  }
  bool number() {
    const std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E' ||
                              s_[i_] == '+' || s_[i_] == '-'))
      ++i_;
    return i_ > start && std::isdigit(static_cast<unsigned char>(s_[i_ - 1]));
  }
  bool value() {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      skip();
      if (s_[i_] == close) return ++i_, true;
      for (;;) {
        skip();
        if (c == '{') {
          if (!string()) return false;
          skip();
          if (s_[i_++] != ':') return false;
          skip();
        }
        if (!value()) return false;
        skip();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        return s_[i_++] == close;
      }
    }
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

TEST_F(Cli, BenchWritesJsonAndChartAndSurvivesBadBackends) {
  const auto dir = test::scratchDir();
  // An unknown backend name is refused before anything runs (issue #10: it used to be run, fail and exit 0).
  const CliRun unknown = runCli(dir, "bench --size 16 --projections 24 --detector 32 --backends cpu,nosuch -o out -q");
  EXPECT_EQ(unknown.exitCode, 2) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "--backends") && contains(unknown.output, "nosuch")) << unknown.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
  // A known backend that cannot run here (cuda without a device or without the backend built) is reported
  // and the others still run.
  const CliRun r = runCli(dir, "bench --size 16 --projections 24 --detector 32 --backends cpu,compute,graphics,cuda "
                                "--window 1,4 -o out -q");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "G upd/s")) << r.output;
  const std::string json = test::readText(dir / "out" / "bench.json");
  EXPECT_TRUE(JsonChecker(json).valid()) << json;
  for (const char* field : {"\"problem\"", "\"machine\"", "\"gpu\"", "\"driver\"", "\"cpu_threads\"", "\"filter_seconds\"", "\"runs\"",
                            "\"backend\"", "\"window_asked\"", "\"setup\"", "\"upload\"", "\"backprojection\"", "\"readback\"",
                            "\"gvoxel_updates_per_second\"", "\"projections_per_second\"", "\"whole_fdk\"", "\"vs_cpu\"", "\"max_abs\"",
                            "\"rms\"", "\"vs_phantom\"", "\"rmse\"", "\"psnr_db\"", "\"error\""})
    EXPECT_TRUE(contains(json, field)) << field;
  EXPECT_TRUE(contains(json, "\"backend\": \"cpu\""));
  EXPECT_TRUE(contains(json, "\"backend\": \"cuda\""));  // recorded, with its error where it cannot run
  // cuda: without a device (or without the backend built) the reason is printed, exit status stays 0.
  EXPECT_TRUE(contains(r.output, "cuda")) << r.output;
  const std::string png = test::readText(dir / "out" / "bench.png");
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_FALSE(JsonChecker(std::string("{\"a\": [1, 2,]}")).valid());  // the checker can fail
  // The second run refuses to replace them without --overwrite, before benchmarking.
  const CliRun again = runCli(dir, "bench --size 16 --projections 24 --detector 32 --backends cpu -o out -q");
  EXPECT_EQ(again.exitCode, 1) << again.output;
  EXPECT_TRUE(contains(again.output, "bench.json") && contains(again.output, "--overwrite")) << again.output;
  EXPECT_EQ(test::readText(dir / "out" / "bench.json"), json);
}

}  // namespace
}  // namespace glrecon
