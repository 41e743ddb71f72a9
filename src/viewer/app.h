#pragma once
// The desktop app (`glrecon app`): a window with a side panel (scan, reconstruction set-up, start / pause / resume /
// stop, progress, display, 3D view, saving; before a start, a preview of the grid over the first projection) and four
// views: axial, coronal and sagittal slices with linked crosshairs, and the 3D view (volume_renderer.h), all drawn from
// the live volume texture while FDK or an iterative method fills it in. Widgets are Dear ImGui's (the convention of GL
// tools; Debian's libimgui-dev with its GLFW and OpenGL 3 backends). Offscreen it draws the same frames with no input
// (scripts, tests, frame-rate measurements). docs/app.md is its manual.
#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "glrecon/fdk.h"
#include "glrecon/geometry.h"
#include "glrecon/iterative.h"
#include "glrecon/source.h"

namespace glrecon::viewer {

/// What to reconstruct: projection files with their RTK geometry, or the simulated scanner (Shepp-Logan).
struct ScanChoice {
  bool simulate = true;
  double rate = 0;                    ///< the simulated scanner's projections per second (0: as fast as it can)
  std::string geometry, projections;  ///< files: RTK XML; a MetaImage stack, a directory or a glob
  /// For an iterative method, which reads every projection before its first step: the simulated scanner then scans 90
  /// projections of 128^2 (as `view --method` does) instead of 360 of 256^2.
  bool iterative = false;

  bool operator==(const ScanChoice&) const = default;
};

struct OpenedScan {
  std::unique_ptr<ProjectionSource> source;
  std::shared_ptr<const Geometry> geometry;  ///< where a source may refer to it (the simulated scanner does): it stays put
};

/// Opens a scan (the command line's readers; throws InputError naming the file). Called at every start: a source is
/// read once.
using ScanOpener = std::function<OpenedScan(const ScanChoice&)>;

struct AppSetup {
  ScanChoice scan;
  ScanOpener open;
  int size = 128;        ///< voxels per axis (a cube, centred)
  double spacing = 2.0;  ///< mm
  FdkOptions options;    ///< backend (empty: auto among those that draw in the window), gpu, window, threads
  /// An iterative method instead of FDK (empty: FDK); its iterations and subsets (0: the method's default) from
  /// `iterative`, its projector pair from `pair`. Auto's backend for them: compute on a GPU, cpu on a software renderer.
  std::optional<IterativeMethod> method;
  IterativeOptions iterative;
  ProjectorPair pair = ProjectorPair::Interpolating;
  std::string roi;       ///< region of interest spec (glrecon/roi.h; empty: the whole volume), for every method
  int width = 1600, height = 960;  ///< the window (or offscreen framebuffer) in pixels
  /// Offscreen the app closes once its run (and what the script asks) is done; without start it draws the set-up panel
  /// once (the preview of the grid over the first projection) into `screenshot` and closes.
  bool offscreen = false;
  // What a script asks (tests, measurements): start at once; then, once done, save and close.
  bool start = false;
  bool mip = false;               ///< the 3D view by MIP (else DVR)
  bool autoResolution = true;     ///< the 3D view's pixels scaled so one drawing takes about 100 ms (else all of them)
  std::optional<std::pair<double, double>> range;  ///< the grey window (default: chosen from the GPU histogram)
  double fps = 60;                ///< the frames per second aimed at while reconstructing (steps fill the time between)
  double redraw3dMs = 50;         ///< while reconstructing, the 3D view is drawn again at most this often (ms)
  int measure = 0;                ///< rounds of: the same reconstruction without frames, then the app's; a report each
  std::size_t closeAfter = 0;     ///< close after this many projections (iterative: subsets), as a user closing the window would
  std::string screenshot;         ///< once done: the window's frame as PNG, then close
  std::size_t screenshotAt = 0;   ///< with screenshot: taken mid-scan, once this many projections (iterative: subsets) are in
  std::string saveVolume;         ///< once done: the volume (.mha)
  std::string series;             ///< once done: the 3D view turning, seriesFrames PNGs in this folder
  int seriesFrames = 36;
  bool overwrite = false;
  bool quiet = false;
  /// Tests that drive the window with real input events: each frame, the app's state and where its widgets are (in
  /// window pixels), written to this file (replaced atomically). Empty: none.
  std::string widgetMap;
};

/// Runs the app until its window closes (or, scripted, until the script is done). Throws gl::GlError where no window
/// or context can be made.
void runApp(const AppSetup& setup);

}  // namespace glrecon::viewer
