// MetaImage, projection stacks, PNG slices, atomic output.
#include <gtest/gtest.h>
#include <png.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "test_support.h"

namespace glrecon {
namespace {

namespace fs = std::filesystem;
using test::expectError;

Image ramp(std::array<int, 3> size) {
  Image im(size, {0.5, 1.25, 3.0}, {-10.5, 2.0, 1e-3});
  for (std::size_t i = 0; i < im.data.size(); ++i) im.data[i] = static_cast<float>(i) * 0.37f - 5.0f;
  return im;
}

std::string header(const std::string& dims, const std::string& type, const std::string& extra = "") {
  return "ObjectType = Image\nNDims = " + std::to_string(std::count(dims.begin(), dims.end(), ' ') + 1) +
         "\nDimSize = " + dims + "\n" + extra + "ElementType = " + type + "\nElementDataFile = LOCAL\n";
}

template <typename T>
std::string bytesOf(const std::vector<T>& values, bool swap = false) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  if (swap)
    for (std::size_t i = 0; i < values.size(); ++i) std::reverse(out.begin() + i * sizeof(T), out.begin() + (i + 1) * sizeof(T));
  return out;
}

std::vector<fs::path> filesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(MetaImage, RoundTripMhaAndMhd) {
  const auto dir = test::scratchDir();
  const Image original = ramp({5, 4, 3});
  for (const char* name : {"v.mha", "v.mhd"}) {
    writeMetaImage((dir / name).string(), original, false);
    const Image back = readMetaImage((dir / name).string());
    EXPECT_EQ(back.size, original.size);
    EXPECT_EQ(back.spacing, original.spacing);  // written with 17 digits: exact
    EXPECT_EQ(back.origin, original.origin);
    EXPECT_EQ(back.data, original.data);
  }
  EXPECT_TRUE(fs::exists(dir / "v.raw"));
  EXPECT_EQ(filesIn(dir), (std::vector<fs::path>{"v.mha", "v.mhd", "v.raw"}));  // no temporary files left
}

// fdk reads the volume back straight into the mapped .mha (VolumeFileWriter::mappedVolume), which needs its voxels
// float-aligned: the header pads itself to a multiple of 4 bytes, whatever the digits of spacing and origin, and
// reads back the same.
TEST(MetaImage, HeaderLengthIsAMultipleOfFourAndReadsBack) {
  const fs::path dir = test::scratchDir() / "mha-align";
  fs::remove_all(dir);
  fs::create_directories(dir);
  int n = 0;
  for (const double spacing : {1.0, 0.5, 0.123456789, 12.75})
    for (const double origin : {0.0, -1.5, 3.14159265358979, -1234.5678})
      for (const int nx : {3, 17, 128}) {
        Image image(VolumeGrid{{nx, 2, 2}, {spacing, spacing * 2, 1.0}, {origin, 0.25, -origin}});
        for (std::size_t i = 0; i < image.data.size(); ++i) image.data[i] = static_cast<float>(i) - 3.5f;
        const fs::path path = dir / ("v" + std::to_string(n++) + ".mha");
        writeMetaImage(path.string(), image, false);
        EXPECT_EQ((fs::file_size(path) - image.data.size() * sizeof(float)) % 4, 0u) << path;
        const Image back = readMetaImage(path.string());
        EXPECT_EQ(back.data, image.data);
        EXPECT_EQ(back.spacing, image.spacing);
        EXPECT_EQ(back.origin, image.origin);
      }
}

TEST(MetaImage, ReadsDetectorTypesByteOrdersAndCompression) {
  const auto dir = test::scratchDir();
  test::writeText(dir / "u16.mha", header("3 1", "MET_USHORT") + bytesOf<std::uint16_t>({0, 1000, 65535}));
  EXPECT_EQ(test::values(readMetaImage((dir / "u16.mha").string()).data), (std::vector<float>{0, 1000, 65535}));
  test::writeText(dir / "s16.mha", header("2 1", "MET_SHORT", "BinaryDataByteOrderMSB = True\n") + bytesOf<std::int16_t>({-300, 7}, true));
  EXPECT_EQ(test::values(readMetaImage((dir / "s16.mha").string()).data), (std::vector<float>{-300, 7}));
  test::writeText(dir / "f64.mha", header("2 1 1", "MET_DOUBLE") + bytesOf<double>({0.25, -1e3}));
  EXPECT_EQ(test::values(readMetaImage((dir / "f64.mha").string()).data), (std::vector<float>{0.25f, -1000.0f}));
  // zlib-compressed, as ITK writes with compression on.
  const std::string raw = bytesOf<float>({1.5f, 2.5f, 3.5f, 4.5f});
  std::string packed(compressBound(raw.size()), '\0');
  uLongf packedSize = packed.size();
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(packed.data()), &packedSize, reinterpret_cast<const Bytef*>(raw.data()), raw.size()), Z_OK);
  packed.resize(packedSize);
  test::writeText(dir / "z.mha", header("2 2", "MET_FLOAT", "CompressedData = True\nCompressedDataSize = " + std::to_string(packedSize) + "\n") + packed);
  const Image z = readMetaImage((dir / "z.mha").string());
  EXPECT_EQ(test::values(z.data), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(z.size, (std::array<int, 3>{2, 2, 1}));
}

