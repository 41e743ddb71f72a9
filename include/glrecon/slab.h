#pragma once
/// Volumes larger than a GPU's memory: the volume is reconstructed in slabs of y rows (RTK's rotation axis,
/// along which a voxel's detector row changes most and its column least), one slab at a time per device. A
/// backprojector in slab mode (BackprojectorOptions::slabRows) holds rows [first, first + rows) of the grid,
/// computes every voxel with the whole grid's matrices and global indices (so the result equals the one-block
/// reconstruction bit for bit), and uploads of each projection only the detector rows its slab can reach.
/// Tested in tests/recon/slab*_test.cpp.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "glrecon/parallel.h"

#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/roi.h"

namespace glrecon {

/// What a GPU-memory or volume-height error suggests where a whole volume must sit on one GPU (fdk --stream, view,
/// or a one-block run that was asked for): the slab path that does not need it.
std::string slabSuggestion();
/// Slabs start at multiples of this many rows: the GPU kernels walk runs of 4, 8 or 16 voxels along y whose
/// first row enters their arithmetic, so runs must start at the same global rows in a slab as in the whole grid.
inline constexpr int kSlabGranule = 16;

/// Detector rows [first, first + count) of one projection (count 0: none).
struct RowBand {
  int first = 0, count = 0;
};

/// The detector rows whose pixels a bilinear sample at any voxel centre of rows [firstRow, firstRow + rows)
/// can touch in view `view`, clamped to the detector: v is a linear-fractional function of the voxel index
/// with a positive denominator over the slab's box (checkVolumeInFront), so its extremes lie at the box's
/// eight corners; the band holds floor(v_min) to floor(v_max) + 1, widened by one row on each side for the
/// float rounding of the backends' v (a few ulp of values below 1e5: far below a row).
RowBand slabRowBand(const Geometry& geometry, std::size_t view, const VolumeGrid& grid, int firstRow, int rows);

/// The rows from the first of `bands[views[i]]` to the last, over the views whose bands are not empty ({0, 0} where
/// none has rows): the one band a window of those views sends and filters.
RowBand bandUnion(const RowBand* bands, const std::size_t* views, std::size_t count);

/// slabRowBand of every view for one block of rows, made when the block changes and kept while it stays: what a
/// block's operator hands its filter twin (DeviceProjections::rowBands) and looks up per projection it uploads.
class BlockRowBands {
 public:
  const RowBand* of(const Geometry& geometry, const VolumeGrid& grid, int firstRow, int rows);

