// The cuda operator, for comparison with the OpenGL paths (Okitsu, Ino & Hagihara 2010). The volume is device memory
// (x fastest). Fdk back: filtered projections in a layered CUDA array sampled through a texture object (hardware
// bilinear, border 0), the window's matrices in constant memory, one thread per (x, z) pair and a run of voxels along
// y, W projections per launch; uploads go through pinned staging buffers on a copy stream, double-buffered, so the
// next window's upload overlaps the current window's kernel, and the readback goes through the same buffers in
// chunks. Forward and Adjoint back (made at their first use): the volume copied into a 3D array for trilinear
// sampling, batches of up to 256 views. Kernels in fdk_kernels.cu and ray_kernels.cu. Built only where CMake finds
// CUDA; tests skip, saying why, where no CUDA device exists.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "device/cuda/cuda.h"
#include "device/cuda/device.h"
#include "device/cuda/projection_window.h"
#include "glrecon/errors.h"
#include "glrecon/filter.h"
#include "glrecon/operator.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"
#include "glrecon/slab.h"
#include "operators/cuda/kernels.h"
#include "operators/plane_gather.h"
#include "operators/projector_views.h"

namespace glrecon {
namespace {
// The beside readback's pinned chunks: 64 MiB, large enough for full-speed copies, small beside the windows' staging.
constexpr std::size_t kDrainChunkFloats = std::size_t{16} << 20;

// The window only amortises the volume's read-modify-write (one pass per window), which is cheap beside the texture
// fetches once it holds a few dozen projections: auto takes 32 (measured against 16, 64 and 128 by bench), max the
// constant-memory limit.
constexpr int kDefaultWindow = 32;
// takeSubsetProjection's chunk of a peer device's projection (64 MiB).
constexpr std::size_t kPeerChunk = std::size_t{16} << 20;

// Direct copies between two devices where the hardware allows (NVLink, PCIe peer-to-peer); cudaMemcpyPeer works
// either way, staged through the host without it. Asked once per pair.
void enablePeerAccess(int device, int peer) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> asked;
  const std::lock_guard lock(mutex);
  if (!asked.insert({device, peer}).second) return;
  int can = 0;
  GLRECON_CUDA(cudaDeviceCanAccessPeer(&can, device, peer));
  if (!can) return;
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();  // not sticky: cleared, and fine
  else GLRECON_CUDA(status);
}

// n floats of `from` (on fromDevice) into `to` (on device): copied, or (add) added, to + from, one float addition each
// (axpy with a = 1: the product is exact). From another device by peer copies, when adding chunk by chunk through
// `chunk` (made at the first use), each added as it arrives in stream order. Both devices' queued work is finished
// first (an asynchronous peer copy is ordered after neither: `from` may still be being written), and the result is
// there on return.
void takeFromDevice(float* to, int device, const float* from, int fromDevice, std::size_t n, bool add, cuda::DeviceBuffer<float>& chunk) {
  GLRECON_CUDA(cudaSetDevice(fromDevice));
  GLRECON_CUDA(cudaDeviceSynchronize());
  GLRECON_CUDA(cudaSetDevice(device));
  GLRECON_CUDA(cudaDeviceSynchronize());
  if (fromDevice != device) enablePeerAccess(device, fromDevice);
  if (!add) {
    GLRECON_CUDA(cudaMemcpyPeer(to, device, from, fromDevice, n * sizeof(float)));
  } else if (fromDevice == device) {
    cuda::launchAxpy(1.0, from, to, n);
  } else {
    if (!chunk) chunk = cuda::DeviceBuffer<float>(kPeerChunk);
    for (std::size_t first = 0; first < n; first += kPeerChunk) {
      const std::size_t size = std::min<std::size_t>(kPeerChunk, n - first);
      GLRECON_CUDA(cudaMemcpyPeerAsync(chunk.get(), device, from + first, fromDevice, size * sizeof(float), nullptr));
      cuda::launchAxpy(1.0, chunk.get(), to + first, size);
    }
  }
  GLRECON_CUDA(cudaDeviceSynchronize());
}

// Voxels per thread along y: 8 unless GLRECON_CUDA_RUN says 4 or 16 (for tuning on a new GPU).
int runLength() {
  static const int length = [] {
    const char* text = std::getenv("GLRECON_CUDA_RUN");
    const int n = text ? std::atoi(text) : 8;
    return n == 4 || n == 16 ? n : 8;
  }();
  return length;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A window of projections on the device: the layered array the Fdk kernel samples (and the FDK filter's CUDA twin
// writes), its pinned staging buffer, and the events ordering its use.
struct Window {
  cuda::Array array;
  cuda::TextureObject texture;
  cuda::SurfaceObject surface;
  cuda::PinnedBuffer<float> staging;
  cuda::Event copied, used;
};

// What forward, Adjoint back and the subset update need (made at their first use).
struct RayBuffers {
  cuda::Array volumeArray, projectionArray;  // the volume's 3D copy (interpolating pair); a batch of projections (layered)
  cuda::TextureObject volumeTexture, projectionTexture;
  // The interpolating pair's views marked kLayered: the volume's z planes and x planes as layers (launchForward).
  cuda::Array zLayers, xLayers;
  cuda::TextureObject zLayersTexture, xLayersTexture;
  cuda::SurfaceObject xLayersSurface;
  // The exact pairs: the block with x and z swapped (launchSwapXZ), for the views whose rays run along x; made at the
  // first use where 5 volumes more still fit (swappedFor; otherwise those views read the volume as it is, slower).
  cuda::DeviceBuffer<float> swapped;
  bool swapTried = false;
  cuda::DeviceBuffer<float> projections;     // forward's output batch
  cuda::DeviceBuffer<float> update, weights; // B_S(c), B_S(1)
  cuda::DeviceBuffer<unsigned char> mask;
  cuda::DeviceBuffer<int> maximum;
  // B_S(1) and its largest value per subset (keyed by its views), kept while they fit in half the device's free
  // memory at the first update (and 8 GiB): they depend on the geometry and the pair only, and recomputing them cost
  // one of every subset's two back projections.
  struct SubsetWeights {
    cuda::DeviceBuffer<float> weights;
    float largest = 0.0f;
  };
  std::map<std::vector<std::size_t>, SubsetWeights> weightCache;
  std::size_t cacheCapacity = 0;  // subsets' weights the cache may hold; set at the first update
  // The subset methods' data (setSubsetData): every projection and its ray length, the last subset's correction, its
  // view indices and the residual's per-block sums.
  cuda::DeviceBuffer<float> data, lengths, correction;
  cuda::DeviceBuffer<int> viewIndex;
  cuda::DeviceBuffer<double> partials;
  float rayFloor = 0.0f;
  bool multiplicative = false;
  std::size_t correctionViews = 0;  // views of the correction correctSubset formed (0: none pending)
  // A block's A_S x kept for its split operator's sum (projectSubset), and the chunk a peer's arrives in to be added.
  cuda::DeviceBuffer<float> kept, peerChunk;
  std::size_t keptViews = 0;  // views of the kept projection (0: none)
};

class CudaOperator final : public ConeBeamOperator {
 public:
  CudaOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options);
  ~CudaOperator() override;

  std::string description() const override { return "cuda on " + deviceName_ + ", window " + std::to_string(window_); }
  void reset() override;
  void moveBlock(int firstRow, int rows) override;
  void setVolume(const float* voxels) override;
  void readVolume(float* destination) override;
  bool readBlockInto(float* volume, const std::array<int, 3>& volumeSize, int volumeFirstRow) override;
  std::shared_future<void> readBlockIntoBeside(const std::function<float*()>& volume, const std::array<int, 3>& volumeSize,
                                               int volumeFirstRow) override;
  std::optional<float> blockLargestMagnitude() override;
  void back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) override;
  void forward(const std::size_t* views, std::size_t count, float* projections) override;
  void setUpdateMask(const std::uint8_t* mask) override;
  void updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                    const float* cachedWeights) override;
  bool computesSubsetWeights() const override { return true; }
  float subsetLargestWeight(const std::size_t* views, std::size_t count) override;
  std::unique_ptr<OperatorVectors> makeVectors(int volumes, int scans) override;
  void synchronize() override {
    GLRECON_CUDA(cudaSetDevice(device_));
    GLRECON_CUDA(cudaDeviceSynchronize());
  }
  bool setSubsetData(const float* projections, const float* rayLengths, float rayFloor, bool multiplicative) override;
  double correctSubset(const std::size_t* views, std::size_t count) override;
  bool projectSubset(const std::size_t* views, std::size_t count) override;
  void takeSubsetProjection(ConeBeamOperator& other, bool add) override;
  double correctProjectedSubset(const std::size_t* views, std::size_t count) override;
  using ConeBeamOperator::back;
  DeviceProjections* nextWindow() override;
  void back(DeviceProjections& window, const std::size_t* views, std::size_t count) override;
  void setRegion(const RegionOfInterest& region) override;
  std::vector<std::uint8_t> activeMask() override { return regionMask_; }
  double culledFraction() const override { return updatesTotal_ > 0 ? 1.0 - updatesDone_ / updatesTotal_ : 0.0; }
  double uploadedBytes() const override { return uploaded_; }
  int window() const override { return window_; }

