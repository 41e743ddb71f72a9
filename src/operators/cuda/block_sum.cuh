#pragma once
// A block's sum of every thread's `sum` into partials[blockIdx.x], by halving in shared memory (blocks of 256 threads):
// the same additions in the same order every run. For the kernels of ray_kernels.cu and vector_kernels.cu.
#include <cuda_runtime.h>

namespace glrecon::cuda {

__device__ __forceinline__ void storeBlockSum(double sum, double* partials) {
  __shared__ double sums[256];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

}  // namespace glrecon::cuda
