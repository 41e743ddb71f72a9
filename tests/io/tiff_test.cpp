// TIFF: every pixel type and layout a scanner writes (files made here with libtiff), the float32 writer's round
// trip and its ImageJ calibration, projection stacks of single-page files, and bad files.
#include <gtest/gtest.h>
#include <tiffio.h>

#include <sys/wait.h>
#include <zlib.h>

#include <cstring>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "test_support.h"

namespace glrecon {
namespace {

namespace fs = std::filesystem;
using test::expectError;

struct Layout {
  std::uint32_t rowsPerStrip = 0;  // 0: tiled
  std::uint32_t tile = 16;
  std::uint16_t compression = COMPRESSION_NONE;
};

// Value of pixel (x, y) of page p for a type with `bits` bits: distinct, exactly representable in float.
double pixelValue(int x, int y, int p, int bits) {
  const double v = x + 7.0 * y + 101.0 * p;
  return bits == 8 ? std::fmod(v, 256.0) : bits == 16 ? v * 3.0 : v * 0.25 - 40.0;
}

// Writes `pages` pages of w x h pixels with libtiff: 8/16-bit unsigned or 32-bit float, strips or tiles.
template <typename T>
void writeWithLibtiff(const fs::path& path, int w, int h, int pages, const Layout& layout) {
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(tif, nullptr);
  const int bits = sizeof(T) * 8;
  for (int p = 0; p < pages; ++p) {
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, std::is_floating_point_v<T> ? SAMPLEFORMAT_IEEEFP
                                            : std::is_signed_v<T>       ? SAMPLEFORMAT_INT
                                                                        : SAMPLEFORMAT_UINT);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, layout.compression);
    std::vector<T> page(static_cast<std::size_t>(w) * h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) page[static_cast<std::size_t>(y) * w + x] = static_cast<T>(pixelValue(x, y, p, bits));
    if (layout.rowsPerStrip == 0) {
      TIFFSetField(tif, TIFFTAG_TILEWIDTH, layout.tile);
      TIFFSetField(tif, TIFFTAG_TILELENGTH, layout.tile);
      std::vector<T> tile(layout.tile * layout.tile, T{0});
      for (int y0 = 0; y0 < h; y0 += layout.tile)
        for (int x0 = 0; x0 < w; x0 += layout.tile) {
          std::fill(tile.begin(), tile.end(), T{0});
          for (int y = y0; y < std::min<int>(h, y0 + layout.tile); ++y)
            for (int x = x0; x < std::min<int>(w, x0 + layout.tile); ++x)
              tile[(y - y0) * layout.tile + (x - x0)] = page[static_cast<std::size_t>(y) * w + x];
          ASSERT_GE(TIFFWriteTile(tif, tile.data(), x0, y0, 0, 0), 0);
        }
    } else {
      TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, layout.rowsPerStrip);
      for (int y = 0; y < h; ++y) ASSERT_EQ(TIFFWriteScanline(tif, page.data() + static_cast<std::size_t>(y) * w, y, 0), 1);
    }
    ASSERT_TRUE(TIFFWriteDirectory(tif));
  }
  TIFFClose(tif);
}

// A little-endian classic TIFF built byte by byte, for what libtiff's writer refuses to write (a rational n/0,
// ResolutionUnit 99) or never makes (a tile larger than the image, pages sharing one strip): `data` at offset 8,
// then one directory per page, each entry (tag, type, count, value bytes), values over 4 bytes after it.
struct Tag {
  std::uint16_t tag, type;
  std::uint32_t count;
  std::string value;
};

