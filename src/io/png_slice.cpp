// PNG slices through libpng's simplified API (Debian's libpng: a well-kept encoder, no hand-written zlib framing).
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"

namespace glrecon {
namespace {

// 8-bit rows, top to bottom, tightly packed, written atomically.
void writePng(const std::string& path, int width, int height, png_uint_32 format, const unsigned char* pixels, bool overwrite) {
  AtomicOutput output(path, overwrite);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = format;
  errno = 0;
  if (!png_image_write_to_file(&image, output.temporaryPath().c_str(), 0, pixels, 0 /* packed rows */, nullptr)) {
    // libpng's message is generic; errno says why (no space left, read-only file system, permission denied).
    const int error = errno;
    throwInputError(path, "output", "a writable PNG file",
                    std::string(image.message) + (error ? std::string(" (") + std::strerror(error) + ")" : ""));
  }
  output.commit();
}

}  // namespace

SliceAxis parseSliceAxis(const std::string& text) {
  if (text == "x") return SliceAxis::X;
  if (text == "y") return SliceAxis::Y;
  if (text == "z") return SliceAxis::Z;
  throw UsageError("slice axis: expected x, y or z, found '" + quoted(text) + "'");
}

std::pair<double, double> percentileRange(const Image& volume, double lowPercent, double highPercent) {
  // A strided sample of at most ~1M values keeps this fast for large volumes and exact for small ones.
  const std::size_t stride = std::max<std::size_t>(1, volume.data.size() / (1u << 20));
  std::vector<float> sample;
  for (std::size_t i = 0; i < volume.data.size(); i += stride) sample.push_back(volume.data[i]);
  if (sample.empty()) return {0.0, 1.0};
  const auto pick = [&](double percent) {
    const std::size_t k = std::min(sample.size() - 1, static_cast<std::size_t>(percent / 100.0 * (sample.size() - 1) + 0.5));
    std::nth_element(sample.begin(), sample.begin() + k, sample.end());
    return static_cast<double>(sample[k]);
  };
  double lo = pick(lowPercent), hi = pick(highPercent);
  if (!(hi > lo)) hi = lo + 1.0;
  return {lo, hi};
}

void writeSlicePng(const std::string& path, const Image& volume, SliceAxis axis, int index, double lo, double hi,
                   bool overwrite) {
  const int a = axis == SliceAxis::X ? 0 : axis == SliceAxis::Y ? 1 : 2;
  if (index < 0 || index >= volume.size[a])
    throw UsageError(path + ": slice index: expected 0.." + std::to_string(volume.size[a] - 1) + ", found " +
                     std::to_string(index));
  // In-plane axes: (across, up) as documented in io.h.
  const int across = axis == SliceAxis::X ? 2 : 0;
  const int up = axis == SliceAxis::Y ? 2 : 1;
  const int width = volume.size[across], height = volume.size[up];
  std::vector<unsigned char> pixels(static_cast<std::size_t>(width) * height);
  const double scale = hi > lo ? 255.0 / (hi - lo) : 0.0;
  for (int row = 0; row < height; ++row)
    for (int col = 0; col < width; ++col) {
      int ijk[3];
      ijk[a] = index;
      ijk[across] = col;
      ijk[up] = height - 1 - row;
      const double v = (volume.at(ijk[0], ijk[1], ijk[2]) - lo) * scale;
      pixels[static_cast<std::size_t>(row) * width + col] =
          static_cast<unsigned char>(std::clamp(std::lround(std::isfinite(v) ? v : 0.0), 0L, 255L));
    }
  writePng(path, width, height, PNG_FORMAT_GRAY, pixels.data(), overwrite);
}

void writeRgbPng(const std::string& path, int width, int height, const std::vector<unsigned char>& rgb, bool overwrite) {
  writePng(path, width, height, PNG_FORMAT_RGB, rgb.data(), overwrite);
}

}  // namespace glrecon
