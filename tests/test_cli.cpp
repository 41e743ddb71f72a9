// The command-line tool as a user runs it: exit codes, error text, outputs left (or not) behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <chrono>
#include <cstdlib>

#include "glrecon/io.h"
#include "test_support.h"

namespace glrecon {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::contains;
using test::runCli;




// A small scan every test can reconstruct in well under a second.
const std::string kSmallScan = "phantom -o scan --projections 60 --detector 64 --detector-spacing 8 -q";

TEST(Cli, PhantomThenFdkReconstructsInWorldCoordinates) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  EXPECT_TRUE(fs::exists(dir / "scan" / "geometry.xml"));
  const CliRun r = runCli(dir, "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha --size 32 --spacing 8 --slices png");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // --backend auto says what it chose and why (cpu on a software renderer; on a GPU the fastest measured), and the
  // report names the same backend: the test holds on either kind of machine.
  const auto at = r.output.find("auto: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string chosen = r.output.substr(at + 6, r.output.find(" backend", at) - at - 6);
  EXPECT_TRUE(backendNamed(chosen).has_value()) << r.output;
  EXPECT_TRUE(contains(r.output, "backend " + chosen + " ") || contains(r.output, "backend " + chosen + ":")) << r.output;
  if (contains(r.output, "software renderer")) EXPECT_EQ(chosen, "cpu") << r.output;
  EXPECT_TRUE(contains(r.output, "G voxel-updates/s")) << r.output;
  const Image v = readMetaImage((dir / "v.mha").string());
  EXPECT_EQ(v.size, (std::array<int, 3>{32, 32, 32}));
  EXPECT_DOUBLE_EQ(v.origin[0], -124.0);  // centred: -(32 - 1) / 2 * 8
  // The voxel nearest the world origin lies in the phantom's brain (1.02); 60 views of 8 mm pixels
  // blur it, so 10% rather than the 2% of the finer tests in test_fdk.cpp.
  EXPECT_NEAR(v.at(16, 16, 16), 1.02, 0.1);
  for (const char* png : {"png/v_axial.png", "png/v_coronal.png", "png/v_sagittal.png"}) EXPECT_TRUE(fs::exists(dir / png));
}

TEST(Cli, HelpAndUsageErrors) {
  const auto dir = test::scratchDir();
  for (const char* sub : {"phantom", "fdk", "demo"}) {
    const CliRun r = runCli(dir, std::string(sub) + " --help");
    EXPECT_EQ(r.exitCode, 0) << sub;
    EXPECT_TRUE(contains(r.output, "--output")) << r.output;
  }
  EXPECT_TRUE(contains(runCli(dir, "fdk --help").output, "--geometry"));
  EXPECT_EQ(runCli(dir, "").exitCode, 2);
  EXPECT_EQ(runCli(dir, "fdk --no-such-option").exitCode, 2);
  const CliRun missing = runCli(dir, "fdk -p p.mha -o v.mha");
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_TRUE(contains(missing.output, "--geometry")) << missing.output;
  const CliRun size = runCli(dir, "fdk -g g.xml -p p.mha -o v.mha --size 32,x,3");
  EXPECT_EQ(size.exitCode, 2);
  EXPECT_TRUE(contains(size.output, "--size")) << size.output;
  const CliRun backend = runCli(dir, "fdk -g g.xml -p p.mha -o v.mha --backend vulkan");
  EXPECT_NE(backend.exitCode, 0);
}

TEST(Cli, BadInputFailsWithItsNameAndLeavesNoOutput) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  // Truncate the projections: the header promises more bytes than the file holds.
  const fs::path projections = dir / "scan" / "projections.mha";
  fs::copy_file(projections, dir / "truncated.mha");
  fs::resize_file(dir / "truncated.mha", fs::file_size(projections) - 1000);
  CliRun r = runCli(dir, "fdk -g scan/geometry.xml -p truncated.mha -o v.mha --size 16 --spacing 16");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "truncated.mha") && contains(r.output, "truncated")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));

  // A geometry with an element RTK does not define.
  std::string xml = test::readText(dir / "scan" / "geometry.xml");
  xml.insert(xml.find("<Projection>"), "  <Gantry>1</Gantry>\n");
  test::writeText(dir / "bad.xml", xml);
  r = runCli(dir, "fdk -g bad.xml -p scan/projections.mha -o v.mha --size 16 --spacing 16");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "bad.xml") && contains(r.output, "<Gantry>")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));

  // Fewer projections than the geometry describes.
  ASSERT_EQ(runCli(dir, "phantom -o other --projections 30 --detector 64 --detector-spacing 8 -q").exitCode, 0);
  r = runCli(dir, "fdk -g scan/geometry.xml -p other/projections.mha -o v.mha --size 16 --spacing 16");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "number of projections") && contains(r.output, "60")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));

  // A volume so large it reaches behind the source.
  r = runCli(dir, "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha --size 64 --spacing 40");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "behind the source")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));

  // Only the expected files remain: no temporary files from the failed runs.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 4u);  // scan/, other/, truncated.mha, bad.xml (runCli removes its own log)
}

