#pragma once
// The iterative tests' phantom cases and the backend comparisons shared by the host, GL and CUDA files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <tuple>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/iterative.h"
#include "glrecon/phantom.h"
#include "glrecon/operator.h"
#include "recon/iterative/host_vectors.h"
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
// differences stay within the same calls' sum. PDHG-TV makes 3 forward and 3 back projections in its set-up and 2
// iterations (its steps fixed per voxel and ray, its dual steps 1-Lipschitz projections), so the same sum bounds it.
// ASD-POCS is SART's 9 subsets per iteration, then 20 TV steps that each move the volume by tvStep = 0.002 |dx| along
// a unit direction, which the backends' differences in x turn by their share of |D x|. That is no bound (directions
// turned wholly would part the volumes by 2 tvStep a step, 0.08 |dx| over 20 steps, and |dx| / sqrt(voxels) is up to
// the largest voxel): measured on llvmpipe, ASD-POCS's RMS difference is 1.5 times SART's (2.8e-7 against 1.9e-7; its
// largest 10 times), so the SART bound is kept with that margin.
inline void iterativeBackendMatchesCpu(const std::string& backend, IterativeMethod method) {
  const Geometry g = test::circularScan(18, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 24, 24}, glm::dvec3(10.0));
  const Image b = projectPhantom(thickSkullPhantom(), g, {});
  IterativeOptions o;
  o.method = method;
  o.iterations = 2;
  o.subsets = method == IterativeMethod::Cgls || method == IterativeMethod::PdhgTv ? 1 : 9;
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
/// `makeOperator` (geometry, grid): the operator to test (default: the backend's whole grid); `backend` names it.
inline void vectorsOnDeviceMatchHost(
    const std::string& backend,
    const std::function<std::unique_ptr<ConeBeamOperator>(const Geometry&, const VolumeGrid&)>& makeOperator = nullptr) {
  const Geometry g = test::circularScan(20, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 20, 22}, glm::dvec3(10.0));
  std::unique_ptr<ConeBeamOperator> p = makeOperator ? makeOperator(g, grid) : test::makeNamed(backend, g, grid);
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
  double expectedVolumeDot = 0;
  for (std::size_t i = 0; i < voxels; ++i) expectedVolumeDot += static_cast<double>(expectedMixed[i]) * x[i];
  EXPECT_NEAR(v->dot(vb, vx), expectedVolumeDot, 1e-12 * std::abs(expectedVolumeDot)) << backend << ": a volume's dot";
}

// Equal bit for bit (memcmp per item: +0 and -0 differ, as they would in later steps' signs), else the first
// difference.
inline ::testing::AssertionResult sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      std::ostringstream text;
      text.precision(9);
      text << "item " << i << " of " << a.size() << ": " << a[i] << " against " << b[i];
      return ::testing::AssertionFailure() << text.str();
    }
  return ::testing::AssertionSuccess();
}

// The bound on two sums of the same n non-negative double terms added in different orders (the device's per-block
// partials, the host's blocks of 2^16): each order's result is within (n - 1) u of the exact sum (recursive or
// pairwise, u = 2^-53 the double unit roundoff; Higham, Accuracy and Stability, 4.2), so they are within 2 (n - 1) u of
// each other, relative to the sum.
inline double reorderedSumBound(std::size_t n, double sum) { return 2.0 * static_cast<double>(n) * std::ldexp(1.0, -53) * std::abs(sum); }

