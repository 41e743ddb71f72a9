#pragma once
// The scan option groups: the detector (--detector, --detector-spacing), phantom's circular scan, and the built-in
// sample scan of demo, bench, bench-iterative and scan-sim; each parsed and checked in its one accessor.
#include <string>

#include "glrecon/geometry.h"
#include "glrecon/grid.h"

namespace CLI {
class App;
}

namespace glrecon::app {

/// The built-in sample scan (demo, bench, scan-sim, view --simulate): a C-arm-like circle, 1000 mm to the
/// isocentre and 1536 mm to a flat panel 512 mm wide, `projections` over 360 degrees, detector² pixels.
Geometry sampleScan(int projections, int detector);

/// --detector "N" or "NU,NV" pixels and --detector-spacing "S" or "SU,SV" mm: a detector centred on its (0,0) mm point.
struct DetectorOptions {
  std::string pixels = "256", spacing = "2";
  void add(CLI::App* command, const std::string& pixelsHelp);
  DetectorLayout layout() const;
};

/// phantom's scan: a circular trajectory with RTK's parameters (arc, distances, offsets, angles) and its detector;
/// with --parallel RTK's parallel geometry (SourceToDetectorDistance 0).
struct CircularScanOptions {
  int projections = 360;
  double arc = 360.0, firstAngle = 0.0, sid = 1000.0, sdd = 1536.0, outOfPlane = 0.0, inPlane = 0.0;
  bool shortScan = false, parallel = false;
  DetectorOptions detector;
  std::string detectorOffset = "0", sourceOffset = "0";
  void add(CLI::App* command);
  Geometry geometry() const;
};

/// The sample scan's --projections and --detector (pixels per axis over 512 mm) and, where the command has it, a
/// cube of --size voxels per axis over 256 mm; each at least the command's minimum.
struct SampleScanOptions {
  int size = 0, projections = 0, detector = 0;
  int leastSize = 0, leastProjections = 0, leastDetector = 0;
  bool hasSize = false;
  /// With --size: the defaults, and the least value of all three.
  static SampleScanOptions withVolume(int size, int projections, int detector, int least);
  /// Without --size.
  static SampleScanOptions scanOnly(int projections, int detector, int leastProjections, int leastDetector);
  void add(CLI::App* command);
  /// UsageError naming the first value below its minimum.
  void check() const;
  Geometry geometry() const;
  /// The cube: --size voxels per axis, centred, 256 mm wide.
  VolumeGrid grid() const;
};

}  // namespace glrecon::app