TEST(Cli, ExistingOutputIsKeptUnlessOverwriteIsAsked) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  test::writeText(dir / "v.mha", "precious");
  const std::string fdk = "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha --size 16 --spacing 16 -q";
  const CliRun r = runCli(dir, fdk);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "--overwrite")) << r.output;
  EXPECT_EQ(test::readText(dir / "v.mha"), "precious");
  EXPECT_EQ(runCli(dir, fdk + " --overwrite").exitCode, 0);
  EXPECT_NE(test::readText(dir / "v.mha"), "precious");
  // phantom refuses before writing anything when one of its outputs exists.
  const CliRun again = runCli(dir, kSmallScan);
  EXPECT_EQ(again.exitCode, 1);
  EXPECT_TRUE(contains(again.output, "geometry.xml")) << again.output;
}

TEST(Cli, RawIntensitiesWithI0) {
  const auto dir = test::scratchDir();
  // RTK's phantom has densities of ~1 per mm: line integrals of ~400 that no detector could count through.
  // Scaled by 0.01 they peak near 4.6, like a head at 70 keV.
  ASSERT_EQ(runCli(dir, kSmallScan + " --density-scale 0.01").exitCode, 0);
  Image p = readMetaImage((dir / "scan" / "projections.mha").string());
  for (float& x : p.data) x = static_cast<float>(4000.0 * std::exp(-x));  // what a detector would count
  writeMetaImage((dir / "raw.mha").string(), p, false);
  ASSERT_EQ(runCli(dir, "fdk -g scan/geometry.xml -p scan/projections.mha -o a.mha --size 16 --spacing 16 -q").exitCode, 0);
  const CliRun r = runCli(dir, "fdk -g scan/geometry.xml -p raw.mha --i0 4000 -o b.mha --size 16 --spacing 16 -q");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const Image a = readMetaImage((dir / "a.mha").string()), b = readMetaImage((dir / "b.mha").string());
  double worst = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) worst = std::max(worst, double(std::abs(a.data[i] - b.data[i])));
  // Line integrals up to ~4.6 pass exp (in the test) and log (in glrecon) in float: about 4 roundings,
  // 4 * 6e-8 * 4.6 = 1.1e-6 each. The filtered value at a pixel weighs its neighbours with kernel weights
  // summing (in absolute value) to about 1/2 per mm of isocentre spacing, and the backprojection adds 60
  // views with weights near 2 pi / 60 / 2: about 1.1e-6 * 0.5 / 5.2 * pi ~ 3.3e-7 per voxel. 1e-5 leaves a
  // 30-fold margin yet sits a thousand times below the densities (~0.01) it protects.
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(b.at(8, 8, 8), 0.008f);  // and the reconstruction is the phantom's (0.0102), not zeros
}

TEST(Cli, DemoRunsAndReplacesOnlyItsOwnOutput) {
  const auto dir = test::scratchDir();
  const std::string demo = "demo -o d --size 24 --projections 40 --detector 48 -q";
  CliRun r = runCli(dir, demo);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "RMSE against the voxelized phantom")) << r.output;
  for (const char* f : {"d/volume.mha", "d/phantom.mha", "d/volume_axial.png", "d/scan/geometry.xml"}) EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_EQ(runCli(dir, demo).exitCode, 0);  // a second demo replaces the first one's files
  fs::create_directories(dir / "mine");
  test::writeText(dir / "mine" / "notes.txt", "mine");
  r = runCli(dir, "demo -o mine --size 24 --projections 40 --detector 48 -q");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "mine")) << r.output;
  EXPECT_EQ(test::readText(dir / "mine" / "notes.txt"), "mine");
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

