#include "glrecon/fdk.h"

#include <chrono>
#include <numeric>

#include "glrecon/backprojector.h"
#include "glrecon/error.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"

namespace glrecon {
namespace {
double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

DetectorLayout detectorLayoutOf(const Image& projections) {
  return DetectorLayout{projections.size[0], projections.size[1], projections.spacing[0], projections.spacing[1],
                        projections.origin[0], projections.origin[1]};
}

void checkProjectionsMatch(const Geometry& geometry, const Image& projections, const std::string& name) {
  if (projections.size[0] != geometry.detector.nu || projections.size[1] != geometry.detector.nv)
    throwInputError(name, "DimSize",
                    std::to_string(geometry.detector.nu) + " x " + std::to_string(geometry.detector.nv) + " detector pixels",
                    std::to_string(projections.size[0]) + " x " + std::to_string(projections.size[1]));
  if (static_cast<std::size_t>(projections.size[2]) != geometry.size())
    throwInputError(name, "number of projections",
                    std::to_string(geometry.size()) + " (one per projection of the geometry)",
                    std::to_string(projections.size[2]));
}

Image reconstructFdk(const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                     const FdkOptions& options, FdkReport* report) {
  const auto start = std::chrono::steady_clock::now();
  geometry.validate("FDK");
  grid.validate("FDK");
  checkProjectionsMatch(geometry, projections, "projections");
  geometry.checkVolumeInFront(grid, "FDK");

  const FdkFilter filter(geometry, options.filter);
  BackprojectorOptions backprojectorOptions;
  backprojectorOptions.threads = options.threads;
  backprojectorOptions.gpu = options.gpu;
  backprojectorOptions.window = options.window;
  backprojectorOptions.substackStencil = options.substackStencil;
  FdkReport local;
  std::unique_ptr<Backprojector> backprojector =
      makeBackprojector(options.backend, geometry, grid, backprojectorOptions, &local.autoNote);

  const std::size_t count = geometry.size(), batch = std::max<std::size_t>(1, options.batch);
  const std::size_t pixels = projections.sliceStride();
  std::vector<float> buffer(batch * pixels);
  std::vector<std::size_t> views(batch);
  local.shortScan = filter.isShortScan();
  RegionOfInterest region;
  if (!options.roi.empty()) {
    region = makeRegionOfInterest(options.roi, geometry, grid);
    local.region = region.description;
    local.regionVoxels = region.insideCount();
    backprojector->setRegion(region);
  }
  const DensityKill& kill = options.densityKill;
  if (kill.enabled && !(kill.high > kill.low && kill.margin >= 0 && kill.after > 0 && kill.after < 1))
    throw UsageError("--density-range: expected LOW < HIGH, MARGIN >= 0 and --density-after in (0, 1)");
  bool killed = false;
  if (kill.enabled && options.roi.empty()) {
    local.region = "whole volume";
    local.regionVoxels = grid.voxelCount();
  }
  Progress progress("fdk (" + backprojector->name() + ")", count, "proj", options.progress);
  for (std::size_t first = 0; first < count; first += batch) {
    const std::size_t n = std::min(batch, count - first);
    std::iota(views.begin(), views.begin() + n, first);
    auto t = std::chrono::steady_clock::now();
    parallelFor(n, 1, options.threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b; p < e; ++p) {
        std::copy(projections.slice(static_cast<int>(first + p)), projections.slice(static_cast<int>(first + p)) + pixels,
                  buffer.data() + p * pixels);
        filter.apply(first + p, buffer.data() + p * pixels);
      }
    });
    local.filterSeconds += secondsSince(t);
    t = std::chrono::steady_clock::now();
    backprojector->backproject(buffer.data(), views.data(), n);
    if (kill.enabled && !killed && first + n >= kill.after * count && first + n < count) {
      // Judge voxels by their value so far scaled to the whole scan: a voxel k of N projections in holds
      // about k/N of its final value.
      backprojector->killOutsideRange(kill.low - kill.margin, kill.high + kill.margin, static_cast<double>(count) / (first + n));
      killed = true;
      local.killedAfter = first + n;
    }
    local.backprojectSeconds += secondsSince(t);
    progress.update(first + n);
  }
  auto t = std::chrono::steady_clock::now();
  Image volume = backprojector->volume();  // GPU backends: the last partial window, then the readback
  local.backprojectSeconds += secondsSince(t);
  progress.finish();
  local.backend = backprojector->description();
  local.culledFraction = backprojector->culledFraction();
  if (killed) {
    // Stopped voxels hold the partial sum of the projections before the kill: scale it to the whole scan.
    const std::vector<std::uint8_t> active = backprojector->activeMask();
    const std::vector<std::uint8_t>* inside = region.mask.empty() ? nullptr : &region.mask;
    const float scale = static_cast<float>(static_cast<double>(count) / local.killedAfter);
    for (std::size_t i = 0; i < volume.data.size(); ++i)
      if (!active[i] && (!inside || (*inside)[i])) {
        volume.data[i] *= scale;
        ++local.killedVoxels;
      }
  }
  if (!region.mask.empty()) applyRegion(volume, region);
  local.totalSeconds = secondsSince(start);
  local.voxelUpdates = static_cast<double>(grid.voxelCount()) * count;
  if (report) *report = local;
  return volume;
}

}  // namespace glrecon
