// resizeZeroed and Image's voxels (glrecon/parallel.h): UnfilledAllocator leaves resize()'s new voxels unwritten, so
// resizeZeroed must zero every one of them itself, on every thread for a large buffer, including the pieces before and
// after its whole huge pages, and keep the voxels it had.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>

#include "glrecon/image.h"
#include "glrecon/parallel.h"

namespace glrecon {
namespace {

// Memory reused from the vector's own capacity still holds what was there: a missed voxel shows as 7, not 0.
void expectZeroedOver(std::size_t count, std::size_t kept) {
  Voxels voxels;
  voxels.assign(count + 3, 7.0f);
  voxels.resize(kept);  // the capacity (and its 7s) stays
  ASSERT_GE(voxels.capacity(), count);
  resizeZeroed(voxels, count, 3);
  ASSERT_EQ(voxels.size(), count);
  EXPECT_EQ(std::count(voxels.begin(), voxels.begin() + kept, 7.0f), static_cast<std::ptrdiff_t>(kept)) << "kept voxels changed";
  EXPECT_EQ(std::count(voxels.begin() + kept, voxels.end(), 0.0f), static_cast<std::ptrdiff_t>(count - kept))
      << count << " voxels, " << kept << " kept";
}

TEST(Parallel, ResizeZeroedZeroesEveryNewVoxel) {
  expectZeroedOver(1000, 0);
  expectZeroedOver(1000, 17);
  // Over the 64 MiB from which the huge pages are written on several threads: an odd count, so that the buffer ends
  // within a huge page, and a start 5 floats in, so that it begins within one.
  expectZeroedOver((std::size_t{80} << 20) / sizeof(float) + 12345, 0);
  expectZeroedOver((std::size_t{80} << 20) / sizeof(float) + 12345, 5);
}

TEST(Parallel, AnImageOfAGridIsZero) {
  Voxels reused;
  reused.assign(std::size_t{1} << 20, 7.0f);
  reused.clear();
  Image image({64, 64, 256}, {1, 1, 1}, {0, 0, 0});  // 4 MiB, its own memory
  EXPECT_EQ(std::count(image.data.begin(), image.data.end(), 0.0f), static_cast<std::ptrdiff_t>(image.data.size()));
  const Image copy = image;  // copies are copies, not unwritten
  EXPECT_EQ(copy.data, image.data);
}

}  // namespace
}  // namespace glrecon
