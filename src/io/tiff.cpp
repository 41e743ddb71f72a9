// TIFF, the format micro-CT and synchrotron scanners write their projections in, and Fiji's native one.
// Reading goes through libtiff (every compression, strips or tiles, 8/16/32-bit integer and 32-bit float);
// libtiff's own errors and warnings are caught per file (TIFFOpenExt handlers, no global state) and become
// part of an InputError rather than being printed.
// Writing is done here, not by libtiff: ImageJ, when the description says images=N, ignores every IFD but the
// first and reads the N pages as one contiguous block; libtiff interleaves page data and directories, so a
// stack it writes would open scrambled in Fiji. The writer puts all directories first, then the pages back to
// back, as ImageJ's own TiffEncoder does.
#include <tiffio.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "headers.h"

namespace glrecon {
namespace fs = std::filesystem;
static_assert(std::endian::native == std::endian::little, "the TIFF writer assumes a little-endian host");

namespace {

// libtiff's messages for one file, gathered by the handlers below.
struct Diagnostics {
  std::string errors;
  std::string warnings;
  std::string text() const { return errors.empty() ? "no message from libtiff" : errors; }
};

int onError(TIFF*, void* user, const char* module, const char* format, va_list args) {
  char buffer[1024];
  std::vsnprintf(buffer, sizeof buffer, format, args);
  auto* d = static_cast<Diagnostics*>(user);
  if (!d->errors.empty()) d->errors += "; ";
  d->errors += module ? std::string(module) + ": " + buffer : std::string(buffer);
  return 1;  // handled: libtiff prints nothing
}

int onWarning(TIFF*, void* user, const char* module, const char* format, va_list args) {
  char buffer[1024];
  std::vsnprintf(buffer, sizeof buffer, format, args);
  auto* d = static_cast<Diagnostics*>(user);
  // Kept, not printed: scanners write private tags libtiff warns about, which are harmless.
  if (!d->warnings.empty()) d->warnings += "; ";
  d->warnings += module ? std::string(module) + ": " + buffer : std::string(buffer);
  return 1;
}

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};

template <typename T>
void toFloat(const unsigned char* in, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, in + i * sizeof(T), sizeof(T));
    out[i] = static_cast<float>(v);
  }
}

using Converter = void (*)(const unsigned char*, std::size_t, float*);

Converter converterFor(const std::string& path, const std::string& page, int bits, int format) {
  if (format == SAMPLEFORMAT_UINT) {
    if (bits == 8) return toFloat<std::uint8_t>;
    if (bits == 16) return toFloat<std::uint16_t>;
    if (bits == 32) return toFloat<std::uint32_t>;
  } else if (format == SAMPLEFORMAT_INT) {
    if (bits == 8) return toFloat<std::int8_t>;
    if (bits == 16) return toFloat<std::int16_t>;
    if (bits == 32) return toFloat<std::int32_t>;
  } else if (format == SAMPLEFORMAT_IEEEFP) {
    if (bits == 32) return toFloat<float>;
    if (bits == 64) return toFloat<double>;
  }
  const char* kind = format == SAMPLEFORMAT_UINT ? "unsigned" : format == SAMPLEFORMAT_INT ? "signed"
                     : format == SAMPLEFORMAT_IEEEFP ? "float" : "other";
  throwInputError(path, page + "BitsPerSample/SampleFormat",
                  "8, 16 or 32-bit integers or 32/64-bit float", std::to_string(bits) + "-bit " + kind);
}

// ImageJ's description: "ImageJ=1.54f\nimages=40\nslices=40\nunit=mm\nspacing=0.5\n...".
std::map<std::string, std::string> imageJProperties(const char* description) {
  std::map<std::string, std::string> props;
  if (!description || std::strncmp(description, "ImageJ=", 7) != 0) return props;
  std::istringstream in(description);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) props[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return props;
}

