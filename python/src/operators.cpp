// The operators from Python: project() (forward projection of a volume) and the iterative methods over one backend's
// operator.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <numeric>

#include "bindings.h"
#include "glrecon/errors.h"
#include "glrecon/iterative.h"
#include "glrecon/limits.h"
#include "glrecon/roi.h"
#include "glrecon/split.h"
#include "glrecon/validate.h"

namespace glrecon::python {
namespace {

// `glrecon project`: A volume for every view of the geometry, (views, v, u). The volume is read in place when
// C-contiguous float32; its grid is (size from the array, spacing, origin). projectVolume's steps, with the views in
// groups: between groups the GIL is taken back for the progress callback and Ctrl-C (one forward() over every view
// could not be stopped). A group grows while it takes under 0.1 s, so that a long run stops within about that.
py::tuple project(const py::array& input, const std::array<double, 3>& spacing, const std::array<double, 3>& origin, const PyGeometry& pygeometry,
                  const std::string& backend, double step, int gpu, int threads, const py::object& progress, bool printProgress) {
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
  const Backend chosen = *backendOf(backend, false);
  checkScanAndGrid(geometry, grid, "project");
  checkVolumeToProject(volume.data(), grid, "volume");
  const DetectorLayout& layout = geometry.detector;
  const std::size_t views = geometry.size(), pixels = static_cast<std::size_t>(layout.nu) * static_cast<std::size_t>(layout.nv);
  checkHostMemory("project", std::to_string(views) + " projections of " + std::to_string(layout.nu) + " x " + std::to_string(layout.nv),
                  4 * static_cast<std::uint64_t>(pixels) * views + (chosen == Backend::Cpu ? 4 * static_cast<std::uint64_t>(grid.voxelCount()) : 0));
  Image out({layout.nu, layout.nv, static_cast<int>(views)}, {layout.spacingU, layout.spacingV, 1.0}, {layout.originU, layout.originV, 0.0});
  std::exception_ptr callbackError;
  {
    py::gil_scoped_release release;
    auto op = makeOperator(chosen, geometry, grid, projectorOptions(gpu, threads, step));
    op->setVolume(volume.data());
    std::vector<std::size_t> order(views);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto callProgress = [&](std::size_t done) {
      if (printProgress) std::fprintf(stderr, "project: %zu/%zu views\n", done, views);
      if (!progress.is_none()) progress(done, views);
    };
    std::size_t group = 1;
    for (std::size_t done = 0; done < views;) {
      const std::size_t count = std::min(group, views - done);
      const auto start = std::chrono::steady_clock::now();
      op->forward(order.data() + done, count, out.data.data() + done * pixels);
      done += count;
      if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100)) group *= 2;
      if (interruptedBetweenSteps([&] { callProgress(done); }, callbackError)) break;
    }
  }
  if (callbackError) std::rethrow_exception(callbackError);
  // As projectVolume: guaranteed finite by the checks above, checked anyway.
  checkFiniteValues(out, "project", "projection", kMaxProjectionValue);
  const auto s = out.spacing, o = out.origin;
  return py::make_tuple(toNumpy(std::move(out)), triple(s), triple(o));
}

