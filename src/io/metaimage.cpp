// MetaImage (ITK's .mha/.mhd), the format RTK, 3D Slicer, ITK-SNAP, ParaView and Fiji all read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "chunked_io.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/parallel.h"
#include "headers.h"

namespace glrecon {
namespace fs = std::filesystem;
static_assert(std::endian::native == std::endian::little, "MetaImage I/O assumes a little-endian host");

namespace {

struct ElementType {
  int bytes;
  void (*toFloat)(const unsigned char* in, std::size_t count, float* out, bool swap);
  bool isFloat;  ///< MET_FLOAT: in native byte order the file's bytes are the image's
};

template <typename T>
void convert(const unsigned char* in, std::size_t count, float* out, bool swap) {
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char raw[sizeof(T)];
    std::memcpy(raw, in + i * sizeof(T), sizeof(T));
    if (swap) std::reverse(raw, raw + sizeof(T));
    T value;
    std::memcpy(&value, raw, sizeof(T));
    out[i] = static_cast<float>(value);
  }
}

const std::map<std::string, ElementType>& elementTypes() {
  static const std::map<std::string, ElementType> types = {
      {"MET_FLOAT", {4, convert<float>, true}},           {"MET_DOUBLE", {8, convert<double>, false}},
      {"MET_USHORT", {2, convert<std::uint16_t>, false}}, {"MET_SHORT", {2, convert<std::int16_t>, false}},
      {"MET_UCHAR", {1, convert<std::uint8_t>, false}},   {"MET_CHAR", {1, convert<std::int8_t>, false}},
      {"MET_UINT", {4, convert<std::uint32_t>, false}},   {"MET_INT", {4, convert<std::int32_t>, false}},
  };
  return types;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::vector<double> numbers(const std::string& path, const std::string& key, const std::string& value,
                            std::size_t expected) {
  std::istringstream in(value);
  std::vector<double> result;
  double v;
  while (in >> v) result.push_back(v);
  in.clear();
  std::string rest;
  if ((in >> rest) || result.size() != expected || !std::all_of(result.begin(), result.end(), [](double x) {
        return std::isfinite(x);
      }))
    throwInputError(path, key, std::to_string(expected) + " finite numbers", "'" + quoted(value) + "'");
  return result;
}

bool parseBool(const std::string& path, const std::string& key, const std::string& value) {
  std::string v = value;
  std::transform(v.begin(), v.end(), v.begin(), ::tolower);
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throwInputError(path, key, "True or False", "'" + quoted(value) + "'");
}

// Inflates in chunks, growing the output as data arrives: a header may promise gigabytes that a small file
// cannot hold, so memory follows the stream, never the header alone (which is only the upper bound).
std::vector<unsigned char> inflateAll(const std::string& path, const std::vector<unsigned char>& compressed,
                                      std::size_t expected) {
  std::vector<unsigned char> out;
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) throwInputError(path, "CompressedData", "zlib data", "zlib init failure");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  z.next_in = const_cast<unsigned char*>(compressed.data());
  std::size_t inputLeft = compressed.size();
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (z.avail_in == 0 && inputLeft > 0) {
      // zlib counts in 32-bit uInt: feed at most 1 GiB at a time.
      z.avail_in = static_cast<uInt>(std::min<std::size_t>(inputLeft, std::size_t{1} << 30));
      inputLeft -= z.avail_in;
    }
    const std::size_t produced = out.size();
    // One byte beyond what the header promises, to notice a stream that holds more.
    const std::size_t room = std::min(kChunk, expected + 1 - produced);
    if (room == 0) break;
    out.resize(produced + room);
    z.next_out = out.data() + produced;
    z.avail_out = static_cast<uInt>(room);
    status = inflate(&z, Z_NO_FLUSH);
    out.resize(produced + room - z.avail_out);
    if (status == Z_BUF_ERROR && z.avail_in == 0 && inputLeft == 0) break;  // truncated stream
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) break;
    if (out.size() > expected) break;
  }
  if (status != Z_STREAM_END || out.size() != expected)
    throwInputError(path, "compressed data", std::to_string(expected) + " bytes after decompression",
                    (out.size() > expected ? "more than that" : std::to_string(out.size()) + " bytes") + " (" +
                        (z.msg ? quoted(z.msg) : std::string(out.size() > expected ? "the header disagrees with the data"
                                                                                   : "truncated or corrupt stream")) +
                        ")");
  return out;
}

