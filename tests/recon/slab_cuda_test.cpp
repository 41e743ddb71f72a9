// FDK through slabs on the cuda backend equals one block bit for bit. On the CUDA fixture.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "glrecon/operator.h"
#include "device/cuda/device.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "glrecon/slab.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "slab_support.h"

namespace glrecon {
namespace {

using CudaSlab = test::CudaTest;
using namespace test;  // slab_support.h
namespace fs = std::filesystem;

TEST_F(CudaSlab, SlabsEqualOneBlockBitForBit) {
  slabsEqualOneBlock("cuda", 8);
}

TEST_F(CudaSlab, SlabsReadBackBesideTheNextEqualOneBlockBitForBit) { drainedSlabsEqualOneBlock("cuda", 8); }

TEST_F(CudaSlab, ClusterBandsEqualOneBlockBitForBit) { bandsEqualOneBlock("cuda", 8); }

TEST_F(CudaSlab, OverflowIsRefusedInOneBlockAndSlabs) { overflowIsRefused("cuda", 8); }

}  // namespace
}  // namespace glrecon
