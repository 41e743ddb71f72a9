#include "glrecon/slab.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "glrecon/errors.h"
#include "glrecon/limits.h"

namespace glrecon {

std::string slabSuggestion() {
  return "glrecon fdk without " + field("stream") + " reconstructs a larger volume in slabs of y rows (by itself when it does not fit, or with " +
         field("gpuMemory") + " SIZE and " + field("gpu") + " LIST)";
}

RowBand slabRowBand(const Geometry& geometry, std::size_t view, const VolumeGrid& grid, int firstRow, int rows) {
  const ProjectionMatrix m = geometry.matrix(view, grid);
  double low = INFINITY, high = -INFINITY;
  for (int c = 0; c < 8; ++c) {
    const glm::dvec4 voxel((c & 1) ? grid.size[0] - 1 : 0, (c & 2) ? firstRow + rows - 1 : firstRow, (c & 4) ? grid.size[2] - 1 : 0, 1.0);
    const glm::dvec3 h = m.apply(voxel);
    if (!(h.z > 0.0)) return {0, geometry.detector.nv};  // behind the source: callers refuse such volumes; be safe
    const double v = h.y / h.z;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  const int nv = geometry.detector.nv;
  // Rows floor(v) and floor(v) + 1 hold a sample's two neighbours; one more row each side for rounding.
  const double first = std::floor(low) - 1.0, last = std::floor(high) + 2.0;  // inclusive
  if (last < 0.0 || first > nv - 1) return {0, 0};
  const int a = static_cast<int>(std::max(0.0, first)), b = static_cast<int>(std::min<double>(nv - 1, last));
  return {a, b - a + 1};
}

RowBand bandUnion(const RowBand* bands, const std::size_t* views, std::size_t count) {
  int first = INT_MAX, end = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const RowBand band = bands[views[i]];
    if (band.count == 0) continue;
    first = std::min(first, band.first);
    end = std::max(end, band.first + band.count);
  }
  return first < end ? RowBand{first, end - first} : RowBand{0, 0};
}

const RowBand* BlockRowBands::of(const Geometry& geometry, const VolumeGrid& grid, int firstRow, int rows) {
  if (first_ != firstRow || rows_ != rows) {
    bands_.resize(geometry.size());
    for (std::size_t view = 0; view < bands_.size(); ++view) bands_[view] = slabRowBand(geometry, view, grid, firstRow, rows);
    first_ = firstRow;
    rows_ = rows;
  }
  return bands_.data();
}

void copyRowBands(const float* projections, std::size_t count, std::size_t pixels, int nu, RowBand band, float* to) {
  const std::size_t bandPixels = static_cast<std::size_t>(band.count) * nu, offset = static_cast<std::size_t>(band.first) * nu;
  parallelFor(count * bandPixels, std::size_t{1} << 18, std::min(8, resolveThreadCount(0)), [&](std::size_t b, std::size_t e) {
    while (b < e) {  // piece [b, e) of the bands, projection by projection
      const std::size_t s = b / bandPixels, within = b - s * bandPixels, n = std::min(e - b, bandPixels - within);
      std::copy(projections + s * pixels + offset + within, projections + s * pixels + offset + within + n, to + b);
      b += n;
    }
  });
}

void checkSlab(const VolumeGrid& grid, int capacity, int firstRow, int rows) {
  if (capacity <= 0) throw UsageError("moveBlock: the operator was not made for blocks (OperatorOptions::blockRows)");
  if (firstRow < 0 || firstRow % kSlabGranule != 0 || rows <= 0 || rows > capacity || firstRow + rows > grid.size[1])
    throw UsageError("moveBlock: expected rows [first, first + n) with first a multiple of " + std::to_string(kSlabGranule) +
                     ", 0 < n <= " + std::to_string(capacity) + " and first + n <= " + std::to_string(grid.size[1]) + ", found first " +
                     std::to_string(firstRow) + ", n " + std::to_string(rows));
}

VolumeGrid slabGrid(const VolumeGrid& grid, int firstRow, int rows) {
  VolumeGrid slab = grid;
  slab.size[1] = rows;
  slab.origin.y = grid.origin.y + firstRow * grid.spacing.y;
  return slab;
}

RegionOfInterest slabRegion(const RegionOfInterest& region, int firstRow, int rows) {
  RegionOfInterest slab;
  slab.description = region.description;
  slab.size = {region.size[0], rows, region.size[2]};
  slab.mask.resize(static_cast<std::size_t>(region.size[0]) * rows * region.size[2]);
  moveSlabRows(region.size, firstRow, rows, region.mask.data(), slab.mask.data(), /*toBlock=*/true);
  slab.updateSpans();
  return slab;
}

SlabPlan planSlabs(const VolumeGrid& grid, const SlabCost& cost, std::uint64_t budgetBytes, const std::string& what,
                   int minimumSlabs, int devices, bool drainBeside) {
  const int ny = grid.size[1];
  if (drainBeside) {
    SlabCost doubled = cost;
    doubled.bytesPerRow += cost.volumeBytesPerRow;
    const std::uint64_t room = budgetBytes > doubled.fixedBytes ? budgetBytes - doubled.fixedBytes : 0;
    const std::uint64_t fit = doubled.bytesPerRow ? std::min<std::uint64_t>(room / doubled.bytesPerRow, ny) : ny;
    // Each device's share in granules (as the even plan below spreads them), cut 4:1. Readback runs at about 5 times
    // the backprojection's rows per second on an H100 at 2048^3 (1.0 s for the 1024 rows it backprojects in 3.0 s,
    // both devices at once), so the large slab's readback fits in the small one's backprojection.
    const int granules = (ny + kSlabGranule - 1) / kSlabGranule, d = std::max(1, devices);
    if (granules >= 2 * d) {
      const int base = granules / d, taller = granules % d;
      std::vector<int> large(d), small(d);
      for (int i = 0; i < d; ++i) {
        const int share = base + (i >= d - taller ? 1 : 0);
        large[i] = std::max(1, (4 * share + 2) / 5);
        small[i] = share - large[i];
      }
      const int largest = *std::max_element(large.begin(), large.end());
      if (small.front() > 0 && static_cast<std::uint64_t>(largest) * kSlabGranule <= fit) {
        SlabPlan plan;
        plan.budgetBytes = budgetBytes;
        plan.drainBeside = true;
        plan.rowsPerSlab = std::min(ny, largest * kSlabGranule);
        int first = 0;
        for (const std::vector<int>* heights : {&large, &small})
          for (int g : *heights) {
            const int height = std::min(ny - first, g * kSlabGranule);
            plan.slabs.push_back({first, height});
            first += height;
          }
        return plan;
      }
      // Too little room for the large slabs: even slabs in buffers of half the room, at least two per device.
      if (fit >= static_cast<std::uint64_t>(kSlabGranule)) {
        SlabPlan plan = planSlabs(grid, doubled, budgetBytes, what, std::max(minimumSlabs, 2 * d), devices);
        plan.drainBeside = plan.slabs.size() >= static_cast<std::size_t>(2 * d);
        if (plan.drainBeside) return plan;
      }
    }
  }
  SlabPlan plan;
  plan.budgetBytes = budgetBytes;
  const auto costOf = [&](int rows) { return cost.fixedBytes + cost.bytesPerRow * static_cast<std::uint64_t>(rows); };
  int rows = ny;  // the most rows that fit
  if (costOf(ny) > budgetBytes) {
    const std::uint64_t room = budgetBytes > cost.fixedBytes ? budgetBytes - cost.fixedBytes : 0;
    const std::uint64_t fit = cost.bytesPerRow ? room / cost.bytesPerRow : ny;
    rows = static_cast<int>(std::min<std::uint64_t>(fit, ny) / kSlabGranule * kSlabGranule);
    if (rows < kSlabGranule)
      throwInputError(what, "GPU memory for one slab",
                      "room for " + std::to_string(std::min(ny, kSlabGranule)) + " rows of y: " +
                          formatBytes(costOf(std::min(ny, kSlabGranule))) + " (a slab of " + std::to_string(kSlabGranule) +
                          " rows plus the projection window of " + formatBytes(cost.fixedBytes) + ")",
                      formatBytes(budgetBytes));
  }
  // Even slabs: the fewest that fit (and at least minimumSlabs), their height rounded up to the granule (the
  // last one shorter); a volume that fits whole in one slab keeps its exact height.
  int count = std::max((ny + rows - 1) / rows, minimumSlabs);
  const int granules = (ny + kSlabGranule - 1) / kSlabGranule;
  if (devices > 1 && count > 1) count = std::min((count + devices - 1) / devices * devices, granules);
  if (devices > 1 && count > 1) {
    // Several devices take slabs from one counter: a count they share evenly, of heights within a granule of each
    // other, so that they finish together (5 slabs on 2 devices left one idle for a fifth of the run). No slab is
    // taller than the budget allows: count >= ny / rows, so granules / count <= rows / kSlabGranule.
    // The last `taller` slabs get one granule more: the grid's partial last granule then falls on a taller slab.
    const int base = granules / count, taller = granules % count;
    plan.rowsPerSlab = std::min(ny, (base + (taller > 0 ? 1 : 0)) * kSlabGranule);
    for (int i = 0, first = 0; i < count; ++i) {
      const int height = std::min(ny - first, (base + (i >= count - taller ? 1 : 0)) * kSlabGranule);
      plan.slabs.push_back({first, height});
      first += height;
    }
    return plan;
  }
  if (count == 1) {
    plan.rowsPerSlab = ny;
  } else {
    const int even = (ny + count - 1) / count;
    plan.rowsPerSlab = std::min({rows, ny, std::max(kSlabGranule, (even + kSlabGranule - 1) / kSlabGranule * kSlabGranule)});
  }
  for (int first = 0; first < ny; first += plan.rowsPerSlab) plan.slabs.push_back({first, std::min(plan.rowsPerSlab, ny - first)});
  return plan;
}

std::uint64_t parseByteSize(const std::string& option, const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  const std::string units = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && units.find(unit[0]) != std::string::npos) scale = std::pow(1024.0, units.find(unit[0]) + 1.0);
  else if (!unit.empty() && unit != "B") used = 0;
  const double bytes = value * scale;
  if (used == 0 || !std::isfinite(bytes) || bytes < 4096.0 || bytes > 1e18)
    throw UsageError(option + ": expected a memory size of at least 4K such as 512M, 8G or 1.5G, found '" + text + "'");
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace glrecon