TEST(MetaImage, BadFilesNameFileAndField) {
  const auto dir = test::scratchDir();
  auto path = [&](const char* n) { return (dir / n).string(); };
  test::writeText(dir / "short.mha", header("4 4", "MET_FLOAT") + std::string(40, '\0'));
  expectError<InputError>([&] { readMetaImage(path("short.mha")); }, {"short.mha", "pixel data", "64 bytes", "40 bytes", "truncated"});
  test::writeText(dir / "long.mha", header("2 2", "MET_FLOAT") + std::string(20, '\0'));
  expectError<InputError>([&] { readMetaImage(path("long.mha")); }, {"long.mha", "16 bytes", "20 bytes", "disagrees"});
  test::writeText(dir / "type.mha", header("2 2", "MET_LONG_LONG") + std::string(32, '\0'));
  expectError<InputError>([&] { readMetaImage(path("type.mha")); }, {"type.mha", "ElementType", "MET_FLOAT", "'MET_LONG_LONG'"});
  test::writeText(dir / "nodim.mha", "NDims = 2\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n");
  expectError<InputError>([&] { readMetaImage(path("nodim.mha")); }, {"nodim.mha", "DimSize"});
  test::writeText(dir / "rot.mha", header("1 1", "MET_FLOAT", "TransformMatrix = 0 1 1 0\n") + std::string(4, '\0'));
  expectError<InputError>([&] { readMetaImage(path("rot.mha")); }, {"rot.mha", "TransformMatrix", "identity"});
  test::writeText(dir / "rgb.mha", header("1 1", "MET_FLOAT", "ElementNumberOfChannels = 3\n") + std::string(12, '\0'));
  expectError<InputError>([&] { readMetaImage(path("rgb.mha")); }, {"rgb.mha", "ElementNumberOfChannels"});
  test::writeText(dir / "detached.mhd", "NDims = 2\nDimSize = 2 2\nElementType = MET_FLOAT\nElementDataFile = gone.raw\n");
  expectError<InputError>([&] { readMetaImage(path("detached.mhd")); }, {"detached.mhd", "ElementDataFile", "gone.raw"});
  std::string z = header("2 2", "MET_FLOAT", "CompressedData = True\n") + "not zlib";
  test::writeText(dir / "z.mha", z);
  expectError<InputError>([&] { readMetaImage(path("z.mha")); }, {"z.mha", "16 bytes after decompression"});
  expectError<InputError>([&] { readMetaImage(path("none.mha")); }, {"none.mha", "no such file"});
}

TEST(MetaImage, WritesAreAtomicAndNeverOverwriteUnasked) {
  const auto dir = test::scratchDir();
  test::writeText(dir / "v.mha", "precious");
  expectError<InputError>([&] { writeMetaImage((dir / "v.mha").string(), ramp({2, 2, 2}), false); }, {"v.mha", "overwrite"});
  EXPECT_EQ(test::readText(dir / "v.mha"), "precious");
  expectError<InputError>([&] { writeMetaImage((dir / "v.nii").string(), ramp({2, 2, 2}), false); }, {"v.nii", ".mha or .mhd"});
  expectError<InputError>([&] { writeMetaImage((dir / "missing" / "v.mha").string(), ramp({2, 2, 2}), false); },
                          {"output directory", "an existing directory"});
  writeMetaImage((dir / "v.mha").string(), ramp({2, 2, 2}), true);
  EXPECT_EQ(readMetaImage((dir / "v.mha").string()).data, ramp({2, 2, 2}).data);
  EXPECT_EQ(filesIn(dir), (std::vector<fs::path>{"v.mha"}));
}