std::string le16(std::uint16_t v) { return std::string(reinterpret_cast<const char*>(&v), 2); }
std::string le32(std::uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
Tag shortTag(std::uint16_t tag, std::uint16_t v) { return {tag, TIFF_SHORT, 1, le16(v)}; }
Tag longTag(std::uint16_t tag, std::uint32_t v) { return {tag, TIFF_LONG, 1, le32(v)}; }
Tag rationalTag(std::uint16_t tag, std::uint32_t n, std::uint32_t d) { return {tag, TIFF_RATIONAL, 1, le32(n) + le32(d)}; }

std::string craftTiff(const std::string& data, std::vector<std::vector<Tag>> pages) {
  std::string out = "II" + le16(42) + le32(0) + data;
  std::size_t next = 4;  // where the offset of the next directory goes
  for (auto& tags : pages) {
    if (out.size() % 2) out += '\0';
    const auto ifd = static_cast<std::uint32_t>(out.size());
    std::memcpy(out.data() + next, &ifd, 4);
    std::sort(tags.begin(), tags.end(), [](const Tag& a, const Tag& b) { return a.tag < b.tag; });
    std::string extra;
    const std::size_t extraStart = ifd + 2 + 12 * tags.size() + 4;
    out += le16(static_cast<std::uint16_t>(tags.size()));
    for (const Tag& t : tags) {
      out += le16(t.tag) + le16(t.type) + le32(t.count);
      if (t.value.size() <= 4) {
        out += t.value + std::string(4 - t.value.size(), '\0');
      } else {
        out += le32(static_cast<std::uint32_t>(extraStart + extra.size()));
        extra += t.value + (t.value.size() % 2 ? std::string(1, '\0') : "");
      }
    }
    next = out.size();
    out += le32(0) + extra;
  }
  return out;
}

// The tags of an 8-bit greyscale page of w x h pixels in one strip of `bytes` bytes at `offset`.
std::vector<Tag> stripPage(std::uint32_t w, std::uint32_t h, std::uint32_t offset, std::uint32_t bytes,
                           std::uint16_t compression = COMPRESSION_NONE) {
  return {longTag(TIFFTAG_IMAGEWIDTH, w),           longTag(TIFFTAG_IMAGELENGTH, h),
          shortTag(TIFFTAG_BITSPERSAMPLE, 8),       shortTag(TIFFTAG_COMPRESSION, compression),
          shortTag(TIFFTAG_PHOTOMETRIC, 1),         longTag(TIFFTAG_STRIPOFFSETS, offset),
          shortTag(TIFFTAG_SAMPLESPERPIXEL, 1),     longTag(TIFFTAG_ROWSPERSTRIP, h),
          longTag(TIFFTAG_STRIPBYTECOUNTS, bytes)};
}

std::string deflated(const std::string& data) {
  std::vector<unsigned char> packed(compressBound(data.size()));
  uLongf size = packed.size();
  EXPECT_EQ(compress2(packed.data(), &size, reinterpret_cast<const Bytef*>(data.data()), data.size(), 9), Z_OK);
  return std::string(reinterpret_cast<const char*>(packed.data()), size);
}

// `pages` pages of w x h zeros (the most compressible image) in one strip each, with libtiff's encoder.
void writeZeros(const fs::path& path, int w, int h, int pages, std::uint16_t compression) {
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(tif, nullptr);
  const std::vector<std::uint8_t> row(w, 0);
  for (int p = 0; p < pages; ++p) {
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, compression);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, h);
    if (compression == COMPRESSION_ADOBE_DEFLATE) TIFFSetField(tif, TIFFTAG_ZIPQUALITY, 9);
    for (int y = 0; y < h; ++y) ASSERT_EQ(TIFFWriteScanline(tif, const_cast<std::uint8_t*>(row.data()), y, 0), 1);
    ASSERT_TRUE(TIFFWriteDirectory(tif));
  }
  TIFFClose(tif);
}