// An operator's vectors on its device (the TV methods' operations of OperatorVectors) against the host's vectors over the
// same operator (detail::makeHostVectors, what the reconstructor uses where an operator keeps none): every
// element-wise operation bit for bit (the same float operations, each rounded once), the sums within
// reorderedSumBound, the largest magnitude exactly, the copies to and from the operator's volume exactly. Inputs hold
// negatives, exact zeros, -0, a flat block (differences of 0: the TV's eps alone), rays with a step of 0 and voxels
// outside a mask, and every result is checked to have changed something.
/// `makeOperator` (geometry, grid): the operator to test (default: the backend's whole grid, 20 rows; `rows` otherwise).
inline void totalVariationVectorsMatchHost(
    const std::string& backend,
    const std::function<std::unique_ptr<ConeBeamOperator>(const Geometry&, const VolumeGrid&)>& makeOperator = nullptr, int rows = 20) {
  const Geometry g = test::circularScan(20, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, rows, 22}, glm::dvec3(10.0));
  std::unique_ptr<ConeBeamOperator> p = makeOperator ? makeOperator(g, grid) : test::makeNamed(backend, g, grid);
  std::unique_ptr<OperatorVectors> device = p->makeVectors(10, 5);
  ASSERT_TRUE(device) << backend << " keeps no vectors on its device";
  const std::size_t voxels = grid.voxelCount(), values = g.size() * 32 * 32;
  const std::vector<float> zeros(voxels, 0.0f);
  std::vector<std::size_t> all(g.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  std::unique_ptr<OperatorVectors> host = detail::makeHostVectors(*p, zeros, all);

  std::vector<float> x(voxels), previous(voxels), tau(voxels), f(3 * voxels), d(3 * voxels), a(values), aPrevious(values), b(values), y(values),
      sigma(values);
  std::vector<std::uint8_t> mask(voxels);
  for (std::size_t i = 0; i < voxels; ++i) {
    x[i] = 0.5f * std::sin(0.37f * static_cast<float>(i)) + 0.1f;
    if (i % 97 == 5) x[i] = 0.0f;
    if (i % 97 == 11) x[i] = -0.0f;
    if (i >= 2000 && i < 2600) x[i] = 0.25f;  // a flat block: D x = 0 there
    previous[i] = 0.3f + 0.4f * std::cos(0.23f * static_cast<float>(i));
    tau[i] = 0.5f + 0.25f * static_cast<float>(i % 5);
    mask[i] = (i % 7) != 3;
  }
  for (std::size_t i = 0; i < 3 * voxels; ++i) {
    f[i] = 0.8f * std::sin(0.011f * static_cast<float>(i));
    d[i] = 0.5f * std::cos(0.017f * static_cast<float>(i));
  }
  for (std::size_t i = 0; i < values; ++i) {
    a[i] = std::cos(0.013f * static_cast<float>(i));
    aPrevious[i] = 0.9f * std::cos(0.0131f * static_cast<float>(i)) + 0.05f;
    b[i] = 2.0f * std::sin(0.007f * static_cast<float>(i));
    y[i] = 0.1f * std::sin(0.029f * static_cast<float>(i));
    sigma[i] = i % 9 == 0 ? 0.0f : 1.0f / static_cast<float>(1 + i % 13);  // 0: a ray that misses the volume
  }
  // The same vectors made in the same order on both sides: the same ids.
  struct Ids {
    OperatorVectors::Id x, previous, out, tau, gradient, f, d, a, aPrevious, b, y, sigma;
  };
  const auto make = [&](OperatorVectors& v) {
    Ids id{v.volume(), v.volume(), v.volume(), v.volume(), v.volume(), v.field(), v.field(),
           v.projections(), v.projections(), v.projections(), v.projections(), v.projections()};
    v.upload(id.x, x.data());
    v.upload(id.previous, previous.data());
    v.upload(id.tau, tau.data());
    v.upload(id.f, f.data());
    v.upload(id.d, d.data());
    v.upload(id.a, a.data());
    v.upload(id.aPrevious, aPrevious.data());
    v.upload(id.b, b.data());
    v.upload(id.y, y.data());
    v.upload(id.sigma, sigma.data());
    return id;
  };
  const Ids id = make(*device);
  const Ids hostId = make(*host);
  ASSERT_EQ(id.sigma, hostId.sigma);
  const auto fetch = [&](OperatorVectors& v, OperatorVectors::Id from, std::size_t n) {
    std::vector<float> out(n);
    v.download(from, out.data());
    return out;
  };
  // Runs `operation` on both sides, then compares vector `result` (n items) bit for bit; returns the host's, which
  // must differ from `before`.
  const auto both = [&](const char* what, const auto& operation, OperatorVectors::Id result, std::size_t n, const std::vector<float>& before) {
    operation(*device);
    operation(*host);
    const std::vector<float> onDevice = fetch(*device, result, n), onHost = fetch(*host, result, n);
    EXPECT_TRUE(sameBits(onDevice, onHost)) << backend << ": " << what;
    EXPECT_FALSE(sameBits(onHost, before)) << backend << ": " << what << " changed nothing";
    return onHost;
  };

  // The sums and the largest magnitude, on volumes and on scans.
  for (const auto& [u, v, n] : {std::tuple{id.x, id.previous, voxels}, std::tuple{id.a, id.b, values}}) {
    const double onDevice = device->distanceSquared(u, v), onHost = host->distanceSquared(u, v);
    EXPECT_NEAR(onDevice, onHost, reorderedSumBound(n, onHost)) << backend << ": distanceSquared over " << n;
    EXPECT_GT(onHost, 0.0);
  }
  EXPECT_EQ(device->largestMagnitude(id.x), host->largestMagnitude(id.x)) << backend;
  EXPECT_EQ(device->largestMagnitude(id.b), host->largestMagnitude(id.b)) << backend;
  {
    std::vector<float> spiky = x;
    spiky[17] = -3.5f;  // the largest magnitude is a negative value's
    spiky[18] = std::numeric_limits<float>::quiet_NaN();  // left out by both
    device->upload(id.out, spiky.data());
    host->upload(id.out, spiky.data());
    EXPECT_EQ(device->largestMagnitude(id.out), 3.5) << backend;
    EXPECT_EQ(host->largestMagnitude(id.out), 3.5);
  }

  // PDHG-TV's operations in the order of an iteration, each on the previous one's results.
  both("dataDualStep", [&](OperatorVectors& v) { v.dataDualStep(id.y, id.a, id.aPrevious, id.b, id.sigma); }, id.y, values, y);
  const std::vector<float> bar = both("extrapolate", [&](OperatorVectors& v) { v.extrapolate(id.x, id.previous, id.out); }, id.out, voxels, zeros);
  const std::vector<float> differences =
      both("forwardDifferences", [&](OperatorVectors& v) { v.forwardDifferences(id.out, 0.5f, id.d); }, id.d, 3 * voxels, d);
  // The bound: the median length of z + D xbar / 2, so that about half the voxels are clipped and half are not.
  std::vector<float> lengths(voxels);
  for (std::size_t i = 0; i < voxels; ++i) {
    const double u = f[i] + differences[i], v = f[voxels + i] + differences[voxels + i], w = f[2 * voxels + i] + differences[2 * voxels + i];
    lengths[i] = static_cast<float>(std::sqrt(u * u + v * v + w * w));
  }
  std::nth_element(lengths.begin(), lengths.begin() + voxels / 2, lengths.end());
  const float bound = lengths[voxels / 2];
  const std::vector<float> clipped = both("clipToBall", [&](OperatorVectors& v) { v.clipToBall(id.f, id.d, bound); }, id.f, 3 * voxels, f);
  std::size_t shrunk = 0;
  for (std::size_t i = 0; i < voxels; ++i)
    if (clipped[i] != f[i] + differences[i]) ++shrunk;
  EXPECT_GT(shrunk, voxels / 10) << "the bound should clip some voxels";
  EXPECT_LT(shrunk, voxels - voxels / 10) << "and leave others";
  // g = B y + nu D^T z into `gradient`: B through both sides' back (the operator's, bit for bit: vectorsOnDeviceMatchHost).
  device->back(id.y, id.gradient);
  host->back(id.y, id.gradient);
  const std::vector<float> backProjected = fetch(*host, id.gradient, voxels);
  const std::vector<float> gradient = both("addTransposedDifferences",
                                           [&](OperatorVectors& v) { v.addTransposedDifferences(id.f, 2.75f, id.gradient); }, id.gradient, voxels,
                                           backProjected);
  const std::vector<float> stepped =
      both("projectedStep", [&](OperatorVectors& v) { v.projectedStep(id.x, id.tau, id.gradient, id.out); }, id.out, voxels, bar);
  EXPECT_GT(std::count(stepped.begin(), stepped.end(), 0.0f), 0) << "some voxels should reach the bound x >= 0";

  // ASD-POCS's: the TV gradient with and without the mask, the step, x >= 0.
  const float eps = 1e-3f;
  host->setMask(mask.data());
  device->setMask(mask.data());
  const std::vector<float> masked = both("totalVariationGradient (masked)", [&](OperatorVectors& v) { v.totalVariationGradient(id.x, eps, id.d, id.gradient); },
                                         id.gradient, voxels, gradient);
  EXPECT_TRUE(sameBits(fetch(*device, id.d, 3 * voxels), fetch(*host, id.d, 3 * voxels))) << backend << ": the TV field";
  for (std::size_t i = 0; i < voxels; ++i)
    if (!mask[i]) ASSERT_EQ(masked[i], 0.0f) << i;
  host->setMask(nullptr);
  device->setMask(nullptr);
  const std::vector<float> tvGradient = both("totalVariationGradient", [&](OperatorVectors& v) { v.totalVariationGradient(id.x, eps, id.d, id.gradient); },
                                             id.gradient, voxels, masked);
  both("axpy with the TV gradient", [&](OperatorVectors& v) { v.axpy(-static_cast<double>(0.0123f), id.gradient, id.x); }, id.x, voxels, x);
  const std::vector<float> clamped = both("clampNegative", [&](OperatorVectors& v) { v.clampNegative(id.x); }, id.x, voxels, fetch(*host, id.x, voxels));
  for (float v : clamped) ASSERT_FALSE(v < 0.0f);

  // The operator's volume to a vector and back: copies.
  p->setVolume(previous.data());
  device->fromOperatorVolume(id.out);
  EXPECT_TRUE(sameBits(fetch(*device, id.out, voxels), previous)) << backend << ": fromOperatorVolume";
  host->fromOperatorVolume(id.out);
  EXPECT_TRUE(sameBits(fetch(*host, id.out, voxels), previous)) << "host: fromOperatorVolume";
  std::vector<float> held(voxels);
  device->toOperatorVolume(id.x);
  p->readVolume(held.data());
  EXPECT_TRUE(sameBits(held, clamped)) << backend << ": toOperatorVolume";
  host->toOperatorVolume(id.tau);
  p->readVolume(held.data());
  EXPECT_TRUE(sameBits(held, tau)) << "host: toOperatorVolume";
}

