#pragma once
// The iterative tests' phantom cases and the backend comparisons shared by the host, GL and CUDA files.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/iterative.h"
#include "glrecon/phantom.h"
#include "glrecon/operator.h"
#include "test_support.h"

namespace glrecon::test {

// The modified Shepp-Logan phantom (scale 100 mm) with its skull thickened to 16 mm: RTK's skull is 2.8 mm thick,
// under half a voxel of these 7.5 mm test grids, so no voxel model reproduces its projections and every algebraic
// method would chase that model error (FDK, which fits nothing, would win by default). Thick, it is resolvable.
inline Phantom thickSkullPhantom() {
  std::vector<Ellipsoid> e = Phantom::sheppLogan(SheppLoganVariant::Modified, 100.0).ellipsoids();
  e[1].semiAxes = e[0].semiAxes - glm::dvec3(16.0);
  return Phantom(e);
}

// Every GPU backend against cpu after a fixed number of iterations. Per projector call the backends agree to the
// bounds of test_projector.cpp; an iteration composes a forward and a back projection, and SART's updates are
// contractions (lambda < 2 with the normalisations), so differences do not grow faster than the calls add them:
// 2 iterations x 9 subsets x 2 calls x 1e-3 (the per-call RMS bound) ~ 4e-2 would be the worst case; 1e-2 of the
// largest voxel (RMS) is the bound, and llvmpipe, whose interpolation is float, must stay under 1e-4. CGLS (no
// subsets) makes 3 forward and 3 back projections in 2 iterations, its steps exact line searches over them, so its
// differences stay within the same calls' sum.
inline void iterativeBackendMatchesCpu(const std::string& backend, IterativeMethod method) {
  const Geometry g = test::circularScan(18, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 24, 24}, glm::dvec3(10.0));
  const Image b = projectPhantom(thickSkullPhantom(), g, {});
  IterativeOptions o;
  o.method = method;
  o.iterations = 2;
  o.subsets = method == IterativeMethod::Cgls ? 1 : 9;
  auto cpu = makeOperator(Backend::Cpu, g, grid);
  auto gpu = test::makeNamed(backend, g, grid);
  const Image a = reconstructIterative(*cpu, g, b, grid, o), x = reconstructIterative(*gpu, g, b, grid, o);
  double sq = 0, scale = 0, worst = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const double d = std::abs(static_cast<double>(a.data[i]) - x.data[i]);
    sq += d * d;
    worst = std::max(worst, d);
    scale = std::max(scale, static_cast<double>(std::abs(a.data[i])));
  }
  const double rms = std::sqrt(sq / a.data.size()) / scale;
  std::printf("%s %s vs cpu after 2 iterations: relative RMS %.3e, max %.3e\n", backend.c_str(), methodName(method), rms, worst / scale);
  const bool software = gpu->description().find("llvmpipe") != std::string::npos;
  EXPECT_LT(rms, software ? 1e-4 : 1e-2);
}