TEST(Cli, RtkStylePathAndRegexpEqualTheStack) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  // Split the stack into one file per projection, numbered so that plain text order would be wrong.
  const Image stack = readMetaImage((dir / "scan" / "projections.mha").string());
  fs::create_directories(dir / "files");
  for (int p = 0; p < stack.size[2]; ++p) {
    Image one({stack.size[0], stack.size[1], 1}, stack.spacing, stack.origin);
    std::copy(stack.slice(p), stack.slice(p) + stack.sliceStride(), one.data.begin());
    writeMetaImage((dir / "files" / ("proj_" + std::to_string(p) + ".mha")).string(), one, false);
  }
  test::writeText(dir / "files" / "notes.txt", "not a projection");
  const std::string common = " -g scan/geometry.xml -o {} --size 16 --spacing 16 -q";
  auto run = [&](const std::string& source, const std::string& out) {
    std::string args = "fdk " + source + common;
    args.replace(args.find("{}"), 2, out);
    return runCli(dir, args);
  };
  ASSERT_EQ(run("-p scan/projections.mha", "a.mha").exitCode, 0);
  const CliRun r = run("--path files --regexp 'proj_[0-9]+\\.mha'", "b.mha");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  ASSERT_EQ(run("-p 'files/proj_*.mha'", "c.mha").exitCode, 0);
  const Image a = readMetaImage((dir / "a.mha").string());
  EXPECT_EQ(a.data, readMetaImage((dir / "b.mha").string()).data);  // same inputs in the same order: same bits
  EXPECT_EQ(a.data, readMetaImage((dir / "c.mha").string()).data);
  const CliRun none = run("--path files --regexp 'p[0-9]+\\.mha'", "d.mha");
  EXPECT_EQ(none.exitCode, 1);
  EXPECT_TRUE(contains(none.output, "files") && contains(none.output, "--regexp")) << none.output;
  EXPECT_EQ(runCli(dir, "fdk --path files -g scan/geometry.xml -o e.mha").exitCode, 2);  // --regexp missing
}

TEST(Cli, ChosenSlicesAndTheSliceCommand) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  CliRun r = runCli(dir, "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha --size 16 --spacing 16 -q "
                          "--slices png --slice y:5 --slice z --slice-range 0.9:1.1");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "png" / "v_y5.png"));
  EXPECT_TRUE(fs::exists(dir / "png" / "v_z8.png"));
  EXPECT_FALSE(fs::exists(dir / "png" / "v_axial.png"));  // chosen slices replace the default three
  r = runCli(dir, "slice -i v.mha -o s.png --axis x --index 3 --range 0:2");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "s.png"));
  r = runCli(dir, "slice -i v.mha -o t.png --axis x --index 16");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(contains(r.output, "0..15")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "t.png"));
  EXPECT_EQ(runCli(dir, "slice -i v.mha -o s.png").exitCode, 1);  // exists, no --overwrite
  EXPECT_EQ(runCli(dir, "fdk -g scan/geometry.xml -p scan/projections.mha -o w.mha --slices png --slice w:3").exitCode, 2);
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

TEST(Cli, GpuBackendsAndDevices) {
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

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

TEST(Cli, RegionOfInterestWritesASideNoteAndChecksItsMask) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string fdk = "fdk -g scan/geometry.xml -p scan/projections.mha --size 20 --spacing 16 --backend cpu ";
  CliRun r = runCli(dir, fdk + "-o v.mha --roi sphere:0,0,0,80");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "updates culled")) << r.output;
  const std::string note = test::readText(dir / "v.mha.txt");
  EXPECT_TRUE(contains(note, "outside the region 'sphere:0,0,0,80' are 0")) << note;
  const Image v = readMetaImage((dir / "v.mha").string());
  EXPECT_EQ(v.at(0, 0, 0), 0.0f);   // a corner, 150 mm from the centre
  EXPECT_NE(v.at(10, 10, 10), 0.0f);
  // A mask of the wrong size: exit 1, the file and field named, no volume and no note.
  Image small({8, 8, 8}, {16, 16, 16}, {0, 0, 0});
  writeMetaImage((dir / "mask.mha").string(), small, false);
  r = runCli(dir, fdk + "-o w.mha --roi mask.mha");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_TRUE(contains(r.output, "mask.mha")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "w.mha"));
  EXPECT_FALSE(fs::exists(dir / "w.mha.txt"));
  EXPECT_EQ(runCli(dir, fdk + "-o x.mha --roi wedge:1").exitCode, 2);
  EXPECT_EQ(runCli(dir, fdk + "-o x.mha --density-range 2:1").exitCode, 2);
  r = runCli(dir, fdk + "-o d.mha --density-range 0.95:1.1:0.2 --density-after 0.5");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(test::readText(dir / "d.mha.txt"), "density-range kill")) << r.output;
}

}  // namespace
}  // namespace glrecon

