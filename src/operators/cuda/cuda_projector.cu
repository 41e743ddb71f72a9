// The projector pair in CUDA (compile-tested here; run on a CUDA device): the volume in a 3D cudaArray sampled
// through a texture object (hardware trilinear, border 0, unnormalised coordinates at texel centres + 0.5),
// projections in a layered 2D cudaArray (bilinear, border 0). The same arithmetic as shaders/project_common.glsl.
// Note: NVIDIA texture units interpolate with 8-bit fractional weights (1/256 steps), so samples differ from the
// CPU's float interpolation by up to 1/512 of the neighbouring voxels' difference (see tests/test_projector.cpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <vector>
#include <string>

#include "operators/projector_backends.h"

namespace glrecon::detail {
namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw CudaError(std::string("cuda projector: ") + call + ": " + cudaGetErrorString(status));
}
#define GLRECON_CUDA_CHECK(call) check((call), #call)

constexpr int kMaxBatch = 256;

struct DeviceView {
  float3 sourceIndex, e0, eu, ev, normal;
  float weight;
  float4 rows[3];
};

__constant__ DeviceView kViews[kMaxBatch];

__global__ void forwardKernel(cudaTextureObject_t volume, int3 size, float3 spacing, float step, int nu, int nv, int count, float* out) {
  const int iu = blockIdx.x * blockDim.x + threadIdx.x, iv = blockIdx.y * blockDim.y + threadIdx.y, p = blockIdx.z;
  if (iu >= nu || iv >= nv || p >= count) return;
  const DeviceView& o = kViews[p];
  const float fu = static_cast<float>(iu), fv = static_cast<float>(iv);
  const float d[3] = {o.e0.x + fu * o.eu.x + fv * o.ev.x, o.e0.y + fu * o.eu.y + fv * o.ev.y, o.e0.z + fu * o.eu.z + fv * o.ev.z};
  const float len = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  const float sp[3] = {spacing.x, spacing.y, spacing.z};
  const float s[3] = {o.sourceIndex.x, o.sourceIndex.y, o.sourceIndex.z};
  const float hi[3] = {static_cast<float>(size.x), static_cast<float>(size.y), static_cast<float>(size.z)};
  float dir[3];
  float tmin = 0.0f, tmax = len;
  float result = 0.0f;
  bool miss = false;
  for (int a = 0; a < 3; ++a) {
    dir[a] = d[a] / len / sp[a];
    if (dir[a] != 0.0f) {
      const float t0 = (-1.0f - s[a]) / dir[a], t1 = (hi[a] - s[a]) / dir[a];
      tmin = fmaxf(tmin, fminf(t0, t1));
      tmax = fminf(tmax, fmaxf(t0, t1));
    } else if (s[a] < -1.0f || s[a] > hi[a]) {
      miss = true;
    }
  }
  if (!miss && tmax > tmin) {
    const int n = static_cast<int>(ceilf((tmax - tmin) / step));
    float sum = 0.0f;
    for (int k = 0; k < n; ++k) {
      const float t = tmin + (static_cast<float>(k) + 0.5f) * step;
      sum += tex3D<float>(volume, s[0] + t * dir[0] + 0.5f, s[1] + t * dir[1] + 0.5f, s[2] + t * dir[2] + 0.5f);
    }
    result = sum * step;
  }
  out[(static_cast<size_t>(p) * nv + iv) * nu + iu] = result;
}

__global__ void backKernel(cudaTextureObject_t projections, int3 size, float3 spacing, int count, bool accumulate, float* volume) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y, k = blockIdx.z;
  if (i >= size.x || j >= size.y || k >= size.z) return;
  const float x[3] = {static_cast<float>(i), static_cast<float>(j), static_cast<float>(k)};
  float sum = 0.0f;
  for (int p = 0; p < count; ++p) {
    const DeviceView& o = kViews[p];
    const float h0 = o.rows[0].x * x[0] + o.rows[0].y * x[1] + o.rows[0].z * x[2] + o.rows[0].w;
    const float h1 = o.rows[1].x * x[0] + o.rows[1].y * x[1] + o.rows[1].z * x[2] + o.rows[1].w;
    const float h2 = o.rows[2].x * x[0] + o.rows[2].y * x[1] + o.rows[2].z * x[2] + o.rows[2].w;
    const float value = tex2DLayered<float>(projections, h0 / h2 + 0.5f, h1 / h2 + 0.5f, p);
    const float rx = (x[0] - o.sourceIndex.x) * spacing.x, ry = (x[1] - o.sourceIndex.y) * spacing.y,
                rz = (x[2] - o.sourceIndex.z) * spacing.z;
    const float distance = sqrtf(rx * rx + ry * ry + rz * rz);
    const float depth = rx * o.normal.x + ry * o.normal.y + rz * o.normal.z;
    sum += value * (o.weight * distance / (depth * depth * depth));
  }
  const size_t index = (static_cast<size_t>(k) * size.y + j) * size.x + i;
  volume[index] = accumulate ? volume[index] + sum : sum;
}