// A scoped environment variable (the memory cap).
struct EnvVar {
  std::string name;
  EnvVar(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~EnvVar() { unsetenv(name.c_str()); }
};

template <typename T>
void expectReadsBack(const fs::path& path, int w, int h, int pages) {
  const Image im = readTiff(path.string());
  ASSERT_EQ(im.size, (std::array<int, 3>{w, h, pages}));
  const int bits = sizeof(T) * 8;
  int wrong = 0;
  for (int p = 0; p < pages; ++p)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        if (im.at(x, y, p) != static_cast<float>(static_cast<T>(pixelValue(x, y, p, bits)))) ++wrong;
  EXPECT_EQ(wrong, 0) << path;
  // No resolution tags: 1 mm pixels, centred (TIFF has no origin).
  EXPECT_EQ(im.spacing, (std::array<double, 3>{1.0, 1.0, 1.0}));
  EXPECT_EQ(im.origin[0], -0.5 * (w - 1));
}

TEST(Tiff, ReadsEveryPixelTypeInStripsAndTiles) {
  const auto dir = test::scratchDir();
  // 21 x 13: neither a multiple of the 16-pixel tiles (edge tiles are padded) nor of the 5-row strips.
  const int w = 21, h = 13;
  const std::vector<std::pair<std::string, Layout>> layouts = {
      {"strip1", {1, 16, COMPRESSION_NONE}},  {"strip5", {5, 16, COMPRESSION_NONE}},
      {"whole", {13, 16, COMPRESSION_NONE}},  {"tiled", {0, 16, COMPRESSION_NONE}},
      {"lzw", {5, 16, COMPRESSION_LZW}},      {"tiled-deflate", {0, 16, COMPRESSION_ADOBE_DEFLATE}}};
  for (const auto& [name, layout] : layouts) {
    SCOPED_TRACE(name);
    writeWithLibtiff<std::uint8_t>(dir / (name + "-u8.tif"), w, h, 3, layout);
    writeWithLibtiff<std::uint16_t>(dir / (name + "-u16.tif"), w, h, 3, layout);
    writeWithLibtiff<float>(dir / (name + "-f32.tif"), w, h, 3, layout);
    expectReadsBack<std::uint8_t>(dir / (name + "-u8.tif"), w, h, 3);
    expectReadsBack<std::uint16_t>(dir / (name + "-u16.tif"), w, h, 3);
    expectReadsBack<float>(dir / (name + "-f32.tif"), w, h, 3);
    // Less common, read as well: signed 16-bit (some detectors) and 64-bit float.
    writeWithLibtiff<std::int16_t>(dir / (name + "-i16.tif"), w, h, 2, layout);
    writeWithLibtiff<double>(dir / (name + "-f64.tif"), w, h, 2, layout);
    expectReadsBack<std::int16_t>(dir / (name + "-i16.tif"), w, h, 2);
    expectReadsBack<double>(dir / (name + "-f64.tif"), w, h, 2);
  }
}

Image ramp(std::array<int, 3> size) {
  Image im(size, {0.5, 1.25, 3.0}, {-10.5, 2.0, 1e-3});
  for (std::size_t i = 0; i < im.data.size(); ++i) im.data[i] = static_cast<float>(i) * 0.37f - 5.0f;
  return im;
}

TEST(Tiff, FloatVolumeRoundTripWithImageJCalibration) {
  const auto dir = test::scratchDir();
  const Image original = ramp({7, 5, 4});
  writeTiff((dir / "v.tif").string(), original, false);
  const Image back = readTiff((dir / "v.tif").string());
  EXPECT_EQ(back.size, original.size);
  EXPECT_EQ(back.data, original.data);  // float32 stored as is: exact
  // In-plane spacing goes through the resolution tag, 1/spacing as a 32-bit rational (2/1 and 4/5 here, exact),
  // read from the directory as written (not as libtiff's float): one rounded division n/d, one more for
  // 1/(n/d), each 2^-53 relative. The origin is -xorigin * spacing, xorigin printed with 17 digits (its double
  // exactly): one more rounding. The page spacing is the description's 17 digits: exact up to double rounding.
  const double inPlane = 4e-16, page = 4e-16;
  for (int a = 0; a < 3; ++a) {
    const double tolerance = a < 2 ? inPlane : page;
    EXPECT_NEAR(back.spacing[a], original.spacing[a], tolerance * original.spacing[a]) << a;
    EXPECT_NEAR(back.origin[a], original.origin[a], tolerance * std::abs(original.origin[a])) << a;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);  // no temporary left

  // What Fiji reads: libtiff sees 4 float pages with resolution 2 and 0.8 pixels per unit, unit none, and the
  // ImageJ description; the pages lie back to back (ImageJ reads images=N as one block from the first offset).
  TIFF* tif = TIFFOpen((dir / "v.tif").c_str(), "r");
  ASSERT_NE(tif, nullptr);
  EXPECT_EQ(TIFFNumberOfDirectories(tif), 4);
  char* description = nullptr;
  ASSERT_TRUE(TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &description));
  EXPECT_EQ(std::string(description).rfind("ImageJ=", 0), 0u);
  for (const char* key : {"\nimages=4\n", "\nslices=4\n", "\nunit=mm\n", "\nspacing=3\n"})
    EXPECT_NE(std::string(description).find(key), std::string::npos) << key << " in " << description;
  float xres = 0, yres = 0;
  std::uint16_t unit = 0, format = 0, bits = 0;
  TIFFGetField(tif, TIFFTAG_XRESOLUTION, &xres);
  TIFFGetField(tif, TIFFTAG_YRESOLUTION, &yres);
  TIFFGetField(tif, TIFFTAG_RESOLUTIONUNIT, &unit);
  TIFFGetField(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  EXPECT_EQ(xres, 2.0f);
  EXPECT_EQ(yres, 0.8f);
  EXPECT_EQ(unit, RESUNIT_NONE);
  EXPECT_EQ(format, SAMPLEFORMAT_IEEEFP);
  EXPECT_EQ(bits, 32);
  std::uint64_t previousEnd = 0;
  for (int p = 0; p < 4; ++p) {
    ASSERT_TRUE(TIFFSetDirectory(tif, static_cast<tdir_t>(p)));
    std::uint64_t* offsets = nullptr;
    ASSERT_TRUE(TIFFGetField(tif, TIFFTAG_STRIPOFFSETS, &offsets));
    if (p > 0) EXPECT_EQ(offsets[0], previousEnd) << "page " << p;
    previousEnd = offsets[0] + 7 * 5 * 4;
    std::vector<float> row(7);
    ASSERT_EQ(TIFFReadScanline(tif, row.data(), 2, 0), 1);
    EXPECT_EQ(row[3], original.at(3, 2, p));
  }
  TIFFClose(tif);

  // writeImage picks the format by name; a second write is refused unless asked.
  expectError<InputError>([&] { writeImage((dir / "v.tif").string(), original, false); }, {"v.tif", "output", "an existing file"});
  writeImage((dir / "v.tif").string(), ramp({3, 3, 1}), true);
  EXPECT_EQ(readImage((dir / "v.tif").string()).size, (std::array<int, 3>{3, 3, 1}));
}

// An origin at the 1e7 mm coordinate bound, with a spacing that no 32-bit rational holds exactly (103 mm: its
// resolution 1/103 is rounded to 2^-32 relative), reads back: it came back at 1e7 (1 + 2e-10) and was refused as
// beyond the bound (the Python property tests found it). Within that rounding it is the bound itself.
TEST(Tiff, AnOriginAtTheCoordinateBoundReadsBack) {
  const auto dir = test::scratchDir();
  Image original({1, 1, 1}, {1.0, 103.0, 1.0}, {0.0, 1e7, -1e7});
  original.data = {0.5f};
  writeTiff((dir / "edge.tif").string(), original, false);
  const Image back = readTiff((dir / "edge.tif").string());
  EXPECT_EQ(back.origin[1], 1e7);
  EXPECT_EQ(back.origin[2], -1e7);
  EXPECT_NEAR(back.spacing[1], 103.0, 103.0 * 0x1p-31);
}

TEST(Tiff, StackOfSinglePageFilesInNaturalOrder) {
  const auto dir = test::scratchDir();
  fs::create_directories(dir / "scan");
  // Pages 0..11 written as p_0.tif .. p_11.tif: natural order puts p_2 before p_10.
  for (int p = 0; p < 12; ++p) {
    Image one({4, 3, 1}, {0.5, 0.5, 1.0}, {-0.75, -0.5, 0.0});
    for (float& v : one.data) v = static_cast<float>(p);
    writeTiff((dir / "scan" / ("p_" + std::to_string(p) + ".tif")).string(), one, false);
  }
  for (const std::string spec : {(dir / "scan").string(), (dir / "scan" / "*.tif").string()}) {
    const Image stack = readProjectionStack(spec);
    ASSERT_EQ(stack.size, (std::array<int, 3>{4, 3, 12}));
    for (int p = 0; p < 12; ++p) EXPECT_EQ(stack.at(1, 1, p), static_cast<float>(p)) << spec;
    EXPECT_EQ(stack.spacing[0], 0.5);
    EXPECT_EQ(stack.origin[0], -0.75);
  }
  // A file of another size in the stack names itself and both sizes.
  Image odd({5, 3, 1}, {0.5, 0.5, 1.0}, {0, 0, 0});
  writeTiff((dir / "scan" / "p_12.tif").string(), odd, false);
  expectError<InputError>([&] { readProjectionStack((dir / "scan").string()); }, {"p_12.tif", "DimSize", "4 x 3", "5 x 3"});
}

TEST(Tiff, BadFilesNameFileFieldExpectedAndFound) {
  const auto dir = test::scratchDir();
  auto path = [&](const char* n) { return (dir / n).string(); };
  writeWithLibtiff<std::uint16_t>(dir / "good.tif", 32, 8, 1, {8, 16, COMPRESSION_NONE});
  const std::string good = test::readText(dir / "good.tif");

  // A file whose strip runs past its end: the directory (kept whole) says 512 bytes of pixels, 200 remain.
  const std::uint32_t ifd = *reinterpret_cast<const std::uint32_t*>(good.data() + 4);
  TIFF* tif = TIFFOpen(path("good.tif").c_str(), "r");
  ASSERT_NE(tif, nullptr);
  std::uint64_t* offsets = nullptr;
  TIFFGetField(tif, TIFFTAG_STRIPOFFSETS, &offsets);
  const std::uint64_t dataStart = offsets[0];
  TIFFClose(tif);
  ASSERT_GT(ifd, dataStart + 200);
  {
    // Rebuild: header, 200 bytes of data, then the original IFD relocated right after them.
    std::string rebuilt = good.substr(0, 8) + good.substr(dataStart, 200);
    const std::uint32_t newIfd = static_cast<std::uint32_t>(rebuilt.size());
    std::memcpy(rebuilt.data() + 4, &newIfd, 4);
    // Strip offset 8 (the data now starts right after the header); the IFD's entries are otherwise unchanged.
    std::string ifdBytes = good.substr(ifd);
    const std::uint16_t n = *reinterpret_cast<const std::uint16_t*>(ifdBytes.data());
    for (std::uint16_t e = 0; e < n; ++e) {
      char* entry = ifdBytes.data() + 2 + 12 * e;
      std::uint16_t tag;
      std::memcpy(&tag, entry, 2);
      if (tag == TIFFTAG_STRIPOFFSETS) {
        const std::uint32_t eight = 8;
        std::memcpy(entry + 8, &eight, 4);
      }
    }
    rebuilt += ifdBytes;
    test::writeText(dir / "truncated.tif", rebuilt);
  }
  expectError<InputError>([&] { readTiff(path("truncated.tif")); },
                          {"truncated.tif", "page 0", "strip 0", "StripByteCounts", "expected 512 bytes of uncompressed pixels",
                           "found 338 bytes in the file", "truncated"});

  // Cut inside the header's directory: libtiff's own message ends up in the error, not on stderr.
  test::writeText(dir / "cut.tif", good.substr(0, ifd + 6));
  expectError<InputError>([&] { readTiff(path("cut.tif")); }, {"cut.tif", "expected", "found"});

  // Data that is no Deflate stream: libtiff's own words, inside the error.
  test::writeText(dir / "garbage.tif", craftTiff(std::string(64, '\xff'), {stripPage(16, 4, 8, 64, COMPRESSION_ADOBE_DEFLATE)}));
  expectError<InputError>([&] { readTiff(path("garbage.tif")); },
                          {"garbage.tif", "page 0: strip 0", "expected 64 decoded bytes", "unreadable data (", "Decoding error"});

  test::writeText(dir / "text.tif", "this is not a TIFF file at all\n");
  expectError<InputError>([&] { readTiff(path("text.tif")); }, {"text.tif", "header", "expected a TIFF file", "found"});
  expectError<InputError>([&] { readTiff(path("none.tif")); }, {"none.tif", "no such readable file"});

  // Pages of different sizes in one file.
  {
    TIFF* t = TIFFOpen(path("mixed.tif").c_str(), "w");
    for (int p = 0; p < 2; ++p) {
      const int w = p == 0 ? 4 : 6;
      TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
      TIFFSetField(t, TIFFTAG_IMAGELENGTH, 2);
      TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
      TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
      TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
      std::vector<std::uint8_t> row(w, 1);
      for (int y = 0; y < 2; ++y) TIFFWriteScanline(t, row.data(), y, 0);
      TIFFWriteDirectory(t);
    }
    TIFFClose(t);
  }
  expectError<InputError>([&] { readTiff(path("mixed.tif")); }, {"mixed.tif", "page 1", "ImageWidth x ImageLength", "4 x 2", "6 x 2"});

  // RGB is not a projection.
  {
    TIFF* t = TIFFOpen(path("rgb.tif").c_str(), "w");
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 2);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 1);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    std::uint8_t row[6] = {};
    TIFFWriteScanline(t, row, 0, 0);
    TIFFClose(t);
  }
  expectError<InputError>([&] { readTiff(path("rgb.tif")); }, {"rgb.tif", "SamplesPerPixel", "1 (greyscale)", "3"});

  // A failed write leaves nothing: a name that is not TIFF, a missing directory.
  expectError<InputError>([&] { writeTiff(path("v.mha"), ramp({2, 2, 2}), false); }, {"v.mha", "output file name", ".tif"});
  expectError<InputError>([&] { writeTiff(path("missing/v.tif"), ramp({2, 2, 2}), false); }, {"missing/v.tif", "output directory"});
  EXPECT_FALSE(fs::exists(dir / "v.mha"));
}

