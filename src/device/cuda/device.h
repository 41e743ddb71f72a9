#pragma once
// What glrecon asks of the CUDA devices, callable from code compiled without nvcc. Where CUDA is not built (no
// compiler found), device_stub.cpp answers: no devices.
#include <cstdint>
#include <string>

namespace glrecon::cuda {

/// True when this build has the CUDA backend.
bool built();
/// CUDA devices present (0 without CUDA, a driver or a device).
int deviceCount();
/// Free memory on `device` in bytes (0 without it).
std::uint64_t freeMemory(int device);
/// The device's name ("NVIDIA H200"), or "" without it.
std::string deviceName(int device);
/// The texture units' peak on `device` in G bilinear fetches per second (4 per multiprocessor per clock on NVIDIA GPUs
/// since Maxwell); 0 without it.
double bilinearPeak(int device);
/// Creates CUDA's context on `device` now (a few hundred milliseconds: a tenth of a second for the driver's start, as
/// much for the context), so that a later operator does not wait for it; returns the seconds it took (0 where it was
/// open already). Errors are left for the operator to report. Does nothing without CUDA.
double open(int device);

}  // namespace glrecon::cuda
