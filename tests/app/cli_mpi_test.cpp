// `mpirun -np N glrecon fdk ...` (glrecon/cluster.h) as a user runs it, on the cpu backend: the file equals the one
// process's bit for bit (an uneven last slab, a region, a tilted scan, .mhd), each rank reads only its rows, a rank that
// fails mid-run stops the job with its reason and leaves no file, and what cannot be shared out is refused; the
// iterative methods over ranks (glrecon/split.h) equal one process holding the same slabs. The GL
// backends: cli_mpi_gl_test.cpp.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "device/cuda/device.h"
#include "glrecon/io.h"
#include "cli_support.h"
#include "mpi_support.h"
#include "test_support.h"

namespace glrecon {
namespace {

namespace fs = std::filesystem;
using namespace test;

// 72 rows of y: 2 or 3 ranks deal 5 slabs of 16 rows (at least 4 a rank, 16-row granules), the last one 8 rows.
const std::string kGrid = " --size 40,72,32 --spacing 6 --backend cpu --threads 1";

// A job on one host asks for Open MPI's shared-memory layer (0.2 s less MPI_Init than its default's probing of
// Omni-Path); a job across hosts, or one whose user chose a layer, keeps what it has.
TEST(ClusterCli, OneHostJobsAskForSharedMemoryMessaging) {
  EXPECT_STREQ(oneHostMessagingLayer("4", "4", nullptr), "ob1");
  EXPECT_EQ(oneHostMessagingLayer("8", "4", nullptr), nullptr);
  EXPECT_EQ(oneHostMessagingLayer("4", "4", "ucx"), nullptr);
  EXPECT_EQ(oneHostMessagingLayer("4", nullptr, nullptr), nullptr);  // another launcher than Open MPI's
  EXPECT_EQ(oneHostMessagingLayer(nullptr, nullptr, nullptr), nullptr);
}

// A rank's link to mpirun (PMIx over loopback TCP) sends at once, so that MPI_Finalize does not wait 40 ms for a delayed
// acknowledgement: every connected loopback TCP socket gets TCP_NODELAY; a socket not connected and a Unix socket are
// left as they are.
TEST(ClusterCli, LoopbackLinksSendAtOnce) {
  auto noDelay = [](int fd) {
    int on = -1;
    socklen_t length = sizeof on;
    return ::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &length) == 0 ? on : -1;
  };
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0), client = ::socket(AF_INET, SOCK_STREAM, 0),
            idle = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  ASSERT_GE(client, 0);
  ASSERT_GE(idle, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const int served = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(served, 0);
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  EXPECT_EQ(noDelay(client), 0);  // what the kernel gives: Nagle's algorithm on
  EXPECT_EQ(noDelay(served), 0);

  EXPECT_GE(sendLoopbackMessagesAtOnce(), 2);
  EXPECT_NE(noDelay(client), 0);
  EXPECT_NE(noDelay(served), 0);
  EXPECT_EQ(noDelay(idle), 0);
  EXPECT_EQ(noDelay(listener), 0);
  for (int fd : {listener, client, idle, served, pair[0], pair[1]}) ::close(fd);
}

// The host's second rank says when the ranks share a device: on a host of several (naming --gpu all), and on a host
// of one GPU (one process is faster there); nothing from other ranks, where --gpu gave each rank its own, or for a GL
// backend's one device (Mesa's software renderer on machines without a GPU).
TEST(ClusterCli, RanksSharingADeviceAreTold) {
  const std::string several = sharedDeviceNotice(1, 2, 1, 2, 0, "cuda", true, "nodeA");
  EXPECT_TRUE(contains(several, "all use cuda device 0 of its 2") && contains(several, "--gpu all")) << several;
  const std::string one = sharedDeviceNotice(1, 4, 0, 1, 0, "cuda", true, "nodeA");
  EXPECT_TRUE(contains(one, "the 4 ranks on nodeA share its one GPU") && contains(one, "one rank per GPU")) << one;
  EXPECT_EQ(sharedDeviceNotice(0, 4, 0, 1, 0, "cuda", true, "nodeA"), "");  // only the host's second rank speaks
  EXPECT_EQ(sharedDeviceNotice(1, 2, 2, 2, 0, "cuda", true, "nodeA"), "");  // --gpu 0,1: a device each
  EXPECT_EQ(sharedDeviceNotice(1, 2, 0, 1, 0, "compute", false, "nodeA"), "");
  EXPECT_EQ(sharedDeviceNotice(0, 1, 0, 1, 0, "cuda", true, "nodeA"), "");  // one rank on its host
}

// At most N ranks of a host drive one device, the lowest local ranks first; the rest stand aside.
TEST(ClusterCli, RanksBeyondTheLimitOfADeviceStandAside) {
  using Works = std::vector<bool>;
  EXPECT_EQ(ranksThatWork({0, 0, 0, 0}, 1), (Works{true, false, false, false}));  // one GPU, 4 ranks
  EXPECT_EQ(ranksThatWork({0, 1, 0, 1}, 1), (Works{true, true, false, false}));   // --gpu all on a host of 2
  EXPECT_EQ(ranksThatWork({1, 0, 1, 0}, 1), (Works{true, true, false, false}));
  EXPECT_EQ(ranksThatWork({0, 0, 0}, 2), (Works{true, true, false}));
  EXPECT_EQ(ranksThatWork({0, 0, 0}, 0), (Works{true, true, true}));  // all
  EXPECT_EQ(ranksThatWork({3}, 1), (Works{true}));
}

// --ranks-per-device under mpirun (the cpu backend's device is its host's processors): the ranks beyond the limit
// stand aside, rank 0 names them, and the file equals one process's bit for bit. One working rank runs as one process
// (no slabs dealt); two deal the slabs between them as a job of two ranks does.
TEST(ClusterCli, RanksStandingAsideLeaveTheFileAsOneProcessWritesIt) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string common = "fdk -g scan/geometry.xml -p scan/projections.mha" + kGrid;
  const CliRun one = runCli(dir, common + " -o one.mha");
  ASSERT_EQ(one.exitCode, 0) << one.output;
  const CliRun alone = runMpi(dir, 3, common + " --ranks-per-device 1 -o alone.mha");
  ASSERT_EQ(alone.exitCode, 0) << alone.output;
  EXPECT_EQ(fileBytes(dir / "alone.mha"), fileBytes(dir / "one.mha"));
  EXPECT_TRUE(contains(alone.output, "ranks 1, 2 of 3 stand aside") && contains(alone.output, "--ranks-per-device 1")) << alone.output;
  EXPECT_FALSE(contains(alone.output, "dealt on demand")) << alone.output;
  const CliRun pair = runMpi(dir, 3, common + " --ranks-per-device 2 -o pair.mha");
  ASSERT_EQ(pair.exitCode, 0) << pair.output;
  EXPECT_EQ(fileBytes(dir / "pair.mha"), fileBytes(dir / "one.mha"));
  EXPECT_TRUE(contains(pair.output, "rank 2 of 3 stands aside")) << pair.output;
  EXPECT_TRUE(contains(pair.output, "dealt on demand to 2 MPI ranks") && contains(pair.output, "rank 1 (")) << pair.output;
  EXPECT_FALSE(contains(pair.output, "rank 2 (")) << pair.output;
  EXPECT_EQ(pair.output.find("wrote "), pair.output.rfind("wrote ")) << pair.output;
  // The iterative methods: the working ranks hold the slabs; the same slabs give the same bits.
  const std::string sirt = "sirt -g scan/geometry.xml -p scan/projections.mha" + kGrid + " --iterations 2 --slabs 2";
  ASSERT_EQ(runCli(dir, sirt + " -o sirt-one.mha").exitCode, 0);
  const CliRun iterative = runMpi(dir, 3, sirt + " --ranks-per-device 2 -o sirt-pair.mha");
  ASSERT_EQ(iterative.exitCode, 0) << iterative.output;
  EXPECT_EQ(fileBytes(dir / "sirt-pair.mha"), fileBytes(dir / "sirt-one.mha"));
  EXPECT_TRUE(contains(iterative.output, "over 2 ranks") && contains(iterative.output, "rank 2 of 3 stands aside")) << iterative.output;
  const CliRun bad = runMpi(dir, 2, common + " --ranks-per-device 0 -o bad.mha");
  EXPECT_NE(bad.exitCode, 0);
  EXPECT_TRUE(contains(bad.output, "--ranks-per-device: expected auto, all or a count of 1 to 1024, found '0'")) << bad.output;
  EXPECT_FALSE(fs::exists(dir / "bad.mha"));
  EXPECT_EQ(filesStartingWith(dir, "."), 0) << "temporary files left";
}