// Issue 20's inputs, each once killed in a 3 GiB memory cgroup: a directory promising more pixels than its strips
// or tiles can hold is refused, naming the strip or tile, before anything is allocated for it (readTiffHeader too,
// so a projection source refuses it before any work).
TEST(Tiff, DirectoriesPromisingMoreThanTheFileAreRefusedBeforeAllocating) {
  const auto dir = test::scratchDir();
  auto path = [&](const char* n) { return (dir / n).string(); };
  // 36 KB declaring 65535 x 65535 pixels (4 GiB, 16 GiB as floats) in one uncompressed strip.
  test::writeText(dir / "wide.tif", craftTiff(std::string(36000, '\x11'), {stripPage(65535, 65535, 8, 36000)}));
  for (auto read : {readTiff, readTiffHeader})
    expectError<InputError>([&] { read(path("wide.tif")); },
                            {"wide.tif", "page 0: strip 0", "StripByteCounts", "expected 65535 bytes of uncompressed pixels",
                             "bytes in the file", "truncated"});
  // 96 x 96 pixels in one 65536 x 65536 tile (4 GiB decoded) of 9216 bytes.
  {
    std::vector<Tag> tags = stripPage(96, 96, 0, 0);
    tags.erase(std::remove_if(tags.begin(), tags.end(), [](const Tag& t) {
                 return t.tag == TIFFTAG_STRIPOFFSETS || t.tag == TIFFTAG_STRIPBYTECOUNTS || t.tag == TIFFTAG_ROWSPERSTRIP;
               }), tags.end());
    for (const Tag& t : {longTag(TIFFTAG_TILEWIDTH, 65536), longTag(TIFFTAG_TILELENGTH, 65536),
                         longTag(TIFFTAG_TILEOFFSETS, 8), longTag(TIFFTAG_TILEBYTECOUNTS, 9216)})
      tags.push_back(t);
    test::writeText(dir / "tile.tif", craftTiff(std::string(9216, '\x22'), {tags}));
  }
  expectError<InputError>([&] { readTiff(path("tile.tif")); },
                          {"tile.tif", "page 0: tile 0", "TileByteCounts", "4294967296 bytes of uncompressed pixels",
                           "found 9216 bytes"});
  // Deflate: 4 KiB of zeros deflate to a few bytes, which zlib's 1032:1 cannot stretch to 4 GiB.
  {
    const std::string packed = deflated(std::string(4096, '\0'));
    test::writeText(dir / "deflate.tif",
                    craftTiff(packed, {stripPage(65535, 65535, 8, static_cast<std::uint32_t>(packed.size()),
                                                 COMPRESSION_ADOBE_DEFLATE)}));
  }
  expectError<InputError>([&] { readTiff(path("deflate.tif")); },
                          {"deflate.tif", "page 0: strip 0", "bytes of Deflate data for 4294836225 decoded bytes",
                           "at most 1032 bytes per byte"});
  // A strip cut by the end of the file (libtiff replaces the count, larger than the file, by the strip's size).
  test::writeText(dir / "cut.tif", craftTiff(std::string(100, '\x33'), {stripPage(64, 4, 8, 1 << 20)}));
  expectError<InputError>([&] { readTiff(path("cut.tif")); },
                          {"cut.tif", "strip 0", "expected 256 bytes", "256 declared at offset 8", "truncated"});
  // Three pages naming the same 1024-byte strip: each fits, together they are three times the file's pixels.
  test::writeText(dir / "shared.tif",
                  craftTiff(std::string(1024, '\x44'), {stripPage(64, 16, 8, 1024), stripPage(64, 16, 8, 1024),
                                                        stripPage(64, 16, 8, 1024)}));
  expectError<InputError>([&] { readTiff(path("shared.tif")); },
                          {"shared.tif", "StripByteCounts/TileByteCounts of 3 pages", "at least 3072 bytes",
                           "pages share their data"});
  // One page of it reads (the layout itself is fine).
  test::writeText(dir / "one.tif", craftTiff(std::string(1024, '\x44'), {stripPage(64, 16, 8, 1024)}));
  const Image one = readTiff(path("one.tif"));
  EXPECT_EQ(one.size, (std::array<int, 3>{64, 16, 1}));
  EXPECT_EQ(test::values(one.data), std::vector<float>(1024, 0x44));
}