// writeFileBytes empties a file only where it holds bytes (an empty temporary is left untruncated: on ext4 that spares
// close() writing the pages back, src/io/posix_file.h): a longer file it writes over holds the new bytes alone, an
// empty one the new bytes.
TEST(WriteFileBytes, AFileWrittenOverHoldsTheNewBytesAlone) {
  const auto dir = test::scratchDir();
  test::writeText(dir / "long.txt", std::string(1000, 'x'));
  writeFileBytes((dir / "long.txt").string(), (dir / "long.txt").string(), "head", 4, "tail", 4);
  EXPECT_EQ(test::readText(dir / "long.txt"), "headtail");
  test::writeText(dir / "empty.txt", "");
  writeFileBytes((dir / "empty.txt").string(), (dir / "empty.txt").string(), "new", 3);
  EXPECT_EQ(test::readText(dir / "empty.txt"), "new");
  writeFileBytes((dir / "made.txt").string(), (dir / "made.txt").string(), "made", 4);
  EXPECT_EQ(test::readText(dir / "made.txt"), "made");
}

// A file that appears at the output path while a run works (another run given the same output finished first) is never
// replaced without overwrite, nor removed by the failing run's cleanup: the commit refuses naming it, the file stays
// byte for byte, no temporary is left, and a .mhd pair publishes neither half. With overwrite the run replaces it.
TEST(MetaImage, AFileThatAppearsWhileTheRunWorksIsKept) {
  const auto dir = test::scratchDir();
  const std::string target = (dir / "v.mha").string();
  {
    RunOutputs outputs;  // as a command tracks its outputs: removed unless kept
    outputs.track(target);
    AtomicOutput out(target, false);
    test::writeText(out.temporaryPath(), "mine");
    test::writeText(target, "theirs");
    expectError<InputError>([&] { out.commit(); }, {"v.mha", "appeared", "overwrite"});
  }
  EXPECT_EQ(test::readText(target), "theirs");
  EXPECT_EQ(filesIn(dir), (std::vector<fs::path>{"v.mha"}));

  const VolumeGrid grid{{2, 2, 2}, glm::dvec3(1.0), glm::dvec3(0.0)};
  const std::vector<float> rows(8, 1.0f);
  {
    VolumeFileWriter writer((dir / "w.mhd").string(), grid, false);
    writer.writeRows(0, 2, rows.data());
    test::writeText(dir / "w.mhd", "theirs");
    expectError<InputError>([&] { writer.commit(); }, {"w.mhd", "appeared"});
  }
  EXPECT_EQ(test::readText(dir / "w.mhd"), "theirs");
  EXPECT_EQ(filesIn(dir), (std::vector<fs::path>{"v.mha", "w.mhd"}));  // no w.raw without its header

  AtomicOutput replacing(target, true);
  test::writeText(replacing.temporaryPath(), "mine");
  replacing.commit();
  EXPECT_EQ(test::readText(target), "mine");
}

TEST(ProjectionStack, DirectoryAndGlobInNaturalOrder) {
  const auto dir = test::scratchDir();
  fs::create_directories(dir / "scan");
  for (int p : {1, 2, 10}) {
    Image one({3, 2, 1}, {2, 2, 1}, {-2, -1, 0});
    std::fill(one.data.begin(), one.data.end(), static_cast<float>(p));
    writeMetaImage((dir / "scan" / ("p_" + std::to_string(p) + ".mha")).string(), one, false);
  }
  for (const std::string spec : {(dir / "scan").string(), (dir / "scan" / "p_*.mha").string()}) {
    const Image s = readProjectionStack(spec);
    EXPECT_EQ(s.size, (std::array<int, 3>{3, 2, 3}));
    EXPECT_EQ(s.at(0, 0, 0), 1.0f);
    EXPECT_EQ(s.at(0, 0, 1), 2.0f);
    EXPECT_EQ(s.at(0, 0, 2), 10.0f);  // p_10 after p_2
    EXPECT_EQ(s.spacing[0], 2.0);
  }
  Image odd({4, 2, 1}, {2, 2, 1}, {-2, -1, 0});
  writeMetaImage((dir / "scan" / "p_11.mha").string(), odd, false);
  expectError<InputError>([&] { readProjectionStack((dir / "scan").string()); }, {"p_11.mha", "DimSize", "3 x 2", "4 x 2"});
  expectError<InputError>([&] { readProjectionStack((dir / "nothing_*.mha").string()); }, {"no match"});
}

