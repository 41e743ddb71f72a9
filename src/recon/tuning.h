#pragma once
// --backend auto: the backend that finishes first on this device, by measurement (internal to glrecon: recon, app,
// tests). On first use on a device, driver and volume size class, each available backend backprojects a stand-in
// problem (a cube of the class's side up to 256) twice, from few and from many projections (upload and readback
// included), which gives its rate (voxel updates per second) and its fixed cost per voxel (readback, per-pass
// overhead); the device APIs' start (CUDA's context: a fifth of a second on an H200) is measured as they open. All is
// remembered in the per-user cache beside the GL windows ($XDG_CACHE_HOME/glrecon/backends.txt) until asked to retune.
// For a run, each backend's time is estimated as start + fixed x voxels + updates / rate, and the least wins: a small
// volume may go to the backend that starts first rather than the fastest kernel. CUDA's start counts every time, also
// where the process has opened CUDA already, so the same problem always gets the same backend.
// A software renderer runs the GL backends on the CPU's cores behind a rasterizer: auto takes the cpu backend there
// without measuring.
#include <string>
#include <vector>

#include "glrecon/grid.h"
#include "glrecon/operator.h"

namespace glrecon {
class DeviceSession;

struct BackendMeasurement {
  Backend backend = Backend::Cpu;
  double updatesPerSecond = 0.0;     ///< voxel updates per second, the stand-in's passes' difference
  double fixedSecondsPerVoxel = 0.0; ///< per voxel and pass beyond the updates (readback, overhead)
  double startSeconds = 0.0;         ///< opening its device API (CUDA's context; GL's is open before auto chooses)
  double estimatedSeconds = 0.0;     ///< for the problem asked about (chooseBackend)
};

struct AutoChoice {
  Backend backend = Backend::Cpu;
  std::string note;       ///< what auto chose and why, for the user ("auto: compute backend, 2.1x faster than cuda ...")
  bool measured = false;  ///< measured now (false: remembered, or no choice to make)
  std::vector<BackendMeasurement> measurements;  ///< least estimated time first
};

struct AutoOptions {
  int device = 0;                ///< EGL and CUDA device
  bool retune = false;           ///< measure again what the cache remembers
  bool measureSoftware = false;  ///< measure the GL backends on a software renderer too (tests)
  int largestStandIn = 256;      ///< the stand-in cube's side at most
  bool glOnly = false;           ///< only backends that compute in a GL context (and cpu): a viewer's window draws them
};

/// The size class of a volume: its side (the cube root of its voxel count) rounded up to a power of two, at least 64.
int sizeClass(const VolumeGrid& grid);

/// Measures each of `candidates` on a side^3 stand-in (see the top of this file). A backend that cannot be made or
/// fails is left out.
std::vector<BackendMeasurement> measureBackends(const std::vector<Backend>& candidates, int side, int device, DeviceSession& session);

/// The backend auto takes for `projections` projections into a volume of `grid`'s size (see the top of this file).
AutoChoice chooseBackend(const VolumeGrid& grid, std::size_t projections, DeviceSession& session, const AutoOptions& options);

}  // namespace glrecon