 private:
  RowBand bandOf(std::size_t view) { return options_.blockRows > 0 ? blockBands()[view] : RowBand{0, geometry_.detector.nv}; }
  const RowBand* blockBands() { return bands_.of(geometry_, grid_, firstRow(), rows()); }
  void fdkBack(const float* projections, const std::size_t* views, std::size_t count);
  /// The pending window: staged projections uploaded, then backprojected.
  void launch();
  // The volume through the staging buffers into `destination`: as it is, or (volumeSize) each x row to its row of a
  // whole volume whose rows volumeFirstRow onwards this block holds.
  void readChunks(float* destination, const std::array<int, 3>* volumeSize, int volumeFirstRow);
  /// The block's kernels and copies done: the whole device, or (drainBeside) this block's two streams, not the drain's.
  void settleBlock();
  /// The pending window's pass, once its array holds the projections (uploaded on copyStream_).
  void pass();
  RayBuffers& rays();
  /// The subset's view indices to the device, for correctBatch.
  void uploadSubsetViews(const std::size_t* views, std::size_t count);
  /// The corrections of the subset's views [first, first + n) from their forward projections `projected` into the
  /// correction buffer; returns their sum of squares (the kernel's per-block partials added in order).
  double correctBatch(const float* projected, std::size_t first, int n);
  /// The subset update's buffers (B_S(c), B_S(1), the largest's) and the weights cache's capacity, at the first use.
  void allocateSubsetBuffers();
  /// B_S(1) of the subset on the device (kept per subset while the cache has room) and its largest value.
  const float* subsetWeights(const std::size_t* views, std::size_t count, float* largest);
  bool uploadRayViews(const std::size_t* views, int n);
  /// The matched pair's swapped block (RayBuffers::swapped) where some of `views` run along x and it could be made
  /// (with room for 5 volumes more); otherwise nullptr.
  /// `scattered`: only for the views the transpose scatters (not gathered).
  float* swappedFor(const std::size_t* views, std::size_t count, bool scattered = false);
  bool gathered(std::size_t view) const { return (modes_[view] & cuda::kPlaneGather) != 0; }
  /// B (Adjoint) of projections into the device volume `to`: added to it, or (`clear`) the first batch stored. The
  /// projections are in host memory, or (`onDevice`) in device memory.
  void adjointInto(const float* projections, const std::size_t* views, std::size_t count, float* to, bool clear,
                   bool repeatFirstBatch = false, bool onDevice = false);
  /// A of the held volume (or of the device volume `source`) for `views`, batch by batch into the device buffer of
  /// forward's output; `batchDone(first, n)` after each batch of n views starting at views[first].
  void projectBatches(const std::size_t* views, std::size_t count, const std::function<void(std::size_t first, int n)>& batchDone,
                      const float* source = nullptr);
  friend class CudaVectors;
  void requireWholeGrid(const char* what) const;
  float3 spacing() const {
    const detail::FloatSpacing h(grid_);
    return make_float3(h[0], h[1], h[2]);
  }

  int device_ = 0;
  std::string deviceName_;
  int window_ = kDefaultWindow;
  int bank_ = -1;  // this operator's matrices in constant memory
  std::size_t stagingFloats_ = 0;  // per window buffer: one window of projections
  cuda::DeviceBuffer<float> volume_;
  // drainBeside: the second block buffer, the stream and pinned chunks its readback goes through, and that readback.
  cuda::DeviceBuffer<float> spare_;
  cuda::Stream drainStream_;
  cuda::PinnedBuffer<float> drainStaging_[2];
  cuda::Event drainCopied_[2];
  std::shared_future<void> draining_;
  cuda::DeviceBuffer<int2> zRange_;
  cuda::DeviceBuffer<int> largestBits_;  // blockLargestMagnitude's result
  bool regionSet_ = false;
  std::vector<std::uint8_t> regionMask_;
  double updatesPerLaunch_ = 0, updatesDone_ = 0, updatesTotal_ = 0;
  // Double buffering: window b is staged in pinned memory, copied on copyStream_ into its array, and used by the
  // kernel on computeStream_ once `copied` has fired; the next copy into b waits for `used`.
  Window windows_[2];
  cuda::Stream copyStream_, computeStream_;
  int buffer_ = 0;
  std::vector<std::size_t> pending_;
  std::vector<RowBand> pendingBands_;  // blocks: the detector rows each pending projection has staged
  BlockRowBands bands_;                // blocks: the detector rows each view samples
  cuda::ProjectionWindow handedOut_;   // what nextWindow() hands out
  double uploaded_ = 0;
  std::vector<detail::ProjectorView> views_;
  std::vector<unsigned char> modes_;  // per view: how it is projected (cuda::kPlaneGather, cuda::kLayered), made with rays_
  std::unique_ptr<RayBuffers> rays_;
  bool masked_ = false;
  std::vector<float> ones_;
};

CudaOperator::CudaOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options)
    : ConeBeamOperator(Backend::Cuda, geometry, grid, options), device_(options.device) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0)
    throw CudaError(std::string("CUDA: no device (") + (status != cudaSuccess ? cudaGetErrorString(status) : "none found") + ")");
  if (device_ < 0 || device_ >= devices)
    throw CudaError(field("gpu") + " " + std::to_string(device_) + ": expected a CUDA device from 0 to " + std::to_string(devices - 1));
  GLRECON_CUDA(cudaSetDevice(device_));
  cudaDeviceProp properties{};
  GLRECON_CUDA(cudaGetDeviceProperties(&properties, device_));
  deviceName_ = properties.name;
  if (options.window < kMaximumWindow || options.window > cuda::kMaxWindow)
    throw UsageError(field("window") + ": expected 1 to " + std::to_string(cuda::kMaxWindow) + " (constant memory), max or auto, found " +
                     std::to_string(options.window));
  window_ = options.window == kMaximumWindow ? cuda::kMaxWindow : options.window > 0 ? options.window : kDefaultWindow;
  window_ = std::min<int>(window_, static_cast<int>(geometry.size()));
  const std::size_t bytes = blockVoxels() * sizeof(float), blocks = options.drainBeside && options.blockRows > 0 ? 2 : 1;
  std::size_t freeBytes = 0, totalBytes = 0;
  GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  const std::size_t projectionBytes = static_cast<std::size_t>(2) * geometry.detector.nu * geometry.detector.nv * window_ * sizeof(float);
  if (blocks * bytes + projectionBytes > freeBytes)
    throwInputError("cuda on " + deviceName_, "GPU memory (bytes)",
                    "at most " + std::to_string(freeBytes) + (options.blockRows > 0 ? std::string() : " (" + slabSuggestion() + ")"),
                    std::to_string(blocks * bytes + projectionBytes));
  // GLRECON_TRACE: the setup's steps per device. On two H200s they showed where two devices' setup went (0.74-1.10 s
  // against one device's 0.21-0.30 s): the pinned buffers, whose fresh pages faulted in at under 2 GB/s, beside the
  // volume's (cuda::allocatePageLocked and VolumeSink::devicesReady now; docs/benchmarks.md).
  const auto traceStep = [&](const char* what) { trace(("cuda " + std::to_string(device_) + ": " + what).c_str()); };
  traceStep("operator: device opened");
  bank_ = cuda::acquireMatrixBank();
  volume_ = cuda::DeviceBuffer<float>(blockVoxels());
  GLRECON_CUDA(cudaMemset(volume_.get(), 0, bytes));
  traceStep("operator: block made");
  if (options.drainBeside && options.blockRows > 0) {
    spare_ = cuda::DeviceBuffer<float>(blockVoxels());  // made now: cudaMalloc mid-run may wait for the device
    drainStream_ = cuda::Stream::create(cudaStreamNonBlocking);
    for (int b = 0; b < 2; ++b) {
      drainStaging_[b] = cuda::PinnedBuffer<float>(kDrainChunkFloats);
      drainCopied_[b] = cuda::Event::create();
    }
    traceStep("operator: the drain's block and pinned chunks made");
  }
  copyStream_ = cuda::Stream::create();
  computeStream_ = cuda::Stream::create();
  stagingFloats_ = static_cast<std::size_t>(geometry.detector.nu) * geometry.detector.nv * window_;
  for (Window& w : windows_) {
    w.array = cuda::Array(geometry.detector.nu, geometry.detector.nv, window_, cudaArrayLayered | cudaArraySurfaceLoadStore);
    w.texture = cuda::TextureObject(w.array.get());
    w.surface = cuda::SurfaceObject(w.array.get());
    w.staging = cuda::PinnedBuffer<float>(stagingFloats_);
    w.copied = cuda::Event::create();
    w.used = cuda::Event::create();
    GLRECON_CUDA(cudaEventRecord(w.used.get(), computeStream_.get()));
  }
  traceStep("operator: windows and their pinned staging made");
}