// The bounds are the codecs' true largest ratios, not tighter: libtiff's encoders at their best (an image of zeros,
// deflate at level 9) still read. PackBits reaches its bound exactly (128 zeros in 2 bytes, 64:1), Deflate and
// ZSTD come close (4 MiB of zeros: about 1030:1 of 1032, about 30000:1 of 32768).
TEST(Tiff, TheMostCompressibleImagesStillRead) {
  const auto dir = test::scratchDir();
  const int w = 2048, h = 2048;
  for (const auto& [name, compression] : std::vector<std::pair<std::string, std::uint16_t>>{
           {"packbits", COMPRESSION_PACKBITS}, {"lzw", COMPRESSION_LZW}, {"deflate", COMPRESSION_ADOBE_DEFLATE},
           {"zstd", COMPRESSION_ZSTD}, {"lzma", COMPRESSION_LZMA}}) {
    SCOPED_TRACE(name);
    if (!TIFFIsCODECConfigured(compression)) continue;  // libtiff built without it: nothing to read either
    const fs::path file = dir / (name + ".tif");
    writeZeros(file, w, h, 1, compression);
    const Image im = readTiff(file.string());
    EXPECT_EQ(im.size, (std::array<int, 3>{w, h, 1}));
    EXPECT_EQ(std::count(im.data.begin(), im.data.end(), 0.0f), w * h);
    if (compression == COMPRESSION_PACKBITS) EXPECT_LT(fs::file_size(file), w * h / 64 + 1024);  // at the bound
  }
}

