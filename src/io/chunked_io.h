#pragma once
// MetaImage pixel data read in chunks over threads, and the value check the projection reader folds into the
// reading. Internal to src/io.
#include <cstddef>
#include <string>

#include "glrecon/image.h"

namespace glrecon {

/// Index of the first of values[0, count) that is NaN, infinite or larger than `limit` in magnitude; count
/// when there is none.
std::size_t firstValueOutside(const float* values, std::size_t count, double limit);
/// The same over fileChunking()'s threads.
std::size_t firstValueOutsideParallel(const float* values, std::size_t count, double limit);

/// readMetaImage that also finds, while its chunks are converted, the first value firstValueOutside()
/// reports: its index in *firstOutside (voxelCount() when there is none).
Image readMetaImageChecked(const std::string& path, double limit, std::size_t* firstOutside);

}  // namespace glrecon