CudaOperator::~CudaOperator() {
  if (draining_.valid()) draining_.wait();  // its thread copies out of spare_ and the drain's staging
  cudaSetDevice(device_);
  cudaDeviceSynchronize();  // nothing may still use what the members free
  if (bank_ >= 0) cuda::releaseMatrixBank(bank_);
}

void CudaOperator::requireWholeGrid(const char* what) const {
  if (options_.blockRows > 0)
    throw UsageError(std::string(what) + ": expected an operator of the whole grid (this one was made for blocks of " +
                     std::to_string(blockCapacity()) + " rows)");
}

void CudaOperator::back(const float* projections, const std::size_t* views, std::size_t count, Weighting weighting) {
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry_.size()) throw std::out_of_range("back: view index beyond the geometry");
  GLRECON_CUDA(cudaSetDevice(device_));
  if (weighting == Weighting::Fdk) return fdkBack(projections, views, count);
  const auto start = std::chrono::steady_clock::now();
  launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  adjointInto(projections, views, count, volume_.get(), /*clear=*/false);
  timings_.back += since(start);
}

void CudaOperator::fdkBack(const float* projections, const std::size_t* views, std::size_t count) {
  const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
  for (std::size_t p = 0; p < count;) {
    if (pending_.empty()) GLRECON_CUDA(cudaEventSynchronize(windows_[buffer_].used.get()));  // the staging buffer's last copy is done
    const std::size_t n = std::min(count - p, static_cast<std::size_t>(window_) - pending_.size());
    float* to = windows_[buffer_].staging.get() + pending_.size() * pixels;
    const int threads = std::min(8, resolveThreadCount(options_.threads));
    if (options_.blockRows > 0) {
      // Only each projection's band of rows is staged (and later sent), the projections on the threads at once: a
      // parallel copy per projection started and joined its threads 720 times a slab at 1024^3 (slabs ran at a sixth
      // of one block's speed on an H200).
      const std::size_t nu = geometry_.detector.nu, firstBand = pendingBands_.size();
      for (std::size_t s = 0; s < n; ++s) pendingBands_.push_back(bandOf(views[p + s]));
      parallelFor(n, 1, threads, [&](std::size_t b, std::size_t e) {
        for (std::size_t s = b; s < e; ++s) {
          const RowBand band = pendingBands_[firstBand + s];
          const std::size_t offset = static_cast<std::size_t>(band.first) * nu, length = static_cast<std::size_t>(band.count) * nu;
          std::memcpy(to + s * pixels + offset, projections + (p + s) * pixels + offset, length * sizeof(float));
        }
      });
    } else {
      // Several threads: one core copies about 8 GB/s, and at 512^2 this copy is 1 MiB per projection on the
      // thread that feeds the GPU (it bounded the whole FDK before).
      parallelFor(n * pixels, std::size_t{1} << 18, threads,
                  [&](std::size_t b, std::size_t e) { std::memcpy(to + b, projections + p * pixels + b, (e - b) * sizeof(float)); });
    }
    pending_.insert(pending_.end(), views + p, views + p + n);
    p += n;
    if (static_cast<int>(pending_.size()) == window_) launch();
  }
}

void CudaOperator::launch() {
  if (pending_.empty()) return;
  const int w = static_cast<int>(pending_.size());
  const int nu = geometry_.detector.nu, nv = geometry_.detector.nv;
  Window& window = windows_[buffer_];
  const auto t = std::chrono::steady_clock::now();
  // The staging buffer of this window was filled by fdkBack(); copy it into the layered array.
  GLRECON_CUDA(cudaStreamWaitEvent(copyStream_.get(), window.used.get(), 0));
  cudaMemcpy3DParms copy{};
  copy.srcPtr = make_cudaPitchedPtr(window.staging.get(), nu * sizeof(float), nu, nv);
  copy.dstArray = window.array.get();
  copy.kind = cudaMemcpyHostToDevice;
  if (options_.blockRows > 0) {
    // Each projection's band of rows, at its own rows and layer: texture coordinates stay those of the whole
    // detector; rows outside the band hold stale data no voxel of the block samples.
    for (int s = 0; s < w; ++s) {
      const RowBand band = pendingBands_[s];
      if (band.count == 0) continue;
      copy.srcPos = make_cudaPos(0, band.first, s);
      copy.dstPos = make_cudaPos(0, band.first, s);
      copy.extent = make_cudaExtent(nu, band.count, 1);
      GLRECON_CUDA(cudaMemcpy3DAsync(&copy, copyStream_.get()));
      uploaded_ += static_cast<double>(band.count) * nu * sizeof(float);
    }
  } else {
    copy.extent = make_cudaExtent(nu, nv, w);
    GLRECON_CUDA(cudaMemcpy3DAsync(&copy, copyStream_.get()));
    uploaded_ += static_cast<double>(nu) * nv * w * sizeof(float);
  }
  if (options_.profile) {
    GLRECON_CUDA(cudaStreamSynchronize(copyStream_.get()));
    timings_.upload += since(t);
  }
  pass();
}

void CudaOperator::pass() {
  const int w = static_cast<int>(pending_.size());
  Window& window = windows_[buffer_];
  const auto t = std::chrono::steady_clock::now();
  GLRECON_CUDA(cudaEventRecord(window.copied.get(), copyStream_.get()));
  std::vector<float4> matrices(3 * w);
  bool yInvariant = true;  // u and w constant along y in every projection of the window (see fdk_kernels.cu)
  for (int s = 0; s < w; ++s) {
    const ProjectionMatrix m = geometry_.matrix(pending_[s], grid_);
    for (int r = 0; r < 3; ++r)
      matrices[3 * s + r] = make_float4(static_cast<float>(m.m[r][0]), static_cast<float>(m.m[r][1]), static_cast<float>(m.m[r][2]),
                                        static_cast<float>(m.m[r][3]));
    yInvariant = yInvariant && matrices[3 * s].y == 0.0f && matrices[3 * s + 2].y == 0.0f;
  }
  GLRECON_CUDA(cudaStreamWaitEvent(computeStream_.get(), window.copied.get(), 0));
  cuda::uploadMatrices(bank_, matrices.data(), w, computeStream_.get());
  cuda::launchFdkBack(runLength(), yInvariant, computeStream_.get(), volume_.get(), grid_.size[0], rows(), grid_.size[2], firstRow(), w,
                      window.texture.get(), regionSet_ ? zRange_.get() : nullptr, bank_);
  GLRECON_CUDA(cudaEventRecord(window.used.get(), computeStream_.get()));
  if (options_.profile) {
    GLRECON_CUDA(cudaStreamSynchronize(computeStream_.get()));
    timings_.compute += since(t);
  }
  updatesTotal_ += static_cast<double>(blockVoxels());
  updatesDone_ += regionSet_ ? updatesPerLaunch_ : static_cast<double>(blockVoxels());
  pending_.clear();
  pendingBands_.clear();
  buffer_ = 1 - buffer_;
}

DeviceProjections* CudaOperator::nextWindow() {
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();  // what waits from fdkBack() first
  Window& window = windows_[buffer_];
  GLRECON_CUDA(cudaEventSynchronize(window.used.get()));  // its staging buffer and array are free
  handedOut_.capacity = static_cast<std::size_t>(window_);
  handedOut_.device = device_;
  handedOut_.index = buffer_;
  handedOut_.width = geometry_.detector.nu;
  handedOut_.height = geometry_.detector.nv;
  handedOut_.array = window.array.get();
  handedOut_.surface = window.surface.get();
  handedOut_.staging = window.staging.get();
  handedOut_.rowBands = options_.blockRows > 0 ? blockBands() : nullptr;  // a twin sends and filters only the block's rows
  handedOut_.stream = copyStream_.get();
  return &handedOut_;
}

void CudaOperator::back(DeviceProjections& window, const std::size_t* views, std::size_t count) {
  GLRECON_CUDA(cudaSetDevice(device_));
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry_.size()) throw std::out_of_range("back: view index beyond the geometry");
  if (!pending_.empty() || count == 0 || static_cast<int>(count) > window_)
    throw std::logic_error("back(window): expected 1 to " + std::to_string(window_) + " projections and nothing waiting, found " +
                           std::to_string(count));
  pending_.assign(views, views + count);
  uploaded_ += std::exchange(window.sentBytes, 0.0);  // what the twin sent into this window
  pass();  // the twin filled the window's array on copyStream_: the pass orders after it
}

// Through the two pinned staging buffers (idle once the kernels are done), chunk by chunk: the copy engine fills one
// while host threads move the other into the destination. A plain cudaMemcpy into pageable memory goes through the
// driver's small bounce buffer and ran at 1.8 GB/s on the H200.
void CudaOperator::readVolume(float* destination) { readChunks(destination, nullptr, 0); }

