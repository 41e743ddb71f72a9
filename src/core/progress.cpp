#include "glrecon/progress.h"

#include <cstdlib>

#include <unistd.h>

namespace glrecon {

Progress::Progress(std::string label, std::size_t total, std::string unit, bool enabled, std::FILE* out)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), enabled_(enabled),
      terminal_(out && isatty(fileno(out))), out_(out), start_(std::chrono::steady_clock::now()), lastPrint_(start_) {}

double Progress::elapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(std::size_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  // A terminal line is cheap to redraw (10 per second); a log file gets one line every 5 seconds.
  const double interval = terminal_ ? 0.1 : 5.0;
  if (std::chrono::duration<double>(now - lastPrint_).count() < interval && done < total_) return;
  lastPrint_ = now;
  print(done, false);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  print(total_, true);
}

void Progress::print(std::size_t done, bool final) {
  const double elapsed = elapsedSeconds();
  const double rate = elapsed > 0 ? done / elapsed : 0.0;
  if (final) {
    std::fprintf(out_, "%s%s: %zu %s in %.2f s (%.1f %s/s)\n", terminal_ ? "\r\033[K" : "", label_.c_str(), total_,
                 unit_.c_str(), elapsed, rate, unit_.c_str());
  } else {
    const double eta = rate > 0 ? (total_ - done) / rate : 0.0;
    std::fprintf(out_, "%s%s: %zu/%zu %s  %.1f %s/s  ETA %.1f s%s", terminal_ ? "\r\033[K" : "", label_.c_str(), done,
                 total_, unit_.c_str(), rate, unit_.c_str(), eta, terminal_ ? "" : "\n");
  }
  std::fflush(out_);
}

void trace(const char* what) {
  static const bool enabled = std::getenv("GLRECON_TRACE") != nullptr;
  if (!enabled) return;
  // The first line also gives the wall clock, so that a script can place the trace after its own launch time (mpirun's
  // start, a process's loading). Printed where the start is taken: a static's initialisation runs once, whichever of
  // the threads that trace comes first.
  static const auto start = [] {
    std::fprintf(stderr, "glrecon trace: starts at wall clock %.3f s\n",
                 std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    return std::chrono::steady_clock::now();
  }();
  std::fprintf(stderr, "glrecon trace +%.3f s: %s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), what);
}

}  // namespace glrecon
