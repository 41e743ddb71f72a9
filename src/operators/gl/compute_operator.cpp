// The OpenGL compute operator: Fdk back with one invocation per (x, z) pair and a run of voxels along y, the axis along
// which the detector coordinates change least (shaders/backproject.comp says why), W projections per dispatch from
// the same projection texture array the graphics path samples, accumulating into the same R32F volume texture array
// by image load/store (which, unlike one SSBO, holds a 512^3 volume on Mesa as on NVIDIA). A region of interest
// limits each column to the slices its region spans; no density-range kill. Forward and Adjoint back: the compute
// passes of gl_ray_passes.cpp. Tested against the CPU operator in tests/operators/operator_gl_test.cpp.
#include <algorithm>
#include <map>

#include "device/gl/shader.h"
#include "glrecon/errors.h"
#include "glrecon/slab.h"
#include "operators/gl/gl_operator.h"

namespace glrecon {
namespace {
// A row of 32 neighbouring x (one NVIDIA warp) by 4 slices; each invocation a run of kRun voxels along y.
constexpr int kLocalX = 32, kLocalY = 4, kRun = 8;
static_assert(kSlabGranule % kRun == 0, "slabs must start where the whole grid's runs start");
// The matrices come from a uniform block; nothing per projection stays in registers, but the shader is
// unrolled W x RUN times, so the window stays moderate.
constexpr int kComputeWindowLimit = 64;

class ComputeOperator final : public GlOperator {
 public:
  ComputeOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options)
      : GlOperator(Backend::Compute, geometry, grid, options, "compute") {
    volume_.setWindowLimit(std::min(kComputeWindowLimit, detail::uniformWindowLimit()));
  }

  ~ComputeOperator() override {
    volume_.context().makeCurrent();
    programs.clear();
    zRange.reset();
  }

  std::string description() const override { return "compute on " + device().renderer + ", " + volume_.windowDescription(); }

  void moveBlock(int firstRow, int rows) override {
    GlOperator::moveBlock(firstRow, rows);
    zRange.reset();  // a region belongs to its block
    regionMask.clear();
    updatesPerPass = 0;
  }

  void setRegion(const RegionOfInterest& roi) override;
  std::vector<std::uint8_t> activeMask() override { return regionMask; }
  double culledFraction() const override;

 protected:
  void resetCounters() override { updatesDone = updatesTotal = 0; }

 private:
  std::map<std::pair<int, bool>, gl::Program> programs;  // by window and Y_INVARIANT
  gl::Texture zRange;  // per column: the slices a region spans
  std::vector<std::uint8_t> regionMask;
  double updatesPerPass = 0, updatesDone = 0, updatesTotal = 0;


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
    for (std::size_t view : volume_.pending) {
      const ProjectionMatrix m = volume_.geometry.matrix(view, volume_.grid);
      if (static_cast<float>(m.m[0][1]) != 0.0f || static_cast<float>(m.m[2][1]) != 0.0f) return false;
    }
    return true;
  }

  void drawWindow() override {
    const VolumeGrid& grid = grid_;
    gl::Program& p = program(static_cast<int>(volume_.pending.size()), yInvariant());
    volume_.uploadMatrices();
    glUseProgram(p.id());
    // The rows held (a slab's, or the whole grid's); blockFirst is their first global row.
    const int ny = volume_.rows;
    glUniform3i(glGetUniformLocation(p.id(), "volumeSize"), grid.size[0], ny, grid.size[2]);
    glUniform1i(glGetUniformLocation(p.id(), "slabFirst"), volume_.blockFirst);
    glUniform2f(glGetUniformLocation(p.id(), "detectorSize"), static_cast<float>(volume_.geometry.detector.nu),
                static_cast<float>(volume_.geometry.detector.nv));
    glUniform1i(glGetUniformLocation(p.id(), "useRange"), zRange ? 1 : 0);
    glUniform1i(glGetUniformLocation(p.id(), "layerBase"), volume_.layerBase);
    glBindTextureUnit(0, volume_.projections.id());
    if (zRange) glBindTextureUnit(1, zRange.id());
    glBindImageTexture(0, volume_.volume.id(), 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
    GLRECON_CHECK_GL(glDispatchCompute((grid.size[0] + kLocalX - 1) / kLocalX, (grid.size[2] + kLocalY - 1) / kLocalY,
                                       (ny + kRun - 1) / kRun));
    // The next dispatch reads what this one wrote.
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    updatesTotal += static_cast<double>(volume_.heldVoxels());
    updatesDone += zRange ? updatesPerPass : static_cast<double>(volume_.heldVoxels());
  }
};

void ComputeOperator::setRegion(const RegionOfInterest& roi) {
  const VolumeGrid held = volume_.heldGrid();  // in slab mode the slab's grid
  if (roi.size != held.size) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  volume_.flush([&] { drawWindow(); });
  const int nx = held.size[0], ny = held.size[1];
  std::vector<GLint> ranges;
  updatesPerPass = 0;
  for (const auto& [first, last] : columnZRanges(roi)) {
    ranges.push_back(first);
    ranges.push_back(last);
    updatesPerPass += last - first;
  }
  zRange = gl::createTexture(GL_TEXTURE_2D);
  glTextureStorage2D(zRange.id(), 1, GL_RG32I, nx, ny);
  // Integer textures must not filter; the default (mipmapped) filter would leave it incomplete, reading 0.
  glTextureParameteri(zRange.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTextureParameteri(zRange.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTextureSubImage2D(zRange.id(), 0, 0, 0, nx, ny, GL_RG_INTEGER, GL_INT, ranges.data());
  regionMask = roi.mask;
  gl::checkError("setting the compute region");
}

double ComputeOperator::culledFraction() const {
  return updatesTotal > 0 ? 1.0 - updatesDone / updatesTotal : 0.0;
}

}  // namespace

std::unique_ptr<ConeBeamOperator> makeComputeOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options) {
  return std::make_unique<ComputeOperator>(geometry, grid, options);
}

}  // namespace glrecon
