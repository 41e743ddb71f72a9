// The iterative commands as a user runs them: project, sart/sirt/cgls/osem, compare; exit codes, error text, and no
// output left behind on failure.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>

#include "glrecon/io.h"
#include "test_support.h"

namespace glrecon {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::contains;
using test::runCli;




const std::string kScan = "phantom -o scan --projections 12 --detector 32 --detector-spacing 16 --size 16 --spacing 15 --ground-truth -q";
const std::string kGrid = " -g scan/geometry.xml -p scan/projections.mha --size 16 --spacing 15 ";

TEST(CliIterative, SartWritesVolumeResidualCurveAndComparesWithPhantom) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  const CliRun r = runCli(dir, "sart" + kGrid + "-o sart.mha --iterations 3 --subsets 4 --residual-csv r.csv --residual-png r.png");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "sart iteration 3/3: residual")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "sart.mha") && fs::exists(dir / "r.png"));
  const std::string csv = test::readText(dir / "r.csv");
  EXPECT_TRUE(contains(csv, "iteration,subsets,residual")) << csv;
  EXPECT_TRUE(contains(csv, "final,,")) << csv;
  const CliRun c = runCli(dir, "compare sart.mha scan/phantom.mha --roi sphere:0,0,0,60 --png diff.png");
  ASSERT_EQ(c.exitCode, 0) << c.output;
  EXPECT_TRUE(contains(c.output, "whole volume") && contains(c.output, "sphere:0,0,0,60") && contains(c.output, "RMS diff")) << c.output;
  EXPECT_TRUE(fs::exists(dir / "diff.png"));
  for (const char* m : {"sirt", "cgls", "osem"}) {
    const CliRun x = runCli(dir, std::string(m) + kGrid + "-o " + m + ".mha --iterations 2 -q");
    EXPECT_EQ(x.exitCode, 0) << m << ": " << x.output;
  }
}

// --projector distance-driven as a user asks for it: CGLS runs on the cpu backend and its residual falls (B = A^T);
// a step is refused with the option named, and nothing is written.
TEST(CliIterative, DistanceDrivenPairRunsWhereItCanAndSaysWhereNot) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  const CliRun r = runCli(dir, "cgls" + kGrid + "-o dd.mha --iterations 4 --projector distance-driven");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "cgls iteration 4/4: residual")) << r.output;
  EXPECT_FALSE(contains(r.output, "restarted")) << r.output;  // the exact transpose: every conjugate direction descends
  EXPECT_TRUE(fs::exists(dir / "dd.mha"));
  const CliRun step = runCli(dir, "sirt" + kGrid + "-o step.mha --iterations 2 --projector distance-driven --step 5");
  EXPECT_NE(step.exitCode, 0);
  EXPECT_TRUE(contains(step.output, "--step: the distance-driven pair integrates across the voxel planes")) << step.output;
  EXPECT_FALSE(fs::exists(dir / "step.mha"));
}

TEST(CliIterative, ProjectThenReconstructRoundTrip) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  const CliRun r = runCli(dir, "project -i scan/phantom.mha -g scan/geometry.xml -o p.mha --detector 32 --detector-spacing 16");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "G ray-samples/s")) << r.output;
  const Image p = readMetaImage((dir / "p.mha").string());
  EXPECT_EQ(p.size, (std::array<int, 3>{32, 32, 12}));
}

TEST(CliIterative, ViewShowsEveryIterationHeadless) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  const CliRun r = runCli(dir, "view --method sart --iterations 2 --subsets 3" + std::string(" -g scan/geometry.xml -p scan/projections.mha") +
                                    " --size 16 --spacing 15 --headless --snapshots snaps -o v.mha");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "view: sart iteration 2/2: residual")) << r.output;
  for (const char* f : {"snapshot_it0001_axial.png", "snapshot_it0002_sagittal.png", "residual.csv", "residual.png"})
    EXPECT_TRUE(fs::exists(dir / "snaps" / f)) << f;
  EXPECT_TRUE(fs::exists(dir / "v.mha"));
}

