// `mpirun -np 2 and 3 glrecon fdk ...` on the GL backends (each rank its own EGL context: Mesa here, the GPU there): the file
// equals the one process's bit for bit, on the circular and a tilted scan with a region. The cpu backend and the
// failure paths: cli_mpi_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_support.h"
#include "device_fixtures.h"
#include "mpi_support.h"
#include "test_support.h"

namespace glrecon {
namespace {

using namespace test;
using ClusterGlCli = test::GlTest;

TEST_F(ClusterGlCli, FdkOverRanksEqualsOneProcessOnTheGlBackends) {
  if (const std::string why = mpiMissing(); !why.empty()) GTEST_SKIP() << why;
  const auto dir = scratchDir();
  ASSERT_EQ(runCli(dir, kSmallScan).exitCode, 0);
  ASSERT_EQ(runCli(dir, kTiltedScan).exitCode, 0);
  // Both filter on the CPU (what every rank does); a fixed window, so that no rank searches for its own; every rank
  // works (--ranks-per-device all: on a host with a CUDA GPU the ranks beyond the first would stand aside).
  for (const std::string backend : {"compute", "graphics"})
    for (const std::string scan : {"scan", "tilted"}) {
      const std::string common = "fdk -g " + scan + "/geometry.xml -p " + scan + "/projections.mha --size 40,72,32 --spacing 6 --backend " +
                                 backend + " --window 8 --filter-on cpu --threads 1 --ranks-per-device all" + (scan == "tilted" ? " --roi sphere:10,-20,5,70" : "");
      const std::string one = backend + "-" + scan + "-one.mha", two = backend + "-" + scan + "-two.mha";
      const CliRun single = runCli(dir, common + " -o " + one);
      ASSERT_EQ(single.exitCode, 0) << single.output;
      for (int ranks : {2, 3}) {
        const CliRun r = runMpi(dir, ranks, common + " -o " + two + " --overwrite");
        ASSERT_EQ(r.exitCode, 0) << r.output;
        EXPECT_EQ(fileBytes(dir / two), fileBytes(dir / one)) << backend << " " << scan << " -np " << ranks;
      }
    }
}

}  // namespace
}  // namespace glrecon
