#pragma once
// The viewer (src/viewer): reconstructions shown as they fill in, in a window or offscreen, for `glrecon view` and
// `demo --view`. One loop (view_loop.h) steps a task; the tasks here are FDK as projections arrive and the iterative
// methods subset by subset. Internal to glrecon (the command line links it; the library's users need no window system).
#include <string>

#include "glrecon/fdk.h"
#include "glrecon/iterative.h"
#include "glrecon/source.h"
#include "viewer/view_loop.h"

namespace glrecon::viewer {

/// FDK of `source` shown as it fills in: the slices are drawn from the GL operator's volume texture as it is being
/// reconstructed (the cpu backend's volume is uploaded at most once a frame; cuda cannot draw in the window). The
/// volume goes to `output` (.mha) when given and the run is not closed early.
void viewFdk(ProjectionSource& source, const Geometry& geometry, const VolumeGrid& grid, FdkOptions options, const std::string& output,
             bool overwrite, const ViewScript& script);

struct IterativeView {
  Backend backend = Backend::Cpu;
  OperatorOptions operatorOptions;  ///< the window's context is added: GL operators compute where the viewer draws
  IterativeOptions options;
  std::string output;
  bool overwrite = false;
  bool quiet = false;  ///< no line per iteration
};

/// An iterative method shown after every subset, with the residual curve: drawn from the operator's volume texture
/// where the iterate lives there (graphics, compute: the subset methods), else from the iterate on the host.
void viewIterative(const Geometry& geometry, const Image& projections, const VolumeGrid& grid, const IterativeView& view,
                   const ViewScript& script);

}  // namespace glrecon::viewer
