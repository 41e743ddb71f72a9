#pragma once
// The streaming tests' scan, grid and options, shared by stream_test.cpp and stream_gl_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "glrecon/errors.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/fdk.h"
#include "test_support.h"

namespace glrecon::test {

inline Geometry smallScan(int projections = 40) {
  CircularScanSpec spec;
  spec.projections = projections;
  spec.nu = spec.nv = 48;
  spec.spacingU = spec.spacingV = 512.0 / 48;
  return makeCircularScan(spec);
}

inline const VolumeGrid kGrid = VolumeGrid::centred({24, 24, 24}, glm::dvec3(256.0 / 24));

inline FdkOptions streamed(const FdkOptions& fdk = {}) {
  FdkOptions options = fdk;
  options.streaming = true;
  return options;
}

// planFdk and one run of the scheduler from `source` into memory; on `op` where given (a recording stand-in).
inline Image reconstructStreaming(ProjectionSource& source, const Geometry& g, const VolumeGrid& grid, const FdkOptions& options,
                           FdkReport* report = nullptr, ConeBeamOperator* op = nullptr) {
  const FdkPlan plan = planFdk(g, grid, options, source);
  std::unique_ptr<FdkReconstructor> reconstructor =
      op ? std::make_unique<FdkReconstructor>(plan, *op) : std::make_unique<FdkReconstructor>(plan);
  ImageSink sink(grid);
  const FdkReport done = reconstructor->run(source, sink);
  if (report) *report = done;
  return sink.take();
}

}  // namespace glrecon::test