// On a host with a CUDA GPU the ranks beyond one per GPU stand aside by default (ranks sharing a GPU each read and
// filter their own rows and backproject thinner slabs: docs/cluster.md); --ranks-per-device all keeps them working.
// Needs a CUDA device (skipped elsewhere, saying why).
TEST(ClusterCli, RanksBeyondOnePerGpuStandAsideByDefault) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  if (cuda::deviceCount() < 1) GTEST_SKIP() << "needs a CUDA device, found none";
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string common = "fdk -g scan/geometry.xml -p scan/projections.mha --size 40,72,32 --spacing 6 --backend cuda --filter-on cpu";
  ASSERT_EQ(runCli(dir, common + " -o one.mha").exitCode, 0);
  const int ranks = cuda::deviceCount() + 1;
  const CliRun aside = runMpi(dir, ranks, common + " --gpu all -o aside.mha");
  ASSERT_EQ(aside.exitCode, 0) << aside.output;
  EXPECT_EQ(fileBytes(dir / "aside.mha"), fileBytes(dir / "one.mha"));
  EXPECT_TRUE(contains(aside.output, "rank " + std::to_string(ranks - 1) + " of " + std::to_string(ranks) + " stands aside") &&
              contains(aside.output, "one rank drives each GPU"))
      << aside.output;
  const CliRun all = runMpi(dir, 2, common + " --ranks-per-device all -o all.mha");
  ASSERT_EQ(all.exitCode, 0) << all.output;
  EXPECT_EQ(fileBytes(dir / "all.mha"), fileBytes(dir / "one.mha"));
  EXPECT_FALSE(contains(all.output, "stand")) << all.output;
  EXPECT_TRUE(contains(all.output, "dealt on demand to 2 MPI ranks")) << all.output;
}

