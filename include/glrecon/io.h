#pragma once
/// File input and output: MetaImage and TIFF volumes and projection stacks, RTK geometry files, PNG slices.
/// Every writer is atomic (a temporary file in the target directory, renamed when complete) and refuses
/// to replace an existing file unless `overwrite` is true. Every reader reports bad input as InputError
/// naming the file, the field, what was expected and what was found.
#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/sink.h"
#include "glrecon/source.h"

namespace glrecon {

// ---- MetaImage (.mha with the data inline, .mhd + raw file) ----
/// Reads a 2D or 3D scalar MetaImage (MET_FLOAT, MET_DOUBLE, MET_USHORT, MET_SHORT, MET_UCHAR, MET_CHAR,
/// MET_UINT, MET_INT; either byte order; zlib-compressed or not) into float.
/// `elementType`, when given, receives the file's ElementType (e.g. "MET_UCHAR").
Image readMetaImage(const std::string& path, std::string* elementType = nullptr);
/// Writes float32 MetaImage; `.mha` holds header and data, `.mhd` writes a `.raw` beside it.
void writeMetaImage(const std::string& path, const Image& image, bool overwrite);

/// How MetaImage pixel data is split over threads when read: chunks of about `chunkBytes` bytes of the file
/// (whole elements, at least one) on `threads` threads (0: all hardware threads). Process-wide; tests shrink
/// the chunks to put chunk boundaries inside small files.
struct FileChunking {
  std::size_t chunkBytes = std::size_t{1} << 20;
  int threads = 0;
};
FileChunking fileChunking();
void setFileChunking(const FileChunking& chunking);

/// Projections for reconstruction: one MetaImage or multi-page TIFF stack (3D: nu x nv x projections), a
/// directory of single-projection MetaImage or TIFF files (taken in natural name order), or a glob pattern
/// ("scan/p_*.mha", "scan/*.tif").
/// Every file must agree with the first on pixel count, spacing and origin.
Image readProjectionStack(const std::string& spec);
/// Projections from files as a source for the FDK scheduler (glrecon/source.h): one MetaImage or TIFF stack, or one
/// file after another (a directory, glob or list, in the order given), read in chunks as the scheduler asks for them
/// (a MetaImage stack by parallel pread straight into its memory). The headers are read now: every file must agree
/// with the first on the detector layout.
std::unique_ptr<ProjectionSource> openProjectionFiles(const std::vector<std::string>& files);
/// The files a projection spec names, in the order they will be read (a single file for a stack).
std::vector<std::string> listProjectionFiles(const std::string& spec);
/// rtkfdk's --path and --regexp: the files in `directory` whose name contains a match of the regular
/// expression (ECMAScript syntax; std::regex_search, as ITK's series reader: anchor with ^...$ for a
/// whole-name match), in natural order.
std::vector<std::string> listProjectionFiles(const std::string& directory, const std::string& regex);
/// Reads and concatenates the listed MetaImage or TIFF files into one stack (checks as readProjectionStack).
Image readProjectionFiles(const std::vector<std::string>& files);

// ---- TIFF (libtiff) ----
/// Reads a single- or multi-page greyscale TIFF (8/16/32-bit signed or unsigned integers, 32/64-bit float;
/// strips or tiles; any compression libtiff decodes) into float, one page per slice. Spacing: from the
/// resolution tags (inch or cm units; with unit "none", ImageJ's unit= in the description; 1 mm otherwise) and
/// ImageJ's spacing= for the page axis. Origin: ImageJ's x/y/zorigin when present, else the image is centred
/// (TIFF has no origin). Every page must have the first page's size.
Image readTiff(const std::string& path);
/// What readTiff would give, without the pixels (size, pages, spacing, origin; every page's size checked).
Image readTiffHeader(const std::string& path);
/// Writes a multi-page float32 TIFF, one page per z slice, readable by Fiji/ImageJ as a calibrated stack
/// (resolution tags 1/spacing, description "ImageJ=...\nimages=N\nslices=N\nunit=mm\nspacing=Z" plus the
/// origin as x/y/zorigin). Classic TIFF: the pages must start within 4 GiB (InputError otherwise).
void writeTiff(const std::string& path, const Image& image, bool overwrite);
/// True for names ending in .tif or .tiff (any case).
bool isTiffPath(const std::string& path);

/// Throws InputError naming `path` when a reader would refuse the file `image` makes: sizes 1 to 1000000, spacings from
/// 1e-6 to 1e6 mm, an origin within 1e7 mm (the writers check it before writing anything).
void checkImageToWrite(const std::string& path, const Image& image);

// ---- by file name ----
/// TIFF for .tif/.tiff, MetaImage otherwise.
Image readImage(const std::string& path);
void writeImage(const std::string& path, const Image& image, bool overwrite);

// ---- RTK geometry XML (RTKThreeDCircularGeometry, versions 2 and 3) ----
std::vector<CircularParams> readRtkGeometry(const std::string& path);
void writeRtkGeometry(const std::string& path, const std::vector<CircularParams>& params, bool overwrite);
/// The same document as text (what writeRtkGeometry stores).
std::string formatRtkGeometry(const std::vector<CircularParams>& params);

// ---- PNG slices ----
enum class SliceAxis { X, Y, Z };
/// Parses "x", "y" or "z".
SliceAxis parseSliceAxis(const std::string& text);
/// Writes the slice of `volume` at `index` along `axis` as 8-bit greyscale: values mapped linearly so that
/// `lo` is black and `hi` white. Orientation: the slice's first in-plane axis runs left to right, the
/// second bottom to top (y slices: x across, z up; z slices: x across, y up; x slices: z across, y up).
void writeSlicePng(const std::string& path, const Image& volume, SliceAxis axis, int index, double lo, double hi,
                   bool overwrite);
/// Writes an 8-bit RGB image (rows top to bottom) as PNG, atomically (a screenshot).
void writeRgbPng(const std::string& path, int width, int height, const std::vector<unsigned char>& rgb, bool overwrite);
/// Robust display range of a volume: the given percentiles (0..100) of its values.
std::pair<double, double> percentileRange(const Image& volume, double lowPercent, double highPercent);

// ---- atomic output ----
/// A file written under a temporary name in the target's directory and renamed onto the target by
/// commit(); destroyed without commit(), it removes the temporary file, so a failed run leaves no output.
/// Without `overwrite` commit() never replaces a file: one that appeared at the target while the run worked (another
/// run given the same output, say) is kept and commit() throws InputError naming it.
class AtomicOutput {
 public:
  AtomicOutput(std::string target, bool overwrite);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& temporaryPath() const { return temporary_; }
  const std::string& target() const { return target_; }
  void commit();
  /// commit() of `data`, then of `header`: a .mhd and its .raw both published, or neither (where the header cannot be,
  /// the data file is retracted: removed, or the file it replaced put back).
  static void commitPair(AtomicOutput& data, AtomicOutput& header);

