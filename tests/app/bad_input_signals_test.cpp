// Signals and view --method's outputs (issue 20, hardening round 2), through the command-line tool as a user runs it:
// a signal removes only what the run made and still owns, the signals handled and those the caller ignored, and the
// files view --method writes checked before any work, removed on a signal, and its residual files published together.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "glrecon/io.h"
#include "cli_support.h"
#include "test_support.h"

namespace glrecon {
namespace {
namespace fs = std::filesystem;
using test::Child;
using test::CliRun;
using test::contains;
using test::filesUnder;
using test::runCli;
using test::waitFor;

bool hasTemporary(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (contains(e.path().filename().string(), ".tmp-")) return true;
  return false;
}

// A scan for an FDK that takes seconds on the cpu backend at 256^3 (about 5 s on two cores), so a signal finds it at
// work: the output file is made before the reconstruction starts.
const std::string kScan = "phantom -o scan --projections 360 --detector 64 --detector-spacing 8 -q";
std::vector<std::string> slowFdk(const std::string& output, const std::string& size = "256") {
  return {"fdk", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", output, "--size", size, "--spacing", "1",
          "--backend", "cpu", "-q"};
}

// A file another process writes at the output's name while the run works (another run given the same -o) is that
// process's: SIGINT removes the run's own temporary and leaves that file as it is.
TEST(BadInputSignals, SignalKeepsAFileAnotherProcessPutAtTheOutputName) {
  const auto dir = test::scratchDir();
  const fs::path run = dir / "run";
  fs::create_directories(run);
  ASSERT_EQ(runCli(run, kScan).exitCode, 0);
  Child child(run, slowFdk("v.mha"), dir / "fdk.log");
  ASSERT_TRUE(child.started());
  ASSERT_TRUE(waitFor([&] { return hasTemporary(run) || !child.running(); })) << "no temporary appeared";
  test::writeText(run / "v.mha", "theirs");
  ASSERT_TRUE(child.running()) << "the run ended before the signal: " << test::readText(dir / "fdk.log");
  child.send(SIGINT);
  const int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130) << test::readText(dir / "fdk.log");
  EXPECT_TRUE(contains(test::readText(dir / "fdk.log"), "interrupted")) << test::readText(dir / "fdk.log");
  EXPECT_EQ(test::readText(run / "v.mha"), "theirs");
  EXPECT_FALSE(hasTemporary(run));
}

// SIGQUIT (Ctrl-\) and the user signals end a run as SIGTERM does: 128 + the signal, nothing of the run left.
TEST(BadInputSignals, QuitAndUserSignalsRemovePartialOutput) {
  const auto dir = test::scratchDir();
  const fs::path run = dir / "run";
  fs::create_directories(run);
  ASSERT_EQ(runCli(run, kScan).exitCode, 0);
  const auto before = filesUnder(run);
  for (const int signal : {SIGQUIT, SIGUSR1, SIGUSR2}) {
    Child child(run, slowFdk("v.mhd"), dir / "fdk.log");
    ASSERT_TRUE(child.started());
    ASSERT_TRUE(waitFor([&] { return hasTemporary(run) || !child.running(); })) << "no temporary appeared";
    ASSERT_TRUE(child.running()) << "the run ended before the signal: " << test::readText(dir / "fdk.log");
    child.send(signal);
    const int status = child.wait();
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << signal << " killed it: not handled";
    EXPECT_EQ(WEXITSTATUS(status), 128 + signal);
    EXPECT_TRUE(filesUnder(run) == before) << "left by signal " << signal;
  }
}

// A signal the caller ignored (`trap "" INT`, a background job) stays ignored: the run ends normally with its output.
TEST(BadInputSignals, AnIgnoredSignalStaysIgnored) {
  const auto dir = test::scratchDir();
  const fs::path run = dir / "run";
  fs::create_directories(run);
  ASSERT_EQ(runCli(run, kScan).exitCode, 0);
  Child child(run, slowFdk("v.mha", "160"), dir / "fdk.log", {SIGINT});
  ASSERT_TRUE(child.started());
  ASSERT_TRUE(waitFor([&] { return hasTemporary(run) || !child.running(); })) << "no temporary appeared";
  ASSERT_TRUE(child.running()) << "the run ended before the signal: " << test::readText(dir / "fdk.log");
  ASSERT_FALSE(fs::exists(run / "v.mha"));  // at work when signalled
  child.send(SIGINT);
  const int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << test::readText(dir / "fdk.log");
  EXPECT_EQ(readMetaImage((run / "v.mha").string()).size, (std::array<int, 3>{160, 160, 160}));
  EXPECT_FALSE(hasTemporary(run));
}

// view --method on the simulated scan (90 projections of 128^2), small enough to take a second or two.
const std::string kView = "view --method sart --simulate 0 --size 16 --spacing 16 --snapshots snaps ";

// view --method refused: as every refusal (test::expectRefused), and no iteration run.
void expectRefused(const fs::path& dir, const std::string& arguments, int code, std::initializer_list<std::string> fragments) {
  test::expectRefused(dir, arguments, code, fragments, "", "iteration");
}

// Every file view --method writes into its snapshot directory (each iteration's three slices, residual.csv and
// residual.png) is checked before any work: one that exists is refused without --overwrite, naming it; files the run
// would not write are no obstacle; with --overwrite they are replaced.
TEST(BadInputViewMethod, ExistingFilesAreRefusedBeforeAnyWork) {
  const auto dir = test::scratchDir();
  fs::create_directories(dir / "snaps");
  for (const std::string name : {"snapshot_it0002_coronal.png", "residual.csv", "residual.png", "snapshot_it0003_sagittal.png"}) {
    test::writeText(dir / "snaps" / name, "theirs");
    expectRefused(dir, kView + "-n 3", 1, {name, "--snapshots", "--overwrite"});
    fs::remove(dir / "snaps" / name);
  }
  // Not this run's names: a fourth iteration of a three-iteration run, another file.
  test::writeText(dir / "snaps" / "snapshot_it0004_axial.png", "theirs");
  test::writeText(dir / "snaps" / "notes.txt", "theirs");
  test::writeText(dir / "snaps" / "residual.csv", "theirs");
  const CliRun r = runCli(dir, kView + "-n 3 --overwrite -q");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(test::readText(dir / "snaps" / "residual.csv"), "theirs");
  EXPECT_TRUE(fs::exists(dir / "snaps" / "snapshot_it0003_sagittal.png"));
  EXPECT_EQ(test::readText(dir / "snaps" / "snapshot_it0004_axial.png"), "theirs");
  EXPECT_EQ(test::readText(dir / "snaps" / "notes.txt"), "theirs");
}

// --output is a volume's name (.mha or .mhd), checked before any work like the snapshots; one in the snapshot directory
// the run makes is allowed.
TEST(BadInputViewMethod, OutputIsCheckedBeforeAnyWork) {
  const auto dir = test::scratchDir();
  expectRefused(dir, kView + "-n 2 -o snaps/residual.csv", 1, {"snaps/residual.csv", "--output", ".mha"});
  test::writeText(dir / "v.mha", "theirs");
  expectRefused(dir, kView + "-n 2 -o v.mha", 1, {"v.mha", "--overwrite"});
  const CliRun r = runCli(dir, kView + "-n 2 -o snaps/v.mha -q");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(readMetaImage((dir / "snaps" / "v.mha").string()).size, (std::array<int, 3>{16, 16, 16}));
}

// SIGINT to view --method removes what it wrote (the snapshots of the iterations done, the directory it made), as its
// message says; a directory that existed stays with the files that were there.
TEST(BadInputSignals, ViewMethodSnapshotsAreRemovedOnSigint) {
  const auto dir = test::scratchDir();
  const fs::path run = dir / "run";
  fs::create_directories(run);
  for (const bool existing : {false, true}) {
    if (existing) {
      fs::create_directories(run / "snaps");
      test::writeText(run / "snaps" / "notes.txt", "theirs");
    }
    const auto before = filesUnder(run);
    Child child(run, {"view", "--method", "sart", "--simulate", "0", "--size", "32", "--spacing", "8", "-n", "1000", "--snapshots",
                      "snaps", "-o", "snaps/v.mha"},
                dir / "view.log");
    ASSERT_TRUE(child.started());
    ASSERT_TRUE(waitFor([&] { return fs::exists(run / "snaps" / "snapshot_it0002_sagittal.png") || !child.running(); }))
        << "no snapshot appeared";
    ASSERT_TRUE(child.running()) << "the run ended before the signal: " << test::readText(dir / "view.log");
    child.send(SIGINT);
    const int status = child.wait();
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 130) << test::readText(dir / "view.log");
    EXPECT_TRUE(contains(test::readText(dir / "view.log"), "removed")) << test::readText(dir / "view.log");
    EXPECT_TRUE(filesUnder(run) == before) << "left by the interrupted run" << (existing ? " in an existing directory" : "");
  }
}