// GPU operators keep a subset method's iterate on the device (B_S 1, the largest weight and the update computed
// there). Against the host path (the same operator's forward() and Adjoint back() of host vectors, the update on the
// CPU with applySubsetRule), the forward projections and the iterate must agree: bit for bit on
// cuda (same kernels, the update in the same float operations); within `ulps` units in the last place of the
// largest value on GL, whose division may be off by 2.5 ulp (GLSL 4.50, 4.7.1): over 4 subsets, each update's
// few roundings, fed back through the forward projections into the next correction (scaled by 0.3 here), stay
// well within 64 ulp. Additive with positivity and a mask, and multiplicative: the second rule runs the same subsets on
// the same operator, so it reads the B_S(1) the GPU backends kept from the first (their cache must equal a fresh one).
inline void iterateOnDeviceMatchesHostPath(const std::string& backend, double ulps) {
  const Geometry g = test::circularScan(20, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 20, 22}, glm::dvec3(10.0));
  std::unique_ptr<ConeBeamOperator> p = test::makeNamed(backend, g, grid);
  ASSERT_TRUE(p->computesSubsetWeights()) << backend;
  const std::size_t voxels = grid.voxelCount(), pixels = 32 * 32;
  std::vector<float> x0(voxels);
  std::vector<std::uint8_t> mask(voxels);
  for (std::size_t i = 0; i < voxels; ++i) {
    x0[i] = 0.5f + 0.5f * std::sin(0.37f * static_cast<float>(i));
    mask[i] = (i % 7) != 3;
  }
  const auto order = orderedSubsets(g.size(), 4);
  for (const bool multiplicative : {false, true}) {
    SubsetRule rule;
    rule.multiplicative = multiplicative;
    rule.lambda = 0.8f;
    rule.positivity = !multiplicative;
    std::vector<float> onDevice(voxels), onHost(voxels), projectedOnDevice, projectedOnHost;
    for (const bool device : {true, false}) {
      std::vector<float>& projected = device ? projectedOnDevice : projectedOnHost;
      std::vector<float> x = x0;  // the host path's iterate
      if (device) {
        p->setVolume(x0.data());
        p->setUpdateMask(mask.data());
      }
      for (const auto& subset : order) {
        std::vector<float> ax(subset.size() * pixels), correction(subset.size() * pixels);
        device ? p->forward(subset.data(), subset.size(), ax.data()) : test::forwardOf(*p, x.data(), subset.data(), subset.size(), ax.data());
        projected.insert(projected.end(), ax.begin(), ax.end());
        for (std::size_t j = 0; j < ax.size(); ++j)
          correction[j] = multiplicative ? 0.75f + 0.5f * std::cos(0.11f * static_cast<float>(j)) : std::sin(0.013f * static_cast<float>(j)) - 0.3f * ax[j];
        if (device) {
          p->updateSubset(correction.data(), subset.data(), subset.size(), rule);
          continue;
        }
        std::vector<float> update(voxels), weights(voxels), ones(correction.size(), 1.0f);
        test::backOf(*p, correction.data(), subset.data(), subset.size(), update.data());
        test::backOf(*p, ones.data(), subset.data(), subset.size(), weights.data());
        applySubsetRule(x.data(), update.data(), weights.data(), mask.data(), voxels, subset.size(), rule);
      }
      if (device) p->readVolume(onDevice.data());
      else onHost = x;
    }
    const char* what = multiplicative ? "osem" : "sart";
    EXPECT_NE(onDevice, x0) << backend << " " << what << ": the subsets changed nothing";
    if (ulps == 0) {
      EXPECT_EQ(projectedOnDevice, projectedOnHost) << backend << " " << what;
      EXPECT_EQ(onDevice, onHost) << backend << " " << what;
      continue;
    }
    const auto worst = [](const std::vector<float>& a, const std::vector<float>& b) {
      double d = 0, scale = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
        scale = std::max(scale, static_cast<double>(std::abs(b[i])));
      }
      return d / scale;
    };
    const double x = worst(onDevice, onHost), projected = worst(projectedOnDevice, projectedOnHost);
    std::printf("%s %s: iterate on the device against the host path: max %.3g, projections %.3g (of the largest value)\n",
                backend.c_str(), what, x, projected);
    EXPECT_LE(x, ulps * test::kFloatRoundoff) << backend << " " << what;
    EXPECT_LE(projected, ulps * test::kFloatRoundoff) << backend << " " << what;
  }
}

