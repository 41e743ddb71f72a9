#pragma once
// What scan-sim and view share: the streaming reconstruction's options (grid, backend, window, filter, queue, outputs,
// snapshots) and the scan files they stream; demo --view takes the same defaults.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "glrecon/fdk.h"
#include "glrecon/source.h"
#include "options.h"

namespace CLI {
class App;
}

namespace glrecon::app {

/// Where a window can open: $DISPLAY or $WAYLAND_DISPLAY is set.
bool hasDisplay();

/// Projection files streamed with their RTK geometry; the detector layout is the first file's header.
struct FileScan {
  std::unique_ptr<ProjectionSource> source;
  Geometry geometry;
};
FileScan openFileScan(const std::string& geometryPath, const std::vector<std::string>& files);

struct LiveOptions {
  std::string command;  ///< "scan-sim" or "view": names the run in messages
  VolumeGridOptions volume{"128", "2"};
  BackendOption backend{"auto"};
  WindowOption window;
  std::string output, snapshots, filterOn = "auto";
  RangeOption range;  ///< --slice-range
  int gpu = 0, threads = 0, filterThreads = 0;
  std::size_t every = 30, depth = 16;
  bool overwrite = false, quiet = false;

  explicit LiveOptions(std::string name) : command(std::move(name)) {}
  void add(CLI::App* command);
  /// The FDK options of a streaming run.
  FdkOptions streamOptions() const;
  /// Outputs checked before the scan starts: the volume's name and directory, the snapshot directory (whose earlier
  /// snapshots are replaced only with --overwrite); the grid's bounds and the memory it needs.
  void checkOutputs() const;
};

}  // namespace glrecon::app
