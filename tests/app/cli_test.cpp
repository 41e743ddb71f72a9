// The command-line tool as a user runs it: exit codes, error text, outputs left (or not) behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <chrono>
#include <cstdlib>

#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "test_support.h"

#include "../recon/fdk_support.h"
#include "cli_support.h"

namespace glrecon {
namespace {

using namespace test;  // cli_support.h
namespace fs = std::filesystem;
using test::CliRun;
using test::contains;
using test::runCli;

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

// RTK's parallel geometry (SourceToDetectorDistance 0) from the command line: phantom --parallel writes it, fdk
// reconstructs it by FBP, project integrates along its rays.
TEST(Cli, ParallelScanFromPhantomReconstructsByFbp) {
  const auto dir = test::scratchDir();
  // The scan of Fdk.ParallelBeamSheppLogan64OverHalfATurn (tests/recon/fdk_test.cpp): 180 views over [0, 180) of 128^2
  // pixels of 2 mm, the same phantom and rays (phantom's defaults: RTK's table, 128 mm, one ray per pixel).
  CliRun r = runCli(dir, "phantom -o scan --parallel --projections 180 --arc 180 --detector 128 --detector-spacing 2 -q");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // As RTK writes a parallel geometry: the SID, no SourceToDetectorDistance (RTK leaves a zero out).
  const std::string xml = test::readText(dir / "scan" / "geometry.xml");
  EXPECT_TRUE(contains(xml, "<SourceToIsocenterDistance>1000</SourceToIsocenterDistance>")) << xml.substr(0, 400);
  EXPECT_FALSE(contains(xml, "SourceToDetectorDistance")) << xml.substr(0, 400);
  // Read back, it is that test's geometry (makeParallelScan) exactly: one path from RTK's parameters to the vectors.
  const Geometry read = Geometry::fromCircular(readRtkGeometry((dir / "scan" / "geometry.xml").string()),
                                               DetectorLayout::centred(128, 128, 2.0, 2.0));
  const Geometry made = parallelScan(180, 128, 256.0, 180.0);
  ASSERT_TRUE(read.parallel());
  ASSERT_EQ(read.size(), made.size());
  for (std::size_t i = 0; i < made.size(); ++i) {
    EXPECT_EQ(read.views[i].ray, made.views[i].ray) << i;
    EXPECT_EQ(read.views[i].pixel00, made.views[i].pixel00) << i;
    EXPECT_EQ(read.views[i].uStep, made.views[i].uStep) << i;
  }
  r = runCli(dir, "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha --size 64 --spacing 4 --backend cpu -q");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // The same scan, grid and backend as the library test: its bounds (kRmse64Parallel, densities within 2%) hold as they
  // are; the command line adds only float32 files, which store the values exactly.
  const Phantom phantom = Phantom::sheppLogan();
  const Image recon = readMetaImage((dir / "v.mha").string());
  const Metrics m = evaluate(recon, voxelizePhantom(phantom, recon.grid(), 4), phantom, made, 2 * 4.0);
  EXPECT_LT(m.rmse, kRmse64Parallel);
  expectDensities(m, 0.02);
}

TEST(Cli, ProjectIntegratesAlongAParallelFilesRays) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, "phantom -o scan --parallel --projections 180 --arc 180 --detector 8 --detector-spacing 2 -q").exitCode, 0);
  // A box of density 2 filling a 16 x 8 x 12 grid of 2 mm voxels (32 x 16 x 24 mm). View 0 (gantry 0) looks along -z,
  // view 90 along -x; the 8 x 4 detector of 2 mm (16 x 8 mm) lies inside the box's shadow in both, so every pixel's
  // line integral is 2 x 24 = 48 and 2 x 32 = 64 (a cone's rays, or x and z swapped, would not give both).
  Image box({16, 8, 12}, {2.0, 2.0, 2.0}, {-15.0, -7.0, -11.0});
  std::fill(box.data.begin(), box.data.end(), 2.0f);
  writeMetaImage((dir / "box.mha").string(), box, false);
  const CliRun r = runCli(dir, "project -i box.mha -g scan/geometry.xml -o p.mha --detector 8,4 --detector-spacing 2 --backend cpu -q");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const Image p = readMetaImage((dir / "p.mha").string());
  ASSERT_EQ(p.size, (std::array<int, 3>{8, 4, 180}));
  for (int view : {0, 90})
    for (int v = 0; v < 4; ++v)
      for (int u = 0; u < 8; ++u)
        // Float sums of the ray's samples (at most 64: 32 mm at half a voxel or finer): each adds 2^-24 relative, 4e-6
        // in all; 1e-5 bounds it.
        EXPECT_NEAR(p.at(u, v, view), view == 0 ? 48.0 : 64.0, 1e-5 * 64) << "view " << view << " pixel " << u << ", " << v;
}

TEST(Cli, BadParallelScansAreRefusedByName) {
  const auto dir = test::scratchDir();
  // No source: --sdd, --source-offset and --short-scan do not go with --parallel (a usage error, nothing written).
  for (const char* extra : {"--sdd 1536", "--source-offset 3", "--short-scan"}) {
    const CliRun r = runCli(dir, std::string("phantom -o scan --parallel --projections 8 --detector 8 -q ") + extra);
    EXPECT_EQ(r.exitCode, 2) << extra << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "--parallel")) << r.output;
    EXPECT_FALSE(fs::exists(dir / "scan")) << extra;
  }
  const CliRun sid = runCli(dir, "phantom -o scan --parallel --projections 8 --detector 8 --sid -5 -q");
  EXPECT_EQ(sid.exitCode, 2) << sid.output;
  EXPECT_TRUE(contains(sid.output, "--sid: expected a positive distance in mm up to 1e7, found '-5'")) << sid.output;
  EXPECT_FALSE(fs::exists(dir / "scan"));
  // A parallel file with a negative SID: fdk names the file, the field, what it expected and found; writes nothing.
  ASSERT_EQ(runCli(dir, "phantom -o scan --parallel --projections 8 --detector 8 --detector-spacing 32 -q").exitCode, 0);
  std::string xml = test::readText(dir / "scan" / "geometry.xml");
  xml.replace(xml.find(">1000<"), 6, ">-1000<");
  test::writeText(dir / "bad.xml", xml);
  const CliRun r = runCli(dir, "fdk -g bad.xml -p scan/projections.mha -o v.mha --size 8 --spacing 32");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "bad.xml: SourceToIsocenterDistance of projection 0: expected a positive distance")) << r.output;
  EXPECT_TRUE(contains(r.output, "found -1000")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
}

}  // namespace
}  // namespace glrecon
