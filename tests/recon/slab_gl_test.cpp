// FDK through slabs on the GL backends equals one block; the command line suggests slabs where streaming cannot hold
// the volume. On the GL fixture.
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

using GraphicsSlab = test::GlTest;
using Cli = test::GlTest;
using namespace test;  // slab_support.h
namespace fs = std::filesystem;

// The whole pipeline (filter store, queue, workers, assembly) on the GL backends: Mesa here, the GPU there.
TEST_F(GraphicsSlab, FdkThroughSlabsEqualsOneBlockOnEveryGlBackend) {
  for (const char* backend : {"graphics", "graphics-mp", "compute"}) slabsEqualOneBlock(backend, 8);
}

// A cluster's rank (each slab's detector rows read and filtered alone, uploaded as row bands): the same bits.
TEST_F(GraphicsSlab, ClusterBandsEqualOneBlockOnEveryGlBackend) {
  for (const char* backend : {"graphics", "graphics-mp", "compute"}) bandsEqualOneBlock(backend, 8);
}

// Overflowing projections are refused whichever side checks: the GL backends find the largest voxel on the GPU.
TEST_F(GraphicsSlab, OverflowIsRefusedInOneBlockAndSlabsOnEveryGlBackend) {
  for (const char* backend : {"compute", "graphics"}) overflowIsRefused(backend, 8);
}

// The plan for reading back beside (4:1 slabs, or even ones in half the room) on the GL backends, which read back in
// line (reading back beside was measured slower on two H200s both ways it was tried: from a second context, between
// which the driver takes turns, and between the next slab's windows in the one context, whose copies the GPU runs in
// line with the windows; docs/benchmarks.md): the same bits as one block.
TEST_F(GraphicsSlab, SlabsReadBackBesideTheNextEqualOneBlock) {
  for (const char* backend : {"compute", "graphics"}) drainedSlabsEqualOneBlock(backend, 8);
}

// Streaming needs the whole volume on one GPU: where it cannot be, the error names the limit and suggests the slab
// path. A volume taller than the device's largest texture (16384 rows on llvmpipe and most GPUs) shows it on any
// device; a GPU's free memory takes the same path where the driver reports it (NVX/ATI, CUDA).
TEST_F(Cli, GpuBackendsSuggestSlabsWhenStreamingCannotHoldTheVolume) {
  const fs::path dir = test::scratchDir() / "cli-stream-tall";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(test::runCli(dir, "phantom -o scan --projections 12 --detector 48 --detector-spacing 6 -q").exitCode, 0);
  const test::CliRun r = test::runCli(
      dir, "fdk -g scan/geometry.xml -p scan/projections.mha -o v.mha --backend compute --stream --size 2,40000,2 --spacing 1,0.005,1 -q");
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_TRUE(test::contains(r.output, "volume size y")) << r.output;
  EXPECT_TRUE(test::contains(r.output, "glrecon fdk without --stream reconstructs a larger volume in slabs")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
}

}  // namespace
}  // namespace glrecon