// Operators that form each subset's correction on their device (setSubsetData, correctSubset, updateSubset(nullptr)):
// against the same operator fed corrections formed on the host from its forward projections (the reconstructor's
// host path, the same float operations), the iterate must agree bit for bit and the residual's sum of squares to
// the order of its double sums (1e-12 relative). Additive and multiplicative, rays that miss the volume included (a
// detector wider than the grid's shadow, so some A 1 are 0).
// `ulps` 0: bit for bit (cuda: the same float operations); else within that many units in the last place of the largest
// value, as iterateOnDeviceMatchesHostPath bounds GL (GLSL's division may be 2.5 ulp off, 4.7.1, in the correction and
// the update alike).
inline void deviceCorrectionsMatchHostPath(const std::string& backend, double ulps = 0) {
  const Geometry g = test::circularScan(12, 40);
  const VolumeGrid grid = VolumeGrid::centred({20, 18, 20}, glm::dvec3(8.0));
  const Image b = projectPhantom(thickSkullPhantom(), g, {});
  const std::size_t pixels = 40 * 40, views = g.size(), voxels = grid.voxelCount();
  const auto order = orderedSubsets(views, 3);
  for (const bool multiplicative : {false, true}) {
    std::unique_ptr<ConeBeamOperator> p = test::makeNamed(backend, g, grid);
    std::vector<float> ones(voxels, 1.0f), lengths(views * pixels);
    std::vector<std::size_t> all(views);
    std::iota(all.begin(), all.end(), std::size_t{0});
    p->setVolume(ones.data());
    p->forward(all.data(), views, lengths.data());
    const float floor = 0.5f;
    SubsetRule rule;
    rule.multiplicative = multiplicative;
    rule.lambda = 0.8f;
    std::vector<float> start(voxels, multiplicative ? 0.01f : 0.0f), onDevice(voxels), onHost(voxels);
    std::vector<double> squaresDevice, squaresHost, weightedHost, lengthSquaresHost;
    for (const bool device : {true, false}) {
      p->setVolume(start.data());
      p->setUpdateMask(nullptr);
      if (device) ASSERT_TRUE(p->setSubsetData(b.data.data(), lengths.data(), floor, multiplicative)) << backend;
      for (const auto& subset : order) {
        if (device) {
          squaresDevice.push_back(p->correctSubset(subset.data(), subset.size()));
          p->updateSubset(nullptr, subset.data(), subset.size(), rule);
          continue;
        }
        std::vector<float> ax(subset.size() * pixels), correction(ax.size());
        p->forward(subset.data(), subset.size(), ax.data());
        double squares = 0, weighted = 0, lengthSquares = 0;
        for (std::size_t j = 0; j < ax.size(); ++j) {
          const std::size_t at = subset[j / pixels] * pixels + j % pixels;
          const float data = b.data[at], length = lengths[at], residual = data - ax[j];
          squares += static_cast<double>(residual) * residual;
          weighted += std::abs(static_cast<double>(residual)) * length;
          lengthSquares += static_cast<double>(length) * length;
          correction[j] = multiplicative ? ((length > floor && ax[j] > 0.0f) ? data / ax[j] : 0.0f) : (length > floor ? residual / length : 0.0f);
        }
        squaresHost.push_back(squares);
        weightedHost.push_back(weighted);
        lengthSquaresHost.push_back(lengthSquares);
        p->updateSubset(correction.data(), subset.data(), subset.size(), rule);
      }
      p->readVolume(device ? onDevice.data() : onHost.data());
    }
    const char* what = multiplicative ? "osem" : "sart";
    EXPECT_NE(onDevice, start) << backend << " " << what << ": the subsets changed nothing";
    if (ulps == 0) {
      EXPECT_EQ(onDevice, onHost) << backend << " " << what;
    } else {
      double worst = 0, scale = 0;
      for (std::size_t i = 0; i < voxels; ++i) {
        worst = std::max(worst, std::abs(static_cast<double>(onDevice[i]) - onHost[i]));
        scale = std::max(scale, static_cast<double>(std::abs(onHost[i])));
      }
      std::printf("%s %s: corrections on the device against the host path: max %.3g of the largest value\n", backend.c_str(), what,
                  worst / scale);
      EXPECT_LE(worst, ulps * test::kFloatRoundoff * scale) << backend << " " << what;
    }
    ASSERT_EQ(squaresDevice.size(), squaresHost.size());
    // The sums of squares: to the order of their double sums (1e-12 relative) where the iterates agree bit for bit.
    // Where they may differ (ulps > 0) by up to e = ulps u max|x| per voxel, each A x moves by at most e A 1 and its
    // square by 2 |r| e A 1 + (e A 1)^2: the sum by 2 e sum |r| A 1 + e^2 sum (A 1)^2 (the host path's r and A 1).
    double largest = 0;
    for (float v : onHost) largest = std::max(largest, static_cast<double>(std::abs(v)));
    const double e = ulps * test::kFloatRoundoff * largest;
    for (std::size_t s = 0; s < squaresHost.size(); ++s)
      EXPECT_NEAR(squaresDevice[s], squaresHost[s], 1e-12 * squaresHost[s] + 2 * e * weightedHost[s] + e * e * lengthSquaresHost[s])
          << what << s;
    std::vector<std::size_t> two{0, 1};
    EXPECT_THROW(p->updateSubset(nullptr, two.data(), 2, rule), std::logic_error) << "no correction pending";
  }
}