// A slab's rows straight to their places in the whole volume: each x row of the block (nx floats) to its row there.
bool CudaOperator::readBlockInto(float* volume, const std::array<int, 3>& volumeSize, int volumeFirstRow) {
  checkHoldsBlock(volumeSize, volumeFirstRow);
  readChunks(volume, &volumeSize, volumeFirstRow);
  return true;
}

// The finished block swaps buffers with the spare (the next moveBlock zeroes the other) and is copied out on the drain's
// stream, through pinned chunks of its own (the windows' staging feeds the next block's uploads meanwhile), by a thread
// whose host copies take the operator's threads. The drain's stream does not wait for the next block's kernels, nor
// they for it; settleBlock() waits only for this block's streams.
std::shared_future<void> CudaOperator::readBlockIntoBeside(const std::function<float*()>& volume, const std::array<int, 3>& volumeSize,
                                                         int volumeFirstRow) {
  if (!spare_) return {};
  checkHoldsBlock(volumeSize, volumeFirstRow);
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  if (draining_.valid()) std::exchange(draining_, {}).get();  // the spare is free once the last readback is out (a
                                                            // failed one rethrown once, not again in a later run)
  settleBlock();
  std::swap(volume_, spare_);
  const int rows = this->rows();
  const std::size_t total = blockVoxels();
  draining_ = std::async(std::launch::async, [this, volume, volumeSize, volumeFirstRow, rows, total] {
                GLRECON_CUDA(cudaSetDevice(device_));
                const std::size_t chunk = kDrainChunkFloats, chunks = (total + chunk - 1) / chunk;
                const auto issue = [&](std::size_t c) {
                  const std::size_t n = std::min(chunk, total - c * chunk);
                  GLRECON_CUDA(cudaMemcpyAsync(drainStaging_[c % 2].get(), spare_.get() + c * chunk, n * sizeof(float),
                                               cudaMemcpyDeviceToHost, drainStream_.get()));
                  GLRECON_CUDA(cudaEventRecord(drainCopied_[c % 2].get(), drainStream_.get()));
                };
                issue(0);
                float* to = nullptr;  // asked for once the first chunk is on its way
                for (std::size_t c = 0; c < chunks; ++c) {
                  if (c + 1 < chunks) issue(c + 1);  // its buffer held chunk c - 1, copied out below
                  if (!to && !(to = volume())) throw std::logic_error("readBlockIntoBeside: no memory to read the block into");
                  GLRECON_CUDA(cudaEventSynchronize(drainCopied_[c % 2].get()));
                  const std::size_t n = std::min(chunk, total - c * chunk), base = c * chunk;
                  const float* from = drainStaging_[c % 2].get();
                  parallelFor(n, std::size_t{1} << 18, options_.threads, [&](std::size_t b, std::size_t e) {
                    copyBlockRangeToVolume(volumeSize, volumeFirstRow, rows, base + b, base + e, from + b, to);
                  });
                }
              }).share();
  return draining_;
}

void CudaOperator::settleBlock() {
  if (!spare_) {
    GLRECON_CUDA(cudaDeviceSynchronize());
    return;
  }
  GLRECON_CUDA(cudaStreamSynchronize(computeStream_.get()));
  GLRECON_CUDA(cudaStreamSynchronize(copyStream_.get()));
}

std::optional<float> CudaOperator::blockLargestMagnitude() {
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  if (!largestBits_) largestBits_ = cuda::DeviceBuffer<int>(1);
  GLRECON_CUDA(cudaMemsetAsync(largestBits_.get(), 0, sizeof(int), computeStream_.get()));
  cuda::launchLargestMagnitude(volume_.get(), blockVoxels(), largestBits_.get(), /*keepNaN=*/true, computeStream_.get());
  int bits = 0;
  GLRECON_CUDA(cudaMemcpyAsync(&bits, largestBits_.get(), sizeof(int), cudaMemcpyDeviceToHost, computeStream_.get()));
  GLRECON_CUDA(cudaStreamSynchronize(computeStream_.get()));
  float largest = 0.0f;
  std::memcpy(&largest, &bits, sizeof largest);
  return largest;
}

void CudaOperator::readChunks(float* destination, const std::array<int, 3>* volumeSize, int volumeFirstRow) {
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  const auto t = std::chrono::steady_clock::now();
  const std::size_t total = blockVoxels(), chunk = stagingFloats_, chunks = (total + chunk - 1) / chunk;
  const auto issue = [&](std::size_t c) {
    const std::size_t n = std::min(chunk, total - c * chunk);
    GLRECON_CUDA(cudaMemcpyAsync(windows_[c % 2].staging.get(), volume_.get() + c * chunk, n * sizeof(float), cudaMemcpyDeviceToHost,
                                 copyStream_.get()));
    GLRECON_CUDA(cudaEventRecord(windows_[c % 2].copied.get(), copyStream_.get()));
  };
  issue(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) issue(c + 1);  // its buffer held chunk c - 1, already copied out below
    GLRECON_CUDA(cudaEventSynchronize(windows_[c % 2].copied.get()));
    const std::size_t n = std::min(chunk, total - c * chunk);
    const float* from = windows_[c % 2].staging.get();
    if (!volumeSize) {
      float* to = destination + c * chunk;
      // Page-sized pieces: the destination may be untouched memory, and its page faults spread over the threads too.
      parallelFor(n, std::size_t{1} << 18, options_.threads,
                  [&](std::size_t b, std::size_t e) { std::memcpy(to + b, from + b, (e - b) * sizeof(float)); });
      continue;
    }
    const std::size_t base = c * chunk;
    parallelFor(n, std::size_t{1} << 18, options_.threads, [&](std::size_t b, std::size_t e) {
      copyBlockRangeToVolume(*volumeSize, volumeFirstRow, rows(), base + b, base + e, from + b, destination);
    });
  }
  timings_.readback += since(t);
}

void CudaOperator::setVolume(const float* voxels) {
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  GLRECON_CUDA(cudaMemcpy(volume_.get(), voxels, blockVoxels() * sizeof(float), cudaMemcpyHostToDevice));
}

void CudaOperator::reset() {
  GLRECON_CUDA(cudaSetDevice(device_));
  pending_.clear();
  pendingBands_.clear();
  GLRECON_CUDA(cudaDeviceSynchronize());
  GLRECON_CUDA(cudaMemset(volume_.get(), 0, blockVoxels() * sizeof(float)));
  updatesDone_ = updatesTotal_ = 0;
  timings_ = {};
  uploaded_ = 0;  // as the GL backends: reset() clears every counter
  handedOut_.sentBytes = 0;
}

void CudaOperator::moveBlock(int firstRow, int rows) {
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();  // projections staged for the previous block belong to it
  setBlock(firstRow, rows);
  settleBlock();
  GLRECON_CUDA(cudaMemset(volume_.get(), 0, blockVoxels() * sizeof(float)));
  regionSet_ = false;
  regionMask_.clear();
  updatesDone_ = updatesTotal_ = 0;
  // The iterative passes' buffers (the volume's 3D copy, the weights, the mask) are the block's.
  rays_.reset();
  masked_ = false;
}

void CudaOperator::setRegion(const RegionOfInterest& roi) {
  if (roi.size != std::array<int, 3>{grid_.size[0], rows(), grid_.size[2]})
    throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  std::vector<int2> ranges;
  updatesPerLaunch_ = 0;
  for (const auto& [first, last] : columnZRanges(roi)) {
    ranges.push_back(make_int2(first, last));
    updatesPerLaunch_ += last - first;
  }
  settleBlock();
  if (!zRange_ || zRange_.size() < ranges.size()) zRange_ = cuda::DeviceBuffer<int2>(ranges.size());
  GLRECON_CUDA(cudaMemcpy(zRange_.get(), ranges.data(), ranges.size() * sizeof(int2), cudaMemcpyHostToDevice));
  regionSet_ = true;
  regionMask_ = roi.mask;
}

// ---- forward, Adjoint back, the subset update ----

