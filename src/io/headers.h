#pragma once
// The header bytes of the float32 volume formats, shared by the whole-image writers and VolumeFileWriter
// (which writes the voxels slab by slab after them). Internal to src/io.
#include <array>
#include <string>

namespace glrecon {

/// A MetaImage header for MET_FLOAT data in `dataFile` ("LOCAL": right after the header).
std::string metaImageHeader(const std::array<int, 3>& size, const std::array<double, 3>& spacing, const std::array<double, 3>& origin,
                            const std::string& dataFile);
/// Throws InputError unless the name ends in .mha or .mhd.
void checkMetaImageName(const std::string& path);
/// A .mhd name (header and .raw data in two files).
bool isDetachedMetaImage(const std::string& path);
/// Everything of a float32 multi-page TIFF before its pixels (pages contiguous after it, z slices in order).
std::string tiffHeader(const std::string& path, const std::array<int, 3>& size, const std::array<double, 3>& spacing,
                       const std::array<double, 3>& origin);

}  // namespace glrecon
