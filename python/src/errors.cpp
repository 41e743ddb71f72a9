// Exceptions: one base (glrecon.Error, itself a RuntimeError), the C++ types under their own names; request fields
// named in messages are written as this module's keywords (pythonName).
#include "bindings.h"
#include "device/gl/context.h"
#include "glrecon/errors.h"
#include "glrecon/limits.h"

namespace glrecon::python {

void bindErrors(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<InputError> input(m, "InputError", error.ptr());
  static py::exception<GeometryError> geometryError(m, "GeometryError", error.ptr());
  static py::exception<UsageError> usage(m, "UsageError", error.ptr());
  static py::exception<DeviceError> deviceError(m, "DeviceError", error.ptr());
  static py::exception<gl::GlError> glError(m, "GlError", deviceError.ptr());
  static py::exception<CudaError> cudaError(m, "CudaError", deviceError.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      input(e.render(pythonName).c_str());
    } catch (const GeometryError& e) {
      geometryError(e.render(pythonName).c_str());
    } catch (const UsageError& e) {
      usage(e.render(pythonName).c_str());
    } catch (const gl::GlError& e) {
      glError(e.render(pythonName).c_str());
    } catch (const CudaError& e) {
      cudaError(e.render(pythonName).c_str());
    } catch (const DeviceError& e) {
      deviceError(e.render(pythonName).c_str());
    } catch (const Error& e) {
      error(e.render(pythonName).c_str());
    }
  });
}

// The bounds behind the messages, for the package's argument checks (python/glrecon/__init__.py, _number): the table
// the command line checks its options against (glrecon/limits.h), so that Python refuses the same values with the same
// words before a number reaches a C++ int; and the memory check, for the copies the package makes.
void bindLimits(py::module_& m) {
  m.def("_value_bounds", [](const std::string& fieldName) -> py::object {
    const ValueBounds* b = valueBounds(fieldName);
    if (!b) return py::none();
    return py::make_tuple(b->lowest, b->highest, b->lowestIncluded, b->whole, b->expected);
  });
  m.def("_check_memory", [](const std::string& where, const std::string& what, std::uint64_t bytes) { checkHostMemory(where, what, bytes); });
}

}  // namespace glrecon::python