RayBuffers& CudaOperator::rays() {
  if (rays_) return *rays_;
  auto r = std::make_unique<RayBuffers>();
  const int nu = geometry_.detector.nu, nv = geometry_.detector.nv;
  r->projectionArray = cuda::Array(nu, nv, cuda::kMaxRayViews, cudaArrayLayered);
  r->projectionTexture = cuda::TextureObject(r->projectionArray.get());
  r->projections = cuda::DeviceBuffer<float>(static_cast<std::size_t>(nu) * nv * cuda::kMaxRayViews);
  views_ = detail::projectorViews(geometry_, grid_);
  modes_.assign(views_.size(), 0);
  const detail::FloatSpacing h(grid_);
  const int size[3] = {grid_.size[0], grid_.size[1], grid_.size[2]};
  if (options_.pair == ProjectorPair::DistanceDriven) {
    // Every view in plane form (makeOperator checked planeGatherable for each).
    std::fill(modes_.begin(), modes_.end(), static_cast<unsigned char>(cuda::kPlaneGather | cuda::kDistanceDriven));
  } else if (options_.pair == ProjectorPair::Matched) {
    // The matched pair reads the linear volume; its views in plane form (plane_gather.h), with one sample per plane.
    // GLRECON_MATCHED_GATHER=off keeps them all marched and scattered (to measure what the gather gains).
    const char* gather = std::getenv("GLRECON_MATCHED_GATHER");
    if (step_ == 0.0 && !(gather && std::string(gather) == "off"))
      for (std::size_t v = 0; v < views_.size(); ++v)
        if (detail::planeGatherable(views_[v], h, size, nu, nv)) modes_[v] = cuda::kPlaneGather;
  } else {
    // The interpolating pair: views whose rays all run along z or x read layers of planes (launchForward), the others
    // the 3D copy; the layers where they fit the device's layered textures and leave room (below).
    // GLRECON_FORWARD_LAYERS=off keeps every view on the 3D copy (to measure what the layers gain).
    cudaDeviceProp properties{};
    GLRECON_CUDA(cudaGetDeviceProperties(&properties, device_));
    const int* limit = properties.maxTexture2DLayered;
    const char* layers = std::getenv("GLRECON_FORWARD_LAYERS");
    bool alongZ = false, alongX = false, plain = false;
    for (std::size_t v = 0; v < views_.size(); ++v) {
      const int m = views_[v].mainAxis;
      const bool fits = m == 2 ? size[0] <= limit[0] && rows() <= limit[1] && size[2] <= limit[2]
                               : size[2] <= limit[0] && rows() <= limit[1] && size[0] <= limit[2];
      if (step_ == 0.0 && (m == 0 || m == 2) && fits && detail::raysKeepMainAxis(views_[v], h, nu, nv) && !(layers && std::string(layers) == "off")) {
        modes_[v] = cuda::kLayered;
        (m == 2 ? alongZ : alongX) = true;
      } else {
        plain = true;
      }
    }
    std::size_t freeBytes = 0, totalBytes = 0;
    GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    const std::size_t bytes = blockVoxels() * sizeof(float);
    // The layers replace the 3D copy (or join it): made where they leave room for 5 volumes more (the subset update's
    // B_S(c) and B_S(1), CGLS's and PDHG's vectors), else the 3D copy alone, as before them.
    if ((alongZ + alongX + plain + 5) * bytes > freeBytes) {
      std::fill(modes_.begin(), modes_.end(), 0);
      alongZ = alongX = false;
      plain = true;
    }
    if (plain) {
      r->volumeArray = cuda::Array(grid_.size[0], rows(), grid_.size[2]);  // the block's rows (moveBlock makes them anew)
      r->volumeTexture = cuda::TextureObject(r->volumeArray.get());
    }
    if (alongZ) {
      r->zLayers = cuda::Array(grid_.size[0], rows(), grid_.size[2], cudaArrayLayered);
      r->zLayersTexture = cuda::TextureObject(r->zLayers.get());
    }
    if (alongX) {
      r->xLayers = cuda::Array(grid_.size[2], rows(), grid_.size[0], cudaArrayLayered | cudaArraySurfaceLoadStore);
      r->xLayersTexture = cuda::TextureObject(r->xLayers.get());
      r->xLayersSurface = cuda::SurfaceObject(r->xLayers.get());
    }
  }
  rays_ = std::move(r);
  return *rays_;
}

float* CudaOperator::swappedFor(const std::size_t* views, std::size_t count, bool scattered) {
  RayBuffers& r = rays();
  const auto alongX = [&](std::size_t v) { return views_[v].mainAxis == 0 && !(scattered && gathered(v)); };
  if (std::none_of(views, views + count, alongX)) return nullptr;
  if (!r.swapTried) {
    r.swapTried = true;
    // GLRECON_MATCHED_LAYOUT=plain: every view reads the volume as it is (to measure what the swap gains).
    const char* layout = std::getenv("GLRECON_MATCHED_LAYOUT");
    if (layout && std::string(layout) == "plain") return nullptr;
    std::size_t freeBytes = 0, totalBytes = 0;
    GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    // A speed-up only: made where it leaves room for what the methods allocate after the first forward projection
    // (the subset update's B_S(c) and B_S(1), CGLS's and PDHG's vectors: up to 5 volumes).
    if (6 * blockVoxels() * sizeof(float) <= freeBytes) r.swapped = cuda::DeviceBuffer<float>(blockVoxels());
  }
  return r.swapped ? r.swapped.get() : nullptr;
}

bool CudaOperator::uploadRayViews(const std::size_t* views, int n) {
  std::vector<const detail::ProjectorView*> list(n);
  std::vector<unsigned char> modes(n);
  for (int p = 0; p < n; ++p) {
    list[p] = &views_[views[p]];
    modes[p] = modes_[views[p]];
  }
  const detail::FloatSpacing h(grid_);
  return cuda::uploadRayViews(list.data(), modes.data(), h, n);
}

void CudaOperator::projectBatches(const std::size_t* views, std::size_t count,
                                  const std::function<void(std::size_t first, int n)>& batchDone, const float* source) {
  if (!source) source = volume_.get();
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry_.size()) throw std::out_of_range("forward: view index beyond the geometry");
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  RayBuffers& r = rays();
  if (options_.pair != ProjectorPair::Interpolating) {
    // The exact pairs' A (matched, distance-driven): float weights read from the volume itself, so that the gather or
    // transposeKernel is its transpose.
    float* swapped = swappedFor(views, count);
    if (swapped) cuda::launchSwapXZ(const_cast<float*>(source), swapped, grid_.size[0], rows(), grid_.size[2], /*toSwapped=*/true);
    for (std::size_t first = 0; first < count; first += cuda::kMaxRayViews) {
      const int n = static_cast<int>(std::min<std::size_t>(cuda::kMaxRayViews, count - first));
      uploadRayViews(views + first, n);
      cuda::launchForwardExact(source, swapped, make_int3(grid_.size[0], grid_.size[1], grid_.size[2]), firstRow(), rows(), spacing(),
                               static_cast<float>(step_), geometry_.detector.nu, geometry_.detector.nv, n, r.projections.get());
      batchDone(first, n);
    }
    return;
  }
  // The rays sample the volume's 3D copy (trilinear, border 0), or its planes as layers (bilinear, border 0).
  for (cudaArray_t array : {r.volumeArray.get(), r.zLayers.get()}) {
    if (!array) continue;
    cudaMemcpy3DParms copy{};
    copy.srcPtr = make_cudaPitchedPtr(const_cast<float*>(source), grid_.size[0] * sizeof(float), grid_.size[0], rows());
    copy.dstArray = array;
    copy.extent = make_cudaExtent(grid_.size[0], rows(), grid_.size[2]);
    copy.kind = cudaMemcpyDeviceToDevice;
    GLRECON_CUDA(cudaMemcpy3D(&copy));
  }
  if (r.xLayers) cuda::launchFillXLayers(source, grid_.size[0], rows(), grid_.size[2], r.xLayersSurface.get());
  for (std::size_t first = 0; first < count; first += cuda::kMaxRayViews) {
    const int n = static_cast<int>(std::min<std::size_t>(cuda::kMaxRayViews, count - first));
    uploadRayViews(views + first, n);
    cuda::launchForward(r.volumeTexture.get(), r.zLayersTexture.get(), r.xLayersTexture.get(), make_int3(grid_.size[0], grid_.size[1], grid_.size[2]), firstRow(), rows(), spacing(),
                        static_cast<float>(step_), geometry_.detector.nu, geometry_.detector.nv, n, r.projections.get());
    batchDone(first, n);
  }
}

void CudaOperator::forward(const std::size_t* views, std::size_t count, float* projections) {
  const auto start = std::chrono::steady_clock::now();
  const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
  projectBatches(views, count, [&](std::size_t first, int n) {
    GLRECON_CUDA(cudaMemcpy(projections + first * pixels, rays().projections.get(), pixels * n * sizeof(float), cudaMemcpyDeviceToHost));
  });
  timings_.forward += since(start);
}

