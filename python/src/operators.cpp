// The operators from Python: project() (forward projection of a volume) and the iterative methods over one backend's
// operator.
#include <cmath>
#include <cstring>
#include <numeric>

#include "bindings.h"
#include "glrecon/errors.h"
#include "glrecon/iterative.h"
#include "glrecon/limits.h"
#include "glrecon/roi.h"

namespace glrecon::python {
namespace {

// `glrecon project`: A volume for every view of the geometry, (views, v, u). The volume is read in place when
// C-contiguous float32; its grid is (size from the array, spacing, origin).
py::tuple project(const py::array& input, const std::array<double, 3>& spacing, const std::array<double, 3>& origin, const PyGeometry& pygeometry,
                  const std::string& backend, double step, int gpu, int threads) {
  const FloatArray volume = floatArray(input);
  if (volume.ndim() != 3) throwInputError("volume", "shape", "a 3D array (z, y, x)", std::to_string(volume.ndim()) + " dimensions");
  if (!pygeometry.detector)
    throwInputError("geometry", "detector layout", "the detector's pixels, spacing and origin (geometry.with_detector(...))",
                    "an RTK geometry without a detector");
  const Geometry geometry = pygeometry.resolve(std::nullopt);
  geometry.validate("geometry");
  VolumeGrid grid;
  grid.size = {static_cast<int>(volume.shape(2)), static_cast<int>(volume.shape(1)), static_cast<int>(volume.shape(0))};
  grid.spacing = {spacing[0], spacing[1], spacing[2]};
  grid.origin = {origin[0], origin[1], origin[2]};
  grid.validate("volume");
  VolumeProjection made;
  {
    py::gil_scoped_release release;
    made = projectVolume(*backendOf(backend, false), geometry, grid, volume.data(), projectorOptions(gpu, threads, step));
  }
  Image& out = made.projections;
  const auto s = out.spacing, o = out.origin;
  return py::make_tuple(toNumpy(std::move(out)), triple(s), triple(o));
}

// `glrecon sart|sirt|cgls|osem`: the checks and defaults of the command line, then IterativeReconstructor's steps. The
// projections are copied once into an Image (the reconstructor takes one).
py::array iterative(const std::string& methodName_, const py::array& input, const py::object& spacing, const py::object& origin,
                    const PyGeometry& pygeometry, const std::array<int, 3>& size, const std::array<double, 3>& voxel,
                    const std::optional<std::array<double, 3>>& volumeOrigin, int iterations, int subsets, double lambda, bool positivity,
                    const std::optional<FloatArray>& initial, const std::optional<std::array<double, 3>>& initialSpacing,
                    const std::optional<std::array<double, 3>>& initialOrigin, const std::string& roi, const std::string& backend, int gpu,
                    int threads, double step, const py::object& progress, bool printProgress, py::dict report) {
  IterativeOptions options;
  options.method = parseIterativeMethod(methodName_);
  options.iterations = iterations;
  options.subsets = subsets;
  options.lambda = lambda;
  options.positivity = positivity;
  if (iterations < 1) throw UsageError(field("iterations") + ": expected at least 1, found " + std::to_string(iterations));
  const VolumeGrid grid = makeGrid(size, voxel, volumeOrigin);
  const ScanInput scan = scanInput(input, spacing, origin, pygeometry);
  const Geometry& geometry = scan.geometry;
  checkHostMemory(methodName_, "a copy of the projections", std::uint64_t{4} * static_cast<std::uint64_t>(scan.projections.size()));
  Image projections({geometry.detector.nu, geometry.detector.nv, static_cast<int>(geometry.size())},
                    {geometry.detector.spacingU, geometry.detector.spacingV, 1.0}, {geometry.detector.originU, geometry.detector.originV, 0.0});
  std::memcpy(projections.data.data(), scan.projections.data(), projections.data.size() * sizeof(float));
  Image initialVolume;
  if (initial) {
    initialVolume = toImage(*initial, initialSpacing.value_or(std::array<double, 3>{grid.spacing.x, grid.spacing.y, grid.spacing.z}),
                            initialOrigin.value_or(std::array<double, 3>{grid.origin.x, grid.origin.y, grid.origin.z}), "initial");
    options.initial = &initialVolume;
  }
  if (!roi.empty()) options.mask = makeRegionOfInterest(roi, geometry, grid).mask;
  std::exception_ptr callbackError;
  IterativeReport rep;
  Image volume;
  std::string description;
  {
    py::gil_scoped_release release;
    auto projector = makeOperator(*backendOf(backend, false), geometry, grid, projectorOptions(gpu, threads, step));
    description = projector->description();
    double dataNorm = 0;
    for (float b : projections.data) dataNorm += static_cast<double>(b) * b;
    dataNorm = std::sqrt(dataNorm);
    IterativeReconstructor reconstructor(*projector, geometry, projections, grid, options);
    // Step by step; after each iteration the progress line, and the GIL taken back for the callback and Ctrl-C.
    for (bool more = true; more;) {
      more = reconstructor.step();
      const IterationRecord& r = reconstructor.last();
      if (r.subset != r.subsets) continue;
      if (printProgress)
        std::fprintf(stderr, "%s iteration %d/%d: residual %.6g (%.4g of ||b||), %.3f s\n", methodName(options.method), r.iteration, iterations,
                     r.residual, dataNorm > 0 ? r.residual / dataNorm : 0.0, r.seconds);
      const auto callProgress = [&] {
        if (!progress.is_none()) progress(r.iteration, iterations);
      };
      if (interruptedBetweenSteps(callProgress, callbackError)) break;
    }
    if (!callbackError) volume = reconstructor.finish(&rep);
  }
  if (callbackError) std::rethrow_exception(callbackError);
  py::list residuals;
  for (const IterationRecord& r : rep.iterations) residuals.append(r.residual);
  report["backend"] = description;
  report["residuals"] = residuals;
  report["final_residual"] = rep.finalResidual;
  report["data_norm"] = rep.dataNorm;
  report["subsets"] = rep.subsets;
  report["lambda"] = rep.lambda;
  report["seconds"] = rep.seconds;
  report["setup_seconds"] = rep.setupSeconds;
  report["restarts"] = rep.restarts;
  report["stop_reason"] = renderFields(rep.stopReason, pythonName);
  report["warning"] = renderFields(rep.warning, pythonName);
  return toNumpy(std::move(volume));
}

}  // namespace

void bindOperators(py::module_& m) {
  m.def("_project", &project);
  m.def("_iterative", &iterative);
  m.def("projectors", [] {
    std::vector<std::string> names;
    for (Backend b : builtBackends())
      if (b != Backend::GraphicsMp) names.push_back(backendInfo(b).name);
    return names;
  }, "Backends of project() and the iterative methods (cpu, graphics, compute, cuda where built).");
}

}  // namespace glrecon::python
