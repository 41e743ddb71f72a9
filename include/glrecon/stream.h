#pragma once
/// Streaming reconstruction (Xu & Mueller's streaming CT): projections arrive in acquisition order from a
/// source (files, or a simulated scanner at a given rate), a reader thread feeds a bounded queue, a pool of
/// CPU threads filters them (FFTW), an in-order bounded stage hands them to the backprojector on the calling
/// thread (the GL thread), which backprojects as they come. Memory stays bounded (back-pressure), any stage
/// can cancel, an error anywhere stops every thread and reaches the caller with the projection's index.
/// The result equals the batch reconstruction's: same filter, and each voxel sums the projections in the
/// same order. Tested in tests/test_stream.cpp.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "glrecon/operator.h"
#include "glrecon/fdk.h"
#include "glrecon/phantom.h"

namespace glrecon {

/// Raw projections (line integrals) in acquisition order.
class ProjectionSource {
 public:
  virtual ~ProjectionSource() = default;
  virtual std::size_t count() const = 0;
  /// The detector the projections come from (pixel count, spacing and origin in detector mm).
  virtual DetectorLayout detector() const = 0;
  /// Reads projection `index` into `out` (nv rows of nu floats). Called in order, from one thread.
  virtual void read(std::size_t index, float* out) = 0;
  /// Where projection `index` comes from, for error messages ("scan/p_17.mha").
  virtual std::string origin(std::size_t index) const = 0;
};

/// Projections from files: one MetaImage stack (read once), or one file per projection read as needed
/// (a directory, a glob, or rtkfdk's --path/--regexp list, in natural order). The detector layout is the
/// first file's header; every later file must agree with it.
std::unique_ptr<ProjectionSource> openProjectionFiles(const std::vector<std::string>& files);

/// A scanner simulated from the analytic phantom: projection i is computed and delivered no earlier than
/// i / rate seconds after the first read (rate 0: as fast as it can).
std::unique_ptr<ProjectionSource> simulatedScanner(const Phantom& phantom, const Geometry& geometry, double rate, int threads = 1);

struct StreamOptions {
  FdkOptions fdk;                   ///< filter, backend, region... (batch = projections handed over at once)
  std::size_t queueDepth = 16;      ///< projections held between stages, at most (each bounded queue)
  int filterThreads = 0;            ///< FFTW filter pool (0 = all cores)
  const std::atomic<bool>* cancel = nullptr;  ///< set from anywhere to stop the stream (throws StreamCancelled)
  /// Called on the backprojector's thread after each batch: projections done so far and the backprojector
  /// (a viewer draws from it, snapshots read it).
  std::function<void(std::size_t done, ConeBeamOperator&)> onBatch;
  /// When non-zero, batches end at multiples of it, so onBatch sees every multiple (snapshots every N).
  std::size_t batchBoundary = 0;
};

struct StreamReport : FdkReport {
  double readSeconds = 0.0;       ///< time the reader spent reading or waiting for the scanner
  double uploadWaitSeconds = 0.0; ///< time the backprojector waited for filtered projections
  double latencySeconds = 0.0;    ///< from the last projection read to the volume ready on the host
  std::size_t peakQueued = 0;     ///< most projections held between stages at once
};

struct StreamCancelled : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reconstructs from a stream. The backprojector is made here unless `backprojector` is given (a viewer
/// passes one that draws into its window's context).
Image reconstructStreaming(ProjectionSource& source, const Geometry& geometry, const VolumeGrid& grid, const StreamOptions& options,
                           StreamReport* report = nullptr, ConeBeamOperator* op = nullptr);

}  // namespace glrecon