bool CudaOperator::setSubsetData(const float* projections, const float* rayLengths, float rayFloor, bool multiplicative) {
  GLRECON_CUDA(cudaSetDevice(device_));
  if (!projections) {
    if (rays_) {
      rays_->data = {};
      rays_->lengths = {};
      rays_->correction = {};
      rays_->kept = {};
      rays_->peerChunk = {};
      rays_->correctionViews = rays_->keptViews = 0;
    }
    return false;
  }
  RayBuffers& r = rays();
  const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv, values = geometry_.size() * pixels;
  // The data, the ray lengths and a whole subset's correction (a block: and its kept projection, and a peer's chunk):
  // where they would take more than half of what is free, the corrections stay on the host (the caller's path),
  // leaving the device to the volume and the weights' cache.
  const bool block = options_.blockRows > 0;
  std::size_t freeBytes = 0, totalBytes = 0;
  GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  if (((block ? 4 : 3) * values + (block ? kPeerChunk : 0)) * sizeof(float) > freeBytes / 2) return false;
  r.data = cuda::DeviceBuffer<float>(values);
  r.lengths = cuda::DeviceBuffer<float>(values);
  r.correction = cuda::DeviceBuffer<float>(values);
  if (block) r.kept = cuda::DeviceBuffer<float>(values);
  r.viewIndex = cuda::DeviceBuffer<int>(geometry_.size());
  r.partials = cuda::DeviceBuffer<double>(cuda::kCorrectionBlocks);
  GLRECON_CUDA(cudaMemcpy(r.data.get(), projections, values * sizeof(float), cudaMemcpyHostToDevice));
  GLRECON_CUDA(cudaMemcpy(r.lengths.get(), rayLengths, values * sizeof(float), cudaMemcpyHostToDevice));
  r.rayFloor = rayFloor;
  r.multiplicative = multiplicative;
  r.correctionViews = r.keptViews = 0;
  return true;
}

void CudaOperator::uploadSubsetViews(const std::size_t* views, std::size_t count) {
  const std::vector<int> indices(views, views + count);
  GLRECON_CUDA(cudaMemcpy(rays().viewIndex.get(), indices.data(), count * sizeof(int), cudaMemcpyHostToDevice));
}

double CudaOperator::correctBatch(const float* projected, std::size_t first, int n) {
  RayBuffers& r = rays();
  const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
  cuda::launchCorrection(projected, r.data.get(), r.lengths.get(), r.viewIndex.get() + first, n, pixels, r.rayFloor, r.multiplicative,
                         r.correction.get() + first * pixels, r.partials.get());
  // The partial sums come back (kCorrectionBlocks doubles) and are added in order: the same bits every run.
  std::vector<double> partials(cuda::kCorrectionBlocks);
  GLRECON_CUDA(cudaMemcpy(partials.data(), r.partials.get(), partials.size() * sizeof(double), cudaMemcpyDeviceToHost));
  double squares = 0.0;
  for (double p : partials) squares += p;
  return squares;
}

double CudaOperator::correctSubset(const std::size_t* views, std::size_t count) {
  requireWholeGrid("correctSubset");
  RayBuffers& r = rays();
  if (!r.data) throw std::logic_error("correctSubset: no data on the device (setSubsetData first)");
  const auto start = std::chrono::steady_clock::now();
  GLRECON_CUDA(cudaSetDevice(device_));
  uploadSubsetViews(views, count);
  // Each forward batch corrected as it is made: no whole subset's projection is kept.
  double squares = 0.0;
  projectBatches(views, count, [&](std::size_t first, int n) { squares += correctBatch(r.projections.get(), first, n); });
  r.correctionViews = count;
  timings_.forward += since(start);
  return squares;
}

bool CudaOperator::projectSubset(const std::size_t* views, std::size_t count) {
  RayBuffers& r = rays();
  if (!r.kept) return false;
  const auto start = std::chrono::steady_clock::now();
  GLRECON_CUDA(cudaSetDevice(device_));
  const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
  projectBatches(views, count, [&](std::size_t first, int n) {
    GLRECON_CUDA(cudaMemcpy(r.kept.get() + first * pixels, r.projections.get(), pixels * n * sizeof(float), cudaMemcpyDeviceToDevice));
  });
  GLRECON_CUDA(cudaDeviceSynchronize());
  r.keptViews = count;
  timings_.forward += since(start);
  return true;
}

void CudaOperator::takeSubsetProjection(ConeBeamOperator& other, bool add) {
  auto* peer = dynamic_cast<CudaOperator*>(&other);
  RayBuffers& r = rays();
  if (!peer || !r.kept || !peer->rays().kept || peer->rays().keptViews == 0)
    throw std::logic_error("takeSubsetProjection: expected a cuda block that kept a subset's projection (projectSubset)");
  const auto start = std::chrono::steady_clock::now();
  const RayBuffers& from = peer->rays();
  const std::size_t n = from.keptViews * static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
  takeFromDevice(r.kept.get(), device_, from.kept.get(), peer->device_, n, add, r.peerChunk);
  r.keptViews = from.keptViews;
  timings_.forward += since(start);
}

double CudaOperator::correctProjectedSubset(const std::size_t* views, std::size_t count) {
  RayBuffers& r = rays();
  if (!r.kept || r.keptViews != count)
    throw std::logic_error("correctProjectedSubset: no projection of this subset kept on the device (projectSubset first)");
  const auto start = std::chrono::steady_clock::now();
  GLRECON_CUDA(cudaSetDevice(device_));
  uploadSubsetViews(views, count);
  const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
  double squares = 0.0;
  for (std::size_t first = 0; first < count; first += cuda::kMaxRayViews)
    squares += correctBatch(r.kept.get() + first * pixels, first, static_cast<int>(std::min<std::size_t>(cuda::kMaxRayViews, count - first)));
  r.correctionViews = count;
  r.keptViews = 0;
  timings_.forward += since(start);
  return squares;
}

void CudaOperator::adjointInto(const float* projections, const std::size_t* views, std::size_t count, float* to, bool clear,
                               bool repeatFirstBatch, bool onDevice) {
  RayBuffers& r = rays();
  const int nu = geometry_.detector.nu, nv = geometry_.detector.nv;
  const std::size_t pixels = static_cast<std::size_t>(nu) * nv;
  if (clear && count == 0) GLRECON_CUDA(cudaMemset(to, 0, blockVoxels() * sizeof(float)));
  if (options_.pair != ProjectorPair::Interpolating) {
    // A^T gathers (plane form) or scatters (adds): a cleared target starts at 0. The scattered views along x add into
    // the swapped block, added to `to` at the end.
    if (clear) GLRECON_CUDA(cudaMemset(to, 0, blockVoxels() * sizeof(float)));
    float* swapped = swappedFor(views, count, /*scattered=*/true);
    if (swapped) GLRECON_CUDA(cudaMemset(swapped, 0, blockVoxels() * sizeof(float)));
    for (std::size_t first = 0; first < count; first += cuda::kMaxRayViews) {
      const int n = static_cast<int>(std::min<std::size_t>(cuda::kMaxRayViews, count - first));
      uploadRayViews(views + first, n);
      GLRECON_CUDA(cudaMemcpy(r.projections.get(), projections + (repeatFirstBatch ? 0 : first * pixels), pixels * n * sizeof(float),
                              onDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice));
      const int3 size = make_int3(grid_.size[0], grid_.size[1], grid_.size[2]);
      const std::size_t gatheredViews = std::count_if(views + first, views + first + n, [&](std::size_t v) { return gathered(v); });
      if (gatheredViews > 0) cuda::launchPlaneGather(r.projections.get(), size, firstRow(), rows(), nu, nv, n,
                                                     options_.pair == ProjectorPair::DistanceDriven, to);
      if (gatheredViews < static_cast<std::size_t>(n))
        cuda::launchTransposeBack(r.projections.get(), size, firstRow(), rows(), spacing(), static_cast<float>(step_), nu, nv, n, to, swapped);
    }
    if (swapped) cuda::launchSwapXZ(to, swapped, grid_.size[0], rows(), grid_.size[2], /*toSwapped=*/false);
    return;
  }
  for (std::size_t first = 0; first < count; first += cuda::kMaxRayViews) {
    const int n = static_cast<int>(std::min<std::size_t>(cuda::kMaxRayViews, count - first));
    const bool yInvariant = uploadRayViews(views + first, n);
    cudaMemcpy3DParms copy{};
    copy.srcPtr = make_cudaPitchedPtr(const_cast<float*>(projections + (repeatFirstBatch ? 0 : first * pixels)), nu * sizeof(float), nu, nv);
    copy.dstArray = r.projectionArray.get();
    copy.extent = make_cudaExtent(nu, nv, n);
    copy.kind = onDevice ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    GLRECON_CUDA(cudaMemcpy3D(&copy));
    // A cleared target's first batch stores its sums; otherwise each batch adds to what is there.
    cuda::launchAdjointBack(r.projectionTexture.get(), make_int3(grid_.size[0], rows(), grid_.size[2]), firstRow(), spacing(), n,
                            !clear || first > 0, yInvariant, to);
  }
}

void CudaOperator::setUpdateMask(const std::uint8_t* mask) {
  GLRECON_CUDA(cudaSetDevice(device_));
  RayBuffers& r = rays();
  masked_ = mask != nullptr;
  if (!mask) return;
  if (!r.mask) r.mask = cuda::DeviceBuffer<unsigned char>(blockVoxels());
  GLRECON_CUDA(cudaMemcpy(r.mask.get(), mask, blockVoxels(), cudaMemcpyHostToDevice));
}