// A byte count or offset from the header: a whole number in [lowest, highest].
std::streamoff wholeNumber(const std::string& path, const std::string& key, const std::string& value, double lowest,
                           double highest, const std::string& expected) {
  const double v = numbers(path, key, value, 1)[0];
  if (v != std::floor(v) || v < lowest || v > highest) throwInputError(path, key, expected, "'" + quoted(value) + "'");
  return static_cast<std::streamoff>(v);
}

std::atomic<std::size_t> chunkBytesSetting{std::size_t{1} << 20};
std::atomic<int> threadsSetting{0};

// `bytes` at `offset`, however many calls it takes (pread stops at about 2 GiB, and at signals).
void preadAll(int fd, void* out, std::size_t bytes, std::uint64_t offset, const std::string& dataPath, const char* field) {
  auto* p = static_cast<unsigned char*>(out);
  const std::size_t wanted = bytes;
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throwInputError(dataPath, field, std::to_string(wanted) + " bytes at offset " + std::to_string(offset + bytes - wanted),
                      got < 0 ? std::string(std::strerror(errno)) : "the end of the file (it shrank while being read)");
    p += got;
    offset += static_cast<std::uint64_t>(got);
    bytes -= static_cast<std::size_t>(got);
  }
}

// Fills out[0, count) chunk by chunk on several threads, from `raw` (inflated data) or else straight from the
// file with pread: native floats land in `out` itself, other types pass through a buffer of one chunk, still in
// cache when converted. The whole file read into a buffer, then converted, on one thread: 0.5-0.75 GB/s on a
// 16-core machine; these chunks on all its cores: 4.8 GB/s. Returns the first index firstValueOutside() reports
// when limit > 0 (each chunk checked while its values are in cache), count otherwise.
// `serial`: on the calling thread (a caller that reads many small parts in parallel itself).
std::size_t convertInChunks(const ElementType& type, bool swap, std::size_t count, float* out, const unsigned char* raw,
                            int fd, std::uint64_t offset, const std::string& dataPath, double limit, bool serial = false) {
  const FileChunking split = fileChunking();
  const std::size_t chunk = std::max<std::size_t>(1, split.chunkBytes / type.bytes);
  const bool direct = !raw && type.isFloat && !swap;
  std::atomic<std::size_t> first{count};
  parallelFor(count, chunk, serial ? 1 : split.threads, [&](std::size_t begin, std::size_t end) {
    const std::size_t n = end - begin;
    float* values = out + begin;
    if (raw) {
      type.toFloat(raw + begin * type.bytes, n, values, swap);
    } else if (direct) {
      preadAll(fd, values, n * sizeof(float), offset + begin * sizeof(float), dataPath, "pixel data");
    } else {
      thread_local std::vector<unsigned char> buffer;  // one chunk; parallelFor's threads end with the call
      if (buffer.size() < n * type.bytes) buffer.resize(n * type.bytes);
      preadAll(fd, buffer.data(), n * type.bytes, offset + begin * type.bytes, dataPath, "pixel data");
      type.toFloat(buffer.data(), n, values, swap);
    }
    if (limit > 0)
      if (const std::size_t i = firstValueOutside(values, n, limit); i < n) lowerAtomically(first, begin + i);
  });
  return first;
}

// Closes the data file however the read ends.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

FileChunking fileChunking() { return {chunkBytesSetting.load(), threadsSetting.load()}; }

void setFileChunking(const FileChunking& chunking) {
  chunkBytesSetting = std::max<std::size_t>(1, chunking.chunkBytes);
  threadsSetting = chunking.threads;
}

std::size_t firstValueOutsideParallel(const float* values, std::size_t count, double limit) {
  const FileChunking split = fileChunking();
  return firstValueOutside(values, count, limit, std::max<std::size_t>(1, split.chunkBytes / sizeof(float)), split.threads);
}

namespace {

}  // namespace