// A cluster's rank reads only its slab's rows of each projection: the same values as whole projections give them, from
// a stack, from files of one projection each, compressed, and from TIFF; a bad value inside a band is named, one outside
// every band is not read.
TEST(ProjectionStack, RowsAloneReadAsWholeProjectionsGiveThem) {
  const auto dir = test::scratchDir();
  Image s({5, 7, 4}, {1, 1, 1}, {0, 0, 0});
  for (std::size_t i = 0; i < s.data.size(); ++i) s.data[i] = static_cast<float>(i % 97) * 0.25f;
  writeMetaImage((dir / "stack.mha").string(), s, false);
  writeTiff((dir / "stack.tif").string(), s, false);
  fs::create_directories(dir / "files");
  for (int p = 0; p < 4; ++p) {
    Image one({5, 7, 1}, {1, 1, 1}, {0, 0, 0});
    std::copy_n(s.data.begin() + p * 35, 35, one.data.begin());
    writeMetaImage((dir / "files" / ("p_" + std::to_string(p) + ".mha")).string(), one, false);
  }
  const std::vector<RowBand> bands = {{0, 2}, {3, 4}, {0, 0}, {6, 1}};
  for (const std::string spec : {(dir / "stack.mha").string(), (dir / "stack.tif").string(), (dir / "files").string()}) {
    auto source = openProjectionFiles(listProjectionFiles(spec));
    std::vector<float> rows(s.data.size(), -1.0f);
    source->readRows(0, 4, bands.data(), rows.data());
    for (int p = 0; p < 4; ++p)
      for (int v = 0; v < 7; ++v)
        for (int u = 0; u < 5; ++u) {
          const bool inBand = v >= bands[p].first && v < bands[p].first + bands[p].count;
          EXPECT_EQ(rows[(p * 7 + v) * 5 + u], inBand ? s.at(u, v, p) : -1.0f) << spec << " projection " << p << " row " << v;
        }
  }
  // One file per projection (opening reads and checks the first file whole, the others are read as asked).
  fs::create_directories(dir / "bad");
  for (int p = 0; p < 4; ++p) {
    Image one({5, 7, 1}, {1, 1, 1}, {0, 0, 0});
    std::copy_n(s.data.begin() + p * 35, 35, one.data.begin());
    if (p == 1) one.at(2, 4, 0) = std::nanf("");  // row 4 of projection 1: inside its band {3, 4}
    if (p == 3) one.at(1, 2, 0) = std::nanf("");  // row 2 of projection 3: outside its band {6, 1}
    writeMetaImage((dir / "bad" / ("p_" + std::to_string(p) + ".mha")).string(), one, false);
  }
  std::vector<float> rows(s.data.size());
  auto source = openProjectionFiles(listProjectionFiles((dir / "bad").string()));
  source->readRows(2, 2, bands.data() + 2, rows.data());  // projection 3's bad row is not read
  expectError<InputError>([&] { source->readRows(0, 2, bands.data(), rows.data()); }, {"p_1.mha", "projection 1"});
}

TEST(ProjectionStack, NonFiniteValuesNameTheProjection) {
  const auto dir = test::scratchDir();
  Image s({3, 2, 4}, {1, 1, 1}, {0, 0, 0});
  s.at(1, 1, 2) = std::nanf("");
  writeMetaImage((dir / "p.mha").string(), s, false);
  expectError<InputError>([&] { readProjectionStack((dir / "p.mha").string()); }, {"p.mha", "projection 2 pixel (1, 1)", "NaN"});
}

// Chunks as small as `chunkBytes` on three threads (so a 2-core machine interleaves them too), restored after.
class Chunking {
 public:
  explicit Chunking(std::size_t chunkBytes) { setFileChunking({chunkBytes, 3}); }
  ~Chunking() { setFileChunking(saved_); }

 private:
  FileChunking saved_ = fileChunking();
};

