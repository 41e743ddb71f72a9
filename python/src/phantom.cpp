// The Shepp-Logan phantom: voxelized on a grid, and projected analytically (a simulated scan).
#include "bindings.h"
#include "glrecon/phantom.h"
#include "glrecon/validate.h"

namespace glrecon::python {

void bindPhantom(py::module_& m) {
  m.def("_shepp_logan", [](std::array<int, 3> size, std::array<double, 3> spacing, std::optional<std::array<double, 3>> origin,
                           const std::string& variant, double scale, double densityScale, int supersample, int threads) {
    const VolumeGrid grid = makeGrid(size, spacing, origin);
    Phantom phantom = Phantom::sheppLogan(parseSheppLoganVariant(variant), scale);
    if (densityScale != 1.0) phantom.scaleDensities(densityScale);
    Image volume;
    {
      py::gil_scoped_release release;
      volume = voxelizePhantom(phantom, grid, supersample, threads);
    }
    const auto o = volume.origin;
    return py::make_tuple(toNumpy(std::move(volume)), triple(o));
  });
  m.def("_project_shepp_logan", [](const PyGeometry& pygeometry, const std::string& variant, double scale, double densityScale,
                                   int supersample, double noiseI0, std::uint64_t seed, int threads) {
    const Geometry geometry = pygeometry.resolve(std::nullopt);
    Phantom phantom = Phantom::sheppLogan(parseSheppLoganVariant(variant), scale);
    if (densityScale != 1.0) phantom.scaleDensities(densityScale);
    ProjectionOptions options;
    options.supersample = supersample;
    options.noiseI0 = noiseI0;
    options.seed = seed;
    options.threads = threads;
    Image projections;
    {
      py::gil_scoped_release release;
      projections = simulateScan(phantom, geometry, options);  // as `glrecon phantom` makes it: the same noise
    }
    // Checked as `glrecon phantom` checks what it simulated (src/app/commands/phantom.cpp): noise_i0=5e-324 gave
    // -log(1 / i0) = -inf in every pixel, handed back without an error.
    checkFiniteValues(projections, "phantom", "simulated projection", kMaxProjectionValue);
    const auto s = projections.spacing, o = projections.origin;
    return py::make_tuple(toNumpy(std::move(projections)), triple(s), triple(o));
  });
}

}  // namespace glrecon::python