// An operator's vectors on its device (OperatorVectors: CGLS's) against the same operator's host calls and the host's
// arithmetic: A and B (the interpolating pair's kernels, run on device memory instead of host memory) bit for bit, the
// mask applied; axpy and xpay bit for bit (the same double products, rounded to float); dot to the order of its double
// sums (1e-12 relative: the device adds per-block partials, the host in blocks of its own, ~1e6 terms each rounded by
// 1e-16). Every method of the interface is used, so a vector mixed up with another, or left on the host, fails.
inline void vectorsOnDeviceMatchHost(const std::string& backend) {
  const Geometry g = test::circularScan(20, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 20, 22}, glm::dvec3(10.0));
  std::unique_ptr<ConeBeamOperator> p = test::makeNamed(backend, g, grid);
  std::unique_ptr<OperatorVectors> v = p->makeVectors(2, 2);
  ASSERT_TRUE(v) << backend << " keeps no vectors on its device";
  const std::size_t voxels = grid.voxelCount(), values = g.size() * 32 * 32;
  std::vector<float> x(voxels), y(values);
  std::vector<std::uint8_t> mask(voxels);
  for (std::size_t i = 0; i < voxels; ++i) {
    x[i] = 0.5f + 0.5f * std::sin(0.37f * static_cast<float>(i));
    mask[i] = (i % 7) != 3;
  }
  for (std::size_t i = 0; i < values; ++i) y[i] = std::cos(0.013f * static_cast<float>(i));
  std::vector<std::size_t> all(g.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  const OperatorVectors::Id vx = v->volume(), vb = v->volume(), pa = v->projections(), pb = v->projections();
  v->setMask(mask.data());
  v->upload(vx, x.data());
  v->upload(pb, y.data());
  v->forward(vx, pa);
  v->back(pb, vb);
  std::vector<float> ax(values), expectedAx(values), by(voxels), expectedBy(voxels);
  v->download(pa, ax.data());
  v->download(vb, by.data());
  test::forwardOf(*p, x.data(), all.data(), all.size(), expectedAx.data());
  test::backOf(*p, y.data(), all.data(), all.size(), expectedBy.data());
  for (std::size_t i = 0; i < voxels; ++i)
    if (!mask[i]) expectedBy[i] = 0.0f;
  EXPECT_EQ(ax, expectedAx) << backend << ": A on device vectors";
  EXPECT_EQ(by, expectedBy) << backend << ": B on device vectors, masked";
  // axpy and xpay on the volume pair; copy; dot.
  v->axpy(-0.37, vx, vb);
  v->xpay(vx, 1.3, vb);
  std::vector<float> mixed(voxels), expectedMixed(voxels);
  for (std::size_t i = 0; i < voxels; ++i) {
    const float afterAxpy = expectedBy[i] + static_cast<float>(-0.37 * x[i]);
    expectedMixed[i] = static_cast<float>(x[i] + 1.3 * afterAxpy);
  }
  v->download(vb, mixed.data());
  EXPECT_EQ(mixed, expectedMixed) << backend << ": axpy then xpay";
  v->copy(pa, pb);
  double expectedDot = 0;
  for (std::size_t i = 0; i < values; ++i) expectedDot += static_cast<double>(expectedAx[i]) * expectedAx[i];
  const double dot = v->dot(pa, pb);
  EXPECT_NEAR(dot, expectedDot, 1e-12 * expectedDot) << backend << ": dot after copy";
}

}  // namespace glrecon::test
