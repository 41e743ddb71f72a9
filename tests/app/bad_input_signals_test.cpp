// Signals (issue 20, hardening round 2), through the command-line tool as a user runs it: a signal removes only what the
// run made and still owns, the signals handled and those the caller ignored.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "glrecon/io.h"
#include "test_support.h"

namespace glrecon {
namespace {
namespace fs = std::filesystem;
using test::contains;
using test::runCli;

// Every file under `dir` with its contents: "nothing was left or changed" is an equal snapshot.
std::map<std::string, std::string> filesUnder(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    files[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? test::readText(e.path()) : "<dir>";
  return files;
}

bool hasTemporary(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (contains(e.path().filename().string(), ".tmp-")) return true;
  return false;
}

// Polls `done` every 10 ms for up to a minute (sanitized builds are slow): no fixed sleeps that a slow machine breaks.
template <typename F>
bool waitFor(F done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The tool started in `dir` with `arguments`, its output into `log`, the signals in `ignored` set to SIG_IGN before
// the exec (inherited through it, as from `trap "" INT` or nohup). Killed and reaped if a test ends early.
class Child {
 public:
  Child(const fs::path& dir, const std::vector<std::string>& arguments, const fs::path& log, std::vector<int> ignored = {}) {
    std::vector<std::string> words{"glrecon"};
    words.insert(words.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {  // only async-signal-safe calls until the exec
      const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0 || chdir(dir.c_str()) != 0) _exit(99);
      dup2(out, 1);
      dup2(out, 2);
      for (int s : ignored) signal(s, SIG_IGN);
      execv(GLRECON_CLI_PATH, argv.data());
      _exit(98);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0; }
  /// Still working (not exited; an exited child is reaped here and its status kept).
  bool running() {
    if (reaped_) return false;
    reaped_ = waitpid(pid_, &status_, WNOHANG) == pid_;
    return !reaped_;
  }
  void send(int signal) const { kill(pid_, signal); }
  /// The wait status once it ends.
  int wait() {
    if (!reaped_) reaped_ = waitpid(pid_, &status_, 0) == pid_;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

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

}  // namespace
}  // namespace glrecon
