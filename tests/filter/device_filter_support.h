#pragma once
// The device filter's scans, its error bound and the comparisons shared by the host, GL and CUDA files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "glrecon/operator.h"
#include "device/cuda/device.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"
#include "device/gl/context.h"
#include "glrecon/slab.h"
#include "glrecon/source.h"
#include "test_support.h"

namespace glrecon::test {

constexpr double kU = test::kFloatRoundoff;  // unit roundoff of float, 2^-24

// nu 130: three 64-column tiles, the last partial; nv 7 with 12 views: row tiles that straddle projections.
// Offsets: the cosine table is not symmetric. Short: an arc of 180 degrees plus the fan, Parker weights per column.
inline Geometry scan(bool shortScan, int nu = 130, int nv = 7, int projections = 12) {
  CircularScanSpec spec;
  spec.projections = projections;
  spec.nu = nu;
  spec.nv = nv;
  spec.spacingU = spec.spacingV = 3.0;
  spec.projectionOffsetX = 21.0;
  spec.projectionOffsetY = -9.0;
  if (shortScan) {
    const Geometry full = makeCircularScan(spec);
    spec.arc = shortScanArcDegrees(spec.sdd, full.detector, spec.projectionOffsetX) + 1.0;
  }
  return makeCircularScan(spec);
}

// Bound on |DeviceFilter's result - FdkFilter::apply's| for one projection, per pixel, derived from rounding:
// - the device form: the weighted pixel x_j = p_j c_j w_j from float weights (each rounded once from double) and two
//   float products: within 4u |x_j|; then nu ordered float (fused) multiply-adds: (nu + 1) u sum_j |x_j t_|i-j||;
// - the CPU form: x_j rounded once from double (u |x_j|), then FFTW's forward and inverse transforms of length P and
//   the float gains: Cooley-Tukey's error is at most about 5 u log2(P) of the 2-norm per transform (Higham 24.1,
//   for the mixed radices FFTW uses as well), so 2-norm error <= (10 log2 P + 2) u max|H| ||x||_2 with H the
//   response, and each pixel's error is at most the 2-norm's.
// With `hostOnly` the first term alone: the GPU and applyDeviceFilter do the same sums in the same order, differing
// only in where multiply-adds are fused.
inline double filterBound(const DeviceFilter& f, const RampFilter& ramp, std::size_t view, const float* raw, bool hostOnly) {
  const int nu = f.nu;
  double worst = 0.0;
  for (int row = 0; row < f.nv; ++row) {
    std::vector<double> x(nu);
    double norm2 = 0.0;
    for (int j = 0; j < nu; ++j) {
      x[j] = std::abs(static_cast<double>(raw[row * nu + j]) * f.cosine[row * nu + j] * f.viewWeights[view * nu + j]);
      norm2 += x[j] * x[j];
    }
    double maxResponse = 0.0;
    for (double h : ramp.response()) maxResponse = std::max(maxResponse, std::abs(h));
    const double fft = (10.0 * std::log2(ramp.paddedLength()) + 2.0) * kU * maxResponse * std::sqrt(norm2);
    for (int i = 0; i < nu; ++i) {
      double sum = 0.0;
      for (int j = 0; j < nu; ++j) sum += x[j] * std::abs(f.taps[std::abs(i - j)]);
      const double direct = (nu + 5) * kU * sum;
      worst = std::max(worst, hostOnly ? direct : direct + fft);
    }
  }
  return worst;
}

// A backend filtering raw projections (filterOnDevice, forced: on a software renderer too) against the same backend
// fed projections filtered by applyDeviceFilter on the host. Their difference is the backprojection of the filters'
// difference (at most delta per pixel, the host-only bound) plus each backprojection's own rounding of its sum of
// `count` terms (at most (count + 2) u sum |q| / w^2 each): per voxel at most
// ones x (delta + 2 (count + 2) u max|q|), with `ones` the same backend's backprojection of all-ones projections
// (the sum of 1/w^2 with the bilinear weights, which sum to at most 1; the GPU's 8-bit weights too).
inline void expectDeviceFilterMatchesHost(const std::string& backend) {
  const Geometry g = scan(true, 130, 7, 12);  // short: Parker weights differ per view and column
  const VolumeGrid grid = VolumeGrid::centred({20, 9, 14}, glm::dvec3(6.0));
  const FdkFilter filter(g, {RampWindow::Hann, 0.9, true});
  const DeviceFilter device = *filter.deviceFilter();
  const RampFilter ramp(g.detector.nu, RampWindow::Hann, 0.9);
  const std::vector<float> raw = test::randomProjections(g, 4242);
  const std::size_t pixels = static_cast<std::size_t>(g.detector.nu) * g.detector.nv;
  std::vector<float> hostFiltered = raw;
  double delta = 0.0, maxQ = 0.0;
  for (std::size_t view = 0; view < g.size(); ++view) {
    applyDeviceFilter(device, view, hostFiltered.data() + view * pixels);
    delta = std::max(delta, filterBound(device, ramp, view, raw.data() + view * pixels, true));
  }
  for (float q : hostFiltered) maxQ = std::max(maxQ, std::abs(static_cast<double>(q)));
  OperatorOptions o;
  o.window = 5;  // fixed, and not dividing the batches of 4 below: windows straddle backproject() calls

  auto onDevice = test::makeNamed(backend, g, grid, o);
  auto twin = makeDeviceFdkFilter(filter, g, *onDevice->nextWindow(), true);
  ASSERT_TRUE(twin);
  const Image gpu = test::backprojectThroughTwin(*onDevice, *twin, g, raw, 4);
  auto fromHost = test::makeNamed(backend, g, grid, o);
  const Image host = test::backprojectInBatches(*fromHost, g, hostFiltered, 4);
  // The same operator then takes filtered projections from host memory (bench reuses one this way).
  EXPECT_EQ(onDevice->uploadedBytes(), static_cast<double>(raw.size() * sizeof(float))) << backend << ": raw projections sent once";
  onDevice->reset();
  EXPECT_EQ(onDevice->uploadedBytes(), 0.0) << backend << ": reset() clears the counters";
  const Image again = test::backprojectInBatches(*onDevice, g, hostFiltered, 4);
  const std::vector<float> allOnes(raw.size(), 1.0f);
  fromHost->reset();
  const Image ones = test::backprojectInBatches(*fromHost, g, allOnes, 4);

  double worst = 0.0, largest = 0.0;
  for (std::size_t i = 0; i < gpu.data.size(); ++i) {
    const double bound = ones.data[i] * (delta + 2.0 * (g.size() + 2) * kU * maxQ);
    ASSERT_LE(std::abs(gpu.data[i] - host.data[i]), bound) << backend << " voxel " << i;
    worst = std::max(worst, static_cast<double>(std::abs(gpu.data[i] - host.data[i])));
    largest = std::max(largest, std::abs(static_cast<double>(host.data[i])));
  }
  EXPECT_GT(largest, 0.01) << "the volume is not vacuous (filtered random projections reach about 0.05 here)";
  EXPECT_EQ(again.data, host.data) << backend << ": after filterOnDevice(nullptr) the backend must take filtered projections";
  std::printf("%s: filtered on the device vs on the host: largest difference %.3g (values up to %.3g)\n", backend.c_str(), worst,
              largest);
}

// Slabs filtered on the GPU: each worker filters every projection again for each slab it takes, through its own
// device's twin, with the one-block path's kernels, so a slab reconstruction equals the one-block one bit for bit with
// the filter on the GPU as well (3 slabs, two workers, each with its own twin). The twins send and filter only the
// rows of each window's views that its slab samples (DeviceProjections::rowBands): a band that missed a row
// some voxel samples would leave that row stale (another view's, or a former slab's) and change the bits.
inline void slabsFilterLikeOneBlock(const std::string& backend) {
  const Geometry g = scan(true, 70, 9, 24);
  const VolumeGrid grid = VolumeGrid::centred({16, 40, 16}, glm::dvec3(6.0));
  Image projections(VolumeGrid{{g.detector.nu, g.detector.nv, static_cast<int>(g.size())}, glm::dvec3(1.0), glm::dvec3(0.0)});
  const std::vector<float> random = test::randomProjections(g, 11);
  projections.data.assign(random.begin(), random.end());
  FdkOptions options;
  options.backend = test::backendOf(backend);
  options.window = 8;
  options.batch = 5;
  options.filterOn = FilterPlace::Gpu;
  FdkReport oneReport, slabReport;
  const Image one = reconstructFdk(g, projections, grid, options, &oneReport);
  const SlabCost cost = operatorCost(test::backendOf(backend), g, grid, options.window, false);
  options.gpuMemory = cost.fixedBytes + 16 * cost.bytesPerRow;  // 16 rows of 40: 3 slabs
  options.gpus = {0, 0};
  const Image slabbed = reconstructFdk(g, projections, grid, options, &slabReport);
  EXPECT_TRUE(oneReport.filteredOnGpu);
  EXPECT_TRUE(slabReport.filteredOnGpu);
  EXPECT_GT(slabReport.slabs, 1);
  EXPECT_EQ(slabbed.data, one.data) << backend << ": " << slabReport.slabs << " slabs";
  EXPECT_EQ(oneReport.uploadedBytes, static_cast<double>(random.size() * sizeof(float))) << backend;
  // Each slab sends, per window, the rows from the first to the last of its views' bands: at most the span of every
  // view's band times every projection, and at least the sum of each view's own band.
  double most = 0.0, least = 0.0;
  const double rowBytes = static_cast<double>(g.detector.nu) * sizeof(float);
  const auto source = memorySource(projections, "projections");
  const FdkPlan plan = planFdk(g, grid, options, *source);  // the slabs the run had
  ASSERT_EQ(plan.slabs.slabs.size(), static_cast<std::size_t>(slabReport.slabs));
  for (const auto& [first, rows] : plan.slabs.slabs) {
    std::vector<RowBand> bands;
    std::vector<std::size_t> views;
    for (std::size_t view = 0; view < g.size(); ++view) {
      bands.push_back(slabRowBand(g, view, grid, first, rows));
      views.push_back(view);
      least += bands.back().count * rowBytes;
    }
    most += bandUnion(bands.data(), views.data(), views.size()).count * rowBytes * g.size();
  }
  EXPECT_GE(slabReport.uploadedBytes, least);
  EXPECT_LE(slabReport.uploadedBytes, most);
  EXPECT_LT(most, slabReport.slabs * oneReport.uploadedBytes) << "the bands are narrower than the detector: the check can fail";
}

}  // namespace glrecon::test
