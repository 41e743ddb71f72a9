#pragma once
// glrecon bench's measurements and what it makes of them: per-run statistics, the table on stdout, bench.json and
// the bench.png chart.
#include <filesystem>
#include <string>
#include <vector>

namespace glrecon::app {

/// One repetition: a profiled pass (each step waited for, so the split is honest) and a whole FDK run (the
/// pipeline as a user gets it: filtering overlapped with uploads and backprojection, then the readback).
struct Repetition {
  double upload = 0, compute = 0, readback = 0;  // profiled pass
  double gups = 0, backprojectionPps = 0;
  double fdkSeconds = 0, fdkPps = 0;             // whole FDK, from raw projections to the volume on the host
  double fdkFilter = 0, fdkWait = 0, fdkReadback = 0;
};

struct Stat {
  double median = 0, min = 0, max = 0;
  double spread() const { return median > 0 ? (max - min) / median : 0.0; }
};

/// One backend at one window, its repetitions and how its volume compares with the CPU's and the phantom.
struct BenchRun {
  std::string backend, description, error;
  std::string windowAsked;  // "1", "auto", "max", "-" for the CPU
  int window = 0;           // used (the final choice for auto)
  bool filteredOnGpu = false;  // the whole FDK's filter ran on the device (--filter-on)
  double setup = 0;         // making the operator the first time (context, programs, buffers)
  std::vector<Repetition> reps;
  Stat upload, compute, readback, gups, backprojectionPps, fdkSeconds, fdkPps;
  double maxDiff = 0, rmsDiff = 0, rmse = 0, psnr = 0;
  /// The statistics of the repetitions.
  void summarise();
};

/// The problem and the machine.
struct BenchSetup {
  int size = 0, projections = 0, detector = 0, threads = 0, repeat = 0;
  std::string gpu, driver, cpu;
  double filterSeconds = 0;
  double texturePeak = 0;  // G bilinear fetches/s the texture units can do, 0 when unknown
};

/// /proc/cpuinfo's model name.
std::string cpuModel();

/// The table (and the texture peak's share, the noise warning); `cpuAsked`: the cpu row was asked for, not only the reference.
void printBenchTable(const BenchSetup& setup, const std::vector<BenchRun>& runs, bool cpuAsked);
void writeBenchJson(const std::filesystem::path& path, const BenchSetup& setup, const std::vector<BenchRun>& runs);
/// Horizontal bars of backprojection throughput (the median of the repetitions, a whisker from the slowest to the
/// fastest), one per run, on a log axis when values span a wide range; a red line marks the texture units' peak.
void writeBenchChart(const std::filesystem::path& path, const BenchSetup& setup, const std::vector<BenchRun>& runs);

}  // namespace glrecon::app
