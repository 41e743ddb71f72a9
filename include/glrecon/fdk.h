#pragma once
/// The FDK chain, wired from its stages (RTK's FDKConeBeamReconstructionFilter in spirit):
///   1. check the projections against the geometry and the volume against the sources,
///   2. filter projections on a pool of CPU threads (FdkFilter: cosine and angular/Parker weights, ramp),
///      working ahead of
///   3. the backprojector (Backprojector), fed batch by batch in order on the calling thread (the GL
///      thread), so the chain costs about max(filter, backprojection) rather than their sum,
///   4. read the volume back (into an output paged in meanwhile by another thread).
/// Tested end to end against the analytic phantom in tests/test_fdk.cpp.
#include <string>

#include "glrecon/filter.h"
#include "glrecon/geometry.h"
#include "glrecon/image.h"

namespace glrecon {

/// The density-range kill (Xu & Mueller 3.3), a heuristic: off unless asked for.
struct DensityKill {
  bool enabled = false;
  double low = 0.0, high = 0.0, margin = 0.0;
  double after = 0.25;  ///< fraction of the projections applied before voxels are judged
};

struct FdkOptions {
  FilterOptions filter;
  std::string backend = "auto";  ///< cpu, graphics, graphics-mp or auto (see makeBackprojector)
  int gpu = 0;              ///< EGL device for GPU backends
  int window = 0;           ///< projections per GPU pass (0 = measured automatically)
  bool rememberWindow = false;  ///< see BackprojectorOptions::rememberWindow
  bool retune = false;
  int threads = 0;          ///< CPU threads for filtering and the CPU backend (0 = all)
  std::size_t batch = 32;   ///< projections filtered and backprojected together
  bool progress = false;    ///< print a progress line on stderr
  std::string roi;          ///< region of interest spec (see makeRegionOfInterest); empty: the whole volume
  bool substackStencil = false;  ///< graphics: the paper's 8 sub-stack stencil bits instead of per-slice masks
  DensityKill densityKill;
};

struct FdkReport {
  std::string backend;      ///< the backend's description: name, device, window
  std::string autoNote;     ///< why --backend auto chose what it chose
  bool shortScan = false;
  double filterSeconds = 0.0;       ///< filter threads' busy time over their number (the filter's wall time alone)
  double backprojectSeconds = 0.0;  ///< in the backprojector: uploads, passes, the last window and the readback
  double filterWaitSeconds = 0.0;   ///< the backprojector's thread waiting for filtered projections
  double readbackSeconds = 0.0;     ///< the volume to the host (part of backprojectSeconds)
  double setupSeconds = 0.0;        ///< making the backprojector (context, programs, buffers)
  double totalSeconds = 0.0;
  double voxelUpdates = 0.0;  ///< voxels x projections
  std::string region;         ///< the region's description; empty: the whole volume
  std::size_t regionVoxels = 0;
  double culledFraction = 0.0;   ///< voxel updates skipped (fragments culled on the GPU)
  std::size_t killedVoxels = 0;  ///< voxels the density-range kill stopped
  std::size_t killedAfter = 0;   ///< projections applied when they were stopped
  double gigaUpdatesPerSecond() const { return backprojectSeconds > 0 ? voxelUpdates / backprojectSeconds * 1e-9 : 0.0; }
};

/// The detector layout a projection stack's header describes (origin and spacing in detector mm).
DetectorLayout detectorLayoutOf(const Image& projections);

/// Throws InputError (naming `name`) when the stack's pixel or projection count differs from the geometry's.
void checkProjectionsMatch(const Geometry& geometry, const Image& projections, const std::string& name);

Image reconstructFdk(const Geometry& geometry, const Image& projections, const VolumeGrid& grid,
                     const FdkOptions& options, FdkReport* report = nullptr);

class Backprojector;
/// Steps 2 to 4 with a backprojector the caller made (and may reuse after Backprojector::reset, as bench does
/// to keep the setup out of repeated runs) and filter: the volume goes to `destination` (voxelCount floats).
/// options.backend/gpu/window/roi are not used here (the backprojector has them); the density kill is.
void runFdk(const Geometry& geometry, const Image& projections, const FdkFilter& filter, Backprojector& backprojector,
            float* destination, const FdkOptions& options, FdkReport& report);

}  // namespace glrecon
