#pragma once
/// A progress line for long work: "label  done/total  rate items/s  ETA", redrawn in place on a terminal
/// and printed every few seconds (one line each) when stderr is a file or pipe.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace glrecon {

class Progress {
 public:
  Progress(std::string label, std::size_t total, std::string unit = "proj", bool enabled = true, std::FILE* out = stderr);
  void update(std::size_t done);
  /// Prints the final line with the total time and mean rate.
  void finish();
  double elapsedSeconds() const;
  bool enabled() const { return enabled_; }

 private:
  void print(std::size_t done, bool final);
  std::string label_, unit_;
  std::size_t total_;
  bool enabled_, terminal_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, lastPrint_;
  bool finished_ = false;
};

/// With the environment variable GLRECON_TRACE set, prints "glrecon trace +T s: what" on stderr, T counted from the
/// process's first trace: where a run's time goes, stage by stage, thread by thread. Nothing otherwise.
void trace(const char* what);

}  // namespace glrecon
