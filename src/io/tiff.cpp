// TIFF, the format micro-CT and synchrotron scanners write their projections in, and Fiji's native one.
// Reading goes through libtiff (the compressions whose largest ratio is known, strips or tiles, 8/16/32-bit integer
// and 32/64-bit float); libtiff's own errors and warnings are caught per file (TIFFOpenExt handlers, no global
// state) and become part of an InputError rather than being printed. Like the MetaImage reader, it never allocates
// more than the file can decode to: every strip and tile is checked against its bytes in the file before any
// buffer, and the float volume against the memory available.
// Writing is done here, not by libtiff: ImageJ, when the description says images=N, ignores every IFD but the
// first and reads the N pages as one contiguous block; libtiff interleaves page data and directories, so a
// stack it writes would open scrambled in Fiji. The writer puts all directories first, then the pages back to
// back, as ImageJ's own TiffEncoder does.
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "headers.h"

namespace glrecon {
namespace fs = std::filesystem;
static_assert(std::endian::native == std::endian::little, "the TIFF writer assumes a little-endian host");

namespace {

// libtiff's messages for one file, gathered by the handlers below.
struct Diagnostics {
  std::string errors;
  std::string warnings;
  // Quoted: libtiff's messages can carry text from the file (and the path, which holds any byte).
  std::string text() const { return errors.empty() ? "no message from libtiff" : quoted(errors, 400); }
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

// Samples of one type appended to the image as floats. The image's capacity is reserved once for the whole volume
// (after the memory check), so vector::insert constructs each float in place from these iterators: no page is
// zero-filled first, and memory is written only as data is decoded. Random access so that insert measures a
// range by subtraction.
template <typename T>
struct AsFloat {
  using iterator_category = std::random_access_iterator_tag;
  using value_type = float;
  using difference_type = std::ptrdiff_t;
  using pointer = const float*;
  using reference = float;
  const unsigned char* p = nullptr;
  float operator*() const {
    T v;
    std::memcpy(&v, p, sizeof(T));  // any alignment: strips and tiles start where the codec's output does
    return static_cast<float>(v);
  }
  AsFloat& operator++() {
    p += sizeof(T);
    return *this;
  }
  AsFloat operator++(int) {
    AsFloat old = *this;
    p += sizeof(T);
    return old;
  }
  AsFloat& operator--() {
    p -= sizeof(T);
    return *this;
  }
  AsFloat& operator+=(difference_type n) {
    p += n * static_cast<difference_type>(sizeof(T));
    return *this;
  }
  difference_type operator-(const AsFloat& other) const { return (p - other.p) / static_cast<difference_type>(sizeof(T)); }
  bool operator==(const AsFloat& other) const { return p == other.p; }
};

template <typename T>
void appendAsFloat(Voxels& out, const unsigned char* in, std::size_t count) {
  out.insert(out.end(), AsFloat<T>{in}, AsFloat<T>{in + count * sizeof(T)});
}

using Appender = void (*)(Voxels&, const unsigned char*, std::size_t);

Appender appenderFor(const std::string& path, const std::string& page, int bits, int format) {
  if (format == SAMPLEFORMAT_UINT) {
    if (bits == 8) return appendAsFloat<std::uint8_t>;
    if (bits == 16) return appendAsFloat<std::uint16_t>;
    if (bits == 32) return appendAsFloat<std::uint32_t>;
  } else if (format == SAMPLEFORMAT_INT) {
    if (bits == 8) return appendAsFloat<std::int8_t>;
    if (bits == 16) return appendAsFloat<std::int16_t>;
    if (bits == 32) return appendAsFloat<std::int32_t>;
  } else if (format == SAMPLEFORMAT_IEEEFP) {
    if (bits == 32) return appendAsFloat<float>;
    if (bits == 64) return appendAsFloat<double>;
  }
  const char* kind = format == SAMPLEFORMAT_UINT ? "unsigned" : format == SAMPLEFORMAT_INT ? "signed"
                     : format == SAMPLEFORMAT_IEEEFP ? "float" : "other";
  throwInputError(path, page + "BitsPerSample/SampleFormat",
                  "8, 16 or 32-bit integers or 32/64-bit float", std::to_string(bits) + "-bit " + kind);
}

// A codec and the most bytes one byte of its data can decode to, derived from each format: a strip or tile
// declaring more decoded bytes than its bytes in the file times this cannot be honest, and is refused before
// anything is allocated for it. Headers only lower a stream's ratio, so the bounds hold for the smallest strips.
struct Codec {
  const char* name;
  double ratio;
};

Codec codecFor(const std::string& path, const std::string& page, std::uint16_t compression) {
  switch (compression) {
    case COMPRESSION_NONE:
      return {"uncompressed", 1.0};
    case COMPRESSION_PACKBITS:
      // A run is a header byte n in [-127, -1] and one byte repeated 1 - n <= 128 times: 128 bytes from 2.
      // Literal runs (n + 1 bytes from n + 2) and the no-op -128 yield less.
      return {"PackBits", 64.0};
    case COMPRESSION_LZW:
      // Every code is at least 9 bits, and a code stands for at most 4096 bytes: the table holds 4096
      // entries, each one byte longer than the entry it extends. 4096 bytes per 9/8 byte.
      return {"LZW", 4096.0 * 8.0 / 9.0};
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      // zlib's bound, as for compressed MetaImage: a 258-byte match at distance 1 costs at least 2 bits
      // (1-bit length and distance codes), 258 * 4 = 1032 bytes per byte.
      return {"Deflate", 1032.0};
    case COMPRESSION_ZSTD:
      // Every Zstandard block has a 3-byte header and at least 1 byte of content, and decodes to at most
      // 128 KiB (Block_Maximum_Size; an RLE block repeats its one byte): 131072 / 4.
      return {"ZSTD", 32768.0};
    case COMPRESSION_LZMA:
      // libtiff reads .xz streams, whose LZMA2 chunks each decode to at most 2 MiB (a 21-bit size) and take at
      // least 6 bytes (a control byte, 2 + 2 bytes of sizes, at least one byte of data): 2^21 / 6. Loose, but a
      // bound (the memory check before the volume does the rest).
      return {"LZMA", 2097152.0 / 6.0};
    default:
      // JPEG (arithmetic coding spends a fraction of a bit on an 8x8 block), LERC, PixarLog and the rest have no
      // bound derived here: nothing would tie their memory to the file, so they are refused.
      throwInputError(path, page + "Compression",
                      "none (1), LZW (5), Deflate (8 or 32946), PackBits (32773), LZMA (34925) or ZSTD (50000)",
                      std::to_string(compression));
  }
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

// Millimetres per unit of an ImageJ unit name; 0 when unknown. ImageJ writes the micrometre as "um", "micron",
// the micro sign in UTF-8 or Latin-1, or its Java escape "\u00B5m".
double millimetresPer(const std::string& unit) {
  if (unit == "mm") return 1.0;
  if (unit == "cm") return 10.0;
  if (unit == "m" || unit == "meter" || unit == "metre") return 1000.0;
  if (unit == "um" || unit == "micron" || unit == "microns" || unit == "\xC2\xB5m" || unit == "\xCE\xBCm" ||
      unit == "\xB5m" || unit == "\\u00B5m")
    return 1e-3;
  if (unit == "nm") return 1e-6;
  if (unit == "inch" || unit == "in") return 25.4;
  return 0.0;
}

// One finite number, the whole of `text` but surrounding blanks (ImageJ's spacing= and x/y/zorigin=).
bool parseFinite(const std::string& text, double& value) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return false;
  const std::string s = text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
  char* end = nullptr;
  value = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(value);
}

std::string formatNumber(double v) {
  std::ostringstream out;
  out.precision(9);
  out << v;
  return out.str();
}

// `n` bytes at `offset` of the file, false where they lie beyond its end.
bool readAt(int fd, std::uint64_t fileSize, std::uint64_t offset, void* out, std::size_t n) {
  if (offset > fileSize || n > fileSize - offset) return false;
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    offset += static_cast<std::uint64_t>(got);
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

// A tag of the current directory as the file holds it: libtiff drops an invalid resolution or unit (a rational
// n/0, a negative or NaN value, ResolutionUnit 99) and reports it as absent or 0, so whether a tag was there,
// and what it said, is read here from the directory's entries.
struct RawTag {
  bool present = false;
  std::uint64_t count = 0;
  bool integer = false;
  double value = std::numeric_limits<double>::quiet_NaN();  ///< the first value; NaN for n/0 or a non-numeric type
  std::string text;                                           ///< the first value as written, for messages
};

std::map<std::uint16_t, RawTag> rawTags(TIFF* tif, int fd, std::uint64_t fileSize, std::initializer_list<std::uint16_t> tags) {
  std::map<std::uint16_t, RawTag> found;
  const bool big = TIFFIsBigTIFF(tif), swap = TIFFIsByteSwapped(tif);
  const auto number = [swap](const unsigned char* p, std::size_t n) {  // an n-byte unsigned integer in file order
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{p[swap ? n - 1 - i : i]} << (8 * i);
    return v;
  };
  const std::uint64_t directory = TIFFCurrentDirOffset(tif);
  unsigned char head[8];
  if (!readAt(fd, fileSize, directory, head, big ? 8 : 2)) return found;
  // libtiff accepted this directory: at most 65535 entries (a classic count is 16-bit; BigTIFF's is capped lower).
  const std::uint64_t entries = std::min<std::uint64_t>(number(head, big ? 8 : 2), 65535);
  const std::size_t entryBytes = big ? 20 : 12, inlineBytes = big ? 8 : 4;
  std::vector<unsigned char> table(static_cast<std::size_t>(entries) * entryBytes);
  if (!readAt(fd, fileSize, directory + (big ? 8 : 2), table.data(), table.size())) return found;
  for (std::uint64_t e = 0; e < entries; ++e) {
    const unsigned char* entry = table.data() + e * entryBytes;
    const auto tag = static_cast<std::uint16_t>(number(entry, 2));
    if (std::find(tags.begin(), tags.end(), tag) == tags.end() || found.count(tag)) continue;
    RawTag& t = found[tag];
    t.present = true;
    const auto type = static_cast<std::uint16_t>(number(entry + 2, 2));
    t.count = number(entry + 4, big ? 8 : 4);
    const unsigned char* field = entry + (big ? 12 : 8);
    static const std::map<std::uint16_t, std::size_t> sizes = {{1, 1}, {3, 2}, {4, 4}, {5, 8}, {6, 1}, {8, 2},
                                                                {9, 4}, {10, 8}, {11, 4}, {12, 8}, {16, 8}, {17, 8}};
    const auto size = sizes.find(type);
    if (size == sizes.end()) {
      t.text = "a value of TIFF type " + std::to_string(type);
      continue;
    }
    if (t.count == 0) {
      t.text = "no value";
      continue;
    }
    unsigned char v[8] = {};
    if (t.count <= inlineBytes / size->second) {  // the values sit in the entry itself
      std::memcpy(v, field, size->second);
    } else if (!readAt(fd, fileSize, number(field, inlineBytes), v, size->second)) {
      t.text = "a value beyond the end of the file";
      continue;
    }
    const std::uint64_t u = number(v, std::min<std::size_t>(size->second, 8));
    const auto rationalText = [&](double n, double d, std::string nt, std::string dt) {
      t.text = nt + "/" + dt;
      if (d != 0) t.value = n / d;
    };
    switch (type) {
      case 1: case 3: case 4: case 16:
        t.integer = true;
        t.value = static_cast<double>(u);
        t.text = std::to_string(u);
        break;
      case 6: case 8: case 9: case 17: {
        const int bits = static_cast<int>(size->second * 8);
        const std::int64_t s = bits == 64 ? static_cast<std::int64_t>(u)
                                          : static_cast<std::int64_t>(u << (64 - bits)) >> (64 - bits);  // sign-extend
        t.integer = true;
        t.value = static_cast<double>(s);
        t.text = std::to_string(s);
        break;
      }
      case 5: {
        const std::uint32_t n = static_cast<std::uint32_t>(number(v, 4)), d = static_cast<std::uint32_t>(number(v + 4, 4));
        rationalText(n, d, std::to_string(n), std::to_string(d));
        break;
      }
      case 10: {
        const auto n = static_cast<std::int32_t>(number(v, 4)), d = static_cast<std::int32_t>(number(v + 4, 4));
        rationalText(n, d, std::to_string(n), std::to_string(d));
        break;
      }
      case 11: {
        float f;
        const auto bits = static_cast<std::uint32_t>(u);
        std::memcpy(&f, &bits, 4);
        t.value = f;
        t.text = formatNumber(f);
        break;
      }
      default: {  // 12, DOUBLE
        double d;
        std::memcpy(&d, &u, 8);
        t.value = d;
        t.text = formatNumber(d);
      }
    }
    if (t.count != 1) t.text += " (" + std::to_string(t.count) + " values)";
  }
  return found;
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

// Sizes beyond this are refused, as MetaImage's DimSize: they keep a page's pixel count, and pixels times pages,
// far inside 64 bits, and the sizes inside Image's int.
constexpr std::uint64_t kMaxExtent = 1000000;

// What decoding a page needs, from its directory (every check made before anything is allocated for it).
struct PageLayout {
  std::uint32_t width = 0, height = 0;
  std::size_t bytesPerPixel = 0;
  Appender append = nullptr;
  bool tiled = false;
  std::uint32_t tileWidth = 0, tileLength = 0, rowsPerStrip = 0;
  std::uint64_t tileBytes = 0;
  std::uint64_t bufferBytes = 0;     ///< the decode buffer: one strip, or one row of tiles
  double leastFileBytes = 0;         ///< the fewest bytes of the file the page's strips or tiles can come from
};

// The bytes of strip or tile `strile` inside the file (StripByteCounts from StripOffsets, cut at the end of the
// file), refused unless the codec can decode `decoded` bytes from them.
void requireData(TIFF* tif, const std::string& path, const std::string& what, std::uint32_t strile,
                 std::uint64_t decoded, const Codec& codec, std::uint64_t fileSize, const char* tags) {
  int error = 0;
  const std::uint64_t offset = TIFFGetStrileOffsetWithErr(tif, strile, &error);
  const std::uint64_t declared = error ? 0 : TIFFGetStrileByteCountWithErr(tif, strile, &error);
  const std::uint64_t available = error || offset >= fileSize ? 0 : std::min(declared, fileSize - offset);
  if (static_cast<double>(decoded) <= codec.ratio * static_cast<double>(available)) return;
  const std::string truncated = declared > available ? " (" + std::to_string(declared) + " declared at offset " +
                                                       std::to_string(offset) + " of a " + std::to_string(fileSize) +
                                                       "-byte file: truncated)"
                                                 : "";
  if (codec.ratio == 1.0)
    throwInputError(path, what + " (" + tags + ")", std::to_string(decoded) + " bytes of uncompressed pixels",
                    std::to_string(available) + " bytes in the file" + truncated);
  throwInputError(path, what + " (" + tags + ")",
                  "at least " + formatNumber(std::ceil(static_cast<double>(decoded) / codec.ratio)) + " bytes of " +
                      codec.name + " data for " + std::to_string(decoded) + " decoded bytes (" + codec.name +
                      " decodes at most " + formatNumber(codec.ratio) + " bytes per byte)",
                  std::to_string(available) + " bytes in the file" + truncated);
}

PageLayout inspectPage(TIFF* tif, const std::string& path, int index, std::uint64_t fileSize, const Diagnostics& diag,
                       const PageLayout* first) {
  const std::string page = "page " + std::to_string(index) + ": ";
  PageLayout layout;
  std::uint32_t& w = layout.width;
  std::uint32_t& h = layout.height;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h) || w == 0 || h == 0)
    throwInputError(path, page + "ImageWidth/ImageLength", "a positive image size", diag.errors.empty() ? "none" : diag.text());
  if (w > kMaxExtent || h > kMaxExtent)
    throwInputError(path, page + "ImageWidth/ImageLength", "at most 1000000 pixels each",
                    std::to_string(w) + " x " + std::to_string(h));
  if (first && (w != first->width || h != first->height))
    throwInputError(path, page + "ImageWidth x ImageLength",
                    std::to_string(first->width) + " x " + std::to_string(first->height) + " as page 0",
                    std::to_string(w) + " x " + std::to_string(h));
  std::uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT, compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  if (spp != 1) throwInputError(path, page + "SamplesPerPixel", "1 (greyscale)", std::to_string(spp));
  layout.append = appenderFor(path, page, bits, format);
  layout.bytesPerPixel = bits / 8;
  const Codec codec = codecFor(path, page, compression);
  const std::uint64_t rowBytes = std::uint64_t{w} * layout.bytesPerPixel;

  // Every strip or tile is checked against its bytes in the file, so no buffer below (nor the float volume,
  // which the sum of these bounds the file's size) outgrows what the file can decode to.
  const auto least = [&](std::uint64_t decoded) { return std::ceil(static_cast<double>(decoded) / codec.ratio); };
  layout.tiled = TIFFIsTiled(tif);
  if (layout.tiled) {
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &layout.tileWidth);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &layout.tileLength);
    layout.tileBytes = TIFFTileSize64(tif);
    // A tile's rows are read at multiples of TileWidth pixels: the tile must hold TileLength of them.
    if (layout.tileWidth == 0 || layout.tileLength == 0 || layout.tileBytes == 0 ||
        layout.tileBytes < std::uint64_t{layout.tileWidth} * layout.tileLength * layout.bytesPerPixel)
      throwInputError(path, page + "TileWidth/TileLength", "a positive tile size", diag.text());
    const std::uint64_t across = (std::uint64_t{w} + layout.tileWidth - 1) / layout.tileWidth;
    for (std::uint64_t y0 = 0; y0 < h; y0 += layout.tileLength)
      for (std::uint64_t x0 = 0; x0 < w; x0 += layout.tileWidth) {
        const std::uint32_t tile =
            TIFFComputeTile(tif, static_cast<std::uint32_t>(x0), static_cast<std::uint32_t>(y0), 0, 0);
        requireData(tif, path, page + "tile " + std::to_string(tile), tile, layout.tileBytes, codec, fileSize,
                    "TileOffsets/TileByteCounts");
        layout.leastFileBytes += least(layout.tileBytes);
      }
    layout.bufferBytes = across * layout.tileBytes;
  } else {
    std::uint32_t rowsPerStrip = h;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rowsPerStrip);
    layout.rowsPerStrip = std::min(std::max<std::uint32_t>(rowsPerStrip, 1), h);
    for (std::uint64_t y0 = 0; y0 < h; y0 += layout.rowsPerStrip) {
      const std::uint32_t strip = TIFFComputeStrip(tif, static_cast<std::uint32_t>(y0), 0);
      const std::uint64_t decoded = std::min<std::uint64_t>(layout.rowsPerStrip, h - y0) * rowBytes;
      requireData(tif, path, page + "strip " + std::to_string(strip), strip, decoded, codec, fileSize,
                  "StripOffsets/StripByteCounts");
      layout.leastFileBytes += least(decoded);
    }
    layout.bufferBytes = layout.rowsPerStrip * rowBytes;
  }
  return layout;
}

