#pragma once
/// Where an FDK run's projections come from: files read chunk by chunk (glrecon/io.h, openProjectionFiles), a stack
/// already in memory (a NumPy array, an Image), a simulated scanner delivering at its frame rate. The scheduler
/// (glrecon/fdk.h) reads a source on a thread of its own, in order, while it reconstructs what has arrived.
#include <cstddef>
#include <memory>
#include <string>

#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/phantom.h"
#include "glrecon/preprocess.h"
#include "glrecon/slab.h"

namespace glrecon {

class ProjectionSource {
 public:
  virtual ~ProjectionSource() = default;
  virtual std::size_t count() const = 0;
  /// The detector the projections come from (pixel count, spacing and origin in detector mm).
  virtual DetectorLayout detector() const = 0;
  /// Where projection `index` comes from, for messages ("scan/p_17.mha").
  virtual std::string origin(std::size_t index) const = 0;
  /// Projections [first, first + n) into `out` (nv rows of nu floats each), line integrals, each value checked (finite
  /// and within kMaxProjectionValue: InputError naming the file, the projection and the pixel otherwise). Called in
  /// order, from one thread.
  virtual void read(std::size_t first, std::size_t n, float* out) = 0;
  /// Only rows bands[i] of projection first + i, for i < n, into `out` laid out as read() lays it out (rows outside the
  /// bands are left as they were), those rows checked as read() checks them: a rank of a cluster reads only the
  /// detector rows its slabs need (glrecon/cluster.h). In order, from one thread, and again from the start for each slab.
  /// The base reads whole projections and keeps the bands' rows; files read the rows alone.
  virtual void readRows(std::size_t first, std::size_t n, const RowBand* bands, float* out);
  /// Projections worth reading at once (a chunk of a stack file); the reader asks for about this many.
  virtual std::size_t chunk() const { return 1; }
  /// Every projection in memory already, read-only (nu x nv x count floats): the scheduler reads them where they are,
  /// without a copy; nullptr for sources that read (files, a scanner).
  virtual const float* memory() const { return nullptr; }
};

/// Projections already in memory (nu x nv x count floats, x fastest), not owned: the memory must outlive the source.
/// With `check`, every value is checked first (as a file reader checks it), naming `name`, the projection and the pixel.
std::unique_ptr<ProjectionSource> memorySource(const float* data, std::size_t count, const DetectorLayout& detector, std::string name,
                                               bool check = false);
/// The same over a projection stack (nu x nv x projections, its header's detector layout).
std::unique_ptr<ProjectionSource> memorySource(const Image& stack, std::string name, bool check = false);

/// A scanner simulated from the analytic phantom: projection i is computed and delivered no earlier than i / rate
/// seconds after the first read (rate 0: as fast as it can). The source keeps its own copies of both.
std::unique_ptr<ProjectionSource> simulatedScanner(const Phantom& phantom, const Geometry& geometry, double rate, int threads = 1);

/// Raw intensities to line integrals as each projection is read (glrecon/preprocess.h): p = -ln((I - dark) / (flat - dark)),
/// flat = `i0` without a flat field. The flat and dark stacks are averaged once here.
class LineIntegralSource final : public ProjectionSource {
 public:
  LineIntegralSource(std::unique_ptr<ProjectionSource> intensities, const Image& flat, const Image& dark, double i0, const std::string& flatName,
                     const std::string& darkName);
  std::size_t count() const override { return intensities_->count(); }
  DetectorLayout detector() const override { return intensities_->detector(); }
  std::string origin(std::size_t index) const override { return intensities_->origin(index); }
  std::size_t chunk() const override { return intensities_->chunk(); }
  void read(std::size_t first, std::size_t n, float* out) override;
  /// Pixels clamped and dead so far.
  const PreprocessStats& stats() const { return convert_.stats(); }

 private:
  std::unique_ptr<ProjectionSource> intensities_;
  LineIntegrals convert_;
};

}  // namespace glrecon
