#pragma once

#include <string>

#include "glrecon/image.h"
#include "glrecon/fdk.h"
#include "glrecon/source.h"

namespace glrecon::app {
/// The volume options shared by every command (rtkfdk's names and defaults): "N" or "NX,NY,NZ" voxels,
/// "S" or "SX,SY,SZ" mm, and an optional "X,Y,Z" origin (default: centred). Throws UsageError.
VolumeGrid parseVolumeGrid(const std::string& size, const std::string& spacing, const std::string& origin);
/// The built-in sample scan (demo, bench, scan-sim, view --simulate): a C-arm-like circle, 1000 mm to the
/// isocentre and 1536 mm to a flat panel 512 mm wide, `projections` over 360 degrees, detector² pixels.
Geometry sampleScan(int projections, int detector);

/// Projection files streamed with their RTK geometry; the detector layout is the first file's header.
struct FileScan {
  std::unique_ptr<ProjectionSource> source;
  Geometry geometry;
};
FileScan openFileScan(const std::string& geometryPath, const std::vector<std::string>& files);

/// The end-of-stream summary: rate, time split, latency.
void printStreamReport(const FdkReport& report, std::size_t projections);

/// Parses the command line, runs the subcommand, and maps errors to exit codes (0, 1 failure, 2 usage).
/// A library field name (glrecon/errors.h) as the command line's option: camelCase becomes --kebab-case.
std::string optionName(const std::string& field);

int run(int argc, char** argv);
}  // namespace glrecon::app
