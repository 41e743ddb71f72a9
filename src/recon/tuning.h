#pragma once
// What a run chooses by measurement on the device it runs on: the backend auto takes. Internal to glrecon (recon, app).
#include <string>

#include "glrecon/grid.h"
#include "glrecon/operator.h"

namespace glrecon {
class DeviceSession;

/// The backend --backend auto takes on `device` for a volume of `grid`'s size, with the reason in `note`.
Backend chooseBackend(const VolumeGrid& grid, int device, DeviceSession& session, bool retune, std::string* note);

}  // namespace glrecon