namespace glrecon {
namespace {

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

TEST(Cli, BenchWritesJsonAndChartAndSurvivesBadBackends) {
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

#include <png.h>

namespace glrecon {
namespace {

TEST(Cli, StreamAndScanSim) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string fdk = "fdk -g scan/geometry.xml -p scan/projections.mha --size 16 --spacing 16 --backend cpu -q ";
  ASSERT_EQ(runCli(dir, fdk + "-o batch.mha").exitCode, 0);
  CliRun r = runCli(dir, fdk + "-o streamed.mha --stream");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(readMetaImage((dir / "batch.mha").string()).data, readMetaImage((dir / "streamed.mha").string()).data);
  EXPECT_EQ(runCli(dir, fdk + "-o x.mha --stream --i0 100").exitCode, 2);
  r = runCli(dir, "scan-sim --rate 0 --projections 40 --detector 32 --size 16 --spacing 16 --backend cpu --snapshots shots --every 15 "
                   "-o sim.mha");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "after the last projection")) << r.output;
  for (const char* f : {"shots/snapshot_00015_axial.png", "shots/snapshot_00030_coronal.png", "shots/snapshot_00040_sagittal.png"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_TRUE(fs::exists(dir / "sim.mha"));
}

// The viewer under Xvfb: its axial panel shows the final volume's central axial slice through the same
// window/level, pixel for pixel (within one grey level for rounding), and closing mid-scan ends cleanly.
// How many of the axial panel's 32 x 32 voxels (y = 16) the screenshot shows other than the written volume in the
// grey range 0.9..1.2, beyond 8-bit rounding. Layout (viewer.cpp): panels of 360 px side by side above a 12 px
// progress bar; the axial panel first, x across and z up, each voxel a zoom x zoom block, zoom = 360 / 32 = 11.
std::size_t voxelsShownWrongly(const fs::path& screenshot, const Image& v) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, screenshot.c_str())) return SIZE_MAX;
  image.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> rgb(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, rgb.data(), 0, nullptr)) return SIZE_MAX;
  const int zoom = 11, bar = 12, height = static_cast<int>(image.height), j = 16;
  std::size_t off = 0;
  for (int k = 0; k < 32; ++k)
    for (int i = 0; i < 32; ++i) {
      const int px = i * zoom + zoom / 2, glY = bar + k * zoom + zoom / 2, row = height - 1 - glY;
      const int shown = rgb[(static_cast<std::size_t>(row) * image.width + px) * 3];
      const double t = std::clamp((v.at(i, j, k) - 0.9) / (1.2 - 0.9), 0.0, 1.0);
      off += std::abs(shown - static_cast<int>(std::lround(t * 255))) > 1;
    }
  return off;
}

TEST(GraphicsView, ScreenshotShowsTheReconstructedSliceAndClosingCancels) {
  if (!std::getenv("DISPLAY")) GTEST_SKIP() << "no X display: run under xvfb-run (./quickstart.sh test does)";
  const auto dir = test::scratchDir();
  CliRun r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --backend graphics --window 8 --slice-range 0.9:1.2 "
                          "--screenshot shot.png -o v.mha");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "frames/s")) << r.output;
  EXPECT_EQ(voxelsShownWrongly(dir / "shot.png", readMetaImage((dir / "v.mha").string())), 0u) << "of 1024 voxels";
  // Closing the window mid-scan (as a user would, after 50 of 360): a clean stop, nothing written.
  const auto start = std::chrono::steady_clock::now();
  r = runCli(dir, "view --simulate 100 --size 32 --spacing 8 --backend graphics --close-after 50 -o w.mha");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "cancelled")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "w.mha"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);  // 360 at 100/s would take 3.6 s
}

// --offscreen draws the window's frames on a headless context (no display needed): the same pixels as a window
// for every backend the viewer takes, the frame rate reported, and the same clean stop mid-scan.
TEST(GraphicsView, OffscreenFramesShowTheReconstructedSliceOnEveryBackend) {
  GLRECON_SKIP_WITHOUT_GL();
  const auto dir = test::scratchDir() / "offscreen";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string backend : {"graphics", "graphics-mp", "compute", "cpu"}) {
    const CliRun r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --backend " + backend +
                                     " --window 8 --slice-range 0.9:1.2 --offscreen --screenshot " + backend + ".png -o " + backend + ".mha");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "frames/s")) << r.output;
    EXPECT_EQ(voxelsShownWrongly(dir / (backend + ".png"), readMetaImage((dir / (backend + ".mha")).string())), 0u)
        << backend << ": of 1024 voxels";
  }
  CliRun r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --backend compute --offscreen --close-after 50 -o w.mha");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "offscreen frames closed after")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "w.mha"));
  r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --offscreen --headless -o x.mha");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--offscreen: expected without --headless")) << r.output;
  r = runCli(dir, "view --simulate 0 --size 32 --spacing 8 --offscreen --method sart -o x.mha");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--offscreen: expected with --method fdk, found 'sart'")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.mha"));
}

}  // namespace
}  // namespace glrecon
