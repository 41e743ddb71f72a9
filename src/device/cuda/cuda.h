#pragma once
// Move-only owners of CUDA objects (device and pinned buffers, arrays, texture and surface objects, streams, events)
// and the one check that turns a CUDA failure into CudaError naming the call. For .cu files (nvcc); the host-callable
// device queries are in device/cuda/device.h.
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "glrecon/errors.h"

namespace glrecon::cuda {

/// Throws CudaError "CUDA: <call>: <CUDA's reason>" unless `status` is cudaSuccess.
inline void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw CudaError(std::string("CUDA: ") + call + ": " + cudaGetErrorString(status));
}

/// A handle freed by `Release` (which returns a cudaError_t, ignored: destructors must not throw).
template <typename T, cudaError_t (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T value) : value_(value) {}
  ~Handle() { reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : value_(std::exchange(other.value_, T{})) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      value_ = std::exchange(other.value_, T{});
    }
    return *this;
  }
  T get() const { return value_; }
  explicit operator bool() const { return value_ != T{}; }
  void reset() {
    if (value_ != T{}) Release(value_);
    value_ = T{};
  }

 private:
  T value_{};
};

namespace detail {
inline cudaError_t freeDevice(void* p) { return cudaFree(p); }
}  // namespace detail

/// `count` elements of T in device memory (cudaMalloc), uninitialised.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    void* p = nullptr;
    check(cudaMalloc(&p, count * sizeof(T)), "cudaMalloc");
    memory_ = Handle<void*, detail::freeDevice>(p);
  }
  T* get() const { return static_cast<T*>(memory_.get()); }
  std::size_t size() const { return count_; }
  explicit operator bool() const { return static_cast<bool>(memory_); }

 private:
  Handle<void*, detail::freeDevice> memory_;
  std::size_t count_ = 0;
};

/// Frees page-locked memory as allocatePageLocked made it: unregistered and freed, or by cudaFreeHost (a failure is
/// cleared: left as the thread's last error, a later launch check would report it as its own).
struct PageLockedRelease {
  bool registered = false;
  void operator()(void* memory) const noexcept;
};
using PageLocked = std::unique_ptr<void, PageLockedRelease>;

/// Page-locked host memory of `bytes` (what asynchronous copies need): memory in huge pages where granted, written
/// first on several threads, then registered with CUDA (cudaHostRegister). On the GPU hosts cudaMallocHost faulted
/// its pages in on one thread (256 MiB in 130-250 ms; two devices' windows and chunks took 0.6-1.1 s of their setup),
/// where registering memory already written took 11-22 ms for 256 MiB. cudaMallocHost where registering fails, or
/// where GLRECON_PINNED=cudaMallocHost asks for it (to measure).
PageLocked allocatePageLocked(std::size_t bytes);

/// `count` elements of T in page-locked host memory (allocatePageLocked).
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : memory_(allocatePageLocked(count * sizeof(T))), count_(count) {}
  T* get() const { return static_cast<T*>(memory_.get()); }
  std::size_t size() const { return count_; }
  explicit operator bool() const { return static_cast<bool>(memory_); }

 private:
  PageLocked memory_;
  std::size_t count_ = 0;
};

/// A CUDA array of floats: width x height x depth (or layers, with cudaArrayLayered).
class Array {
 public:
  Array() = default;
  Array(std::size_t width, std::size_t height, std::size_t depth, unsigned flags = 0) {
    const cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
    cudaArray_t array = nullptr;
    check(cudaMalloc3DArray(&array, &format, make_cudaExtent(width, height, depth), flags), "cudaMalloc3DArray");
    array_ = Handle<cudaArray_t, cudaFreeArray>(array);
  }
  cudaArray_t get() const { return array_.get(); }
  explicit operator bool() const { return static_cast<bool>(array_); }

 private:
  Handle<cudaArray_t, cudaFreeArray> array_;
};

/// A texture object over a float array: linear filtering, border 0 on every axis, unnormalised coordinates (texel
/// centres at + 0.5).
class TextureObject {
 public:
  TextureObject() = default;
  explicit TextureObject(cudaArray_t array) {
    cudaResourceDesc resource{};
    resource.resType = cudaResourceTypeArray;
    resource.res.array.array = array;
    cudaTextureDesc description{};
    for (int a = 0; a < 3; ++a) description.addressMode[a] = cudaAddressModeBorder;  // 0 outside
    description.filterMode = cudaFilterModeLinear;
    description.readMode = cudaReadModeElementType;
    description.normalizedCoords = 0;
    cudaTextureObject_t texture = 0;
    check(cudaCreateTextureObject(&texture, &resource, &description, nullptr), "cudaCreateTextureObject");
    texture_ = Handle<cudaTextureObject_t, cudaDestroyTextureObject>(texture);
  }
  cudaTextureObject_t get() const { return texture_.get(); }

 private:
  Handle<cudaTextureObject_t, cudaDestroyTextureObject> texture_;
};

/// A surface object over an array made with cudaArraySurfaceLoadStore (kernels write it).
class SurfaceObject {
 public:
  SurfaceObject() = default;
  explicit SurfaceObject(cudaArray_t array) {
    cudaResourceDesc resource{};
    resource.resType = cudaResourceTypeArray;
    resource.res.array.array = array;
    cudaSurfaceObject_t surface = 0;
    check(cudaCreateSurfaceObject(&surface, &resource), "cudaCreateSurfaceObject");
    surface_ = Handle<cudaSurfaceObject_t, cudaDestroySurfaceObject>(surface);
  }
  cudaSurfaceObject_t get() const { return surface_.get(); }

 private:
  Handle<cudaSurfaceObject_t, cudaDestroySurfaceObject> surface_;
};

class Stream {
 public:
  /// `flags` cudaStreamNonBlocking: a stream the legacy default stream does not wait for, nor it for that stream: work
  /// that runs beside everything else on the device, such as a readback beside the next block's kernels.
  static Stream create(unsigned flags = cudaStreamDefault) {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, flags), "cudaStreamCreateWithFlags");
    Stream s;
    s.stream_ = Handle<cudaStream_t, cudaStreamDestroy>(stream);
    return s;
  }
  cudaStream_t get() const { return stream_.get(); }

 private:
  Handle<cudaStream_t, cudaStreamDestroy> stream_;
};

/// An event without timing (cudaEventDisableTiming): for ordering streams and waiting on the host.
class Event {
 public:
  static Event create() {
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    Event e;
    e.event_ = Handle<cudaEvent_t, cudaEventDestroy>(event);
    return e;
  }
  cudaEvent_t get() const { return event_.get(); }

 private:
  Handle<cudaEvent_t, cudaEventDestroy> event_;
};

}  // namespace glrecon::cuda

/// Checks a CUDA call, naming it in the error.
#define GLRECON_CUDA(call) ::glrecon::cuda::check((call), #call)
