// Intensities to line integrals.
#include <gtest/gtest.h>

#include <cmath>

#include "glrecon/errors.h"
#include "glrecon/preprocess.h"
#include "test_support.h"

namespace glrecon {
namespace {

Image stack(int nu, int nv, int n, float value) {
  Image im({nu, nv, n}, {1, 1, 1}, {0, 0, 0});
  std::fill(im.data.begin(), im.data.end(), value);
  return im;
}

TEST(Preprocess, RecoversLineIntegralsWithFlatAndDark) {
  Image projections = stack(8, 4, 3, 0);
  Image flat = stack(8, 4, 2, 0), dark = stack(8, 4, 1, 0);
  // Two flat frames (averaged to 1000 + 10 u), a dark of 100: I = dark + (flat - dark) exp(-p).
  for (int f = 0; f < 2; ++f)
    for (int v = 0; v < 4; ++v)
      for (int u = 0; u < 8; ++u) flat.at(u, v, f) = 1000.0f + 10 * u + (f ? 5.0f : -5.0f);
  std::fill(dark.data.begin(), dark.data.end(), 100.0f);
  for (int p = 0; p < 3; ++p)
    for (int v = 0; v < 4; ++v)
      for (int u = 0; u < 8; ++u)
        projections.at(u, v, p) = static_cast<float>(100.0 + (900.0 + 10 * u) * std::exp(-(0.5 * p + 0.1 * v)));
  const PreprocessStats stats = intensitiesToLineIntegrals(projections, flat, dark, 0.0);
  EXPECT_EQ(stats.clampedLow, 0u);
  EXPECT_EQ(stats.deadPixels, 0u);
  for (int p = 0; p < 3; ++p)
    for (int v = 0; v < 4; ++v)
      for (int u = 0; u < 8; ++u)
        // Intensities stored as float (relative 6e-8 of ~1000) become line-integral errors of ~1e-6 after
        // the dark subtraction amplifies them by I/(I - dark) <= 10.
        EXPECT_NEAR(projections.at(u, v, p), 0.5 * p + 0.1 * v, 2e-6);
}

TEST(Preprocess, ScalarI0AndClamping) {
  Image projections = stack(4, 1, 1, 0);
  projections.data = {1000.0f, 367.879441f, 0.0f, -5.0f};
  const PreprocessStats stats = intensitiesToLineIntegrals(projections, Image{}, Image{}, 1000.0);
  EXPECT_NEAR(projections.data[0], 0.0, 1e-6);
  EXPECT_NEAR(projections.data[1], 1.0, 1e-6);
  EXPECT_NEAR(projections.data[2], -std::log(kMinimumTransmission), 1e-5);
  EXPECT_NEAR(projections.data[3], -std::log(kMinimumTransmission), 1e-5);
  EXPECT_EQ(stats.clampedLow, 2u);
}

TEST(Preprocess, DeadReferencePixelsAreZeroAndCounted) {
  Image projections = stack(2, 1, 1, 50);
  Image flat = stack(2, 1, 1, 100), dark = stack(2, 1, 1, 10);
  flat.data[1] = 10.0f;  // flat == dark: no reference signal
  const PreprocessStats stats = intensitiesToLineIntegrals(projections, flat, dark, 0.0);
  EXPECT_EQ(stats.deadPixels, 1u);
  EXPECT_EQ(projections.data[1], 0.0f);
  EXPECT_NEAR(projections.data[0], -std::log(40.0 / 90.0), 1e-6);
}

TEST(Preprocess, WrongSizedFlatNamesTheFile) {
  Image projections = stack(8, 4, 1, 1);
  test::expectError<InputError>([&] { intensitiesToLineIntegrals(projections, stack(8, 5, 1, 1), Image{}, 0.0, "flat.mha"); },
                                {"flat.mha", "DimSize", "8 x 4", "8 x 5"});
  EXPECT_THROW(intensitiesToLineIntegrals(projections, Image{}, Image{}, 0.0), UsageError);
}

}  // namespace
}  // namespace glrecon
