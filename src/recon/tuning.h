#pragma once
// --backend auto: the backend that is fastest on this device, measured (Internal to glrecon: recon, app, tests).
// On first use on a device, driver and problem size class, each available backend backprojects a stand-in problem
// (a cube of the class's side up to 256, from 32 projections, upload and readback included; well under a second on a
// GPU); the fastest is remembered in the per-user cache beside the GL windows ($XDG_CACHE_HOME/glrecon/backends.txt)
// until asked to retune. A software renderer runs the GL backends on the CPU's cores behind a rasterizer: auto takes
// the cpu backend there without measuring.
#include <string>
#include <vector>

#include "glrecon/grid.h"
#include "glrecon/operator.h"

namespace glrecon {
class DeviceSession;

struct BackendMeasurement {
  Backend backend = Backend::Cpu;
  double updatesPerSecond = 0.0;  ///< voxel updates per second on the stand-in problem
};

struct AutoChoice {
  Backend backend = Backend::Cpu;
  std::string note;       ///< what auto chose and why, for the user ("auto: compute backend, 12x faster than ...")
  bool measured = false;  ///< measured now (false: remembered, or no choice to make)
  std::vector<BackendMeasurement> measurements;  ///< fastest first (measured now or remembered)
};

struct AutoOptions {
  int device = 0;                ///< EGL and CUDA device
  bool retune = false;           ///< measure again what the cache remembers
  bool measureSoftware = false;  ///< measure the GL backends on a software renderer too (tests)
  int largestStandIn = 256;      ///< the stand-in cube's side at most
};

/// The size class of a volume: its side (the cube root of its voxel count) rounded up to a power of two, at least 64.
int sizeClass(const VolumeGrid& grid);

/// Times each of `candidates` backprojecting 32 projections of side^2 into a side^3 volume (after a warm-up pass),
/// the readback included. A backend that cannot be made or fails is left out.
std::vector<BackendMeasurement> measureBackends(const std::vector<Backend>& candidates, int side, int device, DeviceSession& session);

/// The backend auto takes for a volume of `grid`'s size (see the top of this file).
AutoChoice chooseBackend(const VolumeGrid& grid, DeviceSession& session, const AutoOptions& options);

}  // namespace glrecon