// residual.csv and residual.png are published together: where the chart cannot be written (here a file size limit,
// as a full disk would), no CSV is left without it, nor any snapshot of the failed run.
TEST(BadInputViewMethod, ResidualFilesArePublishedTogether) {
  const auto dir = test::scratchDir();
  fs::create_directories(dir / "snaps");
  // 8 blocks of 512 bytes: the 16^3 snapshots (under 1 KiB) and the CSV fit, the 640x400 chart (about 10 KiB) does not.
  const CliRun r = runCli(dir, kView + "-n 2", "trap '' XFSZ; ulimit -f 8;");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "snaps/residual.png")) << r.output;
  EXPECT_FALSE(contains(r.output, ".tmp-")) << "a staged name in the message: " << r.output;
  EXPECT_TRUE(fs::is_empty(dir / "snaps")) << "left: " << fs::directory_iterator(dir / "snaps")->path();
  // Replacing earlier residual files: the earlier CSV stays as it was, not replaced by one without its chart.
  test::writeText(dir / "snaps" / "residual.csv", "earlier");
  const CliRun o = runCli(dir, kView + "-n 2 --overwrite", "trap '' XFSZ; ulimit -f 8;");
  EXPECT_EQ(o.exitCode, 1) << o.output;
  EXPECT_EQ(test::readText(dir / "snaps" / "residual.csv"), "earlier");
  EXPECT_EQ(filesUnder(dir / "snaps").size(), 1u);
}

}  // namespace
}  // namespace glrecon