// Millimetres per unit of an ImageJ unit name; 0 when unknown.
double millimetresPer(const std::string& unit) {
  if (unit == "mm") return 1.0;
  if (unit == "cm") return 10.0;
  if (unit == "m") return 1000.0;
  if (unit == "um" || unit == "micron" || unit == "\xC2\xB5m") return 1e-3;
  if (unit == "nm") return 1e-6;
  if (unit == "inch") return 25.4;
  return 0.0;
}

// Best rational approximation with 32-bit terms (continued fractions): 1/spacing as TIFF stores resolution.
std::pair<std::uint32_t, std::uint32_t> rational(double x) {
  std::uint64_t h0 = 0, h1 = 1, k0 = 1, k1 = 0;
  double r = x;
  for (int i = 0; i < 64; ++i) {
    const double a = std::floor(r);
    if (a > 4294967295.0) break;
    const std::uint64_t ai = static_cast<std::uint64_t>(a);
    const std::uint64_t h2 = ai * h1 + h0, k2 = ai * k1 + k0;
    if (h2 > 0xffffffffu || k2 > 0xffffffffu) break;
    h0 = h1; h1 = h2; k0 = k1; k1 = k2;
    const double frac = r - a;
    if (frac < 1e-15 || std::abs(static_cast<double>(h1) / static_cast<double>(k1) - x) <= 1e-17 * x) break;
    r = 1.0 / frac;
  }
  if (k1 == 0) return {0xffffffffu, 1};
  return {static_cast<std::uint32_t>(h1), static_cast<std::uint32_t>(k1)};
}

}  // namespace

bool isTiffPath(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), ::tolower);
  return e == ".tif" || e == ".tiff";
}

namespace {
// The pages' size, spacing and origin, and with `pixels` their values: a projection source learns the first without
// decoding a whole stack.
Image readTiffFile(const std::string& path, bool pixels) {
  if (!fs::is_regular_file(path)) throwInputError(path, "file", "a readable TIFF file", "no such readable file");
  Diagnostics diag;
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(options, onError, &diag);
  TIFFOpenOptionsSetWarningHandlerExtR(options, onWarning, &diag);
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFOpenExt(path.c_str(), "r", options));
  TIFFOpenOptionsFree(options);
  if (!tif) throwInputError(path, "header", "a TIFF file", diag.text());

