#pragma once
// What the binding files share (python/src): NumPy <-> Image, the geometry as Python holds it, the backend names, the
// library's field names as this module's keywords. Internal to the extension.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "glrecon/errors.h"
#include "glrecon/geometry.h"
#include "glrecon/image.h"
#include "glrecon/operator.h"

namespace glrecon::python {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

/// The backend a name means: one this build has; with allowAuto, "auto" is an empty optional. project() and the
/// iterative methods take no graphics-mp (it differs from graphics in FDK's backprojection only).
std::optional<Backend> backendOf(const std::string& name, bool allowAuto);
/// `input` as C-contiguous float32, converted where it is not; a failed conversion raises its own Python error
/// (FloatArray::ensure clears it, and an error_already_set thrown after it read "Internal error: ... Python error
/// indicator not set"). The glrecon package converts, with the memory checked, before calling.
FloatArray floatArray(const py::array& input);
/// An Image's buffer as a NumPy array (z, y, x) without copying: the Image moves to the heap and a capsule frees it.
py::array toNumpy(Image&& image);
py::tuple triple(const std::array<double, 3>& a);
/// A NumPy array (3D, or 2D as one slice) with (x, y, z) spacing and origin as an Image (one copy: the C++ writers
/// and preprocessing take an Image).
Image toImage(const FloatArray& array, const std::array<double, 3>& spacing, const std::array<double, 3>& origin, const char* name);

// A geometry as Python sees it: RTK parameters waiting for a detector layout (read_rtk_geometry: the layout comes
// from the projections, as on the command line), or complete (circular(), parallel(), from_vectors()).
struct PyGeometry {
  std::vector<CircularParams> circular;
  std::optional<DetectorLayout> detector;
  std::vector<ProjectionVectors> vectors;  // for geometries given as vectors (no RTK parameters)

  Geometry resolve(const std::optional<DetectorLayout>& fromProjections) const {
    if (!circular.empty()) {
      const std::optional<DetectorLayout>& layout = detector ? detector : fromProjections;
      if (!layout)
        throwInputError("geometry", "detector layout",
                        "the detector's pixel spacing and origin (projections from read_image, or geometry.with_detector(...))",
                        "an RTK geometry without a detector and plain array projections");
      return Geometry::fromCircular(circular, *layout);
    }
    Geometry g;
    g.detector = *detector;
    g.views = vectors;
    return g;
  }
};

/// A detector layout from the projections' (u, v[, view]) spacing and origin; none where no spacing is given.
std::optional<DetectorLayout> layoutOf(const py::object& spacing, const py::object& origin, std::size_t nu, std::size_t nv);
/// The volume grid of (size, spacing, origin), validated; centred without an origin.
VolumeGrid makeGrid(const std::array<int, 3>& size, const std::array<double, 3>& spacing, const std::optional<std::array<double, 3>>& origin);

/// The projections of a reconstruction as (views, v, u): taken as they are when C-contiguous float32, checked against
/// the geometry (shape, count) with fdk's messages; the geometry resolved as fdk resolves it.
struct ScanInput {
  FloatArray projections;
  Geometry geometry;
};
ScanInput scanInput(const py::array& input, const py::object& spacing, const py::object& origin, const PyGeometry& pygeometry);

OperatorOptions projectorOptions(int gpu, int threads, double step, const std::string& pair = "interpolating");

/// A request field named in a library message (glrecon/errors.h) as this module's keyword: camelCase to snake_case;
/// flags read as they are set.
std::string pythonName(const std::string& field);

/// Between the steps of a long run (GIL released): takes the GIL, checks for Ctrl-C and calls `callback`; an exception
/// from either is kept, and true returned: the run is to stop and the exception to be rethrown with the GIL held.
bool interruptedBetweenSteps(const std::function<void()>& callback, std::exception_ptr& error);

// The themes, each binding its part of the module.
void bindErrors(py::module_& m);
void bindLimits(py::module_& m);
void bindGeometry(py::module_& m);
void bindIo(py::module_& m);
void bindFdk(py::module_& m);
void bindOperators(py::module_& m);
void bindPhantom(py::module_& m);

}  // namespace glrecon::python