// B_S(1) of the subset on the device (kept per subset while the cache has room) and its largest value.
void CudaOperator::allocateSubsetBuffers() {
  RayBuffers& r = rays();
  const std::size_t n = blockVoxels();
  if (!r.update) {
    r.update = cuda::DeviceBuffer<float>(n);
    r.weights = cuda::DeviceBuffer<float>(n);
    r.maximum = cuda::DeviceBuffer<int>(1);
    std::size_t freeBytes = 0, totalBytes = 0;
    GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    r.cacheCapacity = std::min<std::size_t>(freeBytes / 2, std::size_t{8} << 30) / (n * sizeof(float));
  }
}

const float* CudaOperator::subsetWeights(const std::size_t* views, std::size_t count, float* largestOut) {
  allocateSubsetBuffers();
  RayBuffers& r = rays();
  const std::size_t n = blockVoxels();
  const std::vector<std::size_t> key(views, views + count);
  auto cached = r.weightCache.find(key);
  const float* weights = nullptr;
  float largest = 0.0f;
  if (cached != r.weightCache.end()) {
    weights = cached->second.weights.get();
    largest = cached->second.largest;
  } else {
    const bool keep = r.weightCache.size() < r.cacheCapacity;
    cuda::DeviceBuffer<float> kept = keep ? cuda::DeviceBuffer<float>(n) : cuda::DeviceBuffer<float>();
    float* target = keep ? kept.get() : r.weights.get();
    const std::size_t pixels = static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
    ones_.resize(std::max(ones_.size(), std::min<std::size_t>(count, cuda::kMaxRayViews) * pixels), 1.0f);
    adjointInto(ones_.data(), views, count, target, /*clear=*/true, /*repeatFirstBatch=*/true);
    GLRECON_CUDA(cudaMemset(r.maximum.get(), 0, sizeof(int)));
    cuda::launchMaxWeight(target, n, r.maximum.get());
    int bits = 0;
    GLRECON_CUDA(cudaMemcpy(&bits, r.maximum.get(), sizeof(int), cudaMemcpyDeviceToHost));
    std::memcpy(&largest, &bits, sizeof largest);
    weights = target;
    if (keep) r.weightCache.emplace(key, RayBuffers::SubsetWeights{std::move(kept), largest});
  }
  *largestOut = largest;
  return weights;
}

float CudaOperator::subsetLargestWeight(const std::size_t* views, std::size_t count) {
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  float largest = 0.0f;
  subsetWeights(views, count, &largest);
  return largest;
}

void CudaOperator::updateSubset(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule,
                                const float*) {
  const auto start = std::chrono::steady_clock::now();
  GLRECON_CUDA(cudaSetDevice(device_));
  launch();
  GLRECON_CUDA(cudaDeviceSynchronize());
  RayBuffers& r = rays();
  const std::size_t n = blockVoxels();
  allocateSubsetBuffers();
  if (correction) {
    adjointInto(correction, views, count, r.update.get(), /*clear=*/true);
  } else {
    // The correction correctSubset formed for these views on the device.
    if (r.correctionViews != count) throw std::logic_error("updateSubset: no correction on the device for this subset (correctSubset first)");
    adjointInto(r.correction.get(), views, count, r.update.get(), /*clear=*/true, /*repeatFirstBatch=*/false, /*onDevice=*/true);
    r.correctionViews = 0;
  }
  float largest = 0.0f;
  const float* weights = subsetWeights(views, count, &largest);
  // A block of a split operator floors by the whole volume's largest weight (SubsetRule::largestWeight), as one block would.
  if (rule.largestWeight > 0.0f) largest = rule.largestWeight;
  cuda::launchSubsetUpdate(volume_.get(), r.update.get(), weights, masked_ ? r.mask.get() : nullptr, n,
                           subsetWeightFloor(largest, count), rule.multiplicative, rule.lambda, rule.positivity);
  timings_.back += since(start);
}