// Decodes the current directory's page onto the end of `out` (whose capacity holds it).
void decodePage(TIFF* tif, const std::string& path, int index, const PageLayout& layout, const Diagnostics& diag,
                Voxels& out) {
  const std::string page = "page " + std::to_string(index) + ": ";
  const std::uint32_t w = layout.width, h = layout.height;
  std::vector<unsigned char> buffer(static_cast<std::size_t>(layout.bufferBytes));
  const auto unreadable = [&](tmsize_t got) {
    return got < 0 ? "unreadable data (" + diag.text() + ")" : std::to_string(got) + " bytes, truncated";
  };
  if (layout.tiled) {
    const std::uint32_t tw = layout.tileWidth, th = layout.tileLength;
    const auto tileBytes = static_cast<tmsize_t>(layout.tileBytes);
    const std::size_t across = (std::size_t{w} + tw - 1) / tw;
    for (std::uint64_t y0 = 0; y0 < h; y0 += th) {
      // One row of tiles decoded, then appended row by row: each row of the image crosses every tile of the band.
      for (std::size_t t = 0; t < across; ++t) {
        const std::uint32_t tile = TIFFComputeTile(tif, static_cast<std::uint32_t>(t * tw), static_cast<std::uint32_t>(y0), 0, 0);
        const tmsize_t got = TIFFReadEncodedTile(tif, tile, buffer.data() + t * layout.tileBytes, tileBytes);
        if (got != tileBytes)
          throwInputError(path, page + "tile " + std::to_string(tile) + " (TileOffsets/TileByteCounts)",
                          std::to_string(tileBytes) + " decoded bytes", unreadable(got));
      }
      // Edge tiles are padded to the full tile size: only the part inside the image is kept.
      const std::uint64_t rows = std::min<std::uint64_t>(th, h - y0);
      for (std::uint64_t r = 0; r < rows; ++r)
        for (std::size_t t = 0; t < across; ++t) {
          const std::size_t cols = std::min<std::size_t>(tw, w - t * tw);
          layout.append(out, buffer.data() + t * layout.tileBytes + r * tw * layout.bytesPerPixel, cols);
        }
    }
  } else {
    const std::size_t rowBytes = std::size_t{w} * layout.bytesPerPixel;
    for (std::uint64_t y0 = 0; y0 < h; y0 += layout.rowsPerStrip) {
      const std::uint32_t strip = TIFFComputeStrip(tif, static_cast<std::uint32_t>(y0), 0);
      const std::size_t rows = std::min<std::uint64_t>(layout.rowsPerStrip, h - y0);
      const auto expected = static_cast<tmsize_t>(rows * rowBytes);
      const tmsize_t got = TIFFReadEncodedStrip(tif, strip, buffer.data(), expected);
      if (got != expected)
        throwInputError(path, page + "strip " + std::to_string(strip) + " (StripOffsets/StripByteCounts)",
                        std::to_string(expected) + " decoded bytes", unreadable(got));
      layout.append(out, buffer.data(), rows * w);
    }
  }
}

