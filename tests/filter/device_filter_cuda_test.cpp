// The FDK filter on the cuda backend: as device_filter_gl_test.cpp, where a CUDA device exists (the CUDA fixture).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "glrecon/operator.h"
#include "device/cuda/device.h"
#include "glrecon/fdk.h"
#include "glrecon/filter.h"
#include "device/gl/context.h"
#include "glrecon/slab.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "device_filter_support.h"

namespace glrecon {
namespace {

using CudaDeviceFilter = test::CudaTest;
using namespace test;  // device_filter_support.h

TEST_F(CudaDeviceFilter, FiltersLikeTheHost) {
  expectDeviceFilterMatchesHost("cuda");
}

TEST_F(CudaDeviceFilter, SlabsFilterOnTheGpuLikeOneBlock) {
  slabsFilterLikeOneBlock("cuda");
}

}  // namespace
}  // namespace glrecon