// view --method takes the commands' projector pair: --projector as they do, and their default (matched for pdhg-tv, the
// guarantee's pair; interpolating else): its volume equals the command's bit for bit (the same reconstructor on cpu).
TEST(CliIterative, ViewTakesTheCommandsProjectorPair) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  const std::string files = " -g scan/geometry.xml -p scan/projections.mha --size 16 --spacing 15 --backend cpu -n 2 -q";
  for (const auto& [method, projector] : {std::pair{"sirt", " --projector matched"}, std::pair{"pdhg-tv", ""}, std::pair{"sirt", ""}}) {
    const std::string name = std::string(method) + projector;
    const CliRun v = runCli(dir, "view --method " + std::string(method) + projector + files + " --headless --snapshots snaps -o v.mha --overwrite");
    ASSERT_EQ(v.exitCode, 0) << name << v.output;
    const CliRun c = runCli(dir, std::string(method) + projector + files + " -o c.mha --overwrite");
    ASSERT_EQ(c.exitCode, 0) << name << c.output;
    const Image a = readMetaImage((dir / "v.mha").string()), b = readMetaImage((dir / "c.mha").string());
    EXPECT_EQ(test::values(a.data), test::values(b.data)) << name;
    EXPECT_GT(*std::max_element(a.data.begin(), a.data.end()), 0.1f) << name;
    fs::remove_all(dir / "snaps");
  }
  // The pair changes the volume (else the comparisons above could not tell the pairs apart).
  ASSERT_EQ(runCli(dir, "view --method sirt" + files + " --projector matched --headless --snapshots snaps -o m.mha").exitCode, 0);
  fs::remove_all(dir / "snaps");
  ASSERT_EQ(runCli(dir, "view --method sirt" + files + " --headless --snapshots snaps -o i.mha").exitCode, 0);
  EXPECT_NE(test::values(readMetaImage((dir / "m.mha").string()).data), test::values(readMetaImage((dir / "i.mha").string()).data));
  // --projector with --method fdk: BadInput.IterativeCommandsAndProjectCheckAsFdkDoes.
}

// bench-iterative over slabs (--slabs, --gpu 0,0): the split operator's row, as the iterative commands run it; the GL
// backends, which do not split, reported and skipped.
TEST(CliIterative, BenchIterativeTimesTheSplitOperator) {
  const fs::path dir = test::scratchDir();
  for (const std::string split : {"--slabs 2", "--gpu 0,0"}) {
    const CliRun r = runCli(dir, "bench-iterative --size 32 --projections 24 --detector 32 --backends cpu,compute " + split);
    ASSERT_EQ(r.exitCode, 0) << split << r.output;
    EXPECT_TRUE(contains(r.output, "cpu, 2 slabs of y rows")) << split << r.output;
    EXPECT_TRUE(contains(r.output, "compute    skipped: --backend: the iterative methods over slabs")) << split << r.output;
  }
  const CliRun bad = runCli(dir, "bench-iterative --size 32 --projections 24 --detector 32 --backends cpu --slabs 3");
  EXPECT_TRUE(contains(bad.output, "cpu        skipped: --slabs: expected 1 to 2")) << bad.output;
}

TEST(CliIterative, ViewWindowDrawsEverySubsetAndSavesScreenshot) {
  if (!std::getenv("DISPLAY")) GTEST_SKIP() << "no X display: run the tests under xvfb-run (./quickstart.sh test does)";
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  const CliRun r = runCli(dir, "view --method osem --iterations 2 --subsets 3 -g scan/geometry.xml -p scan/projections.mha"
                                " --size 16 --spacing 15 --screenshot shot.png");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "view: osem iteration 2/2")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "shot.png"));
}

// compare, project and --initial read every format fdk writes (they read only MetaImage before), and the iterative
// commands and project write TIFF too.
TEST(CliIterative, TiffVolumesGoEverywhereAVolumeDoes) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  ASSERT_EQ(runCli(dir, "fdk" + kGrid + "-o fdk.tif -q").exitCode, 0);
  ASSERT_EQ(runCli(dir, "fdk" + kGrid + "-o fdk.mha -q").exitCode, 0);
  const CliRun c = runCli(dir, "compare fdk.tif fdk.mha");
  ASSERT_EQ(c.exitCode, 0) << c.output;
  EXPECT_TRUE(contains(c.output, "max |diff| 0")) << c.output;  // the same volume in two formats: no difference
  const CliRun s = runCli(dir, "sart" + kGrid + "--initial fdk.tif -o sart.tif --iterations 1 -q");
  ASSERT_EQ(s.exitCode, 0) << s.output;
  const Image a = readImage((dir / "sart.tif").string());
  EXPECT_EQ(a.size, (std::array<int, 3>{16, 16, 16}));
  const CliRun p = runCli(dir, "project -i fdk.tif -g scan/geometry.xml --detector 32 --detector-spacing 16 -o p.tif -q");
  ASSERT_EQ(p.exitCode, 0) << p.output;
  EXPECT_EQ(readImage((dir / "p.tif").string()).size, (std::array<int, 3>{32, 32, 12}));
}