TEST(ClusterCli, FdkOverRanksEqualsOneProcessBitForBit) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  ASSERT_EQ(runCli(dir, kTiltedScan).exitCode, 0);
  struct Case {
    std::string name, scan, extra;
  };
  for (const Case& c : {Case{"plain", "scan", ""}, Case{"roi", "scan", " --roi sphere:10,-20,5,70"}, Case{"tilted", "tilted", ""}}) {
    const std::string common = "fdk -g " + c.scan + "/geometry.xml -p " + c.scan + "/projections.mha" + kGrid + c.extra;
    const CliRun one = runCli(dir, common + " -o one-" + c.name + ".mha");
    ASSERT_EQ(one.exitCode, 0) << one.output;
    // A lone rank runs as one process (one block, no slabs dealt) unless --slabs-per-rank asks for its slabs.
    for (const auto& [ranks, slabs] : {std::pair{1, ""}, std::pair{1, " --slabs-per-rank 4"}, std::pair{2, ""}, std::pair{3, ""}}) {
      const std::string out = c.name + "-np" + std::to_string(ranks) + (*slabs ? "-slabs" : "") + ".mha";
      const CliRun r = runMpi(dir, ranks, common + slabs + " -o " + out);
      ASSERT_EQ(r.exitCode, 0) << c.name << " -np " << ranks << slabs << ":\n" << r.output;
      EXPECT_EQ(fileBytes(dir / out), fileBytes(dir / ("one-" + c.name + ".mha"))) << c.name << " -np " << ranks << slabs;
      const bool dealt = ranks > 1 || *slabs;
      // Rank 0 reports every rank's share, once.
      EXPECT_EQ(contains(r.output, "dealt on demand to " + std::to_string(ranks)), dealt) << r.output;
      EXPECT_EQ(contains(r.output, "rank " + std::to_string(ranks - 1) + " ("), dealt) << r.output;
      EXPECT_EQ(contains(r.output, "slabs: "), dealt) << r.output;
      EXPECT_EQ(r.output.find("wrote "), r.output.rfind("wrote ")) << r.output;
      if (!c.extra.empty()) EXPECT_EQ(fileBytes(dir / (out + ".txt")).size(), fileBytes(dir / ("one-" + c.name + ".mha.txt")).size());
    }
  }
  // A .mhd's .raw is the file the ranks share.
  ASSERT_EQ(runCli(dir, "fdk -g scan/geometry.xml -p scan/projections.mha" + kGrid + " -o one.mhd").exitCode, 0);
  const CliRun mhd = runMpi(dir, 2, "fdk -g scan/geometry.xml -p scan/projections.mha" + kGrid + " -o two.mhd");
  ASSERT_EQ(mhd.exitCode, 0) << mhd.output;
  EXPECT_EQ(fileBytes(dir / "two.raw"), fileBytes(dir / "one.raw"));
  EXPECT_EQ(filesStartingWith(dir, "."), 0) << "temporary files left";
}