// A file within every codec's bound whose float volume exceeds the memory available: the error names the file and
// the tags, not a generic out-of-memory, and nothing is allocated.
TEST(Tiff, VolumeBeyondTheMemoryAvailableNamesTheTags) {
  const auto dir = test::scratchDir();
  writeZeros(dir / "stack.tif", 1024, 1024, 4, COMPRESSION_ADOBE_DEFLATE);  // 16 MiB of floats from about 16 KB
  {
    const EnvVar cap("GLRECON_MEMORY_LIMIT_MB", "8");
    expectError<InputError>([&] { readTiff((dir / "stack.tif").string()); },
                            {"stack.tif", "ImageWidth x ImageLength x pages (1024 x 1024 x 4)", "expected at most 8.0 MiB",
                             "MiB needed"});
    // The header alone needs no memory for pixels.
    EXPECT_EQ(readTiffHeader((dir / "stack.tif").string()).size, (std::array<int, 3>{1024, 1024, 4}));
  }
  EXPECT_EQ(readTiff((dir / "stack.tif").string()).data.size(), 4u * 1024 * 1024);  // and reads without the cap
}

// Resolution tags and ImageJ's calibration present but unusable are errors naming the file, the tag, what was
// expected and what was found; before, each became 1 mm pixels without a word (a 384 mm detector read as 96 mm).
TEST(Tiff, UnusableResolutionTagsAreRefused) {
  const auto dir = test::scratchDir();
  const auto page = [](std::vector<Tag> extra) {
    std::vector<Tag> tags = stripPage(96, 1, 8, 96);
    tags.insert(tags.end(), extra.begin(), extra.end());
    return craftTiff(std::string(96, '\x05'), {tags});
  };
  const Tag cm = shortTag(TIFFTAG_RESOLUTIONUNIT, RESUNIT_CENTIMETER);
  const auto description = [](const std::string& text) {
    return Tag{TIFFTAG_IMAGEDESCRIPTION, TIFF_ASCII, static_cast<std::uint32_t>(text.size() + 1), text + '\0'};
  };
  // Usable: 2.5 pixels per cm, 4 mm pixels, a 384 mm detector; absent tags leave 1 mm.
  test::writeText(dir / "good.tif", page({rationalTag(TIFFTAG_XRESOLUTION, 5, 2), rationalTag(TIFFTAG_YRESOLUTION, 5, 2), cm}));
  EXPECT_EQ(readTiff((dir / "good.tif").string()).spacing, (std::array<double, 3>{4.0, 4.0, 1.0}));
  // The same through libtiff's writer in big-endian and BigTIFF files (the tags are read from the directory too).
  for (const char* mode : {"wb", "w8"}) {
    const fs::path file = dir / (std::string(mode) + ".tif");
    TIFF* t = TIFFOpen(file.c_str(), mode);
    ASSERT_NE(t, nullptr);
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 2);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 1);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, RESUNIT_CENTIMETER);
    TIFFSetField(t, TIFFTAG_XRESOLUTION, 2.5);
    TIFFSetField(t, TIFFTAG_YRESOLUTION, 0.5);
    const std::uint16_t row[2] = {1, 2};
    TIFFWriteScanline(t, const_cast<std::uint16_t*>(row), 0, 0);
    TIFFClose(t);
    EXPECT_EQ(readTiff(file.string()).spacing, (std::array<double, 3>{4.0, 20.0, 1.0})) << mode;
  }
  test::writeText(dir / "bare.tif", page({}));
  EXPECT_EQ(readTiff((dir / "bare.tif").string()).spacing, (std::array<double, 3>{1.0, 1.0, 1.0}));
  // ImageJ's micrometres with ResolutionUnit none: 0.25 pixels per um, 4 um = 0.004 mm pixels, 2.5 um pages.
  test::writeText(dir / "imagej.tif",
                  page({rationalTag(TIFFTAG_XRESOLUTION, 1, 4), rationalTag(TIFFTAG_YRESOLUTION, 1, 4),
                        shortTag(TIFFTAG_RESOLUTIONUNIT, RESUNIT_NONE), description("ImageJ=1.54f\nunit=micron\nspacing=2.5\n")}));
  const Image calibrated = readTiff((dir / "imagej.tif").string());
  EXPECT_DOUBLE_EQ(calibrated.spacing[0], 0.004);
  EXPECT_DOUBLE_EQ(calibrated.spacing[2], 0.0025);

  struct Case {
    const char* name;
    std::vector<Tag> tags;
    std::vector<std::string> words;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto doubleTag = [](std::uint16_t tag, double v) {
    return Tag{tag, TIFF_DOUBLE, 1, std::string(reinterpret_cast<const char*>(&v), 8)};
  };
  const std::int32_t minusFive = -5, one = 1;
  const Tag negative{TIFFTAG_XRESOLUTION, TIFF_SRATIONAL, 1,
                     std::string(reinterpret_cast<const char*>(&minusFive), 4) + std::string(reinterpret_cast<const char*>(&one), 4)};
  const std::string positive = "expected one positive finite number of pixels per unit";
  const std::vector<Case> cases = {
      {"zero", {rationalTag(TIFFTAG_XRESOLUTION, 0, 1), cm}, {"page 0: XResolution", positive, "found 0/1"}},
      {"over_zero", {rationalTag(TIFFTAG_YRESOLUTION, 5, 0), cm}, {"page 0: YResolution", positive, "found 5/0"}},
      {"negative", {negative, cm}, {"page 0: XResolution", positive, "found -5/1"}},
      {"nan", {doubleTag(TIFFTAG_XRESOLUTION, nan), cm}, {"page 0: XResolution", positive, "found nan"}},
      {"infinite", {doubleTag(TIFFTAG_XRESOLUTION, inf), cm}, {"page 0: XResolution", positive, "found inf"}},
      {"two_values", {Tag{TIFFTAG_XRESOLUTION, TIFF_RATIONAL, 2, le32(5) + le32(2) + le32(5) + le32(2)}, cm},
       {"page 0: XResolution", positive, "5/2 (2 values)"}},
      // 1 pixel per 4294967295 cm: 4.3e10 mm pixels, beyond 1e6 mm.
      {"far", {rationalTag(TIFFTAG_XRESOLUTION, 1, 4294967295u), cm},
       {"page 0: XResolution", "pixel spacing from 1e-6 to 1e6 mm", "1/4294967295 pixels per centimetre"}},
      {"unit99", {rationalTag(TIFFTAG_XRESOLUTION, 5, 2), shortTag(TIFFTAG_RESOLUTIONUNIT, 99)},
       {"page 0: ResolutionUnit", "expected 1 (none), 2 (inch) or 3 (centimetre)", "found 99"}},
      {"furlong", {shortTag(TIFFTAG_RESOLUTIONUNIT, RESUNIT_NONE), description("ImageJ=1.54f\nunit=furlong\n")},
       {"page 0: ImageDescription unit=", "a length unit", "found 'furlong'"}},
      {"spacing", {description("ImageJ=1.54f\nunit=mm\nspacing=-0.5\n")},
       {"page 0: ImageDescription spacing=", "a positive finite number", "found '-0.5'"}},
      {"origin", {description("ImageJ=1.54f\nxorigin=12abc\n")},
       {"page 0: ImageDescription xorigin=", "found '12abc'"}},
      // Past the 1e7 mm bound by more than a rational's rounding (1 mm pixels: 2e7 mm).
      {"origin beyond the bound", {description("ImageJ=1.54f\nxorigin=2e7\n")},
       {"page 0: ImageDescription xorigin=", "within 1e7 mm", "found '2e7'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path file = dir / (std::string(c.name) + ".tif");
    test::writeText(file, page(c.tags));
    try {
      readTiff(file.string());
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(file.string() + ": ", 0), 0u) << message;
      for (const std::string& w : c.words) EXPECT_NE(message.find(w), std::string::npos) << "'" << w << "' not in: " << message;
    }
  }
}

// Text from the file reaches a message escaped (glrecon::quoted): an ImageJ unit holding a terminal escape.
TEST(Tiff, DescriptionTextIsQuotedInMessages) {
  const auto dir = test::scratchDir();
  std::vector<Tag> tags = stripPage(4, 1, 8, 4);
  const std::string text = "ImageJ=1.54f\nunit=\x1b[31mred\n";
  tags.push_back(Tag{TIFFTAG_IMAGEDESCRIPTION, TIFF_ASCII, static_cast<std::uint32_t>(text.size() + 1), text + '\0'});
  test::writeText(dir / "escape.tif", craftTiff("abcd", {tags}));
  try {
    readTiff((dir / "escape.tif").string());
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'\\x1B[31mred'"), std::string::npos) << message;
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  }
}

// The command line with TIFF in and out, as a scanner's output folder would be used: the same numbers as the
// MetaImage path, bit for bit (float32 pages hold the same floats; 8 mm pixels and the centred origin pass the
// float resolution tag exactly), and a bad TIFF fails naming itself, leaving no output.
int runCli(const fs::path& dir, const std::string& arguments, std::string* output = nullptr) {
  const fs::path log = dir / "cli.log";
  const std::string command = std::string("cd '") + dir.string() + "' && '" + GLRECON_CLI_PATH + "' " + arguments + " > '" +
                              log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  if (output) *output = test::readText(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Tiff, CliFdkReadsTiffStacksWithFlatAndDarkAndWritesTiff) {
  const auto dir = test::scratchDir();
  ASSERT_EQ(runCli(dir, "phantom -o scan --projections 24 --detector 32 --detector-spacing 8 --density-scale 0.01 -q"), 0);
  // Raw intensities as a detector reports them, in float pages; flat 4000 (16-bit), dark 100 (8-bit).
  Image p = readMetaImage((dir / "scan" / "projections.mha").string());
  for (float& x : p.data) x = static_cast<float>(100.0 + 3900.0 * std::exp(-x));
  Image flat({32, 32, 1}, {p.spacing[0], p.spacing[1], 1.0}, {p.origin[0], p.origin[1], 0.0}), dark = flat;
  std::fill(flat.data.begin(), flat.data.end(), 4000.0f);
  std::fill(dark.data.begin(), dark.data.end(), 100.0f);
  writeMetaImage((dir / "raw.mha").string(), p, false);
  writeMetaImage((dir / "flat.mha").string(), flat, false);
  writeMetaImage((dir / "dark.mha").string(), dark, false);
  fs::create_directories(dir / "tif");
  for (int k = 0; k < p.size[2]; ++k) {
    Image one({32, 32, 1}, {p.spacing[0], p.spacing[1], 1.0}, {p.origin[0], p.origin[1], 0.0});
    std::copy(p.slice(k), p.slice(k) + p.sliceStride(), one.data.begin());
    writeTiff((dir / "tif" / ("proj_" + std::to_string(k) + ".tif")).string(), one, false);
  }
  Layout strips{4, 16, COMPRESSION_LZW};
  // libtiff-written flat and dark: integer pages without any calibration (centred, 1 mm), which is fine for
  // them since only their pixel counts must match the projections'.
  {
    TIFF* t = TIFFOpen((dir / "flat.tif").c_str(), "w");
    ASSERT_NE(t, nullptr);
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 32);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 32);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_COMPRESSION, strips.compression);
    std::vector<std::uint16_t> row(32, 4000);
    for (int y = 0; y < 32; ++y) TIFFWriteScanline(t, row.data(), y, 0);
    TIFFClose(t);
    t = TIFFOpen((dir / "dark.tif").c_str(), "w");
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 32);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 32);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    std::vector<std::uint8_t> row8(32, 100);
    for (int y = 0; y < 32; ++y) TIFFWriteScanline(t, row8.data(), y, 0);
    TIFFClose(t);
  }
  const std::string grid = " --size 16 --spacing 16 -q";
  std::string out;
  ASSERT_EQ(runCli(dir, "fdk -g scan/geometry.xml -p raw.mha --flat flat.mha --dark dark.mha -o a.mha" + grid, &out), 0) << out;
  ASSERT_EQ(runCli(dir, "fdk -g scan/geometry.xml -p 'tif/*.tif' --flat flat.tif --dark dark.tif -o b.tif" + grid, &out), 0) << out;
  const Image a = readMetaImage((dir / "a.mha").string()), b = readTiff((dir / "b.tif").string());
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.origin, b.origin);  // -(16 - 1) / 2 * 16 = -120: exact through xorigin = 7.5
  EXPECT_GT(a.at(8, 8, 8), 0.008f);  // the phantom's brain (0.0102), not zeros

  // The slice command reads TIFF volumes too.
  ASSERT_EQ(runCli(dir, "slice -i b.tif -o b.png --axis y", &out), 0) << out;
  EXPECT_TRUE(fs::exists(dir / "b.png"));

  // A truncated projection file among the pages: the error names it and no volume is written.
  const std::string whole = test::readText(dir / "tif" / "proj_5.tif");
  test::writeText(dir / "tif" / "proj_5.tif", whole.substr(0, whole.size() - 1000));
  EXPECT_EQ(runCli(dir, "fdk -g scan/geometry.xml -p 'tif/*.tif' --flat flat.tif --dark dark.tif -o c.tif" + grid, &out), 1);
  EXPECT_NE(out.find("proj_5.tif"), std::string::npos) << out;
  EXPECT_NE(out.find("expected"), std::string::npos) << out;
  EXPECT_NE(out.find("strip 0 (StripOffsets/StripByteCounts)"), std::string::npos) << out;
  EXPECT_NE(out.find("truncated"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "libtiff printed on its own: " << out;
  EXPECT_FALSE(fs::exists(dir / "c.tif"));
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
}

}  // namespace
}  // namespace glrecon
