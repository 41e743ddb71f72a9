#include "glrecon/compute_backprojector.h"

#include <algorithm>
#include <map>

#include "gl_volume_backend.h"
#include "glrecon/errors.h"
#include "device/gl/shader.h"
#include "glrecon/slab.h"

namespace glrecon {
namespace {
// A row of 32 neighbouring x (one NVIDIA warp) by 4 slices; each invocation a run of kRun voxels along y.
constexpr int kLocalX = 32, kLocalY = 4, kRun = 8;
static_assert(kSlabGranule % kRun == 0, "slabs must start where the whole grid's runs start");
// The matrices come from a uniform block; nothing per projection stays in registers, but the shader is
// unrolled W x RUN times, so the window stays moderate.
constexpr int kComputeWindowLimit = 64;
}  // namespace

struct ComputeBackprojector::Impl {
  detail::GlVolumeBackend base;
  std::map<std::pair<int, bool>, gl::Program> programs;  // by window and Y_INVARIANT
  gl::Texture zRange;  // per column: the slices a region spans
  std::vector<std::uint8_t> regionMask;
  double updatesPerPass = 0, updatesDone = 0, updatesTotal = 0;

  Impl(gl::Context* borrowed, const Geometry& g, const VolumeGrid& v, const BackprojectorOptions& o)
      : base(borrowed, g, v, o, "compute backprojector") {}

  gl::Program& program(int w, bool yInvariant) {
    auto it = programs.find({w, yInvariant});
    if (it != programs.end()) return it->second;
    gl::Program p = gl::buildProgram({{GL_COMPUTE_SHADER, "backproject.comp"}},
                                     {"#define W " + std::to_string(w), "#define LX " + std::to_string(kLocalX),
                                      "#define LY " + std::to_string(kLocalY), "#define RUN " + std::to_string(kRun),
                                      std::string("#define Y_INVARIANT ") + (yInvariant ? "1" : "0")});
    return programs.emplace(std::pair{w, yInvariant}, std::move(p)).first->second;
  }

  // u and w constant along y in every projection of the window, in float as the shader sees the matrices.
  bool yInvariant() const {
    for (std::size_t view : base.pending) {
      const ProjectionMatrix m = base.geometry.matrix(view, base.grid);
      if (static_cast<float>(m.m[0][1]) != 0.0f || static_cast<float>(m.m[2][1]) != 0.0f) return false;
    }
    return true;
  }

