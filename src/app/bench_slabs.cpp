// The slab measurement of glrecon bench (bench_slabs.h): the whole FDK (raw projections in memory to the volume in
// memory, setup included, as reconstructFdk runs it) in one block and in slabs, median of --repeat runs each.
#include "bench_slabs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "bench_report.h"
#include "fdk_report.h"
#include "device/gl/context.h"
#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "glrecon/phantom.h"
#include "glrecon/slab.h"

namespace glrecon::app {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool sameBits(const Image& a, const Image& b) { return std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0; }

// --repeat runs of one configuration: the last volume and the times; `note` holds the error where a run failed (then
// the runs stop), or it throws when `note` is null.
struct Timed {
  Image volume;
  std::vector<double> times;
};
Timed timeRuns(const char* what, int repeat, const Geometry& geometry, const Image& raw, const VolumeGrid& grid, const FdkOptions& options,
               FdkReport* report, std::string* note) {
  Timed timed;
  for (int rep = 0; rep < repeat; ++rep) {
    try {
      const auto t = std::chrono::steady_clock::now();
      Image again = reconstructFdk(geometry, raw, grid, options, report);
      timed.times.push_back(since(t));
      if (!timed.volume.data.empty() && !sameBits(timed.volume, again)) std::printf("    %s: run %d differs from run %d\n", what, rep + 1, rep);
      timed.volume = std::move(again);
    } catch (const std::exception& e) {
      if (!note) throw;
      *note = e.what();
      break;
    }
  }
  return timed;
}

// Where the slab result differs from the one block: how many voxels, the largest difference, and the y rows holding them.
std::string describeDifferences(const Image& block, const Image& result, const VolumeGrid& grid) {
  std::size_t count = 0;
  double worst = 0, scale = 0;
  int lowRow = grid.size[1], highRow = -1;
  const std::size_t nx = grid.size[0], ny = grid.size[1];
  for (std::size_t i = 0; i < block.data.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(block.data[i])));
    if (block.data[i] != result.data[i]) {
      ++count;
      worst = std::max(worst, static_cast<double>(std::abs(block.data[i] - result.data[i])));
      const int j = static_cast<int>((i / nx) % ny);
      lowRow = std::min(lowRow, j);
      highRow = std::max(highRow, j);
    }
  }
  return "    differences: " + std::to_string(count) + " voxels, max |d| " + std::to_string(worst) + " (largest value " +
         std::to_string(scale) + "), in y rows " + std::to_string(lowRow) + " to " + std::to_string(highRow) + "\n";
}

void printRow(const SlabBenchRequest& q, const std::string& backend, const Timed& block, const Timed& slabs, const FdkReport& report,
              const std::string& bits) {
  const double slabSeconds = median(slabs.times);
  const double blockSeconds = block.times.empty() ? 0.0 : median(block.times);
  const int projections = q.scan.projections;
  std::printf("%-10s %-7s %10s %12s %8d %10.3f %12.1f %9s %8.0f%% %8s\n", backend.c_str(), q.window.first.c_str(),
              block.times.empty() ? "-" : std::to_string(blockSeconds).substr(0, 6).c_str(),
              block.times.empty() ? "-" : std::to_string(projections / blockSeconds).substr(0, 7).c_str(), report.slabs, slabSeconds,
              projections / slabSeconds,
              block.times.empty() ? "-" : (std::to_string(static_cast<int>(std::lround(100.0 * (slabSeconds / blockSeconds - 1)))) + "%").c_str(),
              report.wholeUploadBytes > 0 ? 100.0 * report.uploadedBytes / report.wholeUploadBytes : 0.0, bits.c_str());
  for (const DeviceShare& d : report.devices) {
    const double busy = d.busySeconds();
    std::printf("    device %d: %d %s, %.3f s (%s); busy %.3f s, backprojection %.3f s (%.0f%% of busy)\n", d.gpu, d.slabs,
                d.slabs == 1 ? "slab" : "slabs", d.seconds, d.description.c_str(), busy, d.backprojectSeconds(),
                busy > 0 ? 100.0 * d.backprojectSeconds() / busy : 0.0);
    printDeviceTimeline(stdout, d.timeline);
  }
  std::printf("    slabs (last run): %.3f s\n", report.totalSeconds);
}

