#pragma once
/// Where an FDK run's volume goes: memory (an Image, a NumPy array), a file written whole or slab by slab
/// (glrecon/io.h, VolumeFileSink), a viewer's texture. The scheduler (glrecon/fdk.h) hands a one-block run's volume
/// over whole, and a slab run's slab by slab as each is read back.
#include <string>

#include "glrecon/grid.h"
#include "glrecon/image.h"

namespace glrecon {

class VolumeSink {
 public:
  virtual ~VolumeSink() = default;
  /// For messages: the output's name ("volume.mha").
  virtual std::string name() const = 0;
  /// Memory for the whole grid's voxels (x fastest), asked for once, when a one-block run's readback begins (so that
  /// it may be prepared meanwhile); nullptr: the volume comes by rows.
  virtual float* wholeVolume() { return nullptr; }
  /// The volume will come whole (a one-block run, whose plan has passed the host-memory check): memory for
  /// wholeVolume() may be prepared from now on, not earlier (a sink made before planning must not claim it first).
  virtual void beginWholeVolume() {}
  /// The volume will come by rows (a slab run): memory prepared for a whole volume may go.
  virtual void beginRows() {}
  /// The devices are set up: memory for the volume may be prepared from now on. Faulted in on every thread beside the
  /// devices' setup, a 32 GiB volume slowed the pinned buffers that setup makes (two H200s' setup 0.23-0.31 s).
  virtual void devicesReady() {}
  /// Rows [firstRow, firstRow + rows) of y: nx x rows x nz floats, x fastest, then y, then z. Each row once, in any
  /// order, from several threads at once for different rows.
  virtual void writeRows(int firstRow, int rows, const float* data) = 0;
  /// A slab run may read its rows straight into this memory of the whole grid (x fastest, then y, then z) instead of
  /// handing them to writeRows, where the operator can (ConeBeamOperator::readBlockInto); nullptr: by writeRows only.
  virtual float* rowsInPlace() { return nullptr; }
  /// rowsInPlace() will give memory, perhaps only once it is prepared (then it waits): a readback beside the next slab
  /// asks for it on its own thread, so that the device need not wait for the memory.
  virtual bool hasRowsInPlace() const { return false; }
};

/// The volume into memory: an Image of the grid, whose pages another thread faults in while the run works (at 512^3
/// half a gigabyte of page faults, a tenth of a second that would otherwise follow the readback), from devicesReady()
/// on (or when first asked for, where a run never said so).
class ImageSink final : public VolumeSink {
 public:
  explicit ImageSink(const VolumeGrid& grid, int threads = 0);
  ~ImageSink() override;
  std::string name() const override { return "the volume in memory"; }
  void devicesReady() override;
  float* wholeVolume() override;
  void writeRows(int firstRow, int rows, const float* data) override;
  float* rowsInPlace() override { return wholeVolume(); }
  bool hasRowsInPlace() const override { return true; }
  /// The volume (once the run has finished).
  Image take();

 private:
  struct Prepared;
  std::unique_ptr<Prepared> prepared_;
};

}  // namespace glrecon
