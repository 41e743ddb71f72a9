// The Geometry class: circular scans (RTK parameters, waiting for a detector layout where read from RTK's XML), or
// views given as vectors; its vectors, its RTK file.
#include <glm/geometric.hpp>

#include "bindings.h"
#include "glrecon/errors.h"
#include "glrecon/io.h"
#include "glrecon/limits.h"
#include "glrecon/validate.h"

namespace glrecon::python {
namespace {

py::array vectorsArray(const Geometry& g) {
  py::array_t<double> out({static_cast<py::ssize_t>(g.size()), py::ssize_t{12}});
  auto m = out.mutable_unchecked<2>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    const ProjectionVectors& v = g.views[i];
    const glm::dvec3 parts[4] = {v.parallel() ? v.ray : v.source, v.pixel00, v.uStep, v.vStep};
    for (int p = 0; p < 4; ++p)
      for (int c = 0; c < 3; ++c) m(i, p * 3 + c) = parts[p][c];
  }
  return out;
}

}  // namespace

void bindGeometry(py::module_& m) {
  py::class_<PyGeometry>(m, "Geometry")
      .def_static(
          "_circular",
          [](int projections, double sid, double sdd, std::array<int, 2> detector, std::array<double, 2> pixel, double firstAngle,
             double arc, std::array<double, 2> detectorOffset, std::array<double, 2> sourceOffset, double outOfPlane, double inPlane) {
            // The command line's bounds (glrecon/limits.h), as `glrecon phantom` checks its options: projections=2**30
            // made a billion views, sid=1e300 a geometry every use refused; offsets finite (their reach is checked
            // below with the positions).
            checkValue("projections", projections);
            checkValue("sid", sid);
            checkValue("sdd", sdd);
            for (int n : detector) checkValue("detector", n);
            checkValue("firstAngle", firstAngle);
            checkValue("arc", arc);
            checkValue("outOfPlane", outOfPlane);
            checkValue("inPlane", inPlane);
            for (double o : detectorOffset) checkValue("detectorOffset", o);
            for (double o : sourceOffset) checkValue("sourceOffset", o);
            CircularScanSpec spec;
            spec.projections = projections;
            spec.sid = sid;
            spec.sdd = sdd;
            spec.nu = detector[0];
            spec.nv = detector[1];
            spec.spacingU = pixel[0];
            spec.spacingV = pixel[1];
            spec.firstAngle = firstAngle;
            spec.arc = arc;
            spec.projectionOffsetX = detectorOffset[0];
            spec.projectionOffsetY = detectorOffset[1];
            spec.sourceOffsetX = sourceOffset[0];
            spec.sourceOffsetY = sourceOffset[1];
            spec.outOfPlaneAngle = outOfPlane;
            spec.inPlaneAngle = inPlane;
            const Geometry g = makeCircularScan(spec);
            g.validate("geometry");
            checkScanBounds(g, "geometry");
            return PyGeometry{g.circular, g.detector, {}};
          })
      .def_static("_parallel",
                  [](int projections, std::array<int, 2> detector, std::array<double, 2> pixel, double firstAngle, double arc,
                     std::array<double, 2> detectorOffset) {
                    checkValue("projections", projections);
                    for (int n : detector) checkValue("detector", n);
                    checkValue("firstAngle", firstAngle);
                    checkValue("arc", arc);
                    for (double o : detectorOffset) checkValue("detectorOffset", o);
                    ParallelScanSpec spec;
                    spec.projections = projections;
                    spec.nu = detector[0];
                    spec.nv = detector[1];
                    spec.spacingU = pixel[0];
                    spec.spacingV = pixel[1];
                    spec.firstAngle = firstAngle;
                    spec.arc = arc;
                    spec.offsetU = detectorOffset[0];
                    spec.offsetV = detectorOffset[1];
                    const Geometry g = makeParallelScan(spec);
                    checkScanBounds(g, "geometry");
                    // RTK's parallel parameters (SourceToDetectorDistance 0) with the detector: write_rtk writes them.
                    return PyGeometry{g.circular, g.detector, {}};
                  })
      .def_static("_from_vectors",
                  [](const py::array_t<double, py::array::c_style | py::array::forcecast>& vectors, std::array<int, 2> detector, bool parallel) {
                    if (vectors.ndim() != 2 || vectors.shape(1) != 12)
                      throwInputError("vectors", "shape",
                                      parallel ? "(views, 12): ray direction, pixel (0,0), u step, v step" : "(views, 12): source, pixel (0,0), u step, v step",
                                      vectors.ndim() == 2 ? "(" + std::to_string(vectors.shape(0)) + ", " + std::to_string(vectors.shape(1)) + ")"
                                                          : std::to_string(vectors.ndim()) + " dimensions");
                    checkValue("projections", static_cast<double>(vectors.shape(0)), "views");
                    for (int n : detector) checkValue("detector", n);
                    PyGeometry g;
                    auto r = vectors.unchecked<2>();
                    for (py::ssize_t i = 0; i < vectors.shape(0); ++i) {
                      ProjectionVectors v{{r(i, 0), r(i, 1), r(i, 2)}, {r(i, 3), r(i, 4), r(i, 5)}, {r(i, 6), r(i, 7), r(i, 8)}, {r(i, 9), r(i, 10), r(i, 11)}};
                      if (parallel) {
                        // The first three numbers are the rays' direction (the source at infinity).
                        v.ray = v.source;
                        v.source = glm::dvec3(0.0);
                        if (!v.parallel())
                          throwInputError("vectors", "row " + std::to_string(i) + " ray direction", "a non-zero direction", "(0, 0, 0)");
                      }
                      g.vectors.push_back(v);
                    }
                    if (g.vectors.empty()) throwInputError("vectors", "views", "at least one", "none");
                    DetectorLayout layout = DetectorLayout::centred(detector[0], detector[1], glm::length(g.vectors[0].uStep),
                                                                    glm::length(g.vectors[0].vStep));
                    g.detector = layout;
                    const Geometry resolved = g.resolve(std::nullopt);
                    resolved.validate("geometry");
                    checkScanBounds(resolved, "geometry");
                    return g;
                  })
      .def("_with_detector",
           [](const PyGeometry& self, std::array<int, 2> detector, std::array<double, 2> pixel, std::optional<std::array<double, 2>> origin) {
             // Checked here, as circular() and from_vectors() check theirs: a detector of 0 pixels or NaN mm was taken and
             // refused only by whatever used it.
             for (int n : detector) checkValue("detector", n);
             PyGeometry g = self;
             DetectorLayout layout = DetectorLayout::centred(detector[0], detector[1], pixel[0], pixel[1]);
             if (origin) {
               layout.originU = (*origin)[0];
               layout.originV = (*origin)[1];
             }
             g.detector = layout;
             const Geometry resolved = g.resolve(std::nullopt);
             resolved.validate("geometry");
             checkScanBounds(resolved, "geometry");
             return g;
           })
      .def("__len__", [](const PyGeometry& g) { return g.circular.empty() ? g.vectors.size() : g.circular.size(); })
      .def_property_readonly("has_detector", [](const PyGeometry& g) { return g.detector.has_value(); })
      .def_property_readonly("is_circular", [](const PyGeometry& g) { return !g.circular.empty(); })
      .def_property_readonly("is_parallel", [](const PyGeometry& g) {
        return g.circular.empty() ? !g.vectors.empty() && g.vectors[0].parallel() : g.circular[0].parallel();
      })
      .def_property_readonly("detector", [](const PyGeometry& g) -> py::object {
        if (!g.detector) return py::none();
        return py::make_tuple(g.detector->nu, g.detector->nv);
      })
      .def_property_readonly("pixel", [](const PyGeometry& g) -> py::object {
        if (!g.detector) return py::none();
        return py::make_tuple(g.detector->spacingU, g.detector->spacingV);
      })
      .def_property_readonly("detector_origin", [](const PyGeometry& g) -> py::object {
        if (!g.detector) return py::none();
        return py::make_tuple(g.detector->originU, g.detector->originV);
      })
      .def_property_readonly("gantry_angles", [](const PyGeometry& g) {
        std::vector<double> a;
        for (const auto& c : g.circular) a.push_back(c.gantryAngle);
        return a;
      })
      .def("_vectors", [](const PyGeometry& g) { return vectorsArray(g.resolve(std::nullopt)); })
      .def("_write_rtk", [](const PyGeometry& g, const std::string& path, bool overwrite) {
        if (g.circular.empty())
          throwInputError(path, "geometry", "RTK circular parameters (circular(), parallel() or read_rtk_geometry())", "a geometry given as vectors");
        writeRtkGeometry(path, g.circular, overwrite);
      });

  m.def("read_rtk_geometry", [](const std::string& path) { return PyGeometry{readRtkGeometry(path), std::nullopt, {}}; });
}

}  // namespace glrecon::python
