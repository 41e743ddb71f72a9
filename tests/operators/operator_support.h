#pragma once
// The bound and comparison of a GPU operator's backprojection against the CPU one (operator_gl_test.cpp,
// operator_cuda_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include <glm/geometric.hpp>

#include "glrecon/errors.h"
#include "device/gl/objects.h"
#include "device/gl/shader.h"
#include "device/cuda/device.h"
#include "operators/gl/gl_operator.h"
#include "test_support.h"
#include "viewer/window.h"

namespace glrecon::test {

constexpr double kMaxQ = test::kTestMaxQ, kSlopeU = test::kTestSlopeU, kSlopeV = test::kTestSlopeV;

// Backprojects in batches, asserting no GL error after each call and after the readback.
inline Image run(ConeBeamOperator& b, const Geometry& g, const std::vector<float>& q, std::size_t batch) {
  return test::backprojectInBatches(b, g, q, batch, [] { EXPECT_EQ(glGetError(), static_cast<GLenum>(GL_NO_ERROR)); });
}

// How far a GPU result may lie from the CPU one, per voxel, summed over projections:
//  - bilinear weights: GPUs may quantize the sub-texel fraction to 8 bits (NVIDIA, AMD), an error of up to
//    2^-8 in each of the two weights; each multiplies a neighbour difference, bounded by the projection's
//    slope (or by kMaxQ within a pixel of the detector edge, where the border's 0 begins);
//  - coordinates: both backends form u = U / W in float from float-rounded matrix terms, in different orders
//    (the GPU interpolates corner values in the rasterizer): 16 roundings of the terms' magnitudes
//    (|U0| + |i dU| + |u| (|W0| + |i dW|)) / |W| covers both, times the slope;
//  - the 1/w^2 weight and the interpolation arithmetic: 16 roundings of kMaxQ;
//  - the accumulation over N projections: N roundings of the running sum in each backend.
inline std::vector<double> tolerance(const Geometry& g, const VolumeGrid& grid, const Image& cpu) {
  std::vector<double> bound(grid.voxelCount(), 0.0);
  const double eps = kFloatRoundoff;
  const int nu = g.detector.nu, nv = g.detector.nv;
  for (std::size_t p = 0; p < g.size(); ++p) {
    const ProjectionMatrix m = g.matrix(p, grid);
    for (int k = 0; k < grid.size[2]; ++k)
      for (int j = 0; j < grid.size[1]; ++j)
        for (int i = 0; i < grid.size[0]; ++i) {
          const glm::dvec4 x(i, j, k, 1.0);
          const glm::dvec3 h = m.apply(x);
          const double u = h.x / h.z, v = h.y / h.z, w = h.z;
          if (!(u > -1 && v > -1 && u < nu && v < nv)) continue;
          auto terms = [&](int r) { return std::abs(m.m[r][0] * i) + std::abs(m.m[r][1] * j) + std::abs(m.m[r][2] * k) + std::abs(m.m[r][3]); };
          const double du = 16 * eps * (terms(0) + std::abs(u) * terms(2)) / std::abs(w);
          const double dv = 16 * eps * (terms(1) + std::abs(v) * terms(2)) / std::abs(w);
          const double slopeU = (u < 0 || u > nu - 1) ? kMaxQ : kSlopeU, slopeV = (v < 0 || v > nv - 1) ? kMaxQ : kSlopeV;
          const double edge = std::max(slopeU, slopeV);
          bound[cpu.index(i, j, k)] +=
              (1 / (w * w)) * (2 * std::pow(2.0, -8) * edge * 2 + slopeU * du + slopeV * dv + 16 * eps * kMaxQ);
        }
  }
  for (std::size_t i = 0; i < bound.size(); ++i) bound[i] += 2 * g.size() * eps * std::abs(cpu.data[i]);
  return bound;
}

inline void expectAgree(const Image& cpu, const Image& gpu, const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(cpu.data.size(), gpu.data.size());
  std::size_t failures = 0;
  double worst = 0, worstRatio = 0;
  for (std::size_t i = 0; i < cpu.data.size(); ++i) {
    const double d = std::abs(double(cpu.data[i]) - gpu.data[i]);
    worst = std::max(worst, d);
    worstRatio = std::max(worstRatio, d / (bound[i] + 1e-300));
    if (!(d <= bound[i])) ++failures;
  }
  EXPECT_EQ(failures, 0u) << what << ": largest |difference| " << worst << ", largest difference / bound " << worstRatio;
  std::printf("%s: largest |gpu - cpu| %.3g (%.3g of its bound)\n", what.c_str(), worst, worstRatio);
}

inline void compareBackends(const Geometry& g, const VolumeGrid& grid, const std::string& label,
                     const std::vector<std::string>& backends = {"graphics", "graphics-mp", "compute"}) {
  const std::vector<float> q = smoothProjections(g);
  auto cpuOperator = makeOperator(Backend::Cpu, g, grid);
  const Image cpu = run(*cpuOperator, g, q, g.size());
  const std::vector<double> bound = tolerance(g, grid, cpu);
  std::size_t nonzero = 0;
  for (float x : cpu.data) nonzero += x != 0.0f;
  ASSERT_GT(nonzero, cpu.data.size() / 2);
  // The same test body for every OpenGL backend; "max" is each device's and backend's own limit.
  for (const std::string& backend : backends) {
    for (const int w : {1, 3, 8, kMaximumWindow}) {
      OperatorOptions o;
      o.window = w;
      auto gpu = test::makeNamed(backend, g, grid, o);
      // Batches of 5 do not divide the windows: partial windows carry over between calls.
      expectAgree(cpu, run(*gpu, g, q, 5), bound, label + " " + gpu->description());
    }
  }
}

}  // namespace glrecon::test