 private:
  std::vector<RowBand> bands_;
  int first_ = -1, rows_ = -1;  // the block bands_ holds
};

/// Rows `band` of `count` projections of `pixels` floats each (rows of `nu`) from `projections` into `to`, one band after
/// another, on up to 8 threads (one core copies about 8 GB/s): what a filter twin stages and sends.
void copyRowBands(const float* projections, std::size_t count, std::size_t pixels, int nu, RowBand band, float* to);

/// Throws UsageError unless the backprojector is in slab mode (capacity > 0) and rows [firstRow, firstRow + rows)
/// are a slab it can hold: firstRow a multiple of kSlabGranule, 0 < rows <= capacity, inside the grid.
void checkSlab(const VolumeGrid& grid, int capacity, int firstRow, int rows);

/// The grid of rows [firstRow, firstRow + rows): same x, z, spacing; origin moved along y.
VolumeGrid slabGrid(const VolumeGrid& grid, int firstRow, int rows);

/// Rows [firstRow, firstRow + rows) of a whole x-fastest volume of `size` (nx x ny x nz) to a block of those rows
/// (nx x rows x nz, `toBlock`), or from a block back to their place in the whole volume; a z slice per task.
template <class T>
void moveSlabRows(const std::array<int, 3>& size, int firstRow, int rows, const T* from, T* to, bool toBlock) {
  const std::size_t nx = static_cast<std::size_t>(size[0]), ny = static_cast<std::size_t>(size[1]), run = nx * static_cast<std::size_t>(rows);
  parallelFor(static_cast<std::size_t>(size[2]), 1, 0, [&](std::size_t k0, std::size_t k1) {
    for (std::size_t k = k0; k < k1; ++k) {
      const std::size_t whole = (k * ny + static_cast<std::size_t>(firstRow)) * nx, block = k * run;
      std::copy_n(from + (toBlock ? whole : block), run, to + (toBlock ? block : whole));
    }
  });
}

/// Elements [begin, end) of a block of rows [firstRow, firstRow + rows) (nx x rows x nz, x fastest), held at `from`
/// (from[0] is the block's element `begin`), to their places in a whole volume of `size`: a z slice's rows are one run
/// in both. For readbacks that arrive in chunks of the block (cuda's staging buffers, GL's pack buffer), each chunk cut
/// into ranges for several threads.
template <class T>
void copyBlockRangeToVolume(const std::array<int, 3>& size, int firstRow, int rows, std::size_t begin, std::size_t end, const T* from,
                            T* volume) {
  const std::size_t nx = static_cast<std::size_t>(size[0]), slice = nx * static_cast<std::size_t>(rows);
  const std::size_t wholeSlice = nx * static_cast<std::size_t>(size[1]), first = static_cast<std::size_t>(firstRow) * nx;
  for (std::size_t i = begin; i < end;) {
    const std::size_t z = i / slice, length = std::min(end, (z + 1) * slice) - i;
    std::copy_n(from + (i - begin), length, volume + z * wholeSlice + first + (i - z * slice));
    i += length;
  }
}

/// The part of a region on the whole grid that lies in rows [firstRow, firstRow + rows), on the slab's grid.
RegionOfInterest slabRegion(const RegionOfInterest& region, int firstRow, int rows);

/// What a block of rows costs a device: fixedBytes + bytesPerRow * rows (operatorCost in glrecon/operator.h).
struct SlabCost {
  std::uint64_t fixedBytes = 0;         ///< independent of the block's height
  std::uint64_t bytesPerRow = 0;        ///< per y row of the block
  std::uint64_t volumeBytesPerRow = 0;  ///< of bytesPerRow, the volume's floats: what a second block buffer costs
};

struct SlabPlan {
  int rowsPerSlab = 0;                       ///< capacity of every device's slab (a multiple of kSlabGranule, or ny)
  std::vector<std::pair<int, int>> slabs;    ///< (first row, rows), in order; the last may be shorter (several
                                             ///< devices: any may be a granule shorter)
  std::uint64_t budgetBytes = 0;             ///< the memory the plan had per device
  /// Each device holds two block buffers and reads one back while it backprojects the next
  /// (ConeBeamOperator::readBlockIntoBeside): rowsPerSlab is then each buffer's.
  bool drainBeside = false;
};

/// Splits the grid's rows into the fewest slabs, at least `minimumSlabs` (one per device, so all of them work)
/// where the rows allow, whose cost fits `budgetBytes` (one slab when the whole volume fits and one is asked
/// for). Throws InputError naming `what` (e.g. "--gpu-memory 64M") when even kSlabGranule rows (or the whole
/// grid, if smaller) do not fit, with the figure needed and the budget. With several `devices` (one counter hands the
/// slabs out to them) the count is a multiple of `devices` where the granules allow, and the slabs' heights differ by
/// at most a granule, so the devices finish together.
/// `drainBeside`: two block buffers per device (SlabPlan::drainBeside), each slab read back while the device
/// backprojects its next one. Where two buffers of 4/5 of a device's share fit, each device takes a slab of about
/// 4/5 of its share and then one of the rest (the large one's readback hides behind the small one's backprojection,
/// and only the small one's is left at the end); else even slabs, at least two per device, each buffer half the room.
/// Where neither leaves a second slab per device, the plan is planSlabs' without it (drainBeside false).
SlabPlan planSlabs(const VolumeGrid& grid, const SlabCost& cost, std::uint64_t budgetBytes, const std::string& what,
                   int minimumSlabs = 1, int devices = 1, bool drainBeside = false);

/// "2G", "512M", "1.5G", "800000000" (bytes; K, M, G, T powers of 1024, optional trailing B or iB) to bytes.
/// Throws UsageError naming `option` for anything else or a value under 4 KiB.
std::uint64_t parseByteSize(const std::string& option, const std::string& text);

}  // namespace glrecon
