#pragma once
// A window of projections on a CUDA device: a layered float array (sampled through a texture, written through a
// surface) and a pinned host buffer that stages them. Made by the cuda operator, filled by the FDK filter's CUDA twin
// (src/filter/cuda) or by the operator's own upload, on `stream`; the operator orders its kernel after that stream.
#include <cuda_runtime.h>

#include "glrecon/device_projections.h"

namespace glrecon::cuda {

struct ProjectionWindow final : DeviceProjections {
  int device = 0;
  int index = 0;                    // which of the operator's windows (a filter keeps one raw buffer per window)
  int width = 0, height = 0;        // detector pixels
  cudaArray_t array = nullptr;      // layered: width x height x capacity
  cudaSurfaceObject_t surface = 0;  // the array, written by kernels
  float* staging = nullptr;         // pinned, capacity projections
  cudaStream_t stream = nullptr;    // where uploads and filtering go
};

}  // namespace glrecon::cuda