// `glrecon sart|sirt|cgls|osem`: the checks and defaults of the command line, then IterativeReconstructor's steps. The
// projections are copied once into an Image (the reconstructor takes one).
py::array iterative(const std::string& methodName_, const py::array& input, const py::object& spacing, const py::object& origin,
                    const PyGeometry& pygeometry, const std::array<int, 3>& size, const std::array<double, 3>& voxel,
                    const std::optional<std::array<double, 3>>& volumeOrigin, int iterations, int subsets, double lambda, bool positivity,
                    const std::optional<FloatArray>& initial, const std::optional<std::array<double, 3>>& initialSpacing,
                    const std::optional<std::array<double, 3>>& initialOrigin, const std::string& roi, const std::string& backend,
                    const std::vector<int>& devices, int slabs, int threads, double step, const std::string& pair, double stopResidual, double stopChange, int tvSteps, double tvAlpha,
                    double tvReduction, double tvRatio, double lambdaReduction, double tvWeight, const std::string& order,
                    std::uint64_t orderSeed, const py::object& progress, bool printProgress, py::dict report) {
  IterativeOptions options;
  options.method = parseIterativeMethod(methodName_);
  options.iterations = iterations;
  options.subsets = subsets;
  options.lambda = lambda;
  options.positivity = positivity;
  options.order = parseSubsetOrder(order);
  options.orderSeed = orderSeed;
  options.stopResidual = stopResidual;
  options.stopChange = stopChange;
  options.tvSteps = tvSteps;
  options.tvAlpha = tvAlpha;
  options.tvReduction = tvReduction;
  options.tvRatio = tvRatio;
  options.lambdaReduction = lambdaReduction;
  options.tvWeight = tvWeight;
  checkValue("iterations", iterations);
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
    // Several devices or slabs: the split operator, as the command line makes it.
    auto projector = makeOperatorOrSplit(*backendOf(backend, false), geometry, grid, projectorOptions(devices.front(), threads, step, pair),
                                         SplitOptions{slabs, devices, nullptr});
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

// glrecon.Operator's core: one ConeBeamOperator over a geometry and a grid, kept between calls (its device buffers
// and programs made once). forward: the volume set, every view projected; back: B (Adjoint) of every view into a
// cleared volume. The geometry is owned here: the operator keeps a reference to it.
class PyOperator {
 public:
  PyOperator(const PyGeometry& pygeometry, const std::array<int, 3>& size, const std::array<double, 3>& voxel,
             const std::optional<std::array<double, 3>>& volumeOrigin, const std::string& backend, const std::string& pair, int gpu,
             int threads, double step)
      : geometry_(std::make_unique<Geometry>(resolved(pygeometry))), grid_(makeGrid(size, voxel, volumeOrigin)) {
    checkScanAndGrid(*geometry_, grid_, "Operator");
    views_.resize(geometry_->size());
    std::iota(views_.begin(), views_.end(), std::size_t{0});
    py::gil_scoped_release release;
    op_ = makeOperator(*backendOf(backend, false), *geometry_, grid_, projectorOptions(gpu, threads, step, pair));
  }
  py::array forward(const py::array& input) {
    const FloatArray volume = floatArray(input);
    checkShape(volume, {grid_.size[2], grid_.size[1], grid_.size[0]}, "volume", "(z, y, x)");
    checkVolumeToProject(volume.data(), grid_, "volume");
    const DetectorLayout& d = geometry_->detector;
    Image out({d.nu, d.nv, static_cast<int>(views_.size())}, {d.spacingU, d.spacingV, 1.0}, {d.originU, d.originV, 0.0});
    {
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mutex_);  // one call at a time: the operator holds one volume
      op_->setVolume(volume.data());
      op_->forward(views_.data(), views_.size(), out.data.data());
    }
    return toNumpy(std::move(out));
  }
  py::array back(const py::array& input) {
    const FloatArray projections = floatArray(input);
    const DetectorLayout& d = geometry_->detector;
    checkShape(projections, {static_cast<int>(views_.size()), d.nv, d.nu}, "projections", "(views, v, u)");
    // Checked as every reconstruction checks its data (finite, within float's safe range), on a copy in an Image.
    Image data({d.nu, d.nv, static_cast<int>(views_.size())}, {d.spacingU, d.spacingV, 1.0}, {d.originU, d.originV, 0.0});
    std::memcpy(data.data.data(), projections.data(), data.data.size() * sizeof(float));
    checkProjectionData(*geometry_, data, "projections");
    Image out(grid_);
    {
      py::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mutex_);
      std::vector<float> zeros(grid_.voxelCount(), 0.0f);
      op_->setVolume(zeros.data());
      op_->back(data.data.data(), views_.data(), views_.size(), Weighting::Adjoint);
      op_->readVolume(out.data.data());
    }
    return toNumpy(std::move(out));
  }
  py::tuple volumeShape() const { return py::make_tuple(grid_.size[2], grid_.size[1], grid_.size[0]); }
  py::tuple projectionShape() const { return py::make_tuple(views_.size(), geometry_->detector.nv, geometry_->detector.nu); }
  std::string description() const { return op_->description(); }

 private:
  static Geometry resolved(const PyGeometry& pygeometry) {
    if (!pygeometry.detector)
      throwInputError("geometry", "detector layout", "the detector's pixels, spacing and origin (geometry.with_detector(...))",
                      "an RTK geometry without a detector");
    Geometry g = pygeometry.resolve(std::nullopt);
    g.validate("geometry");
    return g;
  }
  static void checkShape(const FloatArray& a, const std::array<int, 3>& expected, const char* name, const char* axes) {
    const bool ok = a.ndim() == 3 && a.shape(0) == expected[0] && a.shape(1) == expected[1] && a.shape(2) == expected[2];
    if (!ok) {
      std::string found = "(";
      for (py::ssize_t i = 0; i < a.ndim(); ++i) found += (i ? ", " : "") + std::to_string(a.shape(i));
      throwInputError(name, "shape", std::string(axes) + " = (" + std::to_string(expected[0]) + ", " + std::to_string(expected[1]) + ", " +
                                         std::to_string(expected[2]) + ")",
                      found + ")");
    }
  }
  std::unique_ptr<Geometry> geometry_;
  VolumeGrid grid_;
  std::vector<std::size_t> views_;
  std::unique_ptr<ConeBeamOperator> op_;
  // forward and back release the GIL: two Python threads on one Operator take turns (a GL context is current on one
  // thread at a time, and setVolume then forward/back is one step).
  std::mutex mutex_;
};

}  // namespace

void bindOperators(py::module_& m) {
  m.def("_project", &project);
  m.def("_iterative", &iterative);
  py::class_<PyOperator>(m, "_Operator")
      .def(py::init<const PyGeometry&, const std::array<int, 3>&, const std::array<double, 3>&, const std::optional<std::array<double, 3>>&,
                    const std::string&, const std::string&, int, int, double>())
      .def("forward", &PyOperator::forward)
      .def("back", &PyOperator::back)
      .def_property_readonly("volume_shape", &PyOperator::volumeShape)
      .def_property_readonly("projection_shape", &PyOperator::projectionShape)
      .def_property_readonly("description", &PyOperator::description);
  m.def("projectors", [] {
    std::vector<std::string> names;
    for (Backend b : builtBackends())
      if (b != Backend::GraphicsMp) names.push_back(backendInfo(b).name);
    return names;
  }, "Backends of project() and the iterative methods (cpu, graphics, compute, cuda where built).");
}

}  // namespace glrecon::python