struct MetaImageReader::Data {
  ElementType type{};
  bool bigEndian = false;
  std::string dataPath;
  FileDescriptor file{-1};
  std::uint64_t offset = 0;
  std::vector<unsigned char> inflated;  // compressed data, inflated whole at opening
};

MetaImageReader::MetaImageReader(const std::string& path, bool headerOnly) : path_(path), data_(std::make_unique<Data>()) {
  requireReadableFile(path, "MetaImage file");
  std::ifstream file(path, std::ios::binary);
  if (!file) throwInputError(path, "file", "a readable MetaImage file (.mha or .mhd)", std::strerror(errno));

  std::map<std::string, std::string> header;
  std::string line;
  bool sawDataFile = false;
  while (std::getline(file, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      if (trim(line).empty()) continue;
      throwInputError(path, "header line", "'Key = Value'", "'" + quoted(trim(line), 60) + "'");
    }
    const std::string key = trim(line.substr(0, eq));
    header[key] = trim(line.substr(eq + 1));
    if (key == "ElementDataFile") {
      sawDataFile = true;
      break;
    }
  }
  if (!sawDataFile) throwInputError(path, "ElementDataFile", "a header ending with ElementDataFile", "none");
  const std::streamoff dataStart = file.tellg();

  auto get = [&](const std::string& key) -> const std::string* {
    auto it = header.find(key);
    return it == header.end() ? nullptr : &it->second;
  };
  if (const std::string* type = get("ObjectType"); type && *type != "Image")
    throwInputError(path, "ObjectType", "Image", quoted(*type));
  const std::string* ndimsText = get("NDims");
  if (!ndimsText) throwInputError(path, "NDims", "2 or 3", "no NDims");
  const auto ndimsValue = numbers(path, "NDims", *ndimsText, 1)[0];
  if (ndimsValue != 2 && ndimsValue != 3) throwInputError(path, "NDims", "2 or 3", quoted(*ndimsText));
  const std::size_t ndims = static_cast<std::size_t>(ndimsValue);

  const std::string* dimText = get("DimSize");
  if (!dimText) throwInputError(path, "DimSize", std::to_string(ndims) + " positive integers", "no DimSize");
  const auto dims = numbers(path, "DimSize", *dimText, ndims);
  Image& image = header_;
  for (std::size_t a = 0; a < 3; ++a) {
    const double d = a < ndims ? dims[a] : 1.0;
    if (d < 1 || d != std::floor(d) || d > 1e6)
      throwInputError(path, "DimSize", "positive integers up to 1000000", "'" + quoted(*dimText) + "'");
    image.size[a] = static_cast<int>(d);
  }
  const std::string* spacingText = get("ElementSpacing");
  if (!spacingText) spacingText = get("ElementSize");
  if (spacingText) {
    const auto s = numbers(path, "ElementSpacing", *spacingText, ndims);
    for (std::size_t a = 0; a < ndims; ++a) {
      // Outside these bounds coordinates lose all precision in float (the backprojectors' type) or overflow.
      if (!(s[a] >= kMinSpacingMm && s[a] <= kMaxSpacingMm))
        throwInputError(path, "ElementSpacing", "spacings from 1e-6 to 1e6 mm", "'" + quoted(*spacingText) + "'");
      image.spacing[a] = s[a];
    }
  }
  for (const char* key : {"Offset", "Origin", "Position"})
    if (const std::string* o = get(key)) {
      const auto v = numbers(path, key, *o, ndims);
      for (std::size_t a = 0; a < ndims; ++a) {
        if (!(std::abs(v[a]) <= kMaxCoordinateMm))
          throwInputError(path, key, "coordinates within 1e7 mm of the origin", "'" + quoted(*o) + "'");
        image.origin[a] = v[a];
      }
      break;
    }
  for (const char* key : {"TransformMatrix", "Rotation", "Orientation"})
    if (const std::string* m = get(key)) {
      const auto v = numbers(path, key, *m, ndims * ndims);
      for (std::size_t r = 0; r < ndims; ++r)
        for (std::size_t c = 0; c < ndims; ++c)
          if (std::abs(v[r * ndims + c] - (r == c ? 1.0 : 0.0)) > 1e-6)
            throwInputError(path, key, "the identity direction (rotated image grids are not supported)",
                            "'" + quoted(*m) + "'");
      break;
    }
  if (const std::string* channels = get("ElementNumberOfChannels"); channels && trim(*channels) != "1")
    throwInputError(path, "ElementNumberOfChannels", "1 (a scalar image)", quoted(*channels));
  if (const std::string* binary = get("BinaryData"); binary && !parseBool(path, "BinaryData", *binary))
    throwInputError(path, "BinaryData", "True (ASCII pixel data is not supported)", quoted(*binary));
  bool bigEndian = false;
  for (const char* key : {"BinaryDataByteOrderMSB", "ElementByteOrderMSB"})
    if (const std::string* msb = get(key)) bigEndian = parseBool(path, key, *msb);
  const bool compressed = get("CompressedData") && parseBool(path, "CompressedData", *get("CompressedData"));

  const std::string* typeText = get("ElementType");
  if (!typeText) throwInputError(path, "ElementType", "an element type such as MET_FLOAT", "no ElementType");
  const auto typeIt = elementTypes().find(*typeText);
  if (typeIt == elementTypes().end())
    throwInputError(path, "ElementType",
                    "one of MET_FLOAT, MET_DOUBLE, MET_USHORT, MET_SHORT, MET_UCHAR, MET_CHAR, MET_UINT, MET_INT",
                    "'" + quoted(*typeText) + "'");
  const ElementType type = typeIt->second;
  elementType_ = *typeText;
  dimensions_ = quoted(*dimText);
  const std::size_t count = image.voxelCount();  // at most 1e18: DimSize is bounded above
  const std::size_t bytes = count * type.bytes;

  if (headerOnly) return;  // the data file is checked when it is opened to read
  // Locate the pixel bytes: after the header (LOCAL) or in a separate file.
  const std::string& dataFile = header["ElementDataFile"];
  std::string dataPath = path;
  std::string dataName = path;  // dataPath for messages
  std::streamoff offset = dataStart;
  if (dataFile != "LOCAL") {
    if (dataFile == "LIST" || dataFile.find('%') != std::string::npos || dataFile.empty())
      throwInputError(path, "ElementDataFile", "LOCAL or one data file name", "'" + quoted(dataFile) + "'");
    const fs::path p(dataFile);
    dataPath = p.is_absolute() ? dataFile : (fs::path(path).parent_path() / p).string();
    offset = 0;
    if (const std::string* hs = get("HeaderSize"))
      offset = wholeNumber(path, "HeaderSize", *hs, -1, 1e15, "-1 (data at the end) or a byte count");
    // A FIFO or device here would block or never end: refused before opening. The name comes from the header:
    // messages carry it quoted (requireReadableFile's begins with the path as given, replaced here).
    dataName = quoted(dataPath, 4096);
    try {
      requireReadableFile(dataPath, path + ": ElementDataFile");
    } catch (const InputError& e) {
      throw InputError(dataName + e.text().substr(dataPath.size()));
    }
  }
  FileDescriptor& data = data_->file;
  data.fd = ::open(dataPath.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat info {};
  if (data.fd < 0 || ::fstat(data.fd, &info) != 0)
    throwInputError(path, "ElementDataFile", "a readable data file", "'" + dataName + "' cannot be opened");
  const std::streamoff fileSize = info.st_size;
  if (offset < 0) {  // HeaderSize = -1: data at the end (uncompressed only).
    if (compressed || bytes > static_cast<std::size_t>(fileSize))
      throwInputError(dataName, "HeaderSize", "-1 only for uncompressed data that fits in the file",
                      std::to_string(fileSize) + " bytes of file for " + std::to_string(bytes) + " bytes of data");
    offset = fileSize - static_cast<std::streamoff>(bytes);
  }
  if (offset > fileSize)
    throwInputError(dataName, "HeaderSize", "at most the file size (" + std::to_string(fileSize) + " bytes)",
                    std::to_string(offset));

  // The file bounds what can be read: compare sizes before allocating anything, and check that the pixels
  // (and their float copy) fit in memory.
  std::vector<unsigned char> raw;
  if (compressed) {
    std::streamoff available = fileSize - offset;
    if (const std::string* cs = get("CompressedDataSize")) {
      const auto declared = wholeNumber(path, "CompressedDataSize", *cs, 0, 1e15, "a byte count");
      if (declared > available)
        throwInputError(dataName, "CompressedDataSize", std::to_string(declared) + " bytes of compressed data",
                        std::to_string(available) + " bytes (the file is truncated)");
      available = declared;
    }
    // zlib inflates at most about 1032:1; a header promising more than that cannot be honest.
    if (static_cast<double>(bytes) > 1032.0 * static_cast<double>(available) + 1024.0)
      throwInputError(dataName, "compressed data",
                      "enough compressed bytes for " + std::to_string(bytes) + " bytes of pixels (DimSize " +
                          quoted(*dimText) + ")",
                      std::to_string(available) + " bytes (the file is truncated)");
    checkHostMemory(path, "DimSize " + quoted(*dimText),
                    static_cast<std::uint64_t>(available) + bytes + count * sizeof(float));
    std::vector<unsigned char> packed(static_cast<std::size_t>(std::max<std::streamoff>(available, 0)));
    preadAll(data.fd, packed.data(), packed.size(), static_cast<std::uint64_t>(offset), dataName, "compressed data");
    // zlib is serial; the conversion below is not.
    raw = inflateAll(dataName, packed, bytes);
  } else {
    const std::streamoff available = fileSize - offset;
    if (static_cast<std::size_t>(available) != bytes)
      throwInputError(dataName, "pixel data",
                      std::to_string(bytes) + " bytes for DimSize " + quoted(*dimText) + " of " + quoted(*typeText),
                      std::to_string(available) + " bytes" +
                          (static_cast<std::size_t>(available) < bytes ? " (the file is truncated)"
                                                                       : " (the header disagrees with the data)"));
  }
  data_->type = type;
  data_->bigEndian = bigEndian;
  data_->dataPath = dataName;  // for messages only: the file is open
  data_->offset = static_cast<std::uint64_t>(offset);
  data_->inflated = std::move(raw);
}

MetaImageReader::~MetaImageReader() = default;

std::size_t MetaImageReader::readSlices(std::size_t first, std::size_t n, float* out, double limit) {
  const std::size_t slice = static_cast<std::size_t>(header_.size[0]) * header_.size[1];
  const ElementType& type = data_->type;
  const unsigned char* raw = data_->inflated.empty() ? nullptr : data_->inflated.data() + first * slice * type.bytes;
  return convertInChunks(type, data_->bigEndian, n * slice, out, raw, data_->file.fd, data_->offset + first * slice * type.bytes,
                         data_->dataPath, limit);
}

std::size_t MetaImageReader::readRows(std::size_t slice, int firstRow, int rows, float* out, double limit) {
  const std::size_t nx = static_cast<std::size_t>(header_.size[0]);
  const std::size_t first = (slice * static_cast<std::size_t>(header_.size[1]) + static_cast<std::size_t>(firstRow)) * nx;
  const ElementType& type = data_->type;
  const unsigned char* raw = data_->inflated.empty() ? nullptr : data_->inflated.data() + first * type.bytes;
  return convertInChunks(type, data_->bigEndian, static_cast<std::size_t>(rows) * nx, out, raw, data_->file.fd,
                         data_->offset + first * type.bytes, data_->dataPath, limit, true);
}

namespace {

Image readMetaImageFile(const std::string& path, std::string* elementType, double limit, std::size_t* firstOutside) {
  MetaImageReader reader(path);
  Image image = reader.header();
  if (elementType) *elementType = reader.elementType();
  const std::size_t count = image.voxelCount();
  // Straight into the float image (through one chunk's buffer per thread for other types).
  checkHostMemory(path, "DimSize " + reader.dimensions(), count * sizeof(float));
  resizeZeroed(image.data, count, fileChunking().threads);
  const std::size_t outside = reader.readSlices(0, static_cast<std::size_t>(image.size[2]), image.data.data(), limit);
  if (firstOutside) *firstOutside = outside;
  return image;
}

}  // namespace

Image readMetaImage(const std::string& path, std::string* elementType) {
  return readMetaImageFile(path, elementType, 0, nullptr);
}

Image readMetaImageChecked(const std::string& path, double limit, std::size_t* firstOutside) {
  return readMetaImageFile(path, nullptr, limit, firstOutside);
}

std::string metaImageHeader(const std::array<int, 3>& size, const std::array<double, 3>& spacing, const std::array<double, 3>& origin,
                            const std::string& dataFile) {
  const auto build = [&](int padding) {
    std::ostringstream header;
    header.precision(17);
    header << "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
           << "CompressedData = False\nTransformMatrix = 1 0 0 0 1 0 0 0 1\n"
           << "Offset = " << origin[0] << ' ' << origin[1] << ' ' << origin[2] << '\n'
           << "CenterOfRotation =" << std::string(1 + padding, ' ') << "0 0 0\nAnatomicalOrientation = RAI\n"
           << "ElementSpacing = " << spacing[0] << ' ' << spacing[1] << ' ' << spacing[2] << '\n'
           << "DimSize = " << size[0] << ' ' << size[1] << ' ' << size[2] << '\n'
           << "ElementType = MET_FLOAT\n"
           << "ElementDataFile = " << dataFile << '\n';
    return header.str();
  };
  // The voxels of a .mha start where the header ends: spaces after a numeric field's '=' (which MetaImage readers
  // skip) make that a multiple of 4, so the floats are aligned where the file is mapped (VolumeFileWriter).
  const std::string plain = build(0);
  return build(static_cast<int>((4 - plain.size() % 4) % 4));
}

void checkMetaImageName(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
  if (extension != ".mha" && extension != ".mhd")
    throwInputError(path, "output file name", "a name ending in .mha or .mhd", "'" + fs::path(path).extension().string() + "'");
}

namespace {
std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}
}  // namespace

