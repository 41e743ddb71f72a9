#pragma once
// What the command-line tests share: the small scan they reconstruct (cli_test.cpp, cli_gl_test.cpp), the check
// that a refused command left everything as it was (bad_input_test.cpp, bad_input_signals_test.cpp), and a run in the
// background to send signals to (bad_input_signals_test.cpp, cli_mpi_test.cpp).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace glrecon::test {

// A small scan every test can reconstruct in well under a second.
inline const std::string kSmallScan = "phantom -o scan --projections 60 --detector 64 --detector-spacing 8 -q";

// Every file under `dir` with its contents: "nothing was left or changed" is an equal snapshot.
inline std::map<std::string, std::string> filesUnder(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    files[std::filesystem::relative(e.path(), dir).string()] = e.is_regular_file() ? readText(e.path()) : "<dir>";
  return files;
}

// Expects exit `code` from the command run with `environment` (NAME=value), every fragment in its output, no sign of
// the work having begun (`workMarker`, which the command prints once it starts: "reconstructing", "iteration"), and
// the directory exactly as before.
inline void expectRefused(const std::filesystem::path& dir, const std::string& arguments, int code, std::initializer_list<std::string> fragments,
                          const std::string& environment = "", const std::string& workMarker = "reconstructing") {
  const auto before = filesUnder(dir);
  const CliRun r = runCli(dir, arguments, environment);
  EXPECT_EQ(r.exitCode, code) << arguments << "\n" << r.output;
  for (const std::string& f : fragments)
    EXPECT_TRUE(contains(r.output, f)) << "'" << f << "' not in the output of " << arguments << ":\n" << r.output;
  EXPECT_FALSE(contains(r.output, workMarker)) << "refused only after the work began: " << arguments << "\n" << r.output;
  EXPECT_TRUE(filesUnder(dir) == before) << "files left or changed by: " << arguments;
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

// A program started in `dir` with `arguments`, its output into `log`, the signals in `ignored` set to SIG_IGN before
// the exec (inherited through it, as from `trap "" INT` or nohup); the tool by default, or `program` (a shell, to start
// mpirun as the child itself). Killed and reaped if a test ends early.
class Child {
 public:
  Child(const std::filesystem::path& dir, const std::vector<std::string>& arguments, const std::filesystem::path& log,
        std::vector<int> ignored = {}, const std::string& program = GLRECON_CLI_PATH) {
    std::vector<std::string> words{std::filesystem::path(program).filename().string()};
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
      execv(program.c_str(), argv.data());
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

}  // namespace glrecon::test