 private:
  void retract();
  bool overwrite_;
  std::string target_;
  std::string temporary_;
  bool committed_ = false;
  bool replacedKept_ = false;  ///< committed over an earlier file, which waits under the temporary name for removal
  int slot_ = -1;  ///< in the signal handler's registry while the temporary lives
};

/// A float32 volume (.mha, .mhd with its .raw, or .tif) written in slabs of y rows as they are reconstructed,
/// so the whole volume never has to be in memory: the header is written first and the file sized, each
/// writeRows() puts its rows at their offsets (several threads may write different rows at once), and
/// commit() renames the finished file(s) onto the target. Destroyed without commit(), nothing is left.
class VolumeFileWriter {
 public:
  VolumeFileWriter(const std::string& path, const VolumeGrid& grid, bool overwrite);
  /// Another process's writer, under MPI (glrecon/cluster.h): rank 0 makes the file; the other ranks open its temporary
  /// data file (`temporaryData()` there) and write their rows into it; their commit() writes their rows back and closes,
  /// and rank 0's, once every rank has, renames it.
  struct JoinedFile {
    std::string temporaryData;
  };
  VolumeFileWriter(const std::string& path, const VolumeGrid& grid, const JoinedFile& joined);
  /// The data file being written (the volume's temporary name; for .mhd, the .raw's).
  const std::string& temporaryData() const;
  ~VolumeFileWriter();
  VolumeFileWriter(const VolumeFileWriter&) = delete;
  VolumeFileWriter& operator=(const VolumeFileWriter&) = delete;
  /// Rows [firstRow, firstRow + rows) of y: nx x rows x nz floats, x fastest, then y, then z.
  void writeRows(int firstRow, int rows, const float* data);
  /// For a volume written whole at the end (writeVolume): reserves the file's blocks, maps it, and has
  /// `threads` background threads fault its pages into the page cache while the caller reconstructs. Writing
  /// 512 MiB into new page-cache pages runs at ~2.4 GB/s on one thread (page allocation, not copying); into
  /// pages already there it is a parallel memcpy, ~30 GB/s. Where the file system cannot reserve blocks
  /// (no fallocate) nothing happens and writeVolume writes as writeRows does: a mapped write to a full disk
  /// would be a SIGBUS, not an error message. A full disk is reported here, before the reconstruction. Files on
  /// disk over 1/16 of physical memory are left alone (see the .cpp); files in memory are mapped whatever their size.
  /// `othersWrite`: other processes of this host write rows into the file meanwhile (an MPI job's other ranks): its pages
  /// are then made present without being written (MADV_POPULATE_WRITE), as a file in memory's always are, since the
  /// zero written into each page could land on their rows.
  void preparePages(int threads = 4, bool othersWrite = false);
  /// The whole volume (nx x ny x nz floats): through the prepared mapping on `threads` threads (0 = all), or
  /// with pwrite when preparePages did not map the file. Then commit().
  void writeVolume(const float* data, int threads = 0);
  /// The mapped voxels, to be written in place (nx x ny x nz floats, x fastest), once the page preparation has
  /// finished; nullptr when preparePages did not map the file or the voxels would not be float-aligned. Then commit().
  float* mappedVolume();
  /// preparePages mapped the file (mappedVolume will not be nullptr unless the voxels are misaligned).
  bool mapped() const { return mapping_ != nullptr; }
  /// The file is in memory (tmpfs): preparePages maps it at any size and populates its pages without writing them
  /// (MADV_POPULATE_WRITE, which reports a full file system where a write through the mapping would be a SIGBUS), and
  /// writeRows copies through a mapping (pwrite serialises on the file's lock: 2.4-2.9 GB/s from any number of threads).
  bool inMemory() const { return inMemory_; }
  void commit();

