#pragma once
// Screenshots read back by the viewer and app tests (libpng's simplified API, as RGB).
#include <png.h>

#include <cstddef>
#include <filesystem>
#include <vector>

namespace glrecon::test {

struct Png {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;  // top row first
  const unsigned char* at(int x, int y) const { return &rgb[(static_cast<std::size_t>(y) * width + x) * 3]; }
};

/// The PNG at `path` as RGB; width 0 where it cannot be read.
inline Png readPng(const std::filesystem::path& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  Png p;
  if (!png_image_begin_read_from_file(&image, path.c_str())) return p;
  image.format = PNG_FORMAT_RGB;
  p.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, p.rgb.data(), 0, nullptr)) return {};
  p.width = static_cast<int>(image.width);
  p.height = static_cast<int>(image.height);
  return p;
}

}  // namespace glrecon::test