// The largest of n non-negative floats (B_S 1): positive floats' bit patterns order as the values do, so an integer
// atomicMax over them is exact. *result starts at 0.
__global__ void maxKernel(const float* values, size_t n, int* result) {
  int best = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (values[i] > 0.0f) best = max(best, __float_as_int(values[i]));  // (never -0.0, whose sign bit would win)
  for (int offset = 16; offset > 0; offset /= 2) best = max(best, __shfl_down_sync(0xffffffffu, best, offset));
  if ((threadIdx.x & 31) == 0) atomicMax(result, best);
}

// applySubsetRule (projector_common.cpp) on the device, in the same float operations (no fused multiply-adds), so
// the iterate equals the host path's for the same B_S(c) and B_S(1).
__global__ void subsetUpdateKernel(float* x, const float* update, const float* weights, const unsigned char* mask, size_t n,
                                   float floor, bool multiplicative, float lambda, bool positivity) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if ((mask && !mask[i]) || !(weights[i] > floor)) continue;
    if (multiplicative) {
      x[i] = __fmul_rn(x[i], __fdiv_rn(update[i], weights[i]));
    } else {
      float value = __fadd_rn(x[i], __fdiv_rn(__fmul_rn(lambda, update[i]), weights[i]));
      if (positivity && value < 0.0f) value = 0.0f;
      x[i] = value;
    }
  }
}

cudaTextureObject_t makeTexture(cudaArray_t array) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc desc{};
  for (int a = 0; a < 3; ++a) desc.addressMode[a] = cudaAddressModeBorder;  // border colour 0
  desc.filterMode = cudaFilterModeLinear;
  desc.readMode = cudaReadModeElementType;
  desc.normalizedCoords = 0;
  cudaTextureObject_t texture = 0;
  GLRECON_CUDA_CHECK(cudaCreateTextureObject(&texture, &resource, &desc, nullptr));
  return texture;
}