// A cuda (or any) operator passed through call by call, but keeping no vectors (the base's makeVectors): the
// reconstructor then runs CGLS, PDHG-TV and ASD-POCS's TV phase on host vectors over the same operator and kernels.
class WithoutDeviceVectors final : public ConeBeamOperator {
 public:
  explicit WithoutDeviceVectors(std::unique_ptr<ConeBeamOperator> inner)
      : ConeBeamOperator(inner->backend(), inner->geometry(), inner->grid(), {}), inner_(std::move(inner)) {}
  std::string description() const override { return inner_->description() + " (host vectors)"; }
  void reset() override { inner_->reset(); }
  void moveBlock(int firstRow, int rows) override { inner_->moveBlock(firstRow, rows); }
  void setVolume(const float* voxels) override { inner_->setVolume(voxels); }
  void readVolume(float* destination) override { inner_->readVolume(destination); }
  void back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) override {
    inner_->back(projections, views, count, weighting);
  }
  void forward(const std::size_t* views, std::size_t count, float* projections) override { inner_->forward(views, count, projections); }
  void setUpdateMask(const std::uint8_t* mask) override { inner_->setUpdateMask(mask); }
  void updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                    const float* cachedWeights) override {
    inner_->updateSubset(correction, views, count, rule, cachedWeights);
  }
  bool computesSubsetWeights() const override { return inner_->computesSubsetWeights(); }
  float subsetLargestWeight(const std::size_t* views, std::size_t count) override { return inner_->subsetLargestWeight(views, count); }
  bool setSubsetData(const float* projections, const float* rayLengths, float rayFloor, bool multiplicative) override {
    return inner_->setSubsetData(projections, rayLengths, rayFloor, multiplicative);
  }
  double correctSubset(const std::size_t* views, std::size_t count) override { return inner_->correctSubset(views, count); }
  void synchronize() override { inner_->synchronize(); }
  void setRegion(const RegionOfInterest& region) override { inner_->setRegion(region); }
  std::vector<std::uint8_t> activeMask() override { return inner_->activeMask(); }
  double culledFraction() const override { return inner_->culledFraction(); }

 private:
  std::unique_ptr<ConeBeamOperator> inner_;
};

