#pragma once
// What fdk, scan-sim, view and demo print about an FDK run (times, rates, the bound, the slab plan), and the side note
// beside a volume with a region or density kill: the report's wording in one place.
#include <cstddef>
#include <cstdio>
#include <string>

#include "glrecon/fdk.h"
#include "glrecon/slab.h"

namespace glrecon::app {

/// The run's backend, filter and backprojection times and rates (and auto's choice, a region's culling).
void printReport(const FdkReport& report, std::size_t projections);

/// From files to file: where the time went, and the stage that bounds it. `total` runs from opening the projections to
/// the renamed output.
void printFileSplit(const FdkReport& report, double gpuStartSeconds, double writeSeconds, double total, std::size_t projections);

/// The end-of-stream summary: rate, time split, latency.
void printStreamReport(const FdkReport& report, std::size_t projections);

/// "slabs: N of R rows of y, ... per device, D devices".
std::string describePlan(const SlabPlan& plan, std::size_t devices, int ranks = 0);
/// A cluster's ranks (FdkReport::ranks): slabs, time, bytes read each, and the speed-up their operator time implies;
/// with `timelines`, each rank's device timeline under its line.
void printRanks(const FdkReport& report, double wallSeconds, bool timelines = false);

/// A device's timeline (FdkReport::devices, blockTimeline), wrapped lines of "start-end what": what bounds a run of
/// several devices can be read off it (setup, each slab, its readback, its write beside the next slab, idle ends).
void printDeviceTimeline(std::FILE* to, const std::vector<DeviceSpan>& timeline);

/// A region leaves zeros outside it (said when `regionAsked`), the density kill scales partial sums: the note beside the
/// volume says so (viewers ignore it). "" when there is nothing to say.
std::string sideNote(const FdkReport& report, const VolumeGrid& grid, std::size_t projections, bool regionAsked);

}  // namespace glrecon::app