// Ranks of one host that would all take one GPU of several say so (rank 0, or with --ranks-per-device all the host's
// second rank, names --gpu all), and with --gpu all they are quiet. Needs two CUDA devices (skipped elsewhere, saying why).
TEST(ClusterCli, RanksSharingOneGpuOfSeveralSaySo) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  if (cuda::deviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices, found " << cuda::deviceCount();
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string common = "fdk -g scan/geometry.xml -p scan/projections.mha --size 40,72,32 --spacing 6 --backend cuda";
  // Both ranks would take GPU 0: rank 1 stands aside, and rank 0 names --gpu all; with --ranks-per-device all they share it.
  const CliRun aside = runMpi(dir, 2, common + " -o aside.mha");
  ASSERT_EQ(aside.exitCode, 0) << aside.output;
  EXPECT_TRUE(contains(aside.output, "rank 1 of 2 stands aside")) << aside.output;
  EXPECT_TRUE(contains(aside.output, "--gpu all gives each rank its own")) << aside.output;
  const CliRun shared = runMpi(dir, 2, common + " --ranks-per-device all -o shared.mha");
  ASSERT_EQ(shared.exitCode, 0) << shared.output;
  EXPECT_TRUE(contains(shared.output, "all use cuda device 0 of its")) << shared.output;
  EXPECT_TRUE(contains(shared.output, "--gpu all gives each rank its own")) << shared.output;
  const CliRun spread = runMpi(dir, 2, common + " --gpu all -o spread.mha");
  ASSERT_EQ(spread.exitCode, 0) << spread.output;
  EXPECT_FALSE(contains(spread.output, "--gpu all gives")) << spread.output;
}

// fdk --timeline under mpirun: rank 0 prints every rank's device timeline (its slabs, readbacks and writes), so that
// what bounds a rank can be seen where only rank 0 speaks.
TEST(ClusterCli, TimelineShowsEveryRanksSlabs) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const CliRun r = runMpi(dir, 2, "fdk -g scan/geometry.xml -p scan/projections.mha" + kGrid + " --timeline -o t.mha");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const std::string rank : {"rank 0 (", "rank 1 ("}) {
    const std::size_t at = r.output.find(rank);
    ASSERT_NE(at, std::string::npos) << r.output;
    // The line under the rank's: its timeline, with the slabs it took.
    const std::size_t next = r.output.find('\n', at) + 1, end = r.output.find('\n', next);
    const std::string line = r.output.substr(next, end - next);
    EXPECT_NE(line.find(" slab "), std::string::npos) << rank << ": " << line << "\n" << r.output;
    EXPECT_NE(line.find("readback"), std::string::npos) << rank << ": " << line;
  }
}