// PDHG-TV and ASD-POCS with their vectors on the device against the same backend's operator with host vectors (the
// reconstructor's path for operators that keep none), over the interpolating pair (deterministic: the matched pair's
// transpose adds atomically, in no fixed order).
// PDHG-TV: bit for bit. Its iterate depends on no sum: every step is per ray or per voxel (the same float operations)
// or A and B (the same kernels on device memory as on the operator's own); only the recorded residual is a sum, within
// reorderedSumBound of the host's (relative, on its square).
// ASD-POCS: its SART sweeps run on the same operator's device path in both; its TV phase's sums (|dx|, |grad TV|, the
// distance moved) differ in their order by under 2 n u relative (reorderedSumBound, ~1e-12 here), and enter the iterate
// only through float(tvStep / |grad TV|) and one comparison per iteration. Those round alike unless the exact quotient
// lies within ~1e-12 of a float's rounding boundary (a chance of ~1e-12 / 2^-24 ~ 2e-5 per step, 40 steps here), so the
// iterates are equal bit for bit; a failure here that passes with another phantom is that chance, not a bug.
inline void totalVariationMethodsOnDeviceVectorsMatchHostVectors(const std::string& backend) {
  const Geometry g = test::circularScan(18, 32);
  const VolumeGrid grid = VolumeGrid::centred({24, 24, 24}, glm::dvec3(10.0));
  const Image b = projectPhantom(thickSkullPhantom(), g, {});
  for (IterativeMethod method : {IterativeMethod::PdhgTv, IterativeMethod::AsdPocs}) {
    IterativeOptions o;
    o.method = method;
    o.iterations = method == IterativeMethod::PdhgTv ? 5 : 2;
    o.subsets = method == IterativeMethod::PdhgTv ? 1 : 6;
    auto onDevice = test::makeNamed(backend, g, grid);
    ASSERT_TRUE(onDevice->makeVectors(1, 0)) << backend << " keeps no vectors on its device";
    WithoutDeviceVectors onHost(test::makeNamed(backend, g, grid));
    ASSERT_FALSE(onHost.makeVectors(1, 0));
    IterativeReport deviceReport, hostReport;
    const Image x = reconstructIterative(*onDevice, g, b, grid, o, &deviceReport), y = reconstructIterative(onHost, g, b, grid, o, &hostReport);
    EXPECT_TRUE(sameBits(test::values(x.data), test::values(y.data))) << backend << " " << methodName(method);
    EXPECT_GT(*std::max_element(x.data.begin(), x.data.end()), 0.5f) << methodName(method);
    ASSERT_EQ(deviceReport.iterations.size(), hostReport.iterations.size());
    const std::size_t values = b.data.size();
    for (std::size_t i = 0; i < hostReport.iterations.size(); ++i) {
      const double r = hostReport.iterations[i].residual, squares = r * r;
      EXPECT_NEAR(deviceReport.iterations[i].residual * deviceReport.iterations[i].residual, squares, reorderedSumBound(values, squares))
          << methodName(method) << " iteration " << i + 1;
    }
  }
}

}  // namespace glrecon::test