  void dispatch() {
    const VolumeGrid& grid = base.grid;
    gl::Program& p = program(static_cast<int>(base.pending.size()), yInvariant());
    base.uploadMatrices();
    glUseProgram(p.id());
    // The rows held (a slab's, or the whole grid's); slabFirst is their first global row.
    const int ny = base.rows;
    glUniform3i(glGetUniformLocation(p.id(), "volumeSize"), grid.size[0], ny, grid.size[2]);
    glUniform1i(glGetUniformLocation(p.id(), "slabFirst"), base.slabFirst);
    glUniform2f(glGetUniformLocation(p.id(), "detectorSize"), static_cast<float>(base.geometry.detector.nu),
                static_cast<float>(base.geometry.detector.nv));
    glUniform1i(glGetUniformLocation(p.id(), "useRange"), zRange ? 1 : 0);
    glUniform1i(glGetUniformLocation(p.id(), "layerBase"), base.layerBase);
    glBindTextureUnit(0, base.projections.id());
    if (zRange) glBindTextureUnit(1, zRange.id());
    glBindImageTexture(0, base.volume.id(), 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
    GLRECON_CHECK_GL(glDispatchCompute((grid.size[0] + kLocalX - 1) / kLocalX, (grid.size[2] + kLocalY - 1) / kLocalY,
                                       (ny + kRun - 1) / kRun));
    // The next dispatch reads what this one wrote.
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    updatesTotal += static_cast<double>(base.heldVoxels());
    updatesDone += zRange ? updatesPerPass : static_cast<double>(base.heldVoxels());
  }
};

ComputeBackprojector::ComputeBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options)
    : impl_(std::make_unique<Impl>(nullptr, geometry, grid, options)) {
  impl_->base.setWindowLimit(std::min(kComputeWindowLimit, detail::uniformWindowLimit()));
}

ComputeBackprojector::ComputeBackprojector(gl::Context& context, const Geometry& geometry, const VolumeGrid& grid,
                                           const BackprojectorOptions& options)
    : impl_(std::make_unique<Impl>(&context, geometry, grid, options)) {
  impl_->base.setWindowLimit(std::min(kComputeWindowLimit, detail::uniformWindowLimit()));
}

unsigned ComputeBackprojector::volumeTexture() const { return impl_->base.volume.id(); }

ComputeBackprojector::~ComputeBackprojector() {
  if (impl_) {
    impl_->base.context().makeCurrent();
    impl_->programs.clear();
    impl_->zRange.reset();
  }
}

std::string ComputeBackprojector::description() const {
  return "compute on " + impl_->base.context().info().renderer + ", " + impl_->base.windowDescription();
}
const gl::DeviceInfo& ComputeBackprojector::device() const { return impl_->base.context().info(); }
int ComputeBackprojector::maxWindow() const { return impl_->base.maxWindow; }
int ComputeBackprojector::window() const { return impl_->base.window; }

void ComputeBackprojector::backproject(const float* projections, const std::size_t* views, std::size_t count) {
  impl_->base.add(projections, views, count, [this] { impl_->dispatch(); });
}

Image ComputeBackprojector::volume() {
  impl_->base.flush([this] { impl_->dispatch(); });
  return impl_->base.readVolume();
}

void ComputeBackprojector::readVolume(float* destination) {
  impl_->base.flush([this] { impl_->dispatch(); });
  impl_->base.readVolumeInto(destination);
}

void ComputeBackprojector::reset() {
  impl_->base.reset();
  impl_->updatesDone = impl_->updatesTotal = 0;
}

void ComputeBackprojector::setSlab(int firstRow, int rows) {
  Impl& d = *impl_;
  d.base.setSlab(firstRow, rows);
  d.zRange.reset();  // a region belongs to its slab
  d.regionMask.clear();
  d.updatesPerPass = 0;
  d.updatesDone = d.updatesTotal = 0;
}

double ComputeBackprojector::uploadedBytes() const { return impl_->base.uploaded; }

bool ComputeBackprojector::filterOnDevice(const DeviceFilter* filter, bool force) { return impl_->base.filterOnDevice(filter, force); }
bool ComputeBackprojector::filterProjections(const DeviceFilter& filter, const float* raw, const std::size_t* views, std::size_t count, float* filtered,
                           bool force) {
  return impl_->base.filterProjections(filter, raw, views, count, filtered, force);
}

void ComputeBackprojector::setRegion(const RegionOfInterest& roi) {
  Impl& d = *impl_;
  const VolumeGrid held = d.base.heldGrid();  // in slab mode the slab's grid
  if (roi.size != held.size) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  d.base.flush([&] { d.dispatch(); });
  const int nx = held.size[0], ny = held.size[1];
  std::vector<GLint> ranges;
  d.updatesPerPass = 0;
  for (const auto& [first, last] : columnZRanges(roi)) {
    ranges.push_back(first);
    ranges.push_back(last);
    d.updatesPerPass += last - first;
  }
  d.zRange = gl::createTexture(GL_TEXTURE_2D);
  glTextureStorage2D(d.zRange.id(), 1, GL_RG32I, nx, ny);
  // Integer textures must not filter; the default (mipmapped) filter would leave it incomplete, reading 0.
  glTextureParameteri(d.zRange.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTextureParameteri(d.zRange.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTextureSubImage2D(d.zRange.id(), 0, 0, 0, nx, ny, GL_RG_INTEGER, GL_INT, ranges.data());
  d.regionMask = roi.mask;
  gl::checkError("setting the compute region");
}

void ComputeBackprojector::killOutsideRange(double, double, double) {
  throw UsageError(field("densityRange") + ": expected " + field("backend") + " graphics or cpu (the compute backend has no per-voxel kill)");
}

std::vector<std::uint8_t> ComputeBackprojector::activeMask() { return impl_->regionMask; }

double ComputeBackprojector::culledFraction() const {
  return impl_->updatesTotal > 0 ? 1.0 - impl_->updatesDone / impl_->updatesTotal : 0.0;
}

}  // namespace glrecon

namespace glrecon {
BackprojectorTimings ComputeBackprojector::timings() const { return impl_->base.profile; }
}  // namespace glrecon
