// Exceptions: one base (glrecon.Error, itself a RuntimeError), the C++ types under their own names; request fields
// named in messages are written as this module's keywords (pythonName).
#include "bindings.h"
#include "device/gl/context.h"
#include "glrecon/errors.h"
#include "glrecon/limits.h"

namespace glrecon::python {
namespace {

// Raises `type` with `message`, bytes that are not UTF-8 written as \xNN: messages quote what the user gave (a file
// name, a backend, a variant), and a name in another encoding (b"\x80.mha", backend=b"\x80") made PyErr_SetString's
// decoding fail: the exception came out with no message at all.
void raise(const py::object& type, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "backslashreplace");
  if (!text) {  // cannot happen with backslashreplace; never an exception without its message
    PyErr_Clear();
    text = PyUnicode_FromString("(a message that could not be decoded)");
  }
  PyErr_SetObject(type.ptr(), text);
  Py_XDECREF(text);
}

}  // namespace

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
      raise(input, e.render(pythonName));
    } catch (const GeometryError& e) {
      raise(geometryError, e.render(pythonName));
    } catch (const UsageError& e) {
      raise(usage, e.render(pythonName));
    } catch (const gl::GlError& e) {
      raise(glError, e.render(pythonName));
    } catch (const CudaError& e) {
      raise(cudaError, e.render(pythonName));
    } catch (const DeviceError& e) {
      raise(deviceError, e.render(pythonName));
    } catch (const Error& e) {
      raise(error, e.render(pythonName));
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