 private:
  std::string path_;
  std::array<int, 3> size_;
  std::unique_ptr<AtomicOutput> header_, data_;
  std::uint64_t dataOffset_ = 0;
  int fd_ = -1;
  int joinedSlot_ = -1;  // joined: the shared temporary registered for removal (registerSharedTemporary)
  bool inMemory_ = false;
  struct Mapping;
  std::unique_ptr<Mapping> mapping_;      // preparePages': made before any slab, handed out by mappedVolume()
  std::unique_ptr<Mapping> rowsMapping_;  // writeRows' of a file in memory that preparePages did not map
  std::mutex mappingMutex_;               // writeRows maps it once, whichever slab worker comes first
  std::unique_ptr<Mapping> mapWhole(std::uint64_t total);
  void checkPrepared();  // the preparing threads joined; a full file system (in memory) an error naming the file
};

/// FDK's volume into a file (glrecon/sink.h): made now (an existing file refused unless `overwrite`, a full disk found
/// now), its pages prepared beside the run so that a one-block readback lands in the page cache (preparePages); where
/// it cannot be mapped, the volume goes to memory paged in meanwhile and is written by commit(). A slab run's rows are
/// written at their offsets as they come. Destroyed without commit(), nothing is left.
class VolumeFileSink final : public VolumeSink {
 public:
  /// `mapped` false: never mapped (a cluster's rank 0 whose ranks run on several hosts: their writes through a shared
  /// file system would meet this host's whole pages). `othersWrite`: other processes of this host write rows into the
  /// file meanwhile (VolumeFileWriter::preparePages).
  VolumeFileSink(const std::string& path, const VolumeGrid& grid, bool overwrite, int threads = 0, bool mapped = true,
                 bool othersWrite = false);
  /// Another rank's sink into the file rank 0's sink made (VolumeFileWriter::JoinedFile): rows only; commit() writes them
  /// back and closes, without renaming.
  VolumeFileSink(const std::string& path, const VolumeGrid& grid, const VolumeFileWriter::JoinedFile& joined);
  /// The data file being written, for the other ranks to join.
  const std::string& temporaryData() const { return writer_.temporaryData(); }
  ~VolumeFileSink() override;
  std::string name() const override { return path_; }
  float* wholeVolume() override;
  void beginWholeVolume() override;
  void beginRows() override;
  void writeRows(int firstRow, int rows, const float* data) override;
  float* rowsInPlace() override;
  bool hasRowsInPlace() const override { return writer_.mapped(); }
  /// The file under its name, complete; returns the seconds the final write took.
  double commit();
  /// The whole volume where it is in memory (after a one-block run: the mapping or the memory written at commit());
  /// nullptr after a slab run.
  const float* volume();

