// The bad-input catalogue of issue #10, through the command-line tool as a user runs it: every case checks
// the exit code, the key words of the message, and that no file was left behind or changed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <map>
#include <thread>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/validate.h"
#include "cli_support.h"
#include "test_support.h"

namespace glrecon {
namespace {
namespace fs = std::filesystem;
using test::CliRun;
using test::contains;
using test::expectRefused;
using test::runCli;

// The volume check runs in chunks on all threads; it must still name the first offending voxel in memory order,
// however the chunks fall (bad values in the last chunk, in the first, and two in different chunks).
TEST(Validate, NonFiniteVolumeNamesTheFirstBadVoxelWhateverTheThreads) {
  Image v(VolumeGrid{{64, 128, 300}, {1, 1, 1}, {0, 0, 0}});  // 2.4 M values: three chunks of 2^20
  for (std::size_t i = 0; i < v.data.size(); ++i) v.data[i] = static_cast<float>(i % 97);
  EXPECT_NO_THROW(checkFiniteValues(v, "v.mha", "reconstructed volume", 3.0e38));
  v.at(5, 3, 299) = std::numeric_limits<float>::infinity();
  test::expectError<InputError>([&] { checkFiniteValues(v, "v.mha", "reconstructed volume", 3.0e38); }, {"v.mha", "(5, 3, 299)", "inf"});
  v.at(7, 100, 200) = std::nanf("");
  v.at(1, 2, 3) = 3.1e38f;  // beyond the limit, first in memory
  test::expectError<InputError>([&] { checkFiniteValues(v, "v.mha", "reconstructed volume", 3.0e38); }, {"(1, 2, 3)", "3.1e+38"});
}

const std::string kScan = "phantom -o scan --projections 24 --detector 32 --detector-spacing 16 -q";
const std::string kFdkBase = "fdk -g scan/geometry.xml -p scan/projections.mha -q ";
const std::string kFdk = kFdkBase + "--size 16 --spacing 16 ";

fs::path scanDir() {
  const auto dir = test::scratchDir();
  EXPECT_EQ(runCli(dir, kScan).exitCode, 0);
  return dir;
}

// A copy of the scan's projections with a changed header line or changed values.
void writeProjections(const fs::path& dir, const std::string& name, const std::string& spacing, float value) {
  Image p = readMetaImage((dir / "scan" / "projections.mha").string());
  std::fill(p.data.begin(), p.data.end(), value);
  writeMetaImage((dir / name).string(), p, true);
  std::string text = test::readText(dir / name);
  const auto at = text.find("ElementSpacing = ");
  text.replace(at, text.find('\n', at) - at, "ElementSpacing = " + spacing);
  test::writeText(dir / name, text);
}

TEST(BadInput, OptionValuesOutOfRange) {
  const auto dir = scanDir();
  const struct {
    std::string arguments, option;
  } cases[] = {
      {kFdk + "-o v.mha --hann -1", "--hann"},
      {kFdk + "-o v.mha --hann nan", "--hann"},
      {kFdk + "-o v.mha --i0 0", "--i0"},
      {kFdk + "-o v.mha --i0 -5", "--i0"},
      {kFdk + "-o v.mha --i0 nan", "--i0"},
      {kFdk + "-o v.mha --i0 inf", "--i0"},
      {kFdk + "-o v.mha --threads -5", "--threads"},
      {kFdk + "-o v.mha --window 1e10", "--window"},
      {kFdk + "-o v.mha --cutoff 0", "--cutoff"},
      {kFdk + "-o v.mha --batch 0", "--batch"},
      {kFdk + "-o v.mha --density-after nan", "--density-after"},
      {"phantom -o out --density-scale nan", "--density-scale"},
      {"phantom -o out --noise-i0 nan", "--noise-i0"},
      {"phantom -o out --noise-i0 1e200", "--noise-i0"},
      {"phantom -o out --supersample 100000", "--supersample"},
      {"phantom -o out --threads -5", "--threads"},
      {"phantom -o out --sid inf", "--sid"},
      {"phantom -o out --projections -3", "--projections"},
      {"view --simulate 0 --headless --every -1 --snapshots snaps", "--every"},
      {"view --simulate nan --headless", "--simulate"},
      {"bench --size 16 --threads -5", "--threads"},     {"bench --size 16 --window 1,1e10", "--window"},
      {"view --simulate 0 --headless --window 1e10", "--window"},
  };
  for (const auto& c : cases) expectRefused(dir, c.arguments, 2, {c.option, "expected"});
  // The message names the value as given, not a converted one (--window 1e10 once read -2147483648).
  EXPECT_TRUE(contains(runCli(dir, kFdk + "-o v.mha --window 1e10").output, "1e10"));
}

TEST(BadInput, CommandsAndOptionCombinations) {
  const auto dir = scanDir();
  expectRefused(dir, "fdx -o v.mha", 2, {"unknown command 'fdx'", "fdk", "phantom"});
  expectRefused(dir, kFdk + "-o v.mha --slice y:3", 2, {"--slice", "--slices"});
  expectRefused(dir, kFdk + "-o v.mha --slices png --slice-range 5:1", 2, {"--slice-range", "LOW < HIGH"});
  expectRefused(dir, kFdk + "-o v.mha --slices png --slice z:999", 2, {"--slice", "999", "0 to 15"});
  expectRefused(dir, kFdk + "-o v.mha --roi box:500,500,500,600,600,600", 2, {"--roi", "none"});
  expectRefused(dir, "phantom -o out --sdd 500", 2, {"--sdd", "--sid"});
  expectRefused(dir, "bench --size 16 --backends cpu,foo -o b", 2, {"--backends", "foo"});
}

TEST(BadInput, OutputsCheckedBeforeTheReconstruction) {
  const auto dir = scanDir();
  expectRefused(dir, kFdk + "-o v.nii", 1, {"v.nii", "--output", ".mha or .mhd"});
  expectRefused(dir, kFdk + "-o missing/v.mha", 1, {"missing", "no such directory"});
  expectRefused(dir, kFdk + "-o scan", 1, {"scan"});
  test::writeText(dir / "file", "x");
  expectRefused(dir, kFdk + "-o v.mha --slices file", 1, {"file", "--slices"});
  expectRefused(dir, kFdk + "-o v.mha --slices file/png", 1, {"--slices", "not a directory"});
  expectRefused(dir, "slice -i scan/projections.mha -o s.jpg", 1, {"s.jpg", ".png"});
  expectRefused(dir, "phantom -o file", 1, {"file"});
  // An existing output is kept unless --overwrite: fdk, slice, view, bench.
  test::writeText(dir / "v.mha", "precious");
  expectRefused(dir, kFdk + "-o v.mha", 1, {"v.mha", "--overwrite"});
  expectRefused(dir, "view --simulate 0 --headless -o v.mha --size 8 --spacing 32", 1,
                {"v.mha", "--overwrite"});
  test::writeText(dir / "s.png", "precious");
  expectRefused(dir, "slice -i scan/projections.mha -o s.png", 1, {"s.png", "--overwrite"});
  fs::create_directories(dir / "b");
  test::writeText(dir / "b" / "bench.png", "precious");
  expectRefused(dir, "bench --size 16 --backends cpu -o b", 1, {"bench.png", "--overwrite"});
  if (geteuid() != 0) {
    fs::create_directories(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    expectRefused(dir, kFdk + "-o ro/v.mha", 1, {"ro", "Permission denied"});
    fs::permissions(dir / "ro", fs::perms::owner_all);
  }
}

TEST(BadInput, ImpossibleGeometries) {
  const auto dir = scanDir();
  expectRefused(dir, kFdkBase + "-o v.mha --size 17,1,1 --spacing 6e37,1,1 --origin -1e39,0,0", 1,
                {"volume spacing", "1e6"});
  expectRefused(dir, kFdkBase + "-o v.mha --size 17,1,1 --spacing 1 --origin -1e39,0,0", 1,
                {"volume extent", "1e7"});
  expectRefused(dir, kFdk + "-o v.mha --origin 0,5000,0", 1, {"volume", "projects onto the detector"});
  writeProjections(dir, "tiny.mha", "1e-37 1e-37 1", 1.0f);
  expectRefused(dir, "fdk -g scan/geometry.xml -p tiny.mha --size 16 --spacing 16 -o v.mha", 1,
                {"tiny.mha", "ElementSpacing"});
  writeProjections(dir, "mirrored.mha", "-16 16 1", 1.0f);
  expectRefused(dir, "fdk -g scan/geometry.xml -p mirrored.mha --size 16 --spacing 16 -o v.mha", 1,
                {"mirrored.mha", "ElementSpacing"});
  writeProjections(dir, "huge.mha", "16 16 1", 3e38f);
  expectRefused(dir, "fdk -g scan/geometry.xml -p huge.mha --size 16 --spacing 16 -o v.mha", 1,
                {"huge.mha", "overflow"});
  // A source offset that takes every beam off the volume.
  ASSERT_EQ(
      runCli(dir,
              "phantom -o high --projections 8 --detector 16 --detector-spacing 8 --source-offset 0,3000 -q")
          .exitCode,
      0);
  expectRefused(dir, "fdk -g high/geometry.xml -p high/projections.mha --size 16 --spacing 4 -o v.mha", 1,
                {"volume", "projects onto the detector"});
}

// The iterative commands, project and view --method run fdk's checks (the one validation point, glrecon/validate.h):
// before, each of these wrote an all-zero, NaN or infinite volume or projection stack and exited 0.
TEST(BadInput, IterativeCommandsAndProjectCheckAsFdkDoes) {
  const auto dir = scanDir();
  const std::string grid = " -g scan/geometry.xml -p scan/projections.mha -q --iterations 2 ";
  for (const std::string method : {"sart", "sirt", "cgls", "osem"}) {
    expectRefused(dir, method + grid + "-o v.mha --size 16 --spacing 16 --origin 0,5000,0", 1, {"volume", "projects onto the detector"});
    expectRefused(dir, method + grid + "-o v.mha --size 16 --spacing 1e-300", 1, {"volume spacing", "1e-6"});
    expectRefused(dir, method + grid + "-o v.mha --size 16 --spacing 16 --step 1e-300", 1, {"--step", "from 0.16 to 32 mm", "1e-300"});
    expectRefused(dir, method + grid + "-o v.mha --size 16 --spacing 16 --step 1e10", 1, {"--step", "1e+10"});
  }
  expectRefused(dir, "view --method sart --headless -q -g scan/geometry.xml -p scan/projections.mha --size 16 --spacing 16 --origin 0,5000,0", 1,
                {"volume", "projects onto the detector"});
  // A projector pair for FDK, which has none: refused before any work, nothing written.
  expectRefused(dir, "view --projector matched --headless -q -g scan/geometry.xml -p scan/projections.mha --size 16 --spacing 16 --snapshots s -o v.mha",
                2, {"--projector: expected with an iterative --method", "found --method fdk"});
  ASSERT_EQ(runCli(dir, "phantom -o high --projections 8 --detector 16 --detector-spacing 8 --source-offset 0,5000 -q").exitCode, 0);
  expectRefused(dir, "osem -g high/geometry.xml -p high/projections.mha --size 16 --spacing 4 -o v.mha", 1, {"volume", "projects onto the detector"});
  writeProjections(dir, "huge.mha", "16 16 1", 3e38f);
  expectRefused(dir, "cgls -g scan/geometry.xml -p huge.mha --size 16 --spacing 16 -o v.mha", 1, {"huge.mha", "projection 0 pixel (0, 0)", "overflow"});
  // project: the volume's values, the step, the detector, the volume in the beam.
  Image volume(VolumeGrid::centred({16, 16, 16}, glm::dvec3(16.0)));
  std::fill(volume.data.begin(), volume.data.end(), 1.0f);
  volume.at(3, 4, 5) = std::nanf("");
  writeMetaImage((dir / "nan.mha").string(), volume, true);
  volume.at(3, 4, 5) = 3e38f;
  writeMetaImage((dir / "big.mha").string(), volume, true);
  volume.at(3, 4, 5) = 1.0f;
  writeMetaImage((dir / "ok.mha").string(), volume, true);
  const std::string project = "project -g scan/geometry.xml --detector 32 --detector-spacing 16 -q -o p.mha -i ";
  expectRefused(dir, project + "nan.mha", 1, {"volume", "voxel value at (3, 4, 5)", "nan"});
  // 443 mm of diagonal: values beyond 1e20 / 443 could sum past the projections' limit.
  expectRefused(dir, project + "big.mha", 1, {"voxel value at (3, 4, 5)", "2.25527e+17", "3e+38"});
  expectRefused(dir, project + "ok.mha --step 1e-300", 1, {"--step", "1e-300"});
  expectRefused(dir, project + "ok.mha --step 1e10", 1, {"--step", "1e+10"});
  expectRefused(dir, "project -g scan/geometry.xml --detector 32 --detector-spacing 1e7 -q -o p.mha -i ok.mha", 1,
                {"detector spacing", "1e6"});
  expectRefused(dir, "project -g high/geometry.xml --detector 16 --detector-spacing 8 -q -o p.mha -i ok.mha", 1, {"projects onto the detector"});
}

// Every output of a command is checked before any work, against existing files and against the command's other outputs.
TEST(BadInput, EveryOutputCheckedUpFrontAgainstTheOthers) {
  const auto dir = scanDir();
  const std::string sart = "sart -g scan/geometry.xml -p scan/projections.mha -q --iterations 1 --size 16 --spacing 16 ";
  test::writeText(dir / "out.mha", "the user's file");
  // Before: with --overwrite the CSV replaced the volume just written, and the run reported "wrote out.mha".
  expectRefused(dir, sart + "-o out.mha --residual-csv out.mha --overwrite", 1, {"out.mha", "--residual-csv", "ending in .csv"});
  expectRefused(dir, sart + "-o v.mhd --residual-png v.raw", 1, {"v.raw", "ending in .png"});
  expectRefused(dir, sart + "-o v.mhd --residual-csv v.raw", 1, {"v.raw", "ending in .csv"});
  expectRefused(dir, sart + "-o v.mha --residual-csv r.csv --residual-png r.csv", 1, {"--residual-png", "ending in .png"});
  // The same file through a link.
  ASSERT_EQ(::symlink("out.mha", (dir / "link.csv").c_str()), 0);
  expectRefused(dir, sart + "-o out.mha --overwrite --residual-csv link.csv", 1, {"link.csv", "the same file as --output"});
  // Names and folders refused before the run (they were refused after it).
  expectRefused(dir, sart + "-o v.nii", 1, {"v.nii", "--output", ".mha"});
  expectRefused(dir, sart + "-o missing/v.mha", 1, {"missing", "no such directory"});
  expectRefused(dir, sart + "-o v.mha --residual-csv missing/r.csv", 1, {"missing", "no such directory"});
  expectRefused(dir, "project -g scan/geometry.xml --detector 32 --detector-spacing 16 -q -i scan/projections.mha -o p.nii", 1,
                {"p.nii", "--output"});
  expectRefused(dir, "compare scan/projections.mha scan/projections.mha --png d.mha", 1, {"d.mha", "--png", ".png"});
  EXPECT_EQ(test::readText(dir / "out.mha"), "the user's file");
}

TEST(BadInput, MemoryBudget) {
  const auto dir = scanDir();
  // Checked against the machine (or GLRECON_MEMORY_LIMIT_MB): 1400^3 voxels need 30 GiB in three copies.
  expectRefused(dir, kFdkBase + "-o v.mha --size 1400 --spacing 0.2", 1, {"--size 1400", "memory", "needed"},
                "GLRECON_MEMORY_LIMIT_MB=16384");
  expectRefused(dir, kFdkBase + "-o v.mha --size 2048 --spacing 0.2", 1, {"--size 2048", "memory", "needed"},
                "GLRECON_MEMORY_LIMIT_MB=16384");  // a GPU host may have the 96 GiB: the limit keeps the case the same everywhere
  expectRefused(dir, "phantom -o out --detector 4096 --projections 2000", 1, {"phantom", "memory"},
                "GLRECON_MEMORY_LIMIT_MB=16384");
  // The iterative methods and project estimate theirs too: 512^3 voxels are 3 GiB in six copies, 4096^2 pixels of 24
  // projections 1.5 GiB.
  expectRefused(dir, "sirt -g scan/geometry.xml -p scan/projections.mha -o v.mha --size 512 --spacing 0.5", 1,
                {"sirt", "voxels", "memory", "needed"}, "GLRECON_MEMORY_LIMIT_MB=1024");
  Image volume(VolumeGrid::centred({16, 16, 16}, glm::dvec3(16.0)));
  writeMetaImage((dir / "ok.mha").string(), volume, true);
  expectRefused(dir, "project -g scan/geometry.xml -i ok.mha -o p.mha --detector 4096 --detector-spacing 0.1", 1,
                {"project", "projections of 4096 x 4096", "memory", "needed"}, "GLRECON_MEMORY_LIMIT_MB=1024");
  // bench-iterative's simulated scan: 90 projections of 2048^2 are 1.4 GiB.
  expectRefused(dir, "bench-iterative --size 1024 --detector 2048 --backends cpu", 1, {"90 projections of 2048 x 2048", "memory", "needed"},
                "GLRECON_MEMORY_LIMIT_MB=1024");
  // 306 bytes of header promising 20 GB.
  test::writeText(dir / "empty.mha",
                  "ObjectType = Image\nNDims = 3\nDimSize = 1000 1000 5000\nElementType = MET_FLOAT\n"
                  "ElementDataFile = LOCAL\n");
  expectRefused(dir, "fdk -g scan/geometry.xml -p empty.mha -o v.mha", 1, {"empty.mha", "truncated"});
  expectRefused(dir, "slice -i empty.mha -o s.png", 1, {"empty.mha", "truncated"});
}

TEST(BadInput, NonRegularAndUnreadableInputs) {
  const auto dir = scanDir();
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((dir / "fifo.mha").c_str(), 0600), 0);
  // Each would block forever on open(); the time limit turns a hang into exit -1.
  expectRefused(dir, "fdk -g fifo -p scan/projections.mha -o v.mha", 1, {"fifo", "FIFO"});
  expectRefused(dir, "fdk -g scan/geometry.xml -p fifo.mha -o v.mha", 1, {"fifo.mha", "FIFO"});
  test::writeText(dir / "h.mhd",
                  "NDims = 3\nDimSize = 32 32 24\nElementType = MET_FLOAT\nElementDataFile = fifo\n");
  expectRefused(dir, "fdk -g scan/geometry.xml -p h.mhd -o v.mha", 1, {"h.mhd", "ElementDataFile", "FIFO"});
  expectRefused(dir, "fdk -g scan -p scan/projections.mha -o v.mha", 1, {"scan", "directory"});
  expectRefused(dir, "fdk -g /dev/null -p scan/projections.mha -o v.mha", 1,
                {"/dev/null", "character device"});
  expectRefused(dir, "fdk -g nothing.xml -p scan/projections.mha -o v.mha", 1,
                {"nothing.xml", "no such file"});
  if (geteuid() != 0) {
    fs::copy_file(dir / "scan" / "geometry.xml", dir / "locked.xml");
    fs::permissions(dir / "locked.xml", fs::perms::none);
    expectRefused(dir, "fdk -g locked.xml -p scan/projections.mha -o v.mha", 1,
                  {"locked.xml", "Permission denied"});
    fs::permissions(dir / "locked.xml", fs::perms::owner_all);
  }
  // Binary garbage: named, never echoed raw to the terminal.
  std::string garbage = "\x1b[2J\x07 <\xff\xfe>";
  for (int i = 0; i < 256; ++i) garbage += static_cast<char>(i);
  test::writeText(dir / "garbage.xml", garbage);
  test::writeText(dir / "garbage.mha", garbage);
  for (const char* args : {"fdk -g garbage.xml -p scan/projections.mha -o v.mha",
                           "fdk -g scan/geometry.xml -p garbage.mha -o v.mha"}) {
    const CliRun r = runCli(dir, args);
    EXPECT_EQ(r.exitCode, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "garbage")) << r.output;
    for (unsigned char c : r.output)
      EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "raw byte " << int(c) << " in: " << r.output;
  }
}

TEST(BadInput, FileNamesAreTakenLiterallyAndRegexpMatchesAPart) {
  const auto dir = scanDir();
  // 'p[1].mha' exists: it is that file, not the glob that would select p1.mha (a broken file here).
  fs::copy_file(dir / "scan" / "projections.mha", dir / "p[1].mha");
  test::writeText(dir / "p1.mha", "not a MetaImage");
  const CliRun literal =
      runCli(dir, "fdk -g scan/geometry.xml -p 'p[1].mha' --size 16 --spacing 16 -q -o a.mha");
  EXPECT_EQ(literal.exitCode, 0) << literal.output;
  // --regexp matches a part of the name, as ITK's series reader does: "\.mha$" selects the stack alone here.
  fs::create_directories(dir / "files");
  fs::copy_file(dir / "scan" / "projections.mha", dir / "files" / "stack_0.mha");
  test::writeText(dir / "files" / "notes.txt", "not a projection");
  const CliRun part = runCli(
      dir, "fdk -g scan/geometry.xml --path files --regexp 'k_[0-9]' --size 16 --spacing 16 -q -o b.mha");
  EXPECT_EQ(part.exitCode, 0) << part.output;
  EXPECT_EQ(readMetaImage((dir / "a.mha").string()).data, readMetaImage((dir / "b.mha").string()).data);
}

TEST(BadInput, AFailedWriteLeavesNothingBehind) {
  const auto dir = test::scratchDir();
  // A file size limit lets geometry.xml through and stops projections.mha (EFBIG): the phantom must not leave
  // the geometry (or the directory it created) behind, and must say why the write failed.
  const CliRun r =
      runCli(dir, "phantom -o scan --projections 24 --detector 32 -q", "trap '' XFSZ; ulimit -f 64;");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "projections.mha") && contains(r.output, "File too large")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "scan"))
      << "left: " << (fs::exists(dir / "scan/geometry.xml") ? "geometry.xml" : "the directory");
  // fdk writing .mhd + .raw: the failed pair leaves neither half, nor a temporary.
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  const CliRun f = runCli(dir, kFdk + "-o v.mhd --slices png", "trap '' XFSZ; ulimit -f 8;");
  EXPECT_EQ(f.exitCode, 1) << f.output;
  EXPECT_FALSE(fs::exists(dir / "v.mhd") || fs::exists(dir / "v.raw") || fs::exists(dir / "png")) << f.output;
  // sart: the volume (2 KiB) and the CSV fit under 4 KiB (sh counts ulimit -f in 512-byte blocks), the residual chart does not: the run leaves none of the three
  // (the CSV was published before the PNG failed, and the volume stayed).
  const CliRun s = runCli(dir, "sart -g scan/geometry.xml -p scan/projections.mha --size 8 --spacing 32 -o s.mha --iterations 2 -q "
                               "--residual-csv r.csv --residual-png r.png", "trap '' XFSZ; ulimit -f 8;");
  EXPECT_EQ(s.exitCode, 1) << s.output;
  EXPECT_TRUE(contains(s.output, "r.png")) << s.output;
  EXPECT_FALSE(fs::exists(dir / "s.mha") || fs::exists(dir / "r.csv") || fs::exists(dir / "r.png")) << s.output;
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_FALSE(contains(e.path().filename().string(), ".tmp-")) << e.path();
}

