#pragma once

#include <string>

#include "glrecon/image.h"
#include "glrecon/stream.h"

namespace glrecon::app {
/// The volume options shared by every command (rtkfdk's names and defaults): "N" or "NX,NY,NZ" voxels,
/// "S" or "SX,SY,SZ" mm, and an optional "X,Y,Z" origin (default: centred). Throws UsageError.
VolumeGrid parseVolumeGrid(const std::string& size, const std::string& spacing, const std::string& origin);
/// The end-of-stream summary: rate, time split, latency.
void printStreamReport(const StreamReport& report, std::size_t projections);

/// Parses the command line, runs the subcommand, and maps errors to exit codes (0, 1 failure, 2 usage).
int run(int argc, char** argv);
}  // namespace glrecon::app