class CudaProjector final : public Projector {
 public:
  CudaProjector(const Geometry& geometry, const VolumeGrid& grid, const ProjectorOptions& options)
      : grid_(grid), nu_(geometry.detector.nu), nv_(geometry.detector.nv) {
    checkProjectorGeometry(geometry, grid, "cuda projector");
    step_ = projectorStep(options, grid);
    pixels_ = static_cast<std::size_t>(nu_) * nv_;
    views_ = projectorViews(geometry, grid);
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) throw CudaError("cuda projector: no CUDA device");
    if (options.gpu < 0 || options.gpu >= devices)
      throw CudaError("cuda projector: " + field("gpu") + ": expected 0 to " + std::to_string(devices - 1) + ", found " + std::to_string(options.gpu));
    GLRECON_CUDA_CHECK(cudaSetDevice(options.gpu));
    device_ = options.gpu;
    cudaDeviceProp prop{};
    GLRECON_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.gpu));
    deviceName_ = prop.name;
    const cudaChannelFormatDesc channel = cudaCreateChannelDesc<float>();
    GLRECON_CUDA_CHECK(cudaMalloc3DArray(&volumeArray_, &channel, make_cudaExtent(grid.size[0], grid.size[1], grid.size[2])));
    GLRECON_CUDA_CHECK(cudaMalloc3DArray(&projectionArray_, &channel, make_cudaExtent(nu_, nv_, kMaxBatch), cudaArrayLayered));
    volumeTexture_ = makeTexture(volumeArray_);
    projectionTexture_ = makeTexture(projectionArray_);
    GLRECON_CUDA_CHECK(cudaMalloc(&volumeBuffer_, grid.voxelCount() * sizeof(float)));
    GLRECON_CUDA_CHECK(cudaMalloc(&projectionBuffer_, static_cast<size_t>(nu_) * nv_ * kMaxBatch * sizeof(float)));
  }
  ~CudaProjector() override {
    cudaSetDevice(device_);
    for (void* p : {static_cast<void*>(iterate_), static_cast<void*>(update_), static_cast<void*>(weights_), static_cast<void*>(mask_),
                    static_cast<void*>(maximum_)})
      if (p) cudaFree(p);
    cudaDestroyTextureObject(volumeTexture_);
    cudaDestroyTextureObject(projectionTexture_);
    cudaFreeArray(volumeArray_);
    cudaFreeArray(projectionArray_);
    cudaFree(volumeBuffer_);
    cudaFree(projectionBuffer_);
  }
  std::string name() const override { return "cuda"; }
  std::string description() const override { return "cuda on " + deviceName_; }

  void forward(const float* volume, const std::size_t* views, std::size_t count, float* projections) override {
    const auto start = std::chrono::steady_clock::now();
    GLRECON_CUDA_CHECK(cudaSetDevice(device_));
    forwardFrom(volume, cudaMemcpyHostToDevice, views, count, projections);
    timings_.forward += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void back(const float* projections, const std::size_t* views, std::size_t count, float* volume) override {
    const auto start = std::chrono::steady_clock::now();
    GLRECON_CUDA_CHECK(cudaSetDevice(device_));
    backInto(projections, views, count, volumeBuffer_);
    GLRECON_CUDA_CHECK(cudaMemcpy(volume, volumeBuffer_, grid_.voxelCount() * sizeof(float), cudaMemcpyDeviceToHost));
    timings_.back += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // The iterate on the device: a subset uploads its corrections and reads back its forward projections only.
  bool iterateOnDevice() const override { return true; }

  void setIterate(const float* x, std::size_t voxels, const std::uint8_t* mask) override {
    GLRECON_CUDA_CHECK(cudaSetDevice(device_));
    if (voxels != grid_.voxelCount()) throw std::invalid_argument("setIterate: the iterate's size differs from the grid's");
    if (!iterate_) {
      GLRECON_CUDA_CHECK(cudaMalloc(&iterate_, voxels * sizeof(float)));
      GLRECON_CUDA_CHECK(cudaMalloc(&update_, voxels * sizeof(float)));
      GLRECON_CUDA_CHECK(cudaMalloc(&weights_, voxels * sizeof(float)));
      GLRECON_CUDA_CHECK(cudaMalloc(&maximum_, sizeof(int)));
    }
    GLRECON_CUDA_CHECK(cudaMemcpy(iterate_, x, voxels * sizeof(float), cudaMemcpyHostToDevice));
    if (mask) {
      if (!mask_) GLRECON_CUDA_CHECK(cudaMalloc(&mask_, voxels));
      GLRECON_CUDA_CHECK(cudaMemcpy(mask_, mask, voxels, cudaMemcpyHostToDevice));
    }
    masked_ = mask != nullptr;
  }

  void forwardIterate(const std::size_t* views, std::size_t count, float* projections) override {
    const auto start = std::chrono::steady_clock::now();
    GLRECON_CUDA_CHECK(cudaSetDevice(device_));
    forwardFrom(iterate_, cudaMemcpyDeviceToDevice, views, count, projections);
    timings_.forward += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void updateIterate(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                     const float*) override {
    const auto start = std::chrono::steady_clock::now();
    GLRECON_CUDA_CHECK(cudaSetDevice(device_));
    backInto(correction, views, count, update_);
    ones_.resize(std::max(ones_.size(), std::min<std::size_t>(count, kMaxBatch) * pixels_), 1.0f);
    backInto(ones_.data(), views, count, weights_, /*repeatFirstBatch=*/true);
    const size_t n = grid_.voxelCount();
    GLRECON_CUDA_CHECK(cudaMemset(maximum_, 0, sizeof(int)));
    maxKernel<<<1024, 256>>>(weights_, n, maximum_);
    GLRECON_CUDA_CHECK(cudaGetLastError());
    int bits = 0;
    GLRECON_CUDA_CHECK(cudaMemcpy(&bits, maximum_, sizeof(int), cudaMemcpyDeviceToHost));
    float largest = 0.0f;
    std::memcpy(&largest, &bits, sizeof largest);
    const float floor = subsetWeightFloor(largest, count);
    subsetUpdateKernel<<<1024, 256>>>(iterate_, update_, weights_, masked_ ? mask_ : nullptr, n, floor, rule.multiplicative, rule.lambda,
                                      rule.positivity);
    GLRECON_CUDA_CHECK(cudaGetLastError());
    timings_.back += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void getIterate(float* x) override {
    GLRECON_CUDA_CHECK(cudaSetDevice(device_));
    GLRECON_CUDA_CHECK(cudaMemcpy(x, iterate_, grid_.voxelCount() * sizeof(float), cudaMemcpyDeviceToHost));
  }

 private:
  // A forward projection of the volume at `volume` (host, or device memory with kind DeviceToDevice).
  void forwardFrom(const float* volume, cudaMemcpyKind kind, const std::size_t* views, std::size_t count, float* projections) {
    cudaMemcpy3DParms copy{};
    copy.srcPtr = make_cudaPitchedPtr(const_cast<float*>(volume), grid_.size[0] * sizeof(float), grid_.size[0], grid_.size[1]);
    copy.dstArray = volumeArray_;
    copy.extent = make_cudaExtent(grid_.size[0], grid_.size[1], grid_.size[2]);
    copy.kind = kind;
    GLRECON_CUDA_CHECK(cudaMemcpy3D(&copy));
    const size_t pixels = static_cast<size_t>(nu_) * nv_;
    for (std::size_t first = 0; first < count; first += kMaxBatch) {
      const int n = static_cast<int>(std::min<std::size_t>(kMaxBatch, count - first));
      uploadViews(views + first, n);
      const dim3 block(16, 16, 1), blocks((nu_ + 15) / 16, (nv_ + 15) / 16, n);
      forwardKernel<<<blocks, block>>>(volumeTexture_, make_int3(grid_.size[0], grid_.size[1], grid_.size[2]), spacing(),
                                       static_cast<float>(step_), nu_, nv_, n, projectionBuffer_);
      GLRECON_CUDA_CHECK(cudaGetLastError());
      GLRECON_CUDA_CHECK(cudaMemcpy(projections + first * pixels, projectionBuffer_, pixels * n * sizeof(float), cudaMemcpyDeviceToHost));
    }
  }

  // B of the host projections into the device volume `to` (overwritten). With repeatFirstBatch every batch reads
  // the first batch's projections (a buffer of ones as large as one batch).
  void backInto(const float* projections, const std::size_t* views, std::size_t count, float* to, bool repeatFirstBatch = false) {
    const size_t pixels = static_cast<size_t>(nu_) * nv_;
    if (count == 0) GLRECON_CUDA_CHECK(cudaMemset(to, 0, grid_.voxelCount() * sizeof(float)));
    for (std::size_t first = 0; first < count; first += kMaxBatch) {
      const int n = static_cast<int>(std::min<std::size_t>(kMaxBatch, count - first));
      uploadViews(views + first, n);
      cudaMemcpy3DParms copy{};
      copy.srcPtr = make_cudaPitchedPtr(const_cast<float*>(projections + (repeatFirstBatch ? 0 : first * pixels)), nu_ * sizeof(float), nu_, nv_);
      copy.dstArray = projectionArray_;
      copy.extent = make_cudaExtent(nu_, nv_, n);
      copy.kind = cudaMemcpyHostToDevice;
      GLRECON_CUDA_CHECK(cudaMemcpy3D(&copy));
      const dim3 block(16, 16, 1), blocks((grid_.size[0] + 15) / 16, (grid_.size[1] + 15) / 16, grid_.size[2]);
      backKernel<<<blocks, block>>>(projectionTexture_, make_int3(grid_.size[0], grid_.size[1], grid_.size[2]), spacing(), n, first > 0,
                                    to);
      GLRECON_CUDA_CHECK(cudaGetLastError());
    }
  }

  float3 spacing() const {
    return make_float3(static_cast<float>(grid_.spacing.x), static_cast<float>(grid_.spacing.y), static_cast<float>(grid_.spacing.z));
  }
  void uploadViews(const std::size_t* views, int n) {
    DeviceView host[kMaxBatch];
    for (int p = 0; p < n; ++p) {
      const ProjectorView& o = views_[views[p]];
      host[p].sourceIndex = make_float3(o.sourceIndex[0], o.sourceIndex[1], o.sourceIndex[2]);
      host[p].e0 = make_float3(o.e0[0], o.e0[1], o.e0[2]);
      host[p].eu = make_float3(o.eu[0], o.eu[1], o.eu[2]);
      host[p].ev = make_float3(o.ev[0], o.ev[1], o.ev[2]);
      host[p].normal = make_float3(o.normal[0], o.normal[1], o.normal[2]);
      host[p].weight = o.weight;
      for (int r = 0; r < 3; ++r) host[p].rows[r] = make_float4(o.matrix[r][0], o.matrix[r][1], o.matrix[r][2], o.matrix[r][3]);
    }
    // Synchronous: the previous kernel has finished reading the constants before they change.
    GLRECON_CUDA_CHECK(cudaMemcpyToSymbol(kViews, host, sizeof(DeviceView) * n));
  }

  VolumeGrid grid_;
  int nu_, nv_, device_ = 0;
  std::string deviceName_;
  std::vector<ProjectorView> views_;
  cudaArray_t volumeArray_ = nullptr, projectionArray_ = nullptr;
  cudaTextureObject_t volumeTexture_ = 0, projectionTexture_ = 0;
  float* volumeBuffer_ = nullptr;
  float* projectionBuffer_ = nullptr;
  // The iterate (setIterate): x, B_S(c), B_S(1), the mask, and the largest weight's bits.
  float *iterate_ = nullptr, *update_ = nullptr, *weights_ = nullptr;
  unsigned char* mask_ = nullptr;
  bool masked_ = false;
  int* maximum_ = nullptr;
  std::vector<float> ones_;
};

}  // namespace

bool cudaProjectorBuilt() { return true; }
std::unique_ptr<Projector> makeCudaProjector(const Geometry& geometry, const VolumeGrid& grid, const ProjectorOptions& options) {
  return std::make_unique<CudaProjector>(geometry, grid, options);
}

}  // namespace glrecon::detail
