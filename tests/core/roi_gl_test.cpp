// Regions of interest on the GL backends: the stencil's (early fragment kill's) results bit-identical inside and zero
// outside, and the density kill's departure, as on the cpu backend (roi_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "device/gl/context.h"
#include "glrecon/io.h"
#include "glrecon/phantom.h"
#include "glrecon/roi.h"
#include "device_fixtures.h"
#include "test_support.h"
#include "roi_support.h"

namespace glrecon {
namespace {

using GraphicsRoi = test::GlTest;
using namespace test;  // roi_support.h

TEST_F(GraphicsRoi, StencilInsideIsBitIdenticalOutsideZero) {
  for (const char* spec : kSpecs) {
    expectRegionExact("graphics", false, spec);
    expectRegionExact("graphics", true, spec);
    expectRegionExact("graphics-mp", false, spec);
    expectRegionExact("compute", true, spec);  // column z-ranges: culls less than the region leaves out
  }
}

TEST_F(GraphicsRoi, DensityKillDepartsAsTheReadmeSays) {
  for (const Stated& s : kStated) expectAsStated(densityKillDeparture("graphics", s.after, s.margin), s);
}

}  // namespace
}  // namespace glrecon