// Rank 0's progress line counts the slabs the other ranks finish, their last ones too (a rank reports those after it
// was told that nothing is left, and rank 0 waits to hear of them): its live line reaches every projection of every
// slab before the final line. Without those reports it stood short of the total (the ranks ask for a slab ahead, so
// each holds one or two when told that nothing is left) and only the final line said the run was done.
TEST(ClusterCli, RankZerosProgressCountsEveryRanksLastSlabs) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  for (int round = 0; round < 3; ++round) {
    const CliRun r = runMpi(dir, 3, "fdk -g scan/geometry.xml -p scan/projections.mha -o p.mha --overwrite" + kGrid);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    // 5 slabs of 60 projections; the live line of a log ends in "ETA", the final one in "proj/s)".
    const std::size_t live = r.output.find("300/300 proj");
    EXPECT_NE(live, std::string::npos) << "round " << round << ":\n" << r.output;
    EXPECT_LT(live, r.output.find("300 proj in ")) << r.output;
    EXPECT_EQ(live, r.output.rfind("300/300 proj")) << "shown once:\n" << r.output;
  }
}

TEST(ClusterCli, EachRankReadsOnlyItsRows) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const CliRun r = runMpi(dir, 3, "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha" + kGrid);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // "3 ranks read N of projection rows": the 5 slabs' bands of 60 projections of 64 x 64, together less than every
  // slab reading whole projections (5 x 983040 bytes), and each rank's share named.
  const auto at = r.output.find("3 ranks read ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string amount = r.output.substr(at + 13, r.output.find(" of projection rows", at) - at - 13);
  const double value = std::stod(amount);
  const double bytes = contains(amount, "MiB") ? value * 1048576 : contains(amount, "KiB") ? value * 1024 : value;
  EXPECT_LT(bytes, 5.0 * 60 * 64 * 64 * 4) << r.output;
  EXPECT_GT(bytes, 0.9 * 60 * 64 * 64 * 4) << r.output;  // every row some slab needs, at least once
  // One slab a rank: thicker slabs, fewer rows read, the same file.
  const CliRun thick = runMpi(dir, 3, "fdk -g scan/geometry.xml -p scan/projections.mha -o w.mha --slabs-per-rank 1" + kGrid);
  ASSERT_EQ(thick.exitCode, 0) << thick.output;
  EXPECT_TRUE(contains(thick.output, "slabs: 3 of 32 rows")) << thick.output;
  EXPECT_EQ(fileBytes(dir / "w.mha"), fileBytes(dir / "v.mha"));
  // A usage error on every rank: each stops the job (MPI_Abort with 2), and mpirun's own exit code is whichever it
  // reports first (1 or 2), so only failure and the message are checked.
  const CliRun zero = runMpi(dir, 2, "fdk -g scan/geometry.xml -p scan/projections.mha -o x.mha --slabs-per-rank 0" + kGrid);
  EXPECT_NE(zero.exitCode, 0) << zero.output;
  EXPECT_TRUE(contains(zero.output, "--slabs-per-rank: expected 1 to 1024, found 0")) << zero.output;
  EXPECT_FALSE(fs::exists(dir / "x.mha"));
}

