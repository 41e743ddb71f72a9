// Limits and hardened readers: memory budget, non-regular files, quoting of untrusted text, readers that
// never allocate more than the file can hold, the cleanup registry, and every input the fuzzers kept
// (tests/fuzz/regressions/TARGET/) read again expecting a clean result or a clean error.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/parse.h"
#include "glrecon/roi.h"
#include "glrecon/validate.h"
#include "test_support.h"

namespace glrecon {
namespace {
namespace fs = std::filesystem;
using test::expectError;

std::string header(const std::string& dims, const std::string& extra = "") {
  return "ObjectType = Image\nNDims = 3\nBinaryData = True\n" + extra + "DimSize = " + dims +
         "\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n";
}

// A scoped environment variable (the memory cap).
struct EnvVar {
  std::string name;
  EnvVar(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~EnvVar() { unsetenv(name.c_str()); }
};

TEST(Limits, QuotedEscapesNonPrintablesAndTruncates) {
  EXPECT_EQ(quoted("abc"), "abc");
  EXPECT_EQ(quoted(std::string("a\x01\xff\nb", 5)), "a\\x01\\xFF\\x0Ab");
  EXPECT_EQ(quoted(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
}

TEST(Limits, MemoryCapFromTheEnvironment) {
  const EnvVar cap("GLRECON_MEMORY_LIMIT_MB", "64");
  EXPECT_LE(availableHostMemory(), 64u << 20);
  EXPECT_NO_THROW(checkHostMemory("job", "size", 1u << 20));
  expectError<InputError>([] { checkHostMemory("job", "--size 999", 100u << 20); },
                          {"job", "--size 999", "100.0 MiB needed", "64.0 MiB", "GLRECON_MEMORY_LIMIT_MB"});
}

// The cgroup limits found through /proc/self/cgroup, on made-up hierarchies: v1 (the memory controller's own tree, where
// a run was killed before because only v2's memory.max was read), v2, ancestors' limits binding, "no limit" values,
// and a container whose /proc/self/cgroup names the host's path.
TEST(Limits, CgroupLimitsV1AndV2WithAncestors) {
  const fs::path root = test::scratchDir() / "cgroup";
  const auto put = [&](const std::string& file, const std::string& text) {
    fs::create_directories((root / file).parent_path());
    test::writeText(root / file, text + "\n");
  };
  const std::uint64_t gib = std::uint64_t{1} << 30;
  std::string file;
  EXPECT_EQ(detail::cgroupMemoryLeft("0::/\n", root.string(), &file), UINT64_MAX);  // nothing there: nothing known
  // v1: unlimited at the root (PAGE_COUNTER_MAX), 3 GiB with 1 GiB used on /a, 8 GiB on /a/b: /a binds, 2 GiB left.
  put("memory/memory.limit_in_bytes", "9223372036854771712");
  put("memory/a/memory.limit_in_bytes", std::to_string(3 * gib));
  put("memory/a/memory.usage_in_bytes", std::to_string(gib));
  put("memory/a/b/memory.limit_in_bytes", std::to_string(8 * gib));
  put("memory/a/b/memory.usage_in_bytes", std::to_string(gib / 2));
  EXPECT_EQ(detail::cgroupMemoryLeft("5:cpu,cpuacct:/a/b\n4:memory:/a/b\n0::/\n", root.string(), &file), 2 * gib);
  EXPECT_EQ(file, (root / "memory/a/memory.limit_in_bytes").string());
  // v2: "max" on /x, 1 GiB with 1 KiB used on /x/y.
  put("x/memory.max", "max");
  put("x/y/memory.max", std::to_string(gib));
  put("x/y/memory.current", "1024");
  EXPECT_EQ(detail::cgroupMemoryLeft("0::/x/y\n", root.string(), &file), gib - 1024);
  EXPECT_EQ(file, (root / "x/y/memory.max").string());
  // A container: the host's path is not under its mount; the mount's root is its cgroup (512 MiB, v1).
  put("memory/memory.limit_in_bytes", std::to_string(gib / 2));
  put("memory/memory.usage_in_bytes", "0");
  EXPECT_EQ(detail::cgroupMemoryLeft("4:memory:/docker/0123abcd\n", root.string(), &file), gib / 2);
  // Over its limit: nothing left.
  put("memory/memory.usage_in_bytes", std::to_string(gib));
  EXPECT_EQ(detail::cgroupMemoryLeft("4:memory:/\n", root.string(), &file), 0u);
}

TEST(Limits, NonRegularFilesAreRefusedWithoutBlocking) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(mkfifo((dir / "pipe.mha").c_str(), 0600), 0);
  // Opening a FIFO for reading would block until a writer comes: the check must come first.
  expectError<InputError>([&] { readMetaImage((dir / "pipe.mha").string()); }, {"pipe.mha", "FIFO"});
  expectError<InputError>([&] { readRtkGeometry((dir / "pipe.mha").string()); }, {"pipe.mha", "FIFO"});
  expectError<InputError>([&] { readMetaImage(dir.string()); }, {"directory"});
  expectError<InputError>([&] { readMetaImage("/dev/zero"); }, {"/dev/zero", "character device"});
  expectError<InputError>([&] { readMetaImage((dir / "none.mha").string()); }, {"none.mha", "no such file"});
  // A detached header whose data file is a FIFO.
  test::writeText(dir / "h.mhd",
                  "NDims = 2\nDimSize = 2 2\nElementType = MET_FLOAT\nElementDataFile = pipe.mha\n");
  expectError<InputError>([&] { readMetaImage((dir / "h.mhd").string()); },
                          {"h.mhd", "ElementDataFile", "FIFO"});
}

TEST(Limits, PermissionDeniedIsToldApartFromMissing) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: permissions do not apply";
  const auto dir = test::scratchDir();
  test::writeText(dir / "locked.mha", header("1 1 1") + "abcd");
  fs::permissions(dir / "locked.mha", fs::perms::none);
  expectError<InputError>([&] { readMetaImage((dir / "locked.mha").string()); },
                          {"locked.mha", "Permission denied"});
}

TEST(Limits, HeadersPromisingMoreThanTheFileAreRefusedBeforeAllocating) {
  const auto dir = test::scratchDir();
  // 306 bytes that used to allocate 20 GB before finding the data missing.
  test::writeText(dir / "huge.mha", header("1000 1000 5000"));
  expectError<InputError>([&] { readMetaImage((dir / "huge.mha").string()); },
                          {"huge.mha", "pixel data", "truncated"});
  // Compressed: a few bytes of zlib cannot inflate to 20 GB (zlib's ratio is at most about 1032:1).
  const std::string data(64, '\0');
  std::vector<unsigned char> packed(compressBound(data.size()));
  uLongf packedSize = packed.size();
  ASSERT_EQ(compress(packed.data(), &packedSize, reinterpret_cast<const Bytef*>(data.data()), data.size()),
            Z_OK);
  test::writeText(dir / "huge_z.mha",
                  header("1000 1000 5000", "CompressedData = True\n") +
                      std::string(reinterpret_cast<const char*>(packed.data()), packedSize));
  expectError<InputError>([&] { readMetaImage((dir / "huge_z.mha").string()); },
                          {"huge_z.mha", "compressed data", "truncated"});
  // Within zlib's ratio but beyond the memory cap: the budget says so with the figures.
  std::string zeros(4u << 20, '\0');  // 4 MiB that compress well but within zlib's ratio
  for (std::size_t i = 0; i < zeros.size(); ++i) zeros[i] = static_cast<char>((i * 7919u) % 251u);
  packed.assign(compressBound(zeros.size()), 0);
  packedSize = packed.size();
  ASSERT_EQ(compress(packed.data(), &packedSize, reinterpret_cast<const Bytef*>(zeros.data()), zeros.size()),
            Z_OK);
  test::writeText(dir / "big_z.mha",
                  header("1024 1024 1", "CompressedData = True\n") +
                      std::string(reinterpret_cast<const char*>(packed.data()), packedSize));
  {
    const EnvVar cap("GLRECON_MEMORY_LIMIT_MB", "2");
    expectError<InputError>([&] { readMetaImage((dir / "big_z.mha").string()); },
                            {"big_z.mha", "DimSize", "memory", "needed"});
  }
  EXPECT_EQ(readMetaImage((dir / "big_z.mha").string()).data.size(),
            1024u * 1024u);  // and reads without the cap
  // A stream holding more than the header says.
  test::writeText(dir / "more_z.mha",
                  header("16 16 1", "CompressedData = True\n") +
                      std::string(reinterpret_cast<const char*>(packed.data()), packedSize));
  expectError<InputError>([&] { readMetaImage((dir / "more_z.mha").string()); },
                          {"more_z.mha", "more than that"});
  // Byte counts that are no byte counts.
  test::writeText(
      dir / "hs.mhd",
      "NDims = 2\nDimSize = 1 1\nElementType = MET_FLOAT\nHeaderSize = 1e300\nElementDataFile = hs.raw\n");
  test::writeText(dir / "hs.raw", "abcd");
  expectError<InputError>([&] { readMetaImage((dir / "hs.mhd").string()); }, {"hs.mhd", "HeaderSize"});
}

TEST(Limits, AbsurdSpacingsAndOriginsAreRefused) {
  const auto dir = test::scratchDir();
  for (const char* spacing : {"1e-37 1 1", "-2 2 1", "0 1 1", "2e6 1 1"}) {
    test::writeText(dir / "s.mha",
                    "ObjectType = Image\nNDims = 3\nElementSpacing = " + std::string(spacing) +
                        "\nDimSize = 1 1 1\nElementType = MET_FLOAT\nElementDataFile = LOCAL\nabcd");
    expectError<InputError>([&] { readMetaImage((dir / "s.mha").string()); },
                            {"s.mha", "ElementSpacing", "1e-6 to 1e6"});
  }
  test::writeText(dir / "o.mha",
                  "ObjectType = Image\nNDims = 3\nOffset = -1e39 0 0\nDimSize = 1 1 1\nElementType = "
                  "MET_FLOAT\nElementDataFile = LOCAL\nabcd");
  expectError<InputError>([&] { readMetaImage((dir / "o.mha").string()); }, {"o.mha", "Offset", "1e7"});
  VolumeGrid grid = VolumeGrid::centred({17, 1, 1}, {6e37, 1, 1});
  expectError<GeometryError>([&] { checkGridBounds(grid, "grid"); }, {"volume spacing x", "1e-6 to 1e6"});
  grid = VolumeGrid::centred({17, 1, 1}, {1, 1, 1});
  grid.origin.x = -1e39;
  expectError<GeometryError>([&] { checkGridBounds(grid, "grid"); }, {"volume extent", "1e7"});
}

TEST(Limits, BinaryGarbageIsNotEchoed) {
  const auto dir = test::scratchDir();
  std::string garbage =
      "NDims = 3\nDimSize = \x1b[2J\x07\xff 1 1\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n";
  test::writeText(dir / "g.mha", garbage);
  try {
    readMetaImage((dir / "g.mha").string());
    ADD_FAILURE() << "expected an error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("\\x1B"), std::string::npos) << message;
    for (unsigned char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << message;
  }
}

TEST(Limits, RunOutputsRemovesWhatARunCreatedUnlessKept) {
  const auto dir = test::scratchDir();
  test::writeText(dir / "old.txt", "before");
  {
    RunOutputs outputs;
    outputs.track((dir / "sub").string());
    fs::create_directories(dir / "sub");
    outputs.track((dir / "sub" / "a.txt").string());
    test::writeText(dir / "sub" / "a.txt", "new");
    outputs.track((dir / "old.txt").string());  // existed: left alone
    test::writeText(dir / "old.txt", "replaced");
  }
  EXPECT_FALSE(fs::exists(dir / "sub"));
  EXPECT_TRUE(fs::exists(dir / "old.txt"));
  {
    RunOutputs outputs;
    outputs.track((dir / "kept.txt").string());
    test::writeText(dir / "kept.txt", "kept");
    outputs.keep();
  }
  EXPECT_TRUE(fs::exists(dir / "kept.txt"));
}

TEST(Limits, EmptyRegionsAreRefused) {
  const Geometry g = test::circularScan(8, 16);  // 32 mm pixels
  const VolumeGrid grid = VolumeGrid::centred({8, 8, 8}, glm::dvec3(8.0));
  expectError<UsageError>([&] { makeRegionOfInterest("box:500,500,500,600,600,600", g, grid); },
                          {"roi", "box:500", "none"});
  EXPECT_GT(makeRegionOfInterest("box:-10,-10,-10,10,10,10", g, grid).insideCount(), 0u);
}

TEST(Limits, VolumeOutOfEveryBeamIsRefused) {
  const Geometry g = test::circularScan(8, 16, 16 * 4.0);
  VolumeGrid grid = VolumeGrid::centred({8, 8, 8}, glm::dvec3(4.0));
  EXPECT_NO_THROW(checkVolumeInBeam(g, grid, "test"));
  grid.origin.y += 500;  // far above the cone (the detector covers about +-21 mm at the isocentre)
  expectError<GeometryError>([&] { checkVolumeInBeam(g, grid, "test"); },
                             {"volume", "projects onto the detector"});
}

// Every input a fuzzer found (crash, hang, leak, excessive allocation) or that once took too long: each must
// now read cleanly or fail with InputError/GeometryError/UsageError, never anything else.
TEST(FuzzRegressions, EveryKeptInputFailsCleanly) {
  const fs::path root = fs::path(GLRECON_SOURCE_DIR) / "tests" / "fuzz" / "regressions";
  std::size_t inputs = 0;
  for (const char* target : {"metaimage", "rtk_geometry", "tiff", "options"}) {
    if (!fs::is_directory(root / target)) continue;
    for (const auto& entry : fs::directory_iterator(root / target)) {
      ++inputs;
      const std::string bytes = test::readText(entry.path());
      const auto dir = test::scratchDir();
      const std::string name = target;
      const fs::path copy = dir / (std::string("input") + (name == "rtk_geometry" ? ".xml" : name == "tiff" ? ".tif" : ".mha"));
      test::writeText(copy, bytes);
      try {
        if (name == "metaimage") {
          readMetaImage(copy.string());
        } else if (name == "tiff") {  // as fuzz_tiff: the header (a projection source's first look), then the pixels
          readTiffHeader(copy.string());
          readTiff(copy.string());
        } else if (name == "rtk_geometry") {
          Geometry::fromCircular(readRtkGeometry(copy.string()), DetectorLayout::centred(16, 8, 2, 2))
              .validate("fuzz");
        } else if (!bytes.empty()) {
          (void)parseNumberList("--size", bytes.substr(1));
        }
      } catch (const InputError&) {
      } catch (const GeometryError&) {
      } catch (const UsageError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << entry.path() << ": unexpected " << e.what();
      }
    }
  }
  EXPECT_GT(inputs, 0u) << "no regression inputs found under " << root;
}

}  // namespace
}  // namespace glrecon