void checkImageToWrite(const std::string& path, const Image& image) {
  // The readers' bounds (above, and the TIFF reader's): a file they would refuse is not written.
  static const char* axis[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    if (!(image.size[a] >= 1 && image.size[a] <= 1000000))
      throwInputError(path, std::string("size ") + axis[a], "1 to 1000000 voxels", std::to_string(image.size[a]));
    if (!(image.spacing[a] >= kMinSpacingMm && image.spacing[a] <= kMaxSpacingMm))
      throwInputError(path, std::string("spacing ") + axis[a], "a spacing from 1e-6 to 1e6 mm", formatNumber(image.spacing[a]));
    if (!(std::abs(image.origin[a]) <= kMaxCoordinateMm))
      throwInputError(path, std::string("origin ") + axis[a], "a coordinate within 1e7 mm of the origin", formatNumber(image.origin[a]));
  }
}

void writeMetaImage(const std::string& path, const Image& image, bool overwrite) {
  checkMetaImageName(path);
  checkImageToWrite(path, image);
  if (image.data.size() != image.voxelCount())
    throw std::logic_error("writeMetaImage: image data does not match its size");
  const bool detached = isDetachedMetaImage(path);
  const std::string rawPath = detached ? fs::path(path).replace_extension(".raw").string() : "";
  const std::string headerText =
      metaImageHeader(image.size, image.spacing, image.origin, detached ? fs::path(rawPath).filename().string() : "LOCAL");
  const auto writeBytes = [&](const std::string& file, bool withHeader, bool withData) {
    writeFileBytes(path, file, withHeader ? headerText.data() : nullptr, withHeader ? headerText.size() : 0,
                   withData ? image.data.data() : nullptr, withData ? image.data.size() * sizeof(float) : 0);
  };
  if (detached) {
    AtomicOutput raw(rawPath, overwrite);
    AtomicOutput mhd(path, overwrite);
    writeBytes(raw.temporaryPath(), false, true);
    writeBytes(mhd.temporaryPath(), true, false);
    AtomicOutput::commitPair(raw, mhd);
  } else {
    AtomicOutput mha(path, overwrite);
    writeBytes(mha.temporaryPath(), true, true);
    mha.commit();
  }
}

bool isDetachedMetaImage(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), ::tolower);
  return extension == ".mhd";
}

}  // namespace glrecon