// Spacing and origin from page 0's tags. In-plane spacing from the resolution tags (pixels per unit), as ITK reads
// them; with ResolutionUnit "none" ImageJ puts the unit in its description. An absent tag leaves 1 mm (ITK's
// default too); a tag present but unusable is an error, never a silent 1 mm.
void calibrate(TIFF* tif, const std::string& path, int fd, std::uint64_t fileSize, Image& image,
               std::map<std::string, std::string>& imagej) {
  char* description = nullptr;
  if (TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &description)) imagej = imageJProperties(description);
  auto raw = rawTags(tif, fd, fileSize, {TIFFTAG_XRESOLUTION, TIFFTAG_YRESOLUTION, TIFFTAG_RESOLUTIONUNIT});

  double imagejMm = 0;  // millimetres per ImageJ unit; 0 without one ("pixel": ImageJ's uncalibrated image)
  if (imagej.count("unit") && imagej["unit"] != "pixel" && imagej["unit"] != "pixels") {
    imagejMm = millimetresPer(imagej["unit"]);
    if (imagejMm == 0)
      throwInputError(path, "page 0: ImageDescription unit=",
                      "a length unit (mm, cm, m, um or micron, nm, inch) or pixel", "'" + glrecon::quoted(imagej["unit"]) + "'");
  }
  std::uint16_t unit = RESUNIT_INCH;  // TIFF's default without the tag
  if (const RawTag& t = raw[TIFFTAG_RESOLUTIONUNIT]; t.present) {
    if (t.count != 1 || !t.integer || !(t.value >= RESUNIT_NONE && t.value <= RESUNIT_CENTIMETER))
      throwInputError(path, "page 0: ResolutionUnit", "1 (none), 2 (inch) or 3 (centimetre)", t.text);
    unit = static_cast<std::uint16_t>(t.value);
  }
  const double perUnit = unit == RESUNIT_INCH ? 25.4 : unit == RESUNIT_CENTIMETER ? 10.0 : imagejMm;
  const std::string unitName = unit == RESUNIT_INCH         ? "inch"
                               : unit == RESUNIT_CENTIMETER ? "centimetre"
                                                            : "'" + glrecon::quoted(imagej.count("unit") ? imagej.at("unit") : "") + "'";
  const std::pair<std::uint16_t, const char*> axes[2] = {{TIFFTAG_XRESOLUTION, "XResolution"},
                                                         {TIFFTAG_YRESOLUTION, "YResolution"}};
  for (int a = 0; a < 2; ++a) {
    const RawTag& t = raw[axes[a].first];
    if (!t.present) continue;
    const std::string tag = std::string("page 0: ") + axes[a].second;
    if (t.count != 1 || !(t.value > 0) || !std::isfinite(t.value))
      throwInputError(path, tag, "one positive finite number of pixels per unit", t.text);
    // Unit "none" without an ImageJ unit: the resolution gives the pixels' aspect only, and spacing stays 1 mm.
    if (perUnit == 0) continue;
    // The rational as the file holds it, in double (libtiff rounds it to float).
    const double spacing = perUnit / t.value;
    if (!(spacing >= kMinSpacingMm && spacing <= kMaxSpacingMm))
      throwInputError(path, tag, "a resolution giving a pixel spacing from 1e-6 to 1e6 mm",
                      t.text + " pixels per " + unitName + " (" + formatNumber(spacing) + " mm)");
    image.spacing[a] = spacing;
  }
  if (imagej.count("spacing")) {
    double z = 0;
    if (!parseFinite(imagej["spacing"], z) || !(z > 0))
      throwInputError(path, "page 0: ImageDescription spacing=", "a positive finite number", "'" + glrecon::quoted(imagej["spacing"]) + "'");
    const double spacing = z * (imagejMm > 0 ? imagejMm : 1.0);  // without a unit, millimetres (as before)
    if (!(spacing >= kMinSpacingMm && spacing <= kMaxSpacingMm))
      throwInputError(path, "page 0: ImageDescription spacing=", "a page spacing from 1e-6 to 1e6 mm",
                      "'" + glrecon::quoted(imagej["spacing"]) + "' (" + formatNumber(spacing) + " mm)");
    image.spacing[2] = spacing;
  }
}