  Image image;
  int width = 0, height = 0, pages = 0;
  std::map<std::string, std::string> imagej;
  do {
    const std::string page = "page " + std::to_string(pages) + ": ";
    std::uint32_t w = 0, h = 0;
    std::uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
    if (!TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h) || w == 0 || h == 0)
      throwInputError(path, page + "ImageWidth/ImageLength", "a positive image size", diag.errors.empty() ? "none" : diag.text());
    TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif.get(), TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLEFORMAT, &format);
    TIFFGetFieldDefaulted(tif.get(), TIFFTAG_PLANARCONFIG, &planar);
    if (spp != 1) throwInputError(path, page + "SamplesPerPixel", "1 (greyscale)", std::to_string(spp));
    const Converter convert = converterFor(path, page, bits, format);
    const std::size_t bytesPerPixel = bits / 8;

    if (pages == 0) {
      width = static_cast<int>(w);
      height = static_cast<int>(h);
      char* description = nullptr;
      if (TIFFGetField(tif.get(), TIFFTAG_IMAGEDESCRIPTION, &description)) imagej = imageJProperties(description);
      // In-plane spacing from the resolution tags (pixels per unit), as ITK reads them; with ResolutionUnit
      // "none" ImageJ puts the unit in its description. Without either, 1 mm (ITK's default too).
      float xres = 0, yres = 0;
      std::uint16_t unit = RESUNIT_NONE;
      TIFFGetFieldDefaulted(tif.get(), TIFFTAG_RESOLUTIONUNIT, &unit);
      double perUnit = unit == RESUNIT_INCH ? 25.4 : unit == RESUNIT_CENTIMETER ? 10.0 : 0.0;
      if (unit == RESUNIT_NONE && imagej.count("unit")) perUnit = millimetresPer(imagej["unit"]);
      if (perUnit > 0 && TIFFGetField(tif.get(), TIFFTAG_XRESOLUTION, &xres) && xres > 0 && std::isfinite(xres))
        image.spacing[0] = perUnit / xres;
      if (perUnit > 0 && TIFFGetField(tif.get(), TIFFTAG_YRESOLUTION, &yres) && yres > 0 && std::isfinite(yres))
        image.spacing[1] = perUnit / yres;
      if (imagej.count("spacing")) {
        const double z = std::strtod(imagej["spacing"].c_str(), nullptr);
        const double scale = imagej.count("unit") ? millimetresPer(imagej["unit"]) : 1.0;
        if (z > 0 && std::isfinite(z) && scale > 0) image.spacing[2] = z * scale;
      }
    } else if (static_cast<int>(w) != width || static_cast<int>(h) != height) {
      throwInputError(path, page + "ImageWidth x ImageLength",
                      std::to_string(width) + " x " + std::to_string(height) + " as page 0",
                      std::to_string(w) + " x " + std::to_string(h));
    }

    if (!pixels) {
      ++pages;
      diag.errors.clear();
      continue;
    }
    const std::size_t pageStart = image.data.size();
    image.data.resize(pageStart + static_cast<std::size_t>(width) * height);
    float* out = image.data.data() + pageStart;
    if (TIFFIsTiled(tif.get())) {
      std::uint32_t tw = 0, th = 0;
      TIFFGetField(tif.get(), TIFFTAG_TILEWIDTH, &tw);
      TIFFGetField(tif.get(), TIFFTAG_TILELENGTH, &th);
      const tmsize_t tileBytes = TIFFTileSize(tif.get());
      if (tw == 0 || th == 0 || tileBytes <= 0) throwInputError(path, page + "TileWidth/TileLength", "a positive tile size", diag.text());
      std::vector<unsigned char> buffer(static_cast<std::size_t>(tileBytes));
      std::vector<float> row(tw);
      for (std::uint32_t y0 = 0; y0 < h; y0 += th)
        for (std::uint32_t x0 = 0; x0 < w; x0 += tw) {
          const std::uint32_t tile = TIFFComputeTile(tif.get(), x0, y0, 0, 0);
          const tmsize_t got = TIFFReadEncodedTile(tif.get(), tile, buffer.data(), tileBytes);
          if (got != tileBytes)
            throwInputError(path, page + "tile " + std::to_string(tile) + " (TileOffsets/TileByteCounts)",
                            std::to_string(tileBytes) + " decoded bytes",
                            got < 0 ? "unreadable data (" + diag.text() + ")" : std::to_string(got) + " bytes, truncated");
          // Edge tiles are padded to the full tile size: copy only the part inside the image.
          const std::uint32_t cols = std::min(tw, w - x0), rows = std::min(th, h - y0);
          for (std::uint32_t r = 0; r < rows; ++r) {
            convert(buffer.data() + static_cast<std::size_t>(r) * tw * bytesPerPixel, cols, row.data());
            std::copy(row.begin(), row.begin() + cols, out + static_cast<std::size_t>(y0 + r) * w + x0);
          }
        }
    } else {
      std::uint32_t rowsPerStrip = h;
      TIFFGetFieldDefaulted(tif.get(), TIFFTAG_ROWSPERSTRIP, &rowsPerStrip);
      rowsPerStrip = std::min(std::max<std::uint32_t>(rowsPerStrip, 1), h);
      const std::size_t rowBytes = static_cast<std::size_t>(w) * bytesPerPixel;
      std::vector<unsigned char> buffer(rowBytes * rowsPerStrip);
      for (std::uint32_t y0 = 0; y0 < h; y0 += rowsPerStrip) {
        const std::uint32_t strip = TIFFComputeStrip(tif.get(), y0, 0);
        const std::uint32_t rows = std::min(rowsPerStrip, h - y0);
        const tmsize_t expected = static_cast<tmsize_t>(rows * rowBytes);
        const tmsize_t got = TIFFReadEncodedStrip(tif.get(), strip, buffer.data(), expected);
        if (got != expected)
          throwInputError(path, page + "strip " + std::to_string(strip) + " (StripOffsets/StripByteCounts)",
                          std::to_string(expected) + " decoded bytes",
                          got < 0 ? "unreadable data (" + diag.text() + ")" : std::to_string(got) + " bytes, truncated");
        convert(buffer.data(), static_cast<std::size_t>(rows) * w, out + static_cast<std::size_t>(y0) * w);
      }
    }
    ++pages;
    diag.errors.clear();
  } while (TIFFReadDirectory(tif.get()));
  // TIFFReadDirectory returns 0 both at the end and on a damaged next directory; only the latter reports.
  if (!diag.errors.empty())
    throwInputError(path, "page " + std::to_string(pages) + " directory", "a readable IFD or the end of the file", diag.text());

  image.size = {width, height, pages};
  // TIFF has no origin; ImageJ's x/y/zorigin (in pixels, world = (index - origin) * spacing) carry one where
  // this writer put them. Otherwise the image is centred, so a detector's (0,0) mm point is its centre.
  const char* keys[3] = {"xorigin", "yorigin", "zorigin"};
  for (int a = 0; a < 3; ++a) {
    const double centred = -0.5 * (image.size[a] - 1) * image.spacing[a];
    image.origin[a] = centred;
    if (imagej.count(keys[a])) {
      char* end = nullptr;
      const double o = std::strtod(imagej[keys[a]].c_str(), &end);
      if (end != imagej[keys[a]].c_str() && std::isfinite(o)) image.origin[a] = -o * image.spacing[a];
    }
  }
  return image;
}
}  // namespace