// --order (sart, osem, asd-pocs): the default is interleaved (the same volume as without --order); ordered and random
// change the run; random repeats with its seed and is named in the summary; a bad name or a seed without random fail.
TEST(CliIterative, OrderChoosesTheSubsetOrder) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  auto volume = [&](const std::string& name, const std::string& args) {
    const CliRun r = runCli(dir, "sart" + kGrid + "-o " + name + ".mha --iterations 2 --subsets 4 " + args);
    EXPECT_EQ(r.exitCode, 0) << args << "\n" << r.output;
    return std::make_pair(readMetaImage((dir / (name + ".mha")).string()).data, r.output);
  };
  const auto standard = volume("a", "-q");
  EXPECT_EQ(volume("b", "--order interleaved -q").first, standard.first);
  const auto ordered = volume("c", "--order ordered");
  EXPECT_NE(ordered.first, standard.first);
  EXPECT_TRUE(contains(ordered.second, "4 subset(s) (ordered)")) << ordered.second;
  const auto random = volume("d", "--order random --order-seed 3");
  EXPECT_TRUE(contains(random.second, "4 subset(s) (random, seed 3)")) << random.second;
  EXPECT_EQ(volume("e", "--order random --order-seed 3 -q").first, random.first);
  EXPECT_NE(random.first, ordered.first);
  for (const char* m : {"osem", "asd-pocs"}) {
    const CliRun r = runCli(dir, std::string(m) + kGrid + "-o " + m + ".mha --iterations 1 --subsets 3 --order random -q");
    EXPECT_EQ(r.exitCode, 0) << m << ": " << r.output;
  }
  struct Case {
    std::string args;
    std::vector<std::string> fragments;
  } cases[] = {
      {"sart" + kGrid + "-o out.mha --order angularDistance", {"--order", "expected interleaved, ordered or random", "found 'angularDistance'"}},
      {"osem" + kGrid + "-o out.mha --order-seed 4", {"--order-seed", "only with --order random"}},
      {"sirt" + kGrid + "-o out.mha --order ordered", {"--order"}},  // one subset: sirt takes no order
  };
  for (const Case& c : cases) {
    const CliRun r = runCli(dir, c.args);
    EXPECT_EQ(r.exitCode, 2) << c.args << "\n" << r.output;
    for (const std::string& f : c.fragments) EXPECT_TRUE(contains(r.output, f)) << c.args << ": '" << f << "' not in " << r.output;
    EXPECT_FALSE(fs::exists(dir / "out.mha")) << c.args;
  }
}

TEST(CliIterative, BadInputFailsClearlyWithoutOutput) {
  const fs::path dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, kScan).exitCode, 0);
  struct Case {
    std::string args;
    int code;
    std::vector<std::string> fragments;
  } cases[] = {
      {"sart" + kGrid + "-o out.mha --iterations 0", 2, {"--iterations", "from 1 to 100000", "found '0'"}},
      {"cgls" + kGrid + "-o out.mha --iterations 2147483647", 2, {"--iterations", "from 1 to 100000", "found '2147483647'"}},
      {"sart" + kGrid + "-o out.mha --subsets 13", 2, {"--subsets", "1 to 12", "found 13"}},
      {"osem -g scan/geometry.xml -p scan/projections.mha --size 16,16,15 --spacing 15 -o out.mha --initial scan/phantom.mha", 1, {"--initial", "DimSize", "16,16,15"}},
      {"cgls" + kGrid + "-o out.mha --backend gpu", 2, {"--backend", "'gpu'"}},
      // Slabs are multiples of 16 y rows: the grid's rows hold at most that many; the GL backends do not split; a command
      // without slabs takes one device.
      {"sirt" + kGrid + "-o out.mha --slabs 99", 2, {"--slabs", "expected 1 to", "found 99"}},
      {"sirt" + kGrid + "-o out.mha --slabs 2 --backend graphics", 2, {"--backend", "run on cpu or cuda", "found graphics"}},
      {"project -i scan/phantom.mha -g scan/geometry.xml -o out.mha --gpu 0,1", 2, {"--gpu", "one device index", "'0,1'"}},
      {"compare scan/phantom.mha scan/projections.mha", 1, {"scan/projections.mha", "DimSize"}},
      {"compare scan/phantom.mha scan/phantom.mha --roi fov --png out.png", 2, {"--roi", "no scan geometry", "'fov'"}},
  };
  for (const Case& c : cases) {
    const CliRun r = runCli(dir, c.args);
    EXPECT_EQ(r.exitCode, c.code) << c.args << "\n" << r.output;
    for (const std::string& f : c.fragments) EXPECT_TRUE(contains(r.output, f)) << c.args << ": '" << f << "' not in " << r.output;
    EXPECT_FALSE(fs::exists(dir / "out.mha")) << c.args;
  }
}

}  // namespace
}  // namespace glrecon