 private:
  void startFallback();
  std::string path_;
  VolumeGrid grid_;
  int threads_;
  VolumeFileWriter writer_;
  struct Fallback;
  std::unique_ptr<Fallback> fallback_;
};

/// Throws InputError when `path` exists and overwriting was not asked for, or names a directory.
void refuseToOverwrite(const std::string& path, bool overwrite);
/// Checks an output file before any work: extension (one of `extensions`, lower case with the dot; empty:
/// any), not an existing file unless `overwrite`, and its directory existing and writable (the reason
/// told: permission denied, read-only file system...). `field` names the option ("--output").
void checkOutputFile(const std::string& path, const std::vector<std::string>& extensions, bool overwrite,
                     const std::string& field);
/// Checks that `directory` exists and is writable, or can be created (its nearest existing ancestor is).
void checkOutputDirectory(const std::string& directory, const std::string& field);
/// Throws InputError with the reason (strerror) when `directory` is missing, not a directory or not writable.
void requireWritableDirectory(const std::string& directory, const std::string& field);
/// Writes `data` then `more` into `file` with POSIX calls; a failure names `target` and errno's reason
/// (no space left on device, read-only file system, permission denied).
void writeFileBytes(const std::string& target, const std::string& file, const void* data, std::size_t size,
                    const void* more = nullptr, std::size_t moreSize = 0);

/// The files one run of a multi-file command writes (phantom's three, fdk's volume, note and slices, view's
/// snapshots): each is registered before it is written, and unless keep() is called (the run completed),
/// the destructor removes those that did not exist before the run and still hold what this run put there (the file an
/// AtomicOutput published there, a directory made by createDirectories), never a file another process put at the name;
/// so does a signal meanwhile. A path written otherwise is removed unless an AtomicOutput found it at its target when
/// it came to publish; a directory made otherwise only when empty (a signal too). Files that existed before (replaced
/// with --overwrite) are left as they are then.
class RunOutputs {
 public:
  RunOutputs() = default;
  ~RunOutputs();
  RunOutputs(const RunOutputs&) = delete;
  RunOutputs& operator=(const RunOutputs&) = delete;
  /// Call before writing `path`.
  void track(const std::string& path);
  /// Makes `directory` and its missing parents, each tracked and recorded as this run's (InputError saying why where it
  /// cannot).
  void createDirectories(const std::string& directory);
  /// The run completed: leave every file in place.
  void keep();

 private:
  struct Created {
    std::string path;
    int slot;
  };
  std::vector<Created> created_;
  bool kept_ = false;
};

// ---- cleanup on SIGINT/SIGTERM ----
/// Installs handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGPIPE that remove the registered
/// paths (live temporaries, this run's staged outputs and directories) where they still hold the file or directory
/// this run put there, and exit with 128 + the signal (130 for SIGINT, 143 for SIGTERM). A signal ignored when the
/// handlers are installed (nohup, `trap "" INT`) stays ignored. Only async-signal-safe calls in the handler.
void installCleanupSignalHandlers();
/// Registers a path this run will make, for removal on a signal; returns its slot (or -1 when the registry is full).
/// A signal removes it only once an AtomicOutput has published its file there (or, when empty, a directory).
int registerCleanupPath(const std::string& path);
/// Forgets a slot (the path was committed or removed).
void unregisterCleanupPath(int slot);
/// Registers `path`, the file `fd` has open, as this run's for removal on a signal: a temporary another process of the
/// run made (MPI ranks write into rank 0's). Returns its slot, or -1 (the registry is full, or fstat failed).
int registerSharedTemporary(const std::string& path, int fd);
/// Removes a slot's path where it still holds the file registered there (never another's), then forgets the slot.
void removeRegisteredPath(int slot);

}  // namespace glrecon
