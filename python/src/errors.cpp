// Exceptions: one base (glrecon.Error, itself a RuntimeError), the C++ types under their own names; request fields
// named in messages are written as this module's keywords (pythonName).
#include <new>
#include <stdexcept>
#include <system_error>

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
    } catch (const py::error_already_set&) {
      throw;  // a Python exception (a progress callback's, Ctrl-C's KeyboardInterrupt) goes on as it was raised
    } catch (const py::builtin_exception&) {
      throw;  // pybind11's own (a failed cast): its TypeError or ValueError
    } catch (const std::bad_alloc&) {
      throw;  // MemoryError, as Python's own allocations fail
    } catch (const std::exception& e) {
      // Whatever else the library or a driver throws (FFTW's planner, std::thread's system_error, a backend's
      // std::logic_error) is a glrecon.Error too, so that `except glrecon.Error` catches every failure of a call;
      // pybind11 alone made it a bare RuntimeError (or an IndexError, a ValueError) that escaped it.
      raise(error, e.what());
    }
  });
  // What the translation above gives each kind of C++ exception, for the tests (python/tests/test_peers.py).
  m.def("_throw_for_test", [](const std::string& kind) {
    if (kind == "runtime_error") throw std::runtime_error("a runtime_error from C++");
    if (kind == "logic_error") throw std::logic_error("a logic_error from C++");
    if (kind == "out_of_range") throw std::out_of_range("an out_of_range from C++");
    if (kind == "system_error") throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "a system_error from C++");
    if (kind == "bad_alloc") throw std::bad_alloc();
    if (kind == "cuda") throw CudaError("CUDA: cudaMalloc: out of memory");
    throw UsageError("kind: expected runtime_error, logic_error, out_of_range, system_error, bad_alloc or cuda, found '" + kind + "'");
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
