#pragma once
// MetaImage pixel data read in chunks over threads, and the value check the projection reader folds into the
// reading. Internal to src/io.
#include <cstddef>
#include <string>

#include "glrecon/image.h"

namespace glrecon {

/// firstValueOutside (glrecon/limits.h) in fileChunking()'s chunks and threads.
std::size_t firstValueOutsideParallel(const float* values, std::size_t count, double limit);

/// readMetaImage that also finds, while its chunks are converted, the first value firstValueOutside()
/// reports: its index in *firstOutside (voxelCount() when there is none).
Image readMetaImageChecked(const std::string& path, double limit, std::size_t* firstOutside);

}  // namespace glrecon