// One backend: one block, then slabs, compared.
void measure(const SlabBenchRequest& q, const std::string& backend, const FdkOptions& options, const Geometry& geometry, const Image& raw) {
  const VolumeGrid grid = q.scan.grid();
  std::string blockNote;
  FdkReport blockReport;
  FdkOptions oneBlock = options;
  oneBlock.drainBeside = false;  // cuda on one device would otherwise read 2 slabs back beside each other from 2 GiB
  const Timed block = timeRuns("one block", q.repeat, geometry, raw, grid, oneBlock, &blockReport, &blockNote);
  FdkOptions slabbed = options;
  if (!q.gpuMemory.empty()) slabbed.gpuMemory = parseByteSize("--gpu-memory", q.gpuMemory);
  if (q.gpus.size() > 1) slabbed.gpus = q.gpus;
  auto rawSource = memorySource(raw, "projections");
  const SlabPlan plan = planFdk(geometry, grid, slabbed, *rawSource).slabs;
  if (plan.slabs.empty()) throw UsageError("the volume fits: no slabs to measure (a smaller --gpu-memory, or several --gpu)");
  FdkReport report;
  const Timed slabs = timeRuns("slabs", q.repeat, geometry, raw, grid, slabbed, &report, nullptr);
  std::string bits = "-", differences;
  if (!block.volume.data.empty()) {
    bits = sameBits(block.volume, slabs.volume) ? "identical" : "DIFFER";
    if (bits == "DIFFER") differences = describeDifferences(block.volume, slabs.volume, grid);
  }
  printRow(q, backend, block, slabs, report, bits);
  if (!block.times.empty()) {
    std::printf("    one block (last run): %.3f s\n", blockReport.totalSeconds);
    printDeviceTimeline(stdout, blockReport.blockTimeline);
  }
  if (!blockNote.empty()) std::printf("    one block: %s\n", blockNote.c_str());
  std::printf("%s", differences.c_str());
  std::printf("    slab plan: %d rows per slab, %s per device; filter %.3f s (busy), readback %.3f s, setup %.3f s\n", report.rowsPerSlab,
              report.slabBudget == UINT64_MAX ? "no limit" : formatBytes(report.slabBudget).c_str(), report.filterSeconds,
              report.readbackSeconds, report.setupSeconds);
  if (backend == "cuda") {
    // The other way of reading slabs back (FdkOptions::drainBeside): in line, or beside the next slab's backprojection.
    FdkOptions other = slabbed;
    other.drainBeside = !plan.drainBeside;
    const SlabPlan otherPlan = planFdk(geometry, grid, other, *rawSource).slabs;
    FdkReport otherReport;
    const Timed again = timeRuns("slabs read back the other way", q.repeat, geometry, raw, grid, other, &otherReport, nullptr);
    std::printf("    slabs read back %s instead: %zu slabs of up to %d rows, %.3f s (median), bits %s\n",
                otherPlan.drainBeside ? "beside the next slab" : "in line", otherPlan.slabs.size(), otherPlan.rowsPerSlab,
                median(again.times), sameBits(again.volume, slabs.volume) ? "identical" : "DIFFER");
    for (const DeviceShare& d : otherReport.devices) printDeviceTimeline(stdout, d.timeline);
  }
  std::fflush(stdout);
}

}  // namespace

void runSlabBench(const SlabBenchRequest& q) {
  const Geometry geometry = q.scan.geometry();
  const VolumeGrid grid = q.scan.grid();
  if (!q.quiet) std::fprintf(stderr, "bench: simulating %d projections of %d^2\n", q.scan.projections, q.scan.detector);
  ProjectionOptions popt;
  popt.threads = q.threads;
  const Image raw = projectPhantom(Phantom::sheppLogan(), geometry, popt);
  std::string device = "?";
  try {
    device = gl::Context::headless(q.gpus.front())->info().renderer;
  } catch (const gl::GlError&) {
  }
  std::printf("glrecon bench (slabs): %d^3 voxels (%s) from %d projections of %d^2, median of %d runs (setup included)\n"
              "GPU: %s; CPU: %s, %d threads; devices %s; --gpu-memory %s\n\n",
              q.scan.size, formatBytes(grid.voxelCount() * 4).c_str(), q.scan.projections, q.scan.detector, q.repeat, device.c_str(),
              cpuModel().c_str(), resolveThreadCount(q.threads), q.gpuList.c_str(), q.gpuMemory.empty() ? "(measured)" : q.gpuMemory.c_str());
  std::printf("%-10s %-7s %10s %12s %8s %10s %12s %9s %9s %8s\n", "backend", "window", "one block s", "one proj/s", "slabs", "slabs s",
              "slabs proj/s", "vs block", "uploaded", "bits");
  for (const std::string& backend : q.backends) {
    if (backend == "cpu" && q.backends.size() > 1) continue;
    FdkOptions options;
    options.backend = backendNamed(backend);
    if (!options.backend) throw UsageError("--backends: unknown backend '" + backend + "'");
    options.threads = q.threads;
    // Both runs filter where --filter-on says (the same kernels in one block and in slabs: the same bits).
    options.filterOn = q.filterPlace;
    options.gpu = q.gpus.front();
    options.window = q.window.second;
    try {
      measure(q, backend, options, geometry, raw);
    } catch (const std::exception& e) {
      std::printf("%-10s failed: %s\n", backend.c_str(), e.what());
    }
  }
}

}  // namespace glrecon::app