Image readTiff(const std::string& path) { return readTiffFile(path, true); }

Image readTiffHeader(const std::string& path) { return readTiffFile(path, false); }

std::string tiffHeader(const std::string& path, const std::array<int, 3>& size, const std::array<double, 3>& spacing,
                       const std::array<double, 3>& origin) {
  if (!isTiffPath(path)) throwInputError(path, "output file name", "a name ending in .tif or .tiff", "'" + fs::path(path).extension().string() + "'");
  const std::uint32_t w = static_cast<std::uint32_t>(size[0]), h = static_cast<std::uint32_t>(size[1]);
  const std::uint32_t n = static_cast<std::uint32_t>(size[2]);
  if (size[0] <= 0 || size[1] <= 0 || size[2] <= 0)
    throwInputError(path, "image", "a non-empty image", "size " + std::to_string(size[0]) + " x " + std::to_string(size[1]) + " x " + std::to_string(size[2]));
  for (int a = 0; a < 3; ++a)
    if (!(spacing[a] > 0) || !std::isfinite(spacing[a]) || !std::isfinite(origin[a]))
      throwInputError(path, "spacing/origin", "positive finite spacing and a finite origin", "axis " + std::to_string(a));

  std::ostringstream desc;
  desc.precision(17);
  desc << "ImageJ=1.11a\nimages=" << n << "\nslices=" << n << "\nunit=mm\nspacing=" << spacing[2]
       << "\nloop=false\nxorigin=" << -origin[0] / spacing[0] << "\nyorigin=" << -origin[1] / spacing[1]
       << "\nzorigin=" << -origin[2] / spacing[2] << "\n";
  const std::string description = desc.str() + '\0';

  // Layout: header | IFD 0, its description and rationals | IFD 1 ... | every page's pixels, contiguous.
  const auto xres = rational(1.0 / spacing[0]), yres = rational(1.0 / spacing[1]);
  struct Entry {
    std::uint16_t tag, type;
    std::uint32_t count, value;
  };
  const int entriesFirst = 14, entriesOther = 13;
  const std::uint64_t ifdFirst = 2 + 12 * entriesFirst + 4, ifdOther = 2 + 12 * entriesOther + 4;
  const std::uint64_t extraFirst = description.size() + 16, extraOther = 16;  // description, two rationals
  const auto pad = [](std::uint64_t x) { return (x + 3) & ~std::uint64_t{3}; };
  const std::uint64_t firstBlock = pad(ifdFirst + extraFirst), otherBlock = pad(ifdOther + extraOther);
  const std::uint64_t dataStart = 8 + firstBlock + otherBlock * (n - 1);
  const std::uint64_t pageBytes = std::uint64_t{w} * h * 4;
  if (dataStart + pageBytes * (n - 1) > 0xffffffffull || pageBytes > 0xffffffffull)
    throwInputError(path, "size", "a volume whose pages start within 4 GiB (classic TIFF offsets are 32-bit)",
                    std::to_string(pageBytes * n) + " bytes of pixels; write .mha instead");

  std::string head;
  head.reserve(dataStart);
  auto put16 = [&](std::uint16_t v) { head.append(reinterpret_cast<const char*>(&v), 2); };
  auto put32 = [&](std::uint32_t v) { head.append(reinterpret_cast<const char*>(&v), 4); };
  head += "II";
  put16(42);
  put32(8);
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint64_t ifd = head.size();
    const bool first = k == 0;
    const std::uint64_t extra = ifd + (first ? ifdFirst : ifdOther);
    const std::uint32_t descOffset = static_cast<std::uint32_t>(extra);
    const std::uint32_t xOffset = static_cast<std::uint32_t>(extra + (first ? description.size() : 0));
    std::vector<Entry> entries = {
        {256, 4, 1, w}, {257, 4, 1, h}, {258, 3, 1, 32}, {259, 3, 1, 1 /* none */}, {262, 3, 1, 1 /* min is black */}};
    if (first) entries.push_back({270, 2, static_cast<std::uint32_t>(description.size()), descOffset});
    const std::vector<Entry> rest = {{273, 4, 1, static_cast<std::uint32_t>(dataStart + pageBytes * k)},
                                     {277, 3, 1, 1},
                                     {278, 4, 1, h},
                                     {279, 4, 1, static_cast<std::uint32_t>(pageBytes)},
                                     {282, 5, 1, xOffset},
                                     {283, 5, 1, xOffset + 8},
                                     {296, 3, 1, 1 /* none: ImageJ's unit=mm applies */},
                                     {339, 3, 1, 3 /* IEEE float */}};
    entries.insert(entries.end(), rest.begin(), rest.end());
    put16(static_cast<std::uint16_t>(entries.size()));
    for (const Entry& e : entries) {
      put16(e.tag);
      put16(e.type);
      put32(e.count);
      if (e.type == 3) {  // a SHORT sits left-justified in the 4-byte value field
        put16(static_cast<std::uint16_t>(e.value));
        put16(0);
      } else {
        put32(e.value);
      }
    }
    const std::uint64_t next = ifd + (first ? firstBlock : otherBlock);
    put32(k + 1 < n ? static_cast<std::uint32_t>(next) : 0);
    if (first) head += description;
    put32(xres.first);
    put32(xres.second);
    put32(yres.first);
    put32(yres.second);
    head.resize(next, '\0');
  }
  return head;
}

void writeTiff(const std::string& path, const Image& image, bool overwrite) {
  if (image.data.size() != image.voxelCount()) throw std::logic_error("writeTiff: image data does not match its size");
  const std::string head = tiffHeader(path, image.size, image.spacing, image.origin);
  const std::uint64_t pageBytes = std::uint64_t(image.size[0]) * image.size[1] * 4, n = image.size[2];
  AtomicOutput out(path, overwrite);
  {
    std::ofstream file(out.temporaryPath(), std::ios::binary);
    file.write(head.data(), static_cast<std::streamsize>(head.size()));
    file.write(reinterpret_cast<const char*>(image.data.data()), static_cast<std::streamsize>(image.data.size() * sizeof(float)));
    file.close();
    if (!file) throwInputError(path, "output", "a writable file with room for " + std::to_string(head.size() + pageBytes * n) + " bytes", "a write error");
  }
  out.commit();
}

Image readImage(const std::string& path) { return isTiffPath(path) ? readTiff(path) : readMetaImage(path); }

void writeImage(const std::string& path, const Image& image, bool overwrite) {
  if (isTiffPath(path))
    writeTiff(path, image, overwrite);
  else
    writeMetaImage(path, image, overwrite);
}

}  // namespace glrecon
