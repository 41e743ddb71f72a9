// glrecon's Python extension (_glrecon): pybind11 over the public headers, one file per theme (python/src). The
// Python package (python/glrecon/__init__.py) puts the user-facing functions, defaults and docstrings on top.
//
// Arrays: NumPy (z, y, x) for volumes and (views, v, u) for projections, i.e. the C++ Image's memory order
// (x fastest) read as a C-contiguous array, as ITK/RTK/SimpleITK show a MetaImage. Results come back without a
// copy (the Image's buffer is handed to NumPy); projections given as C-contiguous float32 are read in place.
// Work runs with the GIL released; progress callbacks take it back between steps.
#include "bindings.h"

PYBIND11_MODULE(_glrecon, m) {
  using namespace glrecon;
  using namespace glrecon::python;
  m.doc() = "glrecon's compiled core; use the glrecon package.";
  bindErrors(m);
  bindLimits(m);
  bindGeometry(m);
  bindIo(m);
  bindPhantom(m);
  bindFdk(m);
  bindOperators(m);
  m.def("backends", [] {
    std::vector<std::string> names;
    for (Backend b : builtBackends()) names.push_back(backendInfo(b).name);
    return names;
  }, "Backend names this build knows (cpu, graphics, graphics-mp, compute, cuda where built).");
  m.attr("max_window") = kMaximumWindow;
}
