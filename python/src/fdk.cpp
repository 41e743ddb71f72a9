// glrecon.fdk: the library's plan and scheduler on the NumPy array where it is (a non-owning source, no copy): the
// filter on the device where the backend has one, slabs where the volume does not fit the device.
#include <chrono>

#include "bindings.h"
#include "glrecon/errors.h"
#include "glrecon/fdk.h"
#include "glrecon/limits.h"
#include "glrecon/sink.h"
#include "glrecon/source.h"

namespace glrecon::python {
namespace {

py::array fdk(const py::array& input, const py::object& spacing, const py::object& origin, const PyGeometry& pygeometry,
              const std::array<int, 3>& size, const std::array<double, 3>& voxel, const std::optional<std::array<double, 3>>& volumeOrigin,
              const std::string& backend, int window, const std::string& filter, double cutoff, bool shortScan, int threads,
              int batch, int gpu, const std::string& roi, const py::object& progress, bool printProgress, py::dict report) {
  // Taken as it is when C-contiguous float32; otherwise converted once here (forcecast).
  const FloatArray projections = floatArray(input);
  if (projections.ndim() != 3)
    throwInputError("projections", "shape", "a 3D array (views, v, u)", std::to_string(projections.ndim()) + " dimensions");
  const std::size_t views = projections.shape(0), nv = projections.shape(1), nu = projections.shape(2);
  const Geometry geometry = pygeometry.resolve(layoutOf(spacing, origin, nu, nv));
  geometry.validate("geometry");
  if (geometry.detector.nu != static_cast<int>(nu) || geometry.detector.nv != static_cast<int>(nv))
    throwInputError("projections", "shape (views, v, u)",
                    "v x u = " + std::to_string(geometry.detector.nv) + " x " + std::to_string(geometry.detector.nu) + " detector pixels",
                    std::to_string(nv) + " x " + std::to_string(nu));
  if (geometry.size() != views)
    throwInputError("projections", "number of projections", std::to_string(geometry.size()) + " as in the geometry", std::to_string(views));
  const VolumeGrid grid = makeGrid(size, voxel, volumeOrigin);

  FdkOptions options;
  options.filter.window = parseRampWindow(filter);
  options.filter.cutoff = cutoff;
  options.filter.shortScan = shortScan;
  options.backend = backendOf(backend, true);
  options.window = window;
  options.threads = threads;
  checkValue("batch", batch);  // before the cast: -1 read as 2^64 - 1 (and std::max(1, batch) took 0 or -1 for 1)
  options.batch = static_cast<std::size_t>(batch);
  options.gpu = gpu;
  options.roi = roi;
  options.progress = printProgress;
  // The batch path on the array where it is (no copy): the filter on the device where the backend has one, slabs where
  // the volume does not fit the device. Its values are checked first, as the file readers check theirs.
  std::unique_ptr<ProjectionSource> source =
      memorySource(projections.data(), views, geometry.detector, "projections", /*check=*/true);
  std::exception_ptr callbackError;
  FdkReport done;
  Image volume;
  {
    py::gil_scoped_release release;
    const FdkPlan plan = planFdk(geometry, grid, options, *source);
    ImageSink sink(grid, threads);
    FdkReconstructor reconstructor(plan);
    reconstructor.start(*source, sink);
    // Between steps the GIL is taken back for the progress callback and Ctrl-C; an exception there cancels the run.
    const auto callProgress = [&] {
      if (!progress.is_none()) progress(reconstructor.done(), views);
    };
    bool more = true;
    while (more) {
      more = reconstructor.step(std::chrono::milliseconds(100));
      if (interruptedBetweenSteps(callProgress, callbackError)) break;
    }
    if (callbackError) {
      reconstructor.cancel();
    } else {
      done = reconstructor.finish();
      volume = sink.take();
    }
  }
  if (callbackError) std::rethrow_exception(callbackError);
  report["backend"] = done.backend;
  if (!done.autoNote.empty()) report["auto"] = renderFields(done.autoNote, pythonName);
  report["seconds"] = done.totalSeconds;
  report["backproject_seconds"] = done.backprojectSeconds;
  report["g_voxel_updates_per_second"] = done.gigaUpdatesPerSecond();
  report["projections_address"] = reinterpret_cast<std::uintptr_t>(projections.data());
  return toNumpy(std::move(volume));
}

}  // namespace

void bindFdk(py::module_& m) { m.def("_fdk", &fdk); }

}  // namespace glrecon::python
