// The options of the live commands (live_options.h).
#include "live_options.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/validate.h"

namespace glrecon::app {
namespace fs = std::filesystem;

bool hasDisplay() { return std::getenv("DISPLAY") != nullptr || std::getenv("WAYLAND_DISPLAY") != nullptr; }

FileScan openFileScan(const std::string& geometryPath, const std::vector<std::string>& files) {
  FileScan scan;
  scan.source = openProjectionFiles(files);
  scan.geometry = Geometry::fromCircular(readRtkGeometry(geometryPath), scan.source->detector());
  return scan;
}

void LiveOptions::add(CLI::App* c) {
  volume.add(c);
  backend.add(c, "cpu, graphics, graphics-mp, compute, cuda or auto");
  window.add(c, "GPU backends: projections per pass, a number, max or auto");
  c->add_option("--gpu", gpu, "EGL (or CUDA) device")->capture_default_str();
  c->add_option("--threads", threads, "CPU threads of the cpu backend (0: all)")->capture_default_str();
  c->add_option("--filter-threads", filterThreads, "FFTW filter threads (0: all)")->capture_default_str();
  c->add_option("--filter-on", filterOn,
                "Where the filter runs: auto (on the GPU for cuda, compute and graphics on a hardware GPU, else on the FFTW "
                "thread pool), cpu, or gpu (an error where it cannot)")
      ->capture_default_str();
  c->add_option("--queue", depth, "Projections held between pipeline stages, at most")->capture_default_str();
  c->add_option("--output,-o", output, "Write the final volume (.mha or .mhd)");
  c->add_option("--snapshots", snapshots, "Write axial, coronal and sagittal PNG slices into this directory while reconstructing");
  c->add_option("--every", every, "With --snapshots: every N projections (and at the end)")->capture_default_str();
  range.add(c, "--slice-range", "Grey range LOW:HIGH of snapshots (default: percentiles of the first snapshot)");
  c->add_flag("--overwrite", overwrite, "Replace existing outputs: the volume, snapshots (view --method: and residual.csv/.png)");
  c->add_flag("--quiet,-q", quiet, "No progress output");
}

FdkOptions LiveOptions::streamOptions() const {
  FdkOptions o;
  o.backend = backend.choice();
  o.gpu = gpu;
  o.threads = threads;
  o.progress = !quiet;
  o.window = window.window();
  o.filterOn = parseFilterPlace(filterOn);
  o.filterThreads = filterThreads;
  o.queueDepth = depth;
  o.streaming = true;
  return o;
}

void LiveOptions::checkOutputs() const {
  if (!output.empty()) checkOutputFile(output, {".mha", ".mhd"}, overwrite, "--output");
  if (!snapshots.empty()) {
    checkOutputDirectory(snapshots, "--snapshots");
    if (!overwrite && fs::is_directory(snapshots))
      for (const auto& entry : fs::directory_iterator(snapshots))
        if (entry.path().filename().string().rfind("snapshot_", 0) == 0)
          throwInputError(entry.path().string(), "--snapshots", "a directory without earlier snapshots (pass --overwrite to replace them)",
                          "an existing snapshot");
  }
  const VolumeGrid grid = volume.grid();
  checkGridBounds(grid, "--size/--spacing/--origin");
  checkHostMemory(command, "--size " + volume.size, std::uint64_t{3} * 4 * grid.voxelCount());
}

}  // namespace glrecon::app