std::string zlibPacked(const std::string& raw) {
  std::string packed(compressBound(raw.size()), '\0');
  uLongf packedSize = packed.size();
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(packed.data()), &packedSize, reinterpret_cast<const Bytef*>(raw.data()), raw.size()), Z_OK);
  packed.resize(packedSize);
  return packed;
}

// 385 elements (7 x 11 x 5) spread over the type's range, its extremes included (for double, values that
// float holds, and a float subnormal).
template <typename T>
std::vector<T> valuesOf() {
  std::vector<T> v(385);
  using limits = std::numeric_limits<T>;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      v[i] = static_cast<T>((static_cast<double>(i) - 190.0) * 0.3719);
    else
      v[i] = static_cast<T>(limits::min() + static_cast<T>((i * 2654435761u) % limits::max()));
  }
  if constexpr (std::is_same_v<T, double>) {
    v[0] = -1e30;
    v[1] = 3e38;
    v[383] = 1e-40;
  } else {
    v[0] = limits::lowest();
    v[1] = limits::max();
    if constexpr (std::is_same_v<T, float>) v[383] = 1e-40f;
  }
  return v;
}

template <typename T>
void readsEveryLayoutInChunks(const fs::path& dir, const std::string& type) {
  const std::vector<T> values = valuesOf<T>();
  std::vector<float> expected(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) expected[i] = static_cast<float>(values[i]);
  for (const bool msb : {false, true}) {
    const std::string order = std::string("BinaryDataByteOrderMSB = ") + (msb ? "True\n" : "False\n");
    const std::string raw = bytesOf(values, msb);
    test::writeText(dir / "local.mha", header("7 11 5", type, order) + raw);
    // Detached data after a 13-byte preamble, and HeaderSize -1 (the data at the end of the file).
    test::writeText(dir / "data.raw", std::string(13, 'x') + raw);
    test::writeText(dir / "skip.mhd", "NDims = 3\nDimSize = 7 11 5\n" + order + "HeaderSize = 13\nElementType = " + type +
                                          "\nElementDataFile = data.raw\n");
    test::writeText(dir / "end.mhd", "NDims = 3\nDimSize = 7 11 5\n" + order + "HeaderSize = -1\nElementType = " + type +
                                         "\nElementDataFile = data.raw\n");
    const std::string packed = zlibPacked(raw);
    test::writeText(dir / "z.mha", header("7 11 5", type, order + "CompressedData = True\nCompressedDataSize = " +
                                                             std::to_string(packed.size()) + "\n") + packed);
    // Chunks of whole elements, floor(bytes / element size) and at least one: 1 byte, one element each (never a
    // part of one); 3 and 13, a few elements, 385 leaving a shorter last chunk; 401, a few chunks of the wider
    // types; the default, one chunk.
    for (const std::size_t chunkBytes : {std::size_t{1}, std::size_t{3}, std::size_t{13}, std::size_t{401}, fileChunking().chunkBytes}) {
      const Chunking chunking(chunkBytes);
      for (const char* name : {"local.mha", "skip.mhd", "end.mhd", "z.mha"}) {
        std::string found;
        const Image image = readMetaImage((dir / name).string(), &found);
        EXPECT_EQ(found, type);
        EXPECT_EQ(image.size, (std::array<int, 3>{7, 11, 5}));
        EXPECT_EQ(test::values(image.data), expected) << type << (msb ? " big-endian " : " little-endian ") << name << ", chunks of " << chunkBytes << " bytes";
      }
    }
  }
}

TEST(MetaImage, EveryTypeAndByteOrderReadInChunks) {
  const auto dir = test::scratchDir();
  readsEveryLayoutInChunks<float>(dir, "MET_FLOAT");
  readsEveryLayoutInChunks<double>(dir, "MET_DOUBLE");
  readsEveryLayoutInChunks<std::uint16_t>(dir, "MET_USHORT");
  readsEveryLayoutInChunks<std::int16_t>(dir, "MET_SHORT");
  readsEveryLayoutInChunks<std::uint8_t>(dir, "MET_UCHAR");
  readsEveryLayoutInChunks<std::int8_t>(dir, "MET_CHAR");
  readsEveryLayoutInChunks<std::uint32_t>(dir, "MET_UINT");
  readsEveryLayoutInChunks<std::int32_t>(dir, "MET_INT");
}