TEST(ClusterCli, ARankThatFailsMidRunStopsTheJobAndLeavesNoFile) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  // One file per projection (the first file is read at opening, the others as each slab needs them), with a bad value
  // in a central row of projection 40: read by whichever rank takes a slab whose band holds that row, mid-run.
  const Image stack = readMetaImage((dir / "scan" / "projections.mha").string());
  fs::create_directories(dir / "files");
  for (int p = 0; p < stack.size[2]; ++p) {
    Image one({stack.size[0], stack.size[1], 1}, stack.spacing, stack.origin);
    std::copy_n(stack.data.begin() + static_cast<std::ptrdiff_t>(p) * 64 * 64, 64 * 64, one.data.begin());
    if (p == 40) one.at(30, 32, 0) = std::nanf("");
    writeMetaImage((dir / "files" / ("p_" + std::to_string(p) + ".mha")).string(), one, false);
  }
  const CliRun r = runMpi(dir, 3, "fdk -g scan/geometry.xml -p files -o v.mha" + kGrid);
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "stops the job")) << r.output;
  EXPECT_TRUE(contains(r.output, "p_40.mha") && contains(r.output, "projection 40")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
  // The failing rank removes the shared temporary itself before it aborts the job: left to rank 0's removal on the
  // signal MPI_Abort sends, the file stayed under load about once in 20 runs (rank 0 likely killed before its handler ran).
  std::string names;
  for (const auto& entry : fs::directory_iterator(dir)) names += " " + entry.path().filename().string();
  EXPECT_EQ(filesStartingWith(dir, ".v.mha"), 0) << "temporary files left; the folder holds" << names << "\n" << r.output;
}

// Ctrl-C at mpirun (SIGINT to mpirun alone; mpirun ends its ranks with SIGTERM) while the ranks reconstruct: the job
// stops, says so, and leaves neither the output nor its temporary. 256^3 on the cpu backend takes seconds over two ranks, so
// the signal finds them at work; it is sent once rank 0 has made the temporary, before the reconstruction begins.
TEST(ClusterCli, InterruptingMpirunLeavesNoFile) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, "phantom -o scan --projections 360 --detector 64 --detector-spacing 8 -q").exitCode, 0);
  const fs::path log = dir / "mpi.log";
  // exec: the child is mpirun itself, so that the signal goes to it alone.
  const std::string command =
      mpirunCommand(2, "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha --size 256 --spacing 1 --backend cpu -q", "exec ");
  Child mpirun(dir, {"-c", command}, log, {}, "/bin/sh");
  ASSERT_TRUE(mpirun.started());
  ASSERT_TRUE(waitFor([&] { return filesStartingWith(dir, ".v.mha") > 0 || !mpirun.running(); })) << "no temporary appeared";
  if (mpirun.running()) mpirun.send(SIGINT);
  const int status = mpirun.wait();
  const std::string output = readText(log);
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(status)) << "mpirun killed by signal " << WTERMSIG(status) << "\n" << output;
  EXPECT_NE(WEXITSTATUS(status), 0) << "the job ended before the signal:\n" << output;
  EXPECT_TRUE(contains(output, "interrupted")) << output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
  EXPECT_EQ(filesStartingWith(dir, ".v.mha"), 0) << "temporary files left\n" << output;
}

TEST(ClusterCli, WhatCannotBeSharedOutIsRefused) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  const std::string common = "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha" + kGrid;
  for (const auto& [option, words] : {std::pair{" --stream", "--stream"}, std::pair{" --filter-on gpu", "--filter-on"},
                                      std::pair{" --scratch .", "--scratch"}}) {
    const CliRun r = runMpi(dir, 2, common + option);
    EXPECT_NE(r.exitCode, 0) << option << ": " << r.output;
    EXPECT_TRUE(contains(r.output, words) && contains(r.output, "MPI")) << r.output;
    EXPECT_FALSE(fs::exists(dir / "v.mha"));
    EXPECT_EQ(filesStartingWith(dir, ".v.mha"), 0) << "temporary files left";
  }
  // Commands that do not share their work out would run once per rank: refused.
  const CliRun project = runMpi(dir, 2, "project -i nothing.mha -g scan/geometry.xml -o p.mha");
  EXPECT_NE(project.exitCode, 0) << project.output;
  EXPECT_TRUE(contains(project.output, "'project' under mpirun") && contains(project.output, "only fdk and the iterative methods")) << project.output;
  EXPECT_FALSE(fs::exists(dir / "p.mha"));
}

