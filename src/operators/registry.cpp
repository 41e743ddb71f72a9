// The backend registry: what each backend is and can do, what it costs on its device, and the one factory. Backends
// appear here as Backend values; their names serve descriptions and messages only (front ends parse names).
#include <algorithm>
#include <chrono>
#include <numeric>

#include "device/cuda/device.h"
#include "device/gl/context.h"
#include "glrecon/errors.h"
#include "glrecon/limits.h"
#include "glrecon/operator.h"
#include "glrecon/validate.h"
#include "operators/cpu/cpu_operator.h"
#include "operators/projector_views.h"

namespace glrecon {

// The makers of the device backends, each in its own file.
std::unique_ptr<ConeBeamOperator> makeGraphicsOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options,
                                                       bool fragmentMapping);
std::unique_ptr<ConeBeamOperator> makeComputeOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options);
#ifdef GLRECON_HAVE_CUDA
std::unique_ptr<ConeBeamOperator> makeCudaOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options);
#endif

const std::vector<BackendInfo>& backendRegistry() {
  // backend, name, built, usesDevice, cullsRegion, densityKill, filtersOnDevice, defaultWindow (0: measured)
  static const std::vector<BackendInfo> registry = {
      {Backend::Cpu, "cpu", true, false, true, true, false, 0},
      {Backend::Graphics, "graphics", true, true, true, true, true, 0},
      {Backend::GraphicsMp, "graphics-mp", true, true, true, true, true, 0},
      {Backend::Compute, "compute", true, true, true, false, true, 0},
      {Backend::Cuda, "cuda", cuda::built(), true, true, false, true, 32},
  };
  return registry;
}

const BackendInfo& backendInfo(Backend backend) { return backendRegistry()[static_cast<std::size_t>(backend)]; }

std::vector<Backend> builtBackends() {
  std::vector<Backend> built;
  for (const BackendInfo& b : backendRegistry())
    if (b.built) built.push_back(b.backend);
  return built;
}

std::optional<Backend> backendNamed(const std::string& name) {
  for (const BackendInfo& b : backendRegistry())
    if (name == b.name) return b.backend;
  return std::nullopt;
}

int deviceCount(Backend backend) {
  if (backend == Backend::Cuda) return cuda::deviceCount();
  if (backend == Backend::Cpu) return 1;
  return static_cast<int>(gl::Context::listDevices().size());
}

std::uint64_t deviceMemoryAvailable(Backend backend, int device) {
  if (backend == Backend::Cuda) return cuda::freeMemory(device);
  if (backend == Backend::Cpu) return UINT64_MAX;
  auto context = gl::Context::headless(device);
  const long long free = gl::freeDeviceMemory();
  return free >= 0 ? static_cast<std::uint64_t>(free) : UINT64_MAX;
}

SlabCost operatorCost(Backend backend, const Geometry& geometry, const VolumeGrid& grid, int window, bool region) {
  const std::uint64_t nx = grid.size[0], nz = grid.size[2];
  const std::uint64_t projection = static_cast<std::uint64_t>(geometry.detector.nu) * geometry.detector.nv * 4;
  const std::uint64_t windows = static_cast<std::uint64_t>(std::max(1, window));
  SlabCost cost;
  cost.bytesPerRow = nx * nz * 4;  // the float volume
  cost.volumeBytesPerRow = cost.bytesPerRow;
  // The cpu backend uploads nothing: its "device" is host memory, where the block is all it adds.
  if (backend == Backend::Cpu) return cost;
  cost.fixedBytes = 2 * windows * projection;  // the projection window, two halves
  // Room for the filter on the device: two windows of raw projections (one on GL) and its tables (the cosine weights,
  // a row of weights per view, the taps).
  const std::uint64_t rawWindows = backend == Backend::Cuda ? 2 : 1;
  cost.fixedBytes += rawWindows * windows * projection +
                     (static_cast<std::uint64_t>(geometry.detector.nu) * (geometry.detector.nv + geometry.size() + 1)) * 4;
  if (backend == Backend::Graphics || backend == Backend::GraphicsMp) {
    // The window's upload buffer (two halves) and the readback buffer (a chunk of slices) beside the texture.
    cost.fixedBytes += 2 * windows * projection;
    if (region) cost.bytesPerRow += nx * nz * 4;  // a depth-stencil texture array (24+8 bits) beside the volume
  } else {
    if (backend == Backend::Compute) cost.fixedBytes += 2 * windows * projection;
    if (region) cost.bytesPerRow += nx * 8;  // per (x, y) column its z range
  }
  return cost;
}