TEST(MetaImage, LargeImageRoundTrip) {
  // Above 64 MiB: the destination's pages are faulted in over threads before the read.
  const auto dir = test::scratchDir();
  Image big({4100, 4100, 1}, {1, 1, 1}, {0, 0, 0});
  for (std::size_t i = 0; i < big.data.size(); ++i) big.data[i] = static_cast<float>(i % 100003) - 5e4f;
  writeMetaImage((dir / "big.mha").string(), big, false);
  EXPECT_TRUE(readMetaImage((dir / "big.mha").string()).data == big.data);
}

TEST(MetaImage, TruncatedDataRefusedWhateverTheChunks) {
  const auto dir = test::scratchDir();
  auto path = [&](const char* n) { return (dir / n).string(); };
  const Chunking chunking(3);
  test::writeText(dir / "short.mha", header("4 4", "MET_FLOAT") + std::string(40, '\0'));
  expectError<InputError>([&] { readMetaImage(path("short.mha")); }, {"short.mha", "pixel data", "64 bytes", "40 bytes", "truncated"});
  test::writeText(dir / "short.raw", std::string(30, '\0'));
  test::writeText(dir / "short.mhd", "NDims = 2\nDimSize = 4 4\nElementType = MET_USHORT\nElementDataFile = short.raw\n");
  expectError<InputError>([&] { readMetaImage(path("short.mhd")); }, {"short.raw", "pixel data", "32 bytes", "30 bytes", "truncated"});
  test::writeText(dir / "long.mhd", "NDims = 2\nDimSize = 3 3\nElementType = MET_USHORT\nElementDataFile = short.raw\n");
  expectError<InputError>([&] { readMetaImage(path("long.mhd")); }, {"short.raw", "18 bytes", "30 bytes", "disagrees"});
  const std::string packed = zlibPacked(bytesOf<float>(std::vector<float>(64, 1.0f)));
  test::writeText(dir / "z.mha", header("8 8", "MET_FLOAT", "CompressedData = True\n") + packed.substr(0, packed.size() / 2));
  expectError<InputError>([&] { readMetaImage(path("z.mha")); }, {"z.mha", "256 bytes after decompression"});
}

std::string errorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ProjectionStack, FirstNonFiniteValueNamedWhicheverChunkFindsIt) {
  const auto dir = test::scratchDir();
  Image s({7, 5, 9}, {1, 1, 1}, {0, 0, 0});
  for (std::size_t i = 0; i < s.data.size(); ++i) s.data[i] = static_cast<float>(i);
  s.at(3, 2, 6) = std::nanf("");
  s.at(5, 4, 7) = 1e21f;  // in later chunks: found too, perhaps first, but not the first in the stack
  s.at(0, 0, 8) = std::numeric_limits<float>::infinity();
  writeMetaImage((dir / "p.mha").string(), s, false);
  // The same values big-endian: the conversion path.
  std::vector<float> data = test::values(s.data);
  test::writeText(dir / "be.mha", header("7 5 9", "MET_FLOAT", "BinaryDataByteOrderMSB = True\n") + bytesOf(data, true));
  for (const std::size_t chunkBytes : {std::size_t{4}, std::size_t{24}, std::size_t{1000}, fileChunking().chunkBytes}) {
    const Chunking chunking(chunkBytes);
    for (int repeat = 0; repeat < 20; ++repeat)
      for (const char* name : {"p.mha", "be.mha"})
        expectError<InputError>([&] { readProjectionStack((dir / name).string()); }, {name, "projection 6 pixel (3, 2)", "NaN"});
  }
  // TIFF stacks are checked after reading, in chunks as well.
  writeTiff((dir / "p.tif").string(), s, false);
  for (const std::size_t chunkBytes : {std::size_t{4}, std::size_t{24}}) {
    const Chunking chunking(chunkBytes);
    expectError<InputError>([&] { readProjectionStack((dir / "p.tif").string()); }, {"p.tif", "projection 6 pixel (3, 2)", "NaN"});
  }
  // The bound is exact: the largest float within 1e20 passes, the next one (1e20f, above 1e20) does not.
  Image edge({2, 1, 3}, {1, 1, 1}, {0, 0, 0});
  edge.at(1, 0, 1) = -std::nextafter(1e20f, 0.0f);
  writeMetaImage((dir / "edge.mha").string(), edge, false);
  EXPECT_EQ(readProjectionStack((dir / "edge.mha").string()).at(1, 0, 1), -std::nextafter(1e20f, 0.0f));
  edge.at(0, 0, 2) = 1e20f;
  writeMetaImage((dir / "edge.mha").string(), edge, true);
  expectError<InputError>([&] { readProjectionStack((dir / "edge.mha").string()); }, {"projection 2 pixel (0, 0)", "overflows"});
  // A double beyond float: infinity once converted.
  test::writeText(dir / "d.mha", header("2 1 2", "MET_DOUBLE") + bytesOf<double>({0, 1, 2, 1e300}));
  expectError<InputError>([&] { readProjectionStack((dir / "d.mha").string()); }, {"d.mha", "projection 1 pixel (1, 0)", "infinity"});
}

