#pragma once
// The slab tests' scans and the slabs-equal-one-block comparison shared by the host, GL and CUDA files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "glrecon/cluster.h"
#include "glrecon/operator.h"
#include "device/cuda/device.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "glrecon/slab.h"
#include "glrecon/sink.h"
#include "glrecon/source.h"
#include "test_support.h"

namespace glrecon::test {

// A scan whose slabs see narrow bands (circular) and one that exercises every term of the matrices: detector
// and source offsets, out-of-plane and in-plane tilt.
inline Geometry circularScan() {
  CircularScanSpec spec;
  spec.projections = 24;
  spec.nu = 48;
  spec.nv = 40;
  spec.spacingU = spec.spacingV = 8.0;
  return makeCircularScan(spec);
}

inline Geometry tiltedScan() {
  CircularScanSpec spec;
  spec.projections = 24;
  spec.arc = 360;
  spec.nu = 48;
  spec.nv = 40;
  spec.spacingU = spec.spacingV = 8.0;
  spec.projectionOffsetX = 13.0;
  spec.projectionOffsetY = -9.0;
  spec.sourceOffsetX = 5.0;
  spec.sourceOffsetY = 7.0;
  spec.outOfPlaneAngle = 6.0;
  spec.inPlaneAngle = 4.0;
  return makeCircularScan(spec);
}

inline VolumeGrid smallGrid(int ny) { return VolumeGrid::centred({40, ny, 24}, glm::dvec3(5.0, 2.5, 5.0)); }

inline Image phantomScan(const Geometry& g) { return projectPhantom(Phantom::sheppLogan(SheppLoganVariant::Rtk, 100.0), g, {}); }

inline void expectBitIdentical(const Image& a, const Image& b, const std::string& what) {
  ASSERT_EQ(a.size, b.size) << what;
  ASSERT_EQ(a.data.size(), b.data.size()) << what;
  std::size_t differ = 0, first = a.data.size();
  for (std::size_t i = 0; i < a.data.size(); ++i)
    if (std::memcmp(&a.data[i], &b.data[i], sizeof(float)) != 0) {
      if (!differ) first = i;
      ++differ;
    }
  EXPECT_EQ(differ, 0u) << what << ": first at " << first << " (" << a.data[first] << " vs " << b.data[first] << ")";
  EXPECT_EQ(a.origin, b.origin) << what;
}

// The options both comparisons below run one block with. Both filter on the CPU (FFTW), whatever the device: the bits
// of the backprojection alone are compared here. With the filter on the GPU, slabs against one block:
// test_device_filter.cpp.
inline FdkOptions slabTestOptions(const std::string& backend, int window, const std::string& roi) {
  FdkOptions options;
  options.backend = test::backendOf(backend);
  options.window = window;
  options.threads = 2;
  options.roi = roi;
  options.filterOn = FilterPlace::Cpu;
  return options;
}

// reconstructFdk through slabs (options.gpuMemory) against the one-block run: 2, 3 and 7 slabs (the last one
// uneven), the whole volume and a region, the circular and the tilted scan.
inline void slabsEqualOneBlock(const std::string& backend, int window) {
  for (const Geometry& g : {circularScan(), tiltedScan()}) {
    const Image projections = phantomScan(g);
    for (const auto& [ny, slabRows, expectedSlabs] : {std::tuple{37, 32, 2}, std::tuple{37, 16, 3}, std::tuple{100, 16, 7}}) {
      const VolumeGrid grid = smallGrid(ny);
      for (const std::string roi : {"", "sphere:3,-4,2,40"}) {
        FdkOptions options = slabTestOptions(backend, window, roi);
        const Image whole = reconstructFdk(g, projections, grid, options);
        const SlabCost cost = operatorCost(test::backendOf(backend), g, grid, window, !roi.empty());
        options.gpuMemory = cost.fixedBytes + cost.bytesPerRow * slabRows;
        FdkReport report;
        const Image slabbed = reconstructFdk(g, projections, grid, options, &report);
        EXPECT_EQ(report.slabs, expectedSlabs);
        EXPECT_EQ(report.rowsPerSlab, slabRows);
        const std::string what = backend + " ny " + std::to_string(ny) + ", " + std::to_string(expectedSlabs) + " slabs, roi '" + roi +
                                 "', " + (g.circular.front().outOfPlaneAngle != 0 ? "tilted" : "circular");
        expectBitIdentical(slabbed, whole, what);
        if (backend != "cpu") {
          // Row bands: less than every slab sending whole projections.
          EXPECT_GT(report.uploadedBytes, 0.0) << what;
          EXPECT_LT(report.uploadedBytes, report.wholeUploadBytes) << what;
        }
        // Several workers on one device take slabs from the queue: the same bits.
        options.gpus = {0, 0};
        expectBitIdentical(reconstructFdk(g, projections, grid, options), whole, what + ", --gpu 0,0");
      }
    }
  }
}

// Slabs read back beside the next slab's backprojection (FdkOptions::drainBeside; cuda does, the others read back in
// line): two workers on device 0, with room for the 4:1 slabs (2 large, then 2 small) and with room only for even
// slabs in buffers of half the budget (at least 2 per device). The same bits as one block, a region too; on cuda every
// slab is read back beside (the next slab's backprojection, or for each device's last, the end of the run).
inline void drainedSlabsEqualOneBlock(const std::string& backend, int window) {
  const Geometry g = circularScan();
  const Image projections = phantomScan(g);
  const VolumeGrid grid = smallGrid(100);  // 7 granules: shares of 3 and 4, cut into 2 + 1 and 3 + 1
  for (const std::string roi : {"", "sphere:3,-4,2,40"}) {
    FdkOptions options = slabTestOptions(backend, window, roi);
    const Image whole = reconstructFdk(g, projections, grid, options);
    const SlabCost cost = operatorCost(test::backendOf(backend), g, grid, window, !roi.empty());
    options.gpus = {0, 0};
    options.drainBeside = true;
    for (const auto& [bufferRows, expected] : {std::pair{48, std::vector<int>{32, 48, 16, 4}}, std::pair{16, std::vector<int>{16, 16, 16, 16, 16, 16, 4}}}) {
      options.gpuMemory = cost.fixedBytes + (cost.bytesPerRow + cost.volumeBytesPerRow) * bufferRows;
      FdkReport report;
      const Image slabbed = reconstructFdk(g, projections, grid, options, &report);
      const std::string what = backend + ", buffers of " + std::to_string(bufferRows) + " rows, roi '" + roi + "'";
      expectBitIdentical(slabbed, whole, what);
      EXPECT_EQ(report.slabs, static_cast<int>(expected.size())) << what;
      int beside = 0;
      for (const DeviceShare& d : report.devices)
        for (const DeviceSpan& span : d.timeline) beside += span.what == "readback beside";
      EXPECT_EQ(beside, backend == "cuda" ? report.slabs : 0) << what;
    }
  }
}

// Projections near float's limit overflow the volume: one block and slabs (in place, into the volume in memory) are
// refused with an InputError naming the overflow, whichever side checks (the cuda device finds the largest voxel in
// place; a NaN or infinite one sends the check to the host, which names it).
inline void overflowIsRefused(const std::string& backend, int window) {
  const Geometry g = circularScan();
  const VolumeGrid grid = smallGrid(37);
  Image projections = phantomScan(g);
  std::fill(projections.data.begin(), projections.data.end(), 3e38f);
  FdkOptions options = slabTestOptions(backend, window, "");
  {
    SCOPED_TRACE(backend + ", one block");
    test::expectError<InputError>([&] { reconstructFdk(g, projections, grid, options); }, {"overflow"});
  }
  const SlabCost cost = operatorCost(test::backendOf(backend), g, grid, window, false);
  options.gpuMemory = cost.fixedBytes + cost.bytesPerRow * 16;
  SCOPED_TRACE(backend + ", 3 slabs");
  test::expectError<InputError>([&] { reconstructFdk(g, projections, grid, options); }, {"overflow"});
}

// A cluster's configuration in one process (FdkOptions::cluster: slabs dealt in turn, each slab's detector rows read
// from the file and filtered alone) against the one-block run: the same bits, an uneven last slab, a region, the
// circular and the tilted scan; and fewer bytes read than every slab reading whole projections.
inline void bandsEqualOneBlock(const std::string& backend, int window) {
  const auto dir = scratchDir();
  std::unique_ptr<Cluster> one = singleProcessCluster();
  for (const Geometry& g : {circularScan(), tiltedScan()}) {
    const Image projections = phantomScan(g);
    const std::string file = (dir / "projections.mha").string();
    writeImage(file, projections, true);
    const VolumeGrid grid = smallGrid(100);
    for (const std::string roi : {"", "sphere:3,-4,2,40"}) {
      FdkOptions options = slabTestOptions(backend, window, roi);  // the CPU's filter: what a cluster's ranks do too
      const Image whole = reconstructFdk(g, projections, grid, options);
      options.cluster = one.get();
      const std::string what = backend + ", bands, roi '" + roi + "', " + (g.circular.front().outOfPlaneAngle != 0 ? "tilted" : "circular");
      // From memory, and from the file (ProjectionFiles::readRows reads each band alone).
      FdkReport fromMemory;
      expectBitIdentical(reconstructFdk(g, projections, grid, options, &fromMemory), whole, what + ", from memory");
      EXPECT_EQ(fromMemory.slabs, 4) << what;  // 100 rows, at least 4 slabs a rank: 3 of 32 rows (16-row granules) and one of 4
      auto source = openProjectionFiles({file});
      const FdkPlan plan = planFdk(g, grid, options, *source);
      ImageSink sink(grid, 2);
      FdkReconstructor reconstructor(plan);
      const FdkReport report = reconstructor.run(*source, sink);
      expectBitIdentical(sink.take(), whole, what + ", from the file");
      const double wholeBytes = static_cast<double>(projections.data.size()) * sizeof(float);
      EXPECT_GT(report.bytesRead, 0.0) << what;
      EXPECT_LT(report.bytesRead, wholeBytes * report.slabs) << what;
      ASSERT_EQ(report.ranks.size(), 1u) << what;
      EXPECT_EQ(report.ranks[0].slabs, report.slabs) << what;
    }
  }
}

}  // namespace glrecon::test
