// glrecon's Python extension (_glrecon): pybind11 over the public headers, one file per theme (python/src). The
// Python package (python/glrecon/__init__.py) puts the user-facing functions, defaults and docstrings on top.
//
// Arrays: NumPy (z, y, x) for volumes and (views, v, u) for projections, i.e. the C++ Image's memory order
// (x fastest) read as a C-contiguous array, as ITK/RTK/SimpleITK show a MetaImage. Results come back without a
// copy (the Image's buffer is handed to NumPy); projections given as C-contiguous float32 are read in place.
// Work runs with the GIL released; progress callbacks take it back between steps.
#include "bindings.h"
#include "device/cuda/device.h"
#include "device/gl/context.h"

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
  m.attr("__version__") = GLRECON_VERSION;
  // Whether a GPU backend can run here: "" where it can, else why not (the error of making its device context).
  m.def("_gl_status", [](int device) -> std::string {
    py::gil_scoped_release release;
    try {
      gl::Context::headless(device);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  });
  m.def("_cuda_devices", [] { return cuda::deviceCount(); });
  // The devices the GPU backends can use, as `glrecon devices` lists them, with free memory where the driver tells it.
  m.def("_devices", [] {
    std::vector<py::dict> out;
    std::vector<gl::DeviceInfo> devices;
    try {
      py::gil_scoped_release release;
      devices = gl::Context::listDevices();
    } catch (const std::exception&) {
      // no EGL: no OpenGL devices
    }
    for (const gl::DeviceInfo& d : devices) {
      long long free = -1;
      {
        py::gil_scoped_release release;
        try {
          auto context = gl::Context::headless(d.index);
          free = gl::freeDeviceMemory();
        } catch (const std::exception&) {
        }
      }
      py::dict info;
      info["api"] = "opengl";
      info["index"] = d.index;
      info["name"] = d.renderer;
      info["version"] = d.version;
      info["software"] = d.software;
      info["free_memory"] = free < 0 ? py::object(py::none()) : py::object(py::int_(free));
      out.push_back(info);
    }
    for (int i = 0; i < cuda::deviceCount(); ++i) {
      py::dict info;
      info["api"] = "cuda";
      info["index"] = i;
      info["name"] = cuda::deviceName(i);
      info["version"] = "";
      info["software"] = false;
      info["free_memory"] = py::int_(cuda::freeMemory(i));
      out.push_back(info);
    }
    return out;
  });
}