// The pages' size, spacing and origin, and with `pixels` their values: a projection source learns the first without
// decoding a whole stack. Two passes: every directory checked (and the data each needs bounded by the file), then,
// for the pixels, the memory checked and the pages decoded straight into the volume.
Image readTiffFile(const std::string& path, bool pixels) {
  if (!fs::is_regular_file(path)) throwInputError(path, "file", "a readable TIFF file", "no such readable file");
  Diagnostics diag;
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(options, onError, &diag);
  TIFFOpenOptionsSetWarningHandlerExtR(options, onWarning, &diag);
  std::unique_ptr<TIFF, TiffCloser> tif(TIFFOpenExt(path.c_str(), "r", options));
  TIFFOpenOptionsFree(options);
  if (!tif) throwInputError(path, "header", "a TIFF file", diag.text());
  const int fd = TIFFFileno(tif.get());
  struct stat info {};
  if (::fstat(fd, &info) != 0) throwInputError(path, "file", "a readable TIFF file", std::strerror(errno));
  const auto fileSize = static_cast<std::uint64_t>(info.st_size);

  Image image;
  std::map<std::string, std::string> imagej;
  PageLayout first;
  int pages = 0;
  double leastFileBytes = 0;
  std::uint64_t largestBuffer = 0;
  do {
    if (static_cast<std::uint64_t>(pages) >= kMaxExtent)
      throwInputError(path, "pages", "at most 1000000 pages", "more");
    const PageLayout layout = inspectPage(tif.get(), path, pages, fileSize, diag, pages ? &first : nullptr);
    if (pages == 0) {
      first = layout;
      calibrate(tif.get(), path, fd, fileSize, image, imagej);
    }
    leastFileBytes += layout.leastFileBytes;
    largestBuffer = std::max(largestBuffer, layout.bufferBytes);
    ++pages;
    diag.errors.clear();
  } while (TIFFReadDirectory(tif.get()));
  // TIFFReadDirectory returns 0 both at the end and on a damaged next directory; only the latter reports.
  if (!diag.errors.empty())
    throwInputError(path, "page " + std::to_string(pages) + " directory", "a readable IFD or the end of the file", diag.text());
  // Each strip or tile fits in the file by itself; together they must too, or pages share data (one small
  // compressed strip named by many pages could otherwise become a volume many times the file's bound).
  if (leastFileBytes > static_cast<double>(fileSize))
    throwInputError(path, "StripByteCounts/TileByteCounts of " + std::to_string(pages) + " pages",
                    "pixel data within the file's " + std::to_string(fileSize) + " bytes",
                    "at least " + formatNumber(leastFileBytes) + " bytes needed (pages share their data)");

  image.size = {static_cast<int>(first.width), static_cast<int>(first.height), pages};
  // TIFF has no origin; ImageJ's x/y/zorigin (in pixels, world = (index - origin) * spacing) carry one where
  // this writer put them. Otherwise the image is centred, so a detector's (0,0) mm point is its centre.
  const char* keys[3] = {"xorigin", "yorigin", "zorigin"};
  for (int a = 0; a < 3; ++a) {
    image.origin[a] = -0.5 * (image.size[a] - 1) * image.spacing[a];
    if (!imagej.count(keys[a])) continue;
    double o = 0;
    // The spacing read back is a 32-bit rational (2^-32 relative of the one written): an origin written at the 1e7 mm
    // bound came back at 1e7 (1 + 2e-10) and was refused (found by the Python property tests). Within that rounding
    // of the bound it is the bound.
    constexpr double kRationalSlack = 1.0 + 0x1p-30;
    if (!parseFinite(imagej[keys[a]], o) || !(std::abs(o * image.spacing[a]) <= kMaxCoordinateMm * kRationalSlack))
      throwInputError(path, std::string("page 0: ImageDescription ") + keys[a] + "=",
                      "a number of pixels placing the origin within 1e7 mm", "'" + glrecon::quoted(imagej[keys[a]]) + "'");
    image.origin[a] = std::clamp(-o * image.spacing[a], -kMaxCoordinateMm, kMaxCoordinateMm);
  }
  if (!pixels) return image;

  // At most 1e18 pixels (1e6 on each axis, checked above), 4e18 bytes: no overflow in 64 bits. The file's size
  // bounds them well below that (leastFileBytes); the memory check names the tags that ask for them.
  const std::size_t count = image.voxelCount();
  checkHostMemory(path,
                  "ImageWidth x ImageLength x pages (" + std::to_string(first.width) + " x " + std::to_string(first.height) +
                      " x " + std::to_string(pages) + ")",
                  static_cast<std::uint64_t>(count) * sizeof(float) + largestBuffer);
  image.data.reserve(count);
  // Back to the first directory; the second pass meets the directories the first checked (and checks them again,
  // in case the file changed between the passes).
  if (!TIFFSetDirectory(tif.get(), 0)) throwInputError(path, "page 0 directory", "a readable IFD", diag.text());
  for (int p = 0; p < pages; ++p) {
    if (p > 0 && !TIFFReadDirectory(tif.get()))
      throwInputError(path, "page " + std::to_string(p) + " directory", "a readable IFD (as when it was first read)", diag.text());
    const PageLayout layout = inspectPage(tif.get(), path, p, fileSize, diag, &first);
    decodePage(tif.get(), path, p, layout, diag, image.data);
    diag.errors.clear();
  }
  if (image.data.size() != count) throw std::logic_error("readTiff: decoded pixels do not match the size");
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
  checkImageToWrite(path, image);
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
