#pragma once
// mpirun around the command-line tool (cli_mpi_test.cpp, cli_mpi_gl_test.cpp): ranks on this machine, more than its
// cores where asked (--oversubscribe), root allowed (CI's containers run as root). In the sanitizer build the ranks
// run without LeakSanitizer: Open MPI keeps MPI_Init's allocations to the end, from components whose frames LSan
// reports as "<unknown module>" (so no suppression can name them); every other check still runs there, and the same
// scheduler paths in one process (singleProcessCluster, tests/recon/slab*_test.cpp) are leak-checked.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "glrecon/cluster.h"
#include "test_support.h"

namespace glrecon::test {

/// The small scan of cli_support.h tilted, its detector and source offset: every term of the matrices in a slab's bands.
inline const std::string kTiltedScan =
    "phantom -o tilted --projections 60 --detector 64 --detector-spacing 8 --out-of-plane 5 --in-plane 3 --detector-offset 10,-6 "
    "--source-offset 4,3 -q";

/// Why MPI runs cannot be tested here ("" where they can).
inline std::string mpiMissing() {
  if (!clusterBuiltWithMpi()) return "this build has no MPI (CMake found none: install libopenmpi-dev)";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) return "no mpirun on PATH (install openmpi-bin)";
  return "";
}

/// Where this test's mpirun keeps its session directory: a folder of the test's own beside its scratch folder. Open MPI
/// 4's mpirun makes its tree under one folder per user and host (/tmp/ompi.HOST.UID) and removes that folder on exit
/// once empty; an mpirun starting just then (another test's, under ctest -j2) finds the folder there at mkdir (EEXIST)
/// and gone at the stat after it, and fails before any rank starts ("A call to mkdir was unable to create the desired
/// directory: /tmp/ompi.HOST.0, File exists", exit 1; open-mpi/ompi#8510). A test that expects a refusal then saw a
/// failing exit without its message. The mpiruns of one test run one after another, so a folder per test never races.
inline std::string mpiSessionBase() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = info ? std::string(info->test_suite_name()) + "/" + info->name() : "pid-" + std::to_string(::getpid());
  const std::filesystem::path base = std::filesystem::path(GLRECON_TEST_SCRATCH) / (name + ".ompi");
  std::filesystem::create_directories(base);
  return base.string();
}

/// The shell words that start `ranks` ranks of the tool with `arguments`, `wrapper` (e.g. "timeout 300 ", "exec ")
/// before mpirun.
inline std::string mpirunCommand(int ranks, const std::string& arguments, const std::string& wrapper = "") {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
         "OMPI_MCA_orte_tmpdir_base='" + mpiSessionBase() + "' "
         "ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:detect_leaks=0\" " +
         wrapper + "mpirun -np " + std::to_string(ranks) + " '" + GLRECON_CLI_PATH + "' " + arguments;
}

/// `ranks` ranks of the tool with `arguments` in `dir`: exit code and output as runCli gives them.
inline CliRun runMpi(const std::filesystem::path& dir, int ranks, const std::string& arguments, int seconds = 300) {
  const std::filesystem::path log = dir / "mpi.log";
  const std::string command = "cd '" + dir.string() + "' && " + mpirunCommand(ranks, arguments, "timeout " + std::to_string(seconds) + " ") +
                              " > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const std::string output = readText(log);
  std::filesystem::remove(log);
  return CliRun{code == 124 ? -1 : code, output};
}

/// The file's bytes, for bit-for-bit comparisons of whole outputs (header included).
inline std::string fileBytes(const std::filesystem::path& path) { return readText(path); }

/// Files in `dir` whose names start with `prefix` (an output's temporary files are ".NAME.tmp-*").
inline int filesStartingWith(const std::filesystem::path& dir, const std::string& prefix) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) ++n;
  return n;
}

}  // namespace glrecon::test
