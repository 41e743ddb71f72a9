// --backend auto by measurement (recon/tuning.h): the size classes, the choice is the backend of least estimated time
// from the measured figures, they are remembered per device, driver and size class in the per-user cache, and measured
// again when asked to retune, for another size class, or where the cache's line is damaged. On a software renderer auto takes the cpu backend without
// measuring; the tests measure there anyway (measureSoftware) so that the measuring path runs on every machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/user_cache.h"
#include "recon/device_session.h"
#include "recon/tuning.h"
#include "test_support.h"

namespace glrecon {
namespace {

// XDG_CACHE_HOME pointed at the test's scratch directory for the test's lifetime (the user's cache is left alone).
class ScratchCache {
 public:
  explicit ScratchCache(const std::filesystem::path& dir) {
    if (const char* old = std::getenv("XDG_CACHE_HOME")) previous_ = old;
    setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  }
  ~ScratchCache() {
    if (previous_.empty()) unsetenv("XDG_CACHE_HOME");
    else setenv("XDG_CACHE_HOME", previous_.c_str(), 1);
  }

 private:
  std::string previous_;
};

std::size_t lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(AutoBackend, SizeClassIsTheSideRoundedUpToAPowerOfTwo) {
  EXPECT_EQ(sizeClass(VolumeGrid::centred({8, 8, 8}, glm::dvec3(1))), 64);
  EXPECT_EQ(sizeClass(VolumeGrid::centred({64, 64, 64}, glm::dvec3(1))), 64);
  EXPECT_EQ(sizeClass(VolumeGrid::centred({65, 64, 64}, glm::dvec3(1))), 128);
  EXPECT_EQ(sizeClass(VolumeGrid::centred({512, 512, 512}, glm::dvec3(1))), 512);
  EXPECT_EQ(sizeClass(VolumeGrid::centred({1024, 1024, 128}, glm::dvec3(1))), 512);  // 512^3 voxels
  EXPECT_EQ(sizeClass(VolumeGrid::centred({1024, 1024, 129}, glm::dvec3(1))), 1024);
}

TEST(AutoBackend, CacheKeepsTheLastValuePerKey) {
  const auto dir = test::scratchDir();
  ScratchCache cache(dir);
  EXPECT_FALSE(rememberedValue("t.txt", "a"));
  remember("t.txt", "a", "1");
  remember("t.txt", "ab", "2");
  remember("t.txt", "a", "3 with spaces");
  EXPECT_EQ(rememberedValue("t.txt", "a").value_or(""), "3 with spaces");
  EXPECT_EQ(rememberedValue("t.txt", "ab").value_or(""), "2");
  EXPECT_FALSE(rememberedValue("t.txt", "b"));
  EXPECT_EQ(userCachePath("t.txt"), dir / "glrecon" / "t.txt");
}

TEST(AutoBackend, SoftwareRendererTakesTheCpuWithoutMeasuring) {
  GLRECON_SKIP_WITHOUT_GL();
  const auto dir = test::scratchDir();
  ScratchCache cache(dir);
  DeviceSession session;
  if (!session.glContext(0).info().software) GTEST_SKIP() << "a hardware GPU: auto measures there";
  const AutoChoice choice = chooseBackend(VolumeGrid::centred({32, 32, 32}, glm::dvec3(8)), 60, session, {});
  if (test::cudaProjectorUnavailableReason().empty()) GTEST_SKIP() << "a CUDA device: auto measures cpu against cuda";
  EXPECT_EQ(choice.backend, Backend::Cpu);
  EXPECT_FALSE(choice.measured);
  EXPECT_NE(choice.note.find("auto: cpu backend, only a software renderer"), std::string::npos) << choice.note;
  EXPECT_FALSE(std::filesystem::exists(dir / "glrecon" / "backends.txt"));
}

TEST(AutoBackend, ChoosesTheFastestMeasuredAndRemembersIt) {
  GLRECON_SKIP_WITHOUT_GL();
  const auto dir = test::scratchDir();
  ScratchCache cache(dir);
  DeviceSession session;
  AutoOptions options;
  options.measureSoftware = true;
  options.largestStandIn = 16;  // llvmpipe: a small stand-in keeps the four measurements short
  const VolumeGrid small = VolumeGrid::centred({32, 32, 32}, glm::dvec3(8));
  const AutoChoice first = chooseBackend(small, 60, session, options);
  ASSERT_TRUE(first.measured);
  // Every GL backend and the cpu ran: each has a rate and an estimate, least estimated time first, and the estimate is
  // the model's (start where it counts, fixed cost per voxel, updates at the rate).
  ASSERT_GE(first.measurements.size(), 4u) << first.note;
  const double voxels = 32.0 * 32 * 32;
  for (std::size_t i = 0; i < first.measurements.size(); ++i) {
    const BackendMeasurement& m = first.measurements[i];
    EXPECT_GT(m.updatesPerSecond, 0.0);
    EXPECT_GE(m.fixedSecondsPerVoxel, 0.0);
    const double updates = voxels * 60 / m.updatesPerSecond, fixed = m.fixedSecondsPerVoxel * voxels;
    EXPECT_GE(m.estimatedSeconds, updates + fixed - 1e-12);
    EXPECT_LE(m.estimatedSeconds, updates + fixed + m.startSeconds + 1e-12);
    if (i > 0) EXPECT_LE(first.measurements[i - 1].estimatedSeconds, m.estimatedSeconds);
  }
  EXPECT_EQ(first.backend, first.measurements.front().backend);
  const std::string name = backendInfo(first.backend).name;
  EXPECT_EQ(first.note.rfind("auto: " + name + " backend, ", 0), 0u) << first.note;
  EXPECT_NE(first.note.find("faster than"), std::string::npos) << first.note;
  EXPECT_NE(first.note.find("at 16^3"), std::string::npos) << first.note;
  const auto file = dir / "glrecon" / "backends.txt";
  EXPECT_EQ(lines(file), 1u);

  // Remembered: the same choice and note, nothing measured or written.
  const AutoChoice again = chooseBackend(small, 60, session, options);
  EXPECT_FALSE(again.measured);
  EXPECT_EQ(again.backend, first.backend);
  EXPECT_EQ(again.note, first.note);
  EXPECT_EQ(lines(file), 1u);

  // Another size class is measured on its own.
  const AutoChoice larger = chooseBackend(VolumeGrid::centred({128, 128, 128}, glm::dvec3(2)), 60, session, options);
  EXPECT_TRUE(larger.measured);
  EXPECT_EQ(lines(file), 2u);

  // Retune measures again and its line wins from then on.
  options.retune = true;
  EXPECT_TRUE(chooseBackend(small, 60, session, options).measured);
  EXPECT_EQ(lines(file), 3u);

  // A damaged line (a backend this build does not know) is measured again, not trusted.
  options.retune = false;
  {
    std::ifstream in(file);
    std::string line, last;
    while (std::getline(in, line)) last = line;
    const std::string key = last.substr(0, last.find('\t'));
    std::ofstream(file, std::ios::app) << key << "\t2026-01-01 16 nosuch=1,0,0\n";
  }
  EXPECT_TRUE(chooseBackend(small, 60, session, options).measured);
}

}  // namespace
}  // namespace glrecon