TEST(ProjectionStack, NonFiniteValueInAFileOfSeveralProjectionsNamesThatFile) {
  const auto dir = test::scratchDir();
  fs::create_directories(dir / "scan");
  for (int f = 1; f <= 3; ++f) {
    Image part({4, 3, 3}, {1, 1, 1}, {0, 0, 0});
    if (f == 2) part.at(2, 1, 1) = -std::numeric_limits<float>::infinity();  // projection 3 + 1 of the stack
    if (f == 3) part.at(0, 0, 0) = std::nanf("");
    writeMetaImage((dir / "scan" / ("p_" + std::to_string(f) + ".mha")).string(), part, false);
  }
  const Chunking chunking(8);
  const std::string message = errorOf([&] { readProjectionStack((dir / "scan").string()); });
  EXPECT_NE(message.find("p_2.mha"), std::string::npos) << message;
  EXPECT_EQ(message.find("p_3.mha"), std::string::npos) << message;
  EXPECT_NE(message.find("projection 4 pixel (2, 1)"), std::string::npos) << message;
  EXPECT_NE(message.find("infinity"), std::string::npos) << message;
}

TEST(PngSlice, ValuesAndOrientation) {
  const auto dir = test::scratchDir();
  Image v({4, 3, 2}, {1, 1, 1}, {0, 0, 0});
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 4; ++i) v.at(i, j, k) = static_cast<float>(i + 10 * k);
  writeSlicePng((dir / "y.png").string(), v, SliceAxis::Y, 1, 0.0, 15.0, false);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&image, (dir / "y.png").c_str()));
  image.format = PNG_FORMAT_GRAY;
  std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
  ASSERT_TRUE(png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr));
  ASSERT_EQ(image.width, 4u);   // x across
  ASSERT_EQ(image.height, 2u);  // z up: the top row is k = 1
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(pixels[i], std::lround((i + 10) * 255.0 / 15.0)) << i;
    EXPECT_EQ(pixels[4 + i], std::lround(i * 255.0 / 15.0)) << i;
  }
  EXPECT_THROW(writeSlicePng((dir / "bad.png").string(), v, SliceAxis::Z, 2, 0, 1, false), UsageError);
  EXPECT_FALSE(fs::exists(dir / "bad.png"));
}

// Text from the file reaches messages escaped (glrecon::quoted), never as raw bytes: a header field's value, and
// the data file's name from ElementDataFile (a terminal escape in each).
TEST(MetaImage, FileTextIsQuotedInMessages) {
  const auto dir = test::scratchDir();
  // Expects `read` to throw an InputError whose message holds `escaped` and only printable ASCII.
  const auto expectQuoted = [](const auto& read, const std::string& escaped) {
    try {
      read();
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(escaped), std::string::npos) << message;
      for (unsigned char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << message;
    }
  };
  const std::string red = "\x1b[31m";
  test::writeText(dir / "type.mha", "NDims = 3\nDimSize = 1 1 1\nElementType = " + red + "\nElementDataFile = LOCAL\nabcd");
  expectQuoted([&] { readMetaImage((dir / "type.mha").string()); }, "ElementType: expected one of MET_FLOAT");
  expectQuoted([&] { readMetaImage((dir / "type.mha").string()); }, "found '\\x1B[31m'");
  test::writeText(dir / "data.mhd", "NDims = 3\nDimSize = 1 1 1\nElementType = MET_FLOAT\nElementDataFile = d" + red + ".raw\n");
  expectQuoted([&] { readMetaImage((dir / "data.mhd").string()); }, "d\\x1B[31m.raw: ");
}

}  // namespace
}  // namespace glrecon
