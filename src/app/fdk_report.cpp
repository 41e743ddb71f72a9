// The FDK reports (fdk_report.h).
#include "fdk_report.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "options.h"

namespace glrecon::app {

void printReport(const FdkReport& r, std::size_t projections) {
  if (!r.autoNote.empty()) std::fprintf(stderr, "%s\n", renderFields(r.autoNote, optionName).c_str());
  if (!r.region.empty() || r.killedVoxels)
    std::fprintf(stderr,
                 "region %s: %zu voxels inside; %.1f%% of voxel updates culled, saving about %.2f s if time scales with the "
                 "updates computed (rates below count culled updates as done)\n",
                 r.region.c_str(), r.regionVoxels, 100.0 * r.culledFraction,
                 r.culledFraction < 1 ? r.backprojectSeconds * r.culledFraction / (1 - r.culledFraction) : 0.0);
  char filter[64];
  std::snprintf(filter, sizeof filter, r.filteredOnGpu ? "filter on the GPU" : "filter %.2f s", r.filterSeconds);
  std::fprintf(stderr,
               "backend %s%s: %s, backprojection %.2f s (%.2f G voxel-updates/s, %.1f projections/s), total %.2f s "
               "(%.1f projections/s)\n",
               r.backend.c_str(), r.shortScan ? " (short scan, Parker weights)" : "", filter, r.backprojectSeconds,
               r.gigaUpdatesPerSecond(), r.backprojectSeconds > 0 ? projections / r.backprojectSeconds : 0.0, r.totalSeconds,
               r.totalSeconds > 0 ? projections / r.totalSeconds : 0.0);
}

// The reading runs beside the reconstruction (the scheduler reads in chunks while the device works), the filter pool
// beside the backprojection; the GPU's start beside the reading.
void printFileSplit(const FdkReport& r, double gpuStartSeconds, double writeSeconds, double total, std::size_t projections) {
  const double upload = r.backprojectSeconds - r.readbackSeconds;
  const double other = std::max(0.0, total - gpuStartSeconds - r.setupSeconds - r.backprojectSeconds - writeSeconds);
  const std::pair<double, const char*> stages[] = {{r.readSeconds, "reading"},
                                                   {gpuStartSeconds, "the GPU's start"},
                                                   {r.setupSeconds, "setup"},
                                                   {std::max(r.filterSeconds, upload), r.filterWaitSeconds > 0.25 * upload
                                                                                            ? "reading and filtering"
                                                                                            : r.filteredOnGpu ? "the GPU's filter and backprojection"
                                                                                                              : "backprojection"},
                                                   {r.readbackSeconds, "readback"},
                                                   {writeSeconds, "writing"}};
  const auto bound = std::max_element(std::begin(stages), std::end(stages), [](auto& a, auto& b) { return a.first < b.first; });
  std::fprintf(stderr,
               "file to file %.2f s (%.1f projections/s): read %.2f (beside the reconstruction), GPU start %.2f, setup %.2f, filter %s, "
               "upload and backprojection %.2f (of which waiting for projections read%s %.2f), readback %.2f, write %.2f, other %.2f (of "
               "which waiting for the output's memory %.2f) s; bound by %s\n",
               total, projections / total, r.readSeconds, gpuStartSeconds, r.setupSeconds,
               r.filteredOnGpu ? "on the GPU" : (std::to_string(r.filterSeconds).substr(0, 4) + " (beside the GPU)").c_str(), upload,
               r.filteredOnGpu ? "" : " and filtered", r.filterWaitSeconds, r.readbackSeconds, writeSeconds, other, r.pageInWaitSeconds,
               bound->second);
}

void printStreamReport(const FdkReport& r, std::size_t projections) {
  if (!r.autoNote.empty()) std::fprintf(stderr, "%s\n", renderFields(r.autoNote, optionName).c_str());
  char filtering[64] = "filter on the GPU";
  if (!r.filteredOnGpu) std::snprintf(filtering, sizeof filtering, "filtering %.2f thread-seconds", r.filterSeconds);
  std::fprintf(stderr,
               "backend %s: %zu projections in %.2f s end to end (%.1f projections/s); reading %.2f s, %s, "
               "backprojection (upload%s included) %.2f s (%.2f G voxel-updates/s), waiting for %s projections %.2f s; volume "
               "ready %.3f s after the last projection; at most %zu projections held between stages\n",
               r.backend.c_str(), projections, r.totalSeconds, projections / r.totalSeconds, r.readSeconds, filtering,
               r.filteredOnGpu ? ", filter" : "", r.backprojectSeconds, r.gigaUpdatesPerSecond(), r.filteredOnGpu ? "read" : "filtered",
               r.filterWaitSeconds, r.latencySeconds, r.peakQueued);
}

std::string describePlan(const SlabPlan& plan, std::size_t devices, int ranks) {
  return "slabs: " + std::to_string(plan.slabs.size()) + " of " + std::to_string(plan.rowsPerSlab) + " rows of y, " +
         (plan.budgetBytes == UINT64_MAX ? std::string("device memory not limited") : formatBytes(plan.budgetBytes) + " per device") +
         (devices > 1 ? ", " + std::to_string(devices) + " devices" : "") +
         (ranks > 0 ? ", dealt on demand to " + std::to_string(ranks) + (ranks == 1 ? " MPI rank" : " MPI ranks") +
                          " (each reads and filters only its slabs' detector rows)"
                    : "");
}

void printRanks(const FdkReport& report, double wallSeconds, bool timelines) {
  if (report.ranks.empty()) return;
  double busy = 0, bytes = 0;
  for (const RankShare& r : report.ranks) {
    std::fprintf(stderr, "  rank %d (%s): %d %s in %.2f s, %.2f s in its operator, read %s in %.2f s (%s)\n", r.rank, r.host.c_str(), r.slabs,
                 r.slabs == 1 ? "slab" : "slabs", r.seconds, r.busySeconds, formatBytes(static_cast<std::uint64_t>(r.bytesRead)).c_str(),
                 r.readSeconds, r.description.c_str());
    if (timelines) printDeviceTimeline(stderr, r.timeline);  // seconds from that rank's own start
    busy += r.busySeconds;
    bytes += r.bytesRead;
  }
  // One rank would do every rank's operator work in turn: their sum over the wall time estimates the speed-up (what
  // the ranks share, reading and the final write, is left out: mpirun -np 1 measures it).
  std::fprintf(stderr, "  %zu ranks read %s of projection rows; speed-up over one rank, estimated from the ranks' operator time: %.2fx\n",
               report.ranks.size(), formatBytes(static_cast<std::uint64_t>(bytes)).c_str(), wallSeconds > 0 ? busy / wallSeconds : 0.0);
}

std::string sideNote(const FdkReport& report, const VolumeGrid& grid, std::size_t projections, bool regionAsked) {
  std::string text;
  if (!report.region.empty() && regionAsked)
    text += "glrecon: voxels outside the region '" + report.region + "' are 0 (not reconstructed); " +
            std::to_string(report.regionVoxels) + " of " + std::to_string(grid.voxelCount()) + " voxels are inside.\n";
  if (report.killedVoxels)
    text += "glrecon: density-range kill: " + std::to_string(report.killedVoxels) + " voxels stopped after " +
            std::to_string(report.killedAfter) + " of " + std::to_string(projections) +
            " projections, their partial sums scaled to the whole scan (a heuristic: see docs/algorithms.md, Early fragment kill).\n";
  return text;
}

void printDeviceTimeline(std::FILE* to, const std::vector<DeviceSpan>& timeline) {
  std::string line = "     ";
  for (const DeviceSpan& span : timeline) {
    char text[96];
    std::snprintf(text, sizeof text, "%s %.2f-%.2f %s%s", line.size() > 5 ? " |" : "", span.start, span.end, span.what.c_str(),
                  span.waited >= 0.005 ? (" (waited " + std::to_string(span.waited).substr(0, 4) + ")").c_str() : "");
    if (line.size() + std::strlen(text) > 118) {
      std::fprintf(to, "%s\n", line.c_str());
      line = "     ";
    }
    line += text;
  }
  if (line.size() > 5) std::fprintf(to, "%s\n", line.c_str());
}

}  // namespace glrecon::app