// --scratch on a file system without room for the filtered projections: before, the store was a sparse file and the
// writes through its mapping ended in SIGBUS (exit 135, the output's temporary left). Now the room is checked before
// the run (statvfs) and reserved when the store is made (posix_fallocate).
TEST(BadInput, ScratchWithoutRoomIsRefusedNotABusError) {
  const auto dir = test::scratchDir();
  // 60 projections of 128^2 floats: 3.8 MiB to keep; slabs forced by --gpu-memory (on cpu too).
  ASSERT_EQ(runCli(dir, "phantom -o scan --projections 60 --detector 128 --detector-spacing 4 -q").exitCode, 0);
  const std::string fdk = "fdk -g scan/geometry.xml -p scan/projections.mha --size 32 --spacing 8 --backend cpu --gpu-memory 64K -o v.mha ";
  fs::create_directories(dir / "sc");
  // The reservation: a file size limit lets statvfs's check pass and stops posix_fallocate (EFBIG).
  const CliRun r = runCli(dir, fdk + "--scratch sc", "trap '' XFSZ; ulimit -f 1000;");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--scratch") && contains(r.output, "room for 3.8 MiB")) << r.output;
  EXPECT_TRUE(fs::is_empty(dir / "sc"));
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_FALSE(contains(e.path().filename().string(), "v.mha")) << e.path();
  // A full file system, where one can be made (root: a 1 MiB tmpfs), refused before the run.
  if (::geteuid() != 0) GTEST_SKIP() << "not root: no small file system to mount for the before-the-run case";
  const fs::path small = dir / "small";
  fs::create_directories(small);
  if (std::system(("mount -t tmpfs -o size=1m tmpfs " + small.string() + " 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (no CAP_SYS_ADMIN)";
  expectRefused(dir, fdk + "--scratch small", 1, {"small", "--scratch", "room for 3.8 MiB", "1.0 MiB free"});
  EXPECT_EQ(std::system(("umount " + small.string()).c_str()), 0);
}

// SIGINT and SIGTERM: exit 130 and 143, this run's partial output and temporaries removed.
TEST(BadInput, SignalsRemovePartialOutput) {
  const auto dir = test::scratchDir();
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (chdir(dir.c_str()) != 0) _exit(99);
      const int null = open("/dev/null", 1);
      dup2(null, 2);
      // Long enough to be interrupted while simulating, with the output directory already made.
      execl(GLRECON_CLI_PATH, "glrecon", "phantom", "-o", "scan", "--projections", "2000", "--detector",
            "256", "-q", nullptr);
      _exit(98);
    }
    // Wait until the run has made its output directory, then interrupt it.
    for (int i = 0; i < 200 && !fs::exists(dir / "scan"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(child, signal);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 128 + signal);
    EXPECT_FALSE(fs::exists(dir / "scan")) << "signal " << signal;
  }
}

}  // namespace
}  // namespace glrecon