// OperatorVectors in device memory: CGLS's and PDHG-TV's iterates, directions, residuals and duals, and ASD-POCS's TV
// phase, stay on the GPU; per call only a sum's per-block partials (or the largest magnitude) come back. The kernels
// compute the float operations operator.h writes (ray_kernels.cu, vector_kernels.cu), as the host's vectors do.
class CudaVectors final : public OperatorVectors {
 public:
  explicit CudaVectors(CudaOperator& op) : op_(op), voxels_(op.blockVoxels()),
        values_(op.geometry_.size() * static_cast<std::size_t>(op.geometry_.detector.nu) * op.geometry_.detector.nv),
        size_(make_int3(op.grid_.size[0], op.rows(), op.grid_.size[2])),
        partials_(cuda::kCorrectionBlocks), largest_(1), all_(op.geometry_.size()) {
    for (std::size_t i = 0; i < all_.size(); ++i) all_[i] = i;
  }
  Id volume() override { return make(voxels_); }
  Id projections() override { return make(values_); }
  Id field() override { return make(3 * voxels_); }
  void setNeighbours(OperatorVectors* before, OperatorVectors* after) override {
    before_ = before ? &neighbour(before) : nullptr;
    after_ = after ? &neighbour(after) : nullptr;
  }
  void upload(Id to, const float* values) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    GLRECON_CUDA(cudaMemcpy(at(to), values, sizes_[to] * sizeof(float), cudaMemcpyHostToDevice));
  }
  void download(Id from, float* values) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    GLRECON_CUDA(cudaMemcpy(values, at(from), sizes_[from] * sizeof(float), cudaMemcpyDeviceToHost));
  }
  void setMask(const std::uint8_t* mask) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    masked_ = mask != nullptr;
    if (!mask) return;
    if (!mask_) mask_ = cuda::DeviceBuffer<unsigned char>(voxels_);
    GLRECON_CUDA(cudaMemcpy(mask_.get(), mask, voxels_, cudaMemcpyHostToDevice));
  }
  void forward(Id volume, Id projections) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    const std::size_t pixels = values_ / all_.size();
    float* out = at(projections);
    op_.projectBatches(all_.data(), all_.size(), [&](std::size_t first, int n) {
      GLRECON_CUDA(cudaMemcpy(out + first * pixels, op_.rays().projections.get(), pixels * n * sizeof(float), cudaMemcpyDeviceToDevice));
    }, at(volume));
  }
  void back(Id projections, Id volume) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    op_.adjointInto(at(projections), all_.data(), all_.size(), at(volume), /*clear=*/true, /*repeatFirstBatch=*/false, /*onDevice=*/true);
    if (masked_) cuda::launchMask(at(volume), mask_.get(), voxels_);
  }
  void axpy(double a, Id x, Id y) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    cuda::launchAxpy(a, at(x), at(y), sizes_[y]);
  }
  void xpay(Id x, double b, Id y) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    cuda::launchXpay(at(x), b, at(y), sizes_[y]);
  }
  void copy(Id from, Id to) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    GLRECON_CUDA(cudaMemcpy(at(to), at(from), sizes_[to] * sizeof(float), cudaMemcpyDeviceToDevice));
  }
  void takeFrom(Id to, OperatorVectors& other, Id from, bool add) override {
    auto* peer = dynamic_cast<CudaVectors*>(&other);
    if (!peer || peer->sizes_.at(from) != sizes_.at(to)) throw std::logic_error("OperatorVectors::takeFrom: expected a cuda vector of the same length");
    takeFromDevice(at(to), op_.device_, peer->at(from), peer->op_.device_, sizes_[to], add, chunk_);
  }
  double dot(Id a, Id b) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    cuda::launchDot(at(a), at(b), sizes_[a], partials_.get());
    return sumOfPartials();
  }

  double distanceSquared(Id a, Id b) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    same(a, b, "distanceSquared");
    cuda::launchDistanceSquared(at(a), at(b), sizes_[a], partials_.get());
    return sumOfPartials();
  }
  double largestMagnitude(Id x) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    GLRECON_CUDA(cudaMemset(largest_.get(), 0, sizeof(int)));
    cuda::launchLargestMagnitude(at(x), sizes_[x], largest_.get());
    int bits = 0;
    GLRECON_CUDA(cudaMemcpy(&bits, largest_.get(), sizeof(int), cudaMemcpyDeviceToHost));
    float largest = 0.0f;
    std::memcpy(&largest, &bits, sizeof largest);
    return largest;
  }
  void clampNegative(Id x) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    cuda::launchClampNegative(at(x), sizes_[x]);
  }
  void extrapolate(Id x, Id previous, Id out) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    same(x, previous, "extrapolate");
    same(x, out, "extrapolate");
    cuda::launchExtrapolate(at(x), at(previous), at(out), sizes_[out]);
  }
  void forwardDifferences(Id volume, float scale, Id field) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    volumeAndField(volume, field, "forwardDifferences", /*stencil=*/true);
    const float* after = after_ ? fetchRow(*after_, volume, 0, 0, afterRow_) : nullptr;
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    cuda::launchForwardDifferences(at(volume), size_, scale, at(field), after);
  }
  void addTransposedDifferences(Id field, float scale, Id volume) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    volumeAndField(volume, field, "addTransposedDifferences", /*stencil=*/true);
    const float* before = before_ ? fetchRow(*before_, field, 1, before_->size_.y - 1, beforeRow_) : nullptr;
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    cuda::launchAddTransposedDifferences(at(field), size_, scale, at(volume), before, !after_);
  }
  void clipToBall(Id z, Id d, float bound) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    if (sizes_.at(z) != 3 * voxels_ || sizes_.at(d) != 3 * voxels_) throw std::logic_error("OperatorVectors::clipToBall: expected two fields");
    cuda::launchClipToBall(at(z), at(d), voxels_, bound);
  }
  void dataDualStep(Id y, Id ax, Id axPrevious, Id b, Id sigma) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    for (Id other : {ax, axPrevious, b, sigma}) same(y, other, "dataDualStep");
    cuda::launchDataDualStep(at(y), at(ax), at(axPrevious), at(b), at(sigma), sizes_[y]);
  }
  void projectedStep(Id x, Id tau, Id g, Id out) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    for (Id other : {tau, g, out}) same(x, other, "projectedStep");
    cuda::launchProjectedStep(at(x), at(tau), at(g), at(out), sizes_[out]);
  }
  void totalVariationGradient(Id x, float eps, Id field, Id gradient) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    volumeAndField(x, field, "totalVariationGradient", /*stencil=*/true);
    same(x, gradient, "totalVariationGradient");
    const float* before = before_ ? fetchRow(*before_, x, 0, before_->size_.y - 1, beforeRow_) : nullptr;
    const float* after = after_ ? fetchRow(*after_, x, 0, 0, afterRow_) : nullptr;
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    cuda::launchTotalVariationGradient(at(x), size_, eps, masked_ ? mask_.get() : nullptr, at(field), at(gradient), before, after);
  }
  // The operator's volume (the subset methods' iterate): its pending Fdk projections drawn first, as readVolume does.
  void fromOperatorVolume(Id to) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    volumeAndField(to, -1, "fromOperatorVolume");
    op_.launch();
    GLRECON_CUDA(cudaDeviceSynchronize());
    GLRECON_CUDA(cudaMemcpy(at(to), op_.volume_.get(), voxels_ * sizeof(float), cudaMemcpyDeviceToDevice));
  }
  void toOperatorVolume(Id from) override {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    volumeAndField(from, -1, "toOperatorVolume");
    op_.launch();
    GLRECON_CUDA(cudaDeviceSynchronize());
    GLRECON_CUDA(cudaMemcpy(op_.volume_.get(), at(from), voxels_ * sizeof(float), cudaMemcpyDeviceToDevice));
  }

 private:
  double sumOfPartials() {
    std::vector<double> partials(cuda::kCorrectionBlocks);
    GLRECON_CUDA(cudaMemcpy(partials.data(), partials_.get(), partials.size() * sizeof(double), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (double p : partials) sum += p;  // in order: the same bits every run
    return sum;
  }
  // A kernel reads as many items of each vector as of the first: vectors of other lengths are a caller's mix-up.
  void same(Id a, Id b, const char* what) const {
    if (sizes_.at(a) != sizes_.at(b)) throw std::logic_error(std::string("OperatorVectors::") + what + ": vectors of different lengths");
  }
  // A volume and (unless `field` is -1) a field of the operator's rows; for the stencils (`stencil`), which read across
  // a block's edge rows, the neighbours set where the block has them.
  void volumeAndField(Id volume, Id field, const char* what, bool stencil = false) const {
    if (sizes_.at(volume) != voxels_ || (field >= 0 && sizes_.at(field) != 3 * voxels_))
      throw std::logic_error(std::string("OperatorVectors::") + what + ": expected a volume" + (field >= 0 ? " and a field" : ""));
    if (stencil && ((op_.firstRow() > 0 && !before_) || (op_.firstRow() + op_.rows() < op_.grid_.size[1] && !after_)))
      throw std::logic_error(std::string("OperatorVectors::") + what + ": a block's neighbours are not set (setNeighbours)");
  }
  CudaVectors& neighbour(OperatorVectors* other) const {
    auto* vectors = dynamic_cast<CudaVectors*>(other);
    if (!vectors || vectors->size_.x != size_.x || vectors->size_.z != size_.z)
      throw std::logic_error("OperatorVectors::setNeighbours: expected cuda vectors of blocks of the same grid");
    return *vectors;
  }
  // Row `row` of `from`'s vector `id` (component `component` of a field) into the halo plane `into` (nx x nz) on this
  // device, once both devices have finished what they were given (the row is `from`'s last write's; the plane's last
  // reader is this device's); returns the plane when it is there.
  const float* fetchRow(CudaVectors& from, Id id, int component, int row, cuda::DeviceBuffer<float>& into) {
    const std::size_t plane = static_cast<std::size_t>(size_.x) * size_.z;
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    if (!into) into = cuda::DeviceBuffer<float>(plane);
    if (from.op_.device_ != op_.device_) enablePeerAccess(op_.device_, from.op_.device_);
    GLRECON_CUDA(cudaDeviceSynchronize());  // the halo's last reader is done
    GLRECON_CUDA(cudaSetDevice(from.op_.device_));
    GLRECON_CUDA(cudaDeviceSynchronize());
    cudaMemcpy3DPeerParms copy{};
    const float* source = from.at(id) + static_cast<std::size_t>(component) * from.voxels_ + static_cast<std::size_t>(row) * size_.x;
    // The row is nz runs of nx floats, one per z slice of the block (a pitch of nx x rows floats).
    copy.srcPtr = make_cudaPitchedPtr(const_cast<float*>(source), static_cast<std::size_t>(size_.x) * from.size_.y * sizeof(float), size_.x, size_.z);
    copy.srcDevice = from.op_.device_;
    copy.dstPtr = make_cudaPitchedPtr(into.get(), static_cast<std::size_t>(size_.x) * sizeof(float), size_.x, size_.z);
    copy.dstDevice = op_.device_;
    copy.extent = make_cudaExtent(static_cast<std::size_t>(size_.x) * sizeof(float), size_.z, 1);
    GLRECON_CUDA(cudaMemcpy3DPeer(&copy));
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    GLRECON_CUDA(cudaDeviceSynchronize());
    return into.get();
  }

  Id make(std::size_t n) {
    GLRECON_CUDA(cudaSetDevice(op_.device_));
    buffers_.emplace_back(n);
    GLRECON_CUDA(cudaMemset(buffers_.back().get(), 0, n * sizeof(float)));
    sizes_.push_back(n);
    return static_cast<Id>(buffers_.size() - 1);
  }
  float* at(Id id) {
    if (id < 0 || static_cast<std::size_t>(id) >= buffers_.size()) throw std::logic_error("OperatorVectors: no vector " + std::to_string(id));
    return buffers_[id].get();
  }
  CudaOperator& op_;
  std::size_t voxels_, values_;
  int3 size_;
  std::vector<cuda::DeviceBuffer<float>> buffers_;
  std::vector<std::size_t> sizes_;
  cuda::DeviceBuffer<unsigned char> mask_;
  bool masked_ = false;
  cuda::DeviceBuffer<double> partials_;
  cuda::DeviceBuffer<int> largest_;
  std::vector<std::size_t> all_;
  cuda::DeviceBuffer<float> chunk_;  // takeFrom's chunk of another device's vector
  // A block's neighbours (setNeighbours: the blocks holding the rows before and after its own) and their rows' halos.
  CudaVectors* before_ = nullptr;
  CudaVectors* after_ = nullptr;
  cuda::DeviceBuffer<float> beforeRow_, afterRow_;
};

std::unique_ptr<OperatorVectors> CudaOperator::makeVectors(int volumes, int scans) {
  GLRECON_CUDA(cudaSetDevice(device_));
  rays();
  // Where the vectors would take more than half of what is free, they stay on the host (the caller's path); a block's
  // count holds the chunk a peer's vector arrives in (takeFrom).
  const std::size_t voxels = blockVoxels(), values = geometry_.size() * static_cast<std::size_t>(geometry_.detector.nu) * geometry_.detector.nv;
  std::size_t freeBytes = 0, totalBytes = 0;
  GLRECON_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  const std::size_t chunk = options_.blockRows > 0 ? kPeerChunk : 0;
  if ((volumes * voxels + scans * values + voxels + chunk) * sizeof(float) > freeBytes / 2) return nullptr;
  return std::make_unique<CudaVectors>(*this);
}

}  // namespace

std::unique_ptr<ConeBeamOperator> makeCudaOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options) {
  return std::make_unique<CudaOperator>(geometry, grid, options);
}

}  // namespace glrecon