std::unique_ptr<ConeBeamOperator> makeOperator(Backend backend, const Geometry& geometry, const VolumeGrid& grid,
                                               const OperatorOptions& options) {
  const BackendInfo& info = backendInfo(backend);
  if (!info.built)
    throw UsageError(field("backend") + " " + info.name + ": this build has no " + info.name +
                     " backend (CMake found no CUDA compiler; build with nvcc on the PATH)");
  // What every operator needs, checked once here: a valid grid and geometry, the volume in front of every source,
  // rays of non-zero length (forward), a positive step.
  checkValue("threads", options.threads);
  checkValue("gpu", options.device);
  detail::checkProjectorGeometry(geometry, grid, std::string(info.name) + " operator");
  detail::projectorStep(options.step, grid);
  if (options.pair == ProjectorPair::Matched && backend == Backend::GraphicsMp)
    throw UsageError(field("projector") + " matched: expected cpu, graphics, compute or cuda, found " + std::string(info.name) +
                     " (an FDK backprojector only)");
  if (options.pair == ProjectorPair::DistanceDriven) {
    if (backend == Backend::GraphicsMp)
      throw UsageError(field("projector") + " distance-driven: expected cpu, graphics, compute or cuda, found " + std::string(info.name) +
                       " (an FDK backprojector only)");
    detail::checkDistanceDrivenGeometry(geometry, grid, options.step, std::string(info.name) + " operator");
  }
  if (backend == Backend::Cpu) {
    // Its volume and the update a back projection accumulates, a float each per voxel of its block, checked before
    // they are allocated (a huge grid from Python gave std::bad_alloc or the OOM killer).
    const int rows = options.blockRows > 0 ? std::min(options.blockRows, grid.size[1]) : grid.size[1];
    checkHostMemory("cpu operator", "its volume and update of " + std::to_string(grid.size[0]) + " x " + std::to_string(rows) + " x " +
                                        std::to_string(grid.size[2]) + " voxels",
                    std::uint64_t{8} * static_cast<std::uint64_t>(grid.size[0]) * static_cast<std::uint64_t>(rows) *
                        static_cast<std::uint64_t>(grid.size[2]));
  }
  switch (backend) {
    case Backend::Cpu: return std::make_unique<CpuOperator>(geometry, grid, options);
    case Backend::Graphics: return makeGraphicsOperator(geometry, grid, options, false);
    case Backend::GraphicsMp: return makeGraphicsOperator(geometry, grid, options, true);
    case Backend::Compute: return makeComputeOperator(geometry, grid, options);
    case Backend::Cuda:
#ifdef GLRECON_HAVE_CUDA
      return makeCudaOperator(geometry, grid, options);
#else
      break;
#endif
  }
  throw std::logic_error("makeOperator: a backend the registry does not know");
}

VolumeProjection projectVolume(Backend backend, const Geometry& geometry, const VolumeGrid& grid, const float* volume,
                               const OperatorOptions& options) {
  checkScanAndGrid(geometry, grid, "project");
  checkVolumeToProject(volume, grid, "volume");
  const DetectorLayout& layout = geometry.detector;
  const std::uint64_t pixels = static_cast<std::uint64_t>(layout.nu) * layout.nv * geometry.size();
  // The projections, and the cpu operator's copy of the volume (the GPU operators keep theirs on the device).
  checkHostMemory("project", std::to_string(geometry.size()) + " projections of " + std::to_string(layout.nu) + " x " + std::to_string(layout.nv),
                  4 * pixels + (backend == Backend::Cpu ? 4 * static_cast<std::uint64_t>(grid.voxelCount()) : 0));
  auto op = makeOperator(backend, geometry, grid, options);
  VolumeProjection out;
  out.projections = Image({layout.nu, layout.nv, static_cast<int>(geometry.size())}, {layout.spacingU, layout.spacingV, 1.0},
                          {layout.originU, layout.originV, 0.0});
  std::vector<std::size_t> views(geometry.size());
  std::iota(views.begin(), views.end(), std::size_t{0});
  const auto start = std::chrono::steady_clock::now();
  op->setVolume(volume);
  op->forward(views.data(), views.size(), out.projections.data.data());
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.description = op->description();
  out.step = op->step();
  // Guaranteed finite by the checks above; checked anyway, since a projection file of garbage would pass silently into
  // every later reconstruction.
  checkFiniteValues(out.projections, "project", "projection", kMaxProjectionValue);
  return out;
}

}  // namespace glrecon
