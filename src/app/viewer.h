#pragma once
#include <string>

#include "glrecon/fdk.h"
#include "glrecon/source.h"

namespace glrecon::app {

struct ViewerScript {
  std::string screenshot;  ///< save a screenshot here once the reconstruction ends, then close (for scripts and tests)
  std::size_t closeAfter = 0;  ///< close the window after this many projections (0: never), as a user would
  std::size_t screenshotAt = 0;  ///< also save a screenshot once this many projections are in (mid-scan)
  std::string range;           ///< grey range LOW:HIGH (default: percentiles once a tenth of the scan is in)
  int cell = 360;              ///< panel size in pixels
  /// Draw the frames into an offscreen framebuffer of the window's size on a headless context instead of a window:
  /// what a window would show and at what rate, on machines without a display (GPU servers).
  bool offscreen = false;
};

/// Opens a window with axial, coronal and sagittal slices and reconstructs `source` into it (see `glrecon view`).
void runViewer(ProjectionSource& source, const Geometry& geometry, const VolumeGrid& grid, FdkOptions options,
               const std::string& output, bool overwrite, const ViewerScript& script = {});

}  // namespace glrecon::app