// The iterative methods over ranks (glrecon/split.h): each rank holds consecutive slabs of y rows, the forward
// projections are summed in slab order along a chain of the ranks, and the file equals one process's holding the same
// slabs (--slabs) bit for bit, for any number of ranks: an uneven last slab (72 rows: 16, 32, 24), a region, a tilted
// scan, the matched pair. (Against one block of the whole grid the sums' order differs: tests/recon/split_test.cpp.)
TEST(ClusterCli, IterativeOverRanksEqualsOneProcessWithTheSameSlabs) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  ASSERT_EQ(runCli(dir, kTiltedScan).exitCode, 0);
  struct Case {
    std::string name, command;
  };
  const std::string scan = " -g scan/geometry.xml -p scan/projections.mha" + kGrid + " --iterations 3";
  const std::string tilted = " -g tilted/geometry.xml -p tilted/projections.mha" + kGrid + " --iterations 3";
  for (const Case& c : {Case{"sirt", "sirt" + tilted}, Case{"cgls", "cgls" + scan + " --roi sphere:10,-20,5,70"},
                        Case{"sart", "sart" + tilted + " --subsets 6 --projector matched"}}) {
    const CliRun one = runCli(dir, c.command + " --slabs 3 -o one-" + c.name + ".mha");
    ASSERT_EQ(one.exitCode, 0) << one.output;
    EXPECT_TRUE(contains(one.output, "3 slabs of y rows")) << one.output;
    for (int ranks : {2, 3}) {
      const std::string out = c.name + "-np" + std::to_string(ranks) + ".mha";
      const CliRun r = runMpi(dir, ranks, c.command + " --slabs 3 -o " + out);
      ASSERT_EQ(r.exitCode, 0) << c.name << " -np " << ranks << ":\n" << r.output;
      EXPECT_EQ(fileBytes(dir / out), fileBytes(dir / ("one-" + c.name + ".mha"))) << c.name << " -np " << ranks;
      EXPECT_TRUE(contains(r.output, "over " + std::to_string(ranks) + " ranks")) << r.output;
      // Rank 0 alone speaks and writes.
      EXPECT_EQ(r.output.find("wrote "), r.output.rfind("wrote ")) << r.output;
      EXPECT_EQ(r.output.find("iteration 3/3"), r.output.rfind("iteration 3/3")) << r.output;
      // Each rank's slabs, once, from rank 0.
      EXPECT_TRUE(contains(r.output, "rank " + std::to_string(ranks - 1) + " (")) << r.output;
      EXPECT_TRUE(contains(r.output, ranks == 3 ? "slabs 2-2 of 3 (y rows 48-71)" : "slabs 1-2 of 3 (y rows 16-71)")) << r.output;
    }
  }
  // Without --slabs, one slab a rank: 3 ranks equal one process's 3 slabs.
  const CliRun three = runMpi(dir, 3, "sirt" + tilted + " -o sirt-default.mha");
  ASSERT_EQ(three.exitCode, 0) << three.output;
  EXPECT_EQ(fileBytes(dir / "sirt-default.mha"), fileBytes(dir / "one-sirt.mha"));
  // Fewer slabs than ranks, and a backend whose iterative passes hold the whole grid: refused on every rank, no file.
  const CliRun few = runMpi(dir, 3, "sirt" + tilted + " --slabs 2 -o few.mha");
  EXPECT_NE(few.exitCode, 0) << few.output;
  EXPECT_TRUE(contains(few.output, "--slabs: expected at least one slab per rank (3 ranks), found 2")) << few.output;
  // (--ranks-per-device all: on a host with a CUDA GPU rank 1 would stand aside, and rank 0 alone run as one process.)
  const CliRun gl = runMpi(dir, 2, "sirt -g tilted/geometry.xml -p tilted/projections.mha --size 40,72,32 --spacing 6 --backend graphics "
                                   "--ranks-per-device all -o gl.mha");
  EXPECT_NE(gl.exitCode, 0) << gl.output;
  EXPECT_TRUE(contains(gl.output, "run on cpu")) << gl.output;
  EXPECT_FALSE(fs::exists(dir / "few.mha"));
  EXPECT_FALSE(fs::exists(dir / "gl.mha"));
  EXPECT_EQ(filesStartingWith(dir, "."), 0) << "temporary files left";
}

}  // namespace
}  // namespace glrecon
