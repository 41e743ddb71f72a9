// The OpenGL graphics-pipeline operator (Xu & Mueller 2007, AG-GPU; MP-GPU with fragmentMapping):
// - the volume is an R32F 2D texture array, one layer per z slice, that stays on the GPU;
// - a window of W filtered projections sits in an R32F texture array (bilinear, border 0);
// - per window, every slice's proxy quad is drawn face-on at slice resolution (all slices in one instanced draw,
//   gl_Layer choosing the slice); the vertex shader maps its corners into the W detectors, the rasterizer
//   interpolates, the fragment shader divides, samples, weights by 1/w^2 and sums, and additive float blending
//   accumulates into the slice. MP-GPU computes the detector coordinates in the fragment shader instead.
// W runs from 1 to the largest the varyings allow (floor(GL_MAX_VARYING_COMPONENTS / 3)); W = 0 searches over a few
// sizes during the first passes and keeps the fastest, as the paper proposes. Regions go into the stencil (early
// fragment kill): per slice, or the paper's 8 sub-stacks sharing one 8-bit stencil. Forward and Adjoint back: the
// raster passes of gl_ray_passes.cpp. Tested against the CPU operator in tests/operators/operator_gl_test.cpp.
#include <algorithm>
#include <map>

#include "device/gl/shader.h"
#include "glrecon/errors.h"
#include "glrecon/slab.h"
#include "operators/gl/gl_operator.h"

namespace glrecon {
namespace {

class GraphicsOperator final : public GlOperator {
 public:
  GraphicsOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options, bool mp)
      : GlOperator(mp ? Backend::GraphicsMp : Backend::Graphics, geometry, grid, options, mp ? "graphics-mp" : "graphics"),
        fragmentMapping(mp) {
    layered = GLEW_ARB_shader_viewport_layer_array != 0;
    framebuffer = gl::createFramebuffer();
    if (layered)
      glNamedFramebufferTexture(framebuffer.id(), GL_COLOR_ATTACHMENT0, volume_.volume.id(), 0);
    else
      glNamedFramebufferTextureLayer(framebuffer.id(), GL_COLOR_ATTACHMENT0, volume_.volume.id(), 0, 0);
    glNamedFramebufferDrawBuffer(framebuffer.id(), GL_COLOR_ATTACHMENT0);
    const GLenum status = glCheckNamedFramebufferStatus(framebuffer.id(), GL_FRAMEBUFFER);
    if (status != GL_FRAMEBUFFER_COMPLETE)
      throw gl::GlError(volume_.where() + ": the volume texture cannot be rendered to (framebuffer status " + std::to_string(status) + ")");
    quad = gl::createVertexArray();  // the quad's corners come from gl_VertexID: no vertex buffer
    if (slabImages()) {
      // The attachment-less framebuffer spans the whole slice (only its size counts, no memory).
      const GLint maxWidth = gl::integer(GL_MAX_FRAMEBUFFER_WIDTH), maxHeight = gl::integer(GL_MAX_FRAMEBUFFER_HEIGHT);
      if (grid_.size[0] > maxWidth)
        throwInputError(volume_.where(), "volume size x", "at most " + std::to_string(maxWidth) + " (this GPU's framebuffer limit, slabs)",
                        std::to_string(grid_.size[0]));
      if (grid_.size[1] > maxHeight)
        throwInputError(volume_.where(), "volume size y", "at most " + std::to_string(maxHeight) + " (this GPU's framebuffer limit, slabs)",
                        std::to_string(grid_.size[1]));
      slabFramebuffer = gl::createFramebuffer();
      glNamedFramebufferParameteri(slabFramebuffer.id(), GL_FRAMEBUFFER_DEFAULT_WIDTH, grid_.size[0]);
      glNamedFramebufferParameteri(slabFramebuffer.id(), GL_FRAMEBUFFER_DEFAULT_HEIGHT, grid_.size[1]);
      const GLenum slabStatus = glCheckNamedFramebufferStatus(slabFramebuffer.id(), GL_FRAMEBUFFER);
      if (slabStatus != GL_FRAMEBUFFER_COMPLETE)
        throw gl::GlError(volume_.where() + ": cannot make the slab framebuffer without attachments (status " + std::to_string(slabStatus) +
                          ")");
    }

    // Largest window: AG-GPU passes 3 floats per projection as varyings; both read 3 vec4 uniform rows each.
    const int varyingComponents =
        std::min({gl::integer(GL_MAX_VARYING_COMPONENTS), gl::integer(GL_MAX_VERTEX_OUTPUT_COMPONENTS),
                  gl::integer(GL_MAX_FRAGMENT_INPUT_COMPONENTS)});
    int limit = fragmentMapping ? std::min(64, detail::uniformWindowLimit()) : std::min(varyingComponents / 3, detail::uniformWindowLimit());
    limit = std::min(limit, static_cast<int>(volume_.geometry.size()));
    // Some drivers pack varyings less tightly than the component count promises: step down until it links.
    if (!fragmentMapping)
      for (;;) {
        try {
          program(limit);
          break;
        } catch (const gl::ShaderError&) {
          if (limit <= 1) throw;
          --limit;
        }
      }
    volume_.setWindowLimit(limit);
  }

  ~GraphicsOperator() override {
    // GL objects go while their context is current (the bases' destructors handle their own).
    volume_.context().makeCurrent();
    programs.clear();
    killProgram.reset();
    stencil.reset();
    regionMask.reset();
    slabFramebuffer.reset();
    framebuffer.reset();
    quad.reset();
  }

  std::string description() const override {
    return std::string(fragmentMapping ? "graphics-mp" : "graphics") + " on " + device().renderer + ", " + volume_.windowDescription();
  }

  void reset() override {
    // The kill rewrote the stencil from the volume of this scan: it cannot carry over to the next one.
    if (killed) throw UsageError("reset: not after a density-range kill (make a new operator)");
    GlOperator::reset();
  }

  void moveBlock(int firstRow, int rows) override {
    if (killed) throw UsageError("moveBlock: not after a density-range kill");
    GlOperator::moveBlock(firstRow, rows);
    clearRegion();
    gl::checkError("starting a block");
  }

  void setRegion(const RegionOfInterest& roi) override;
  void killOutsideRange(double low, double high, double scale) override;
  std::vector<std::uint8_t> activeMask() override { return activeHost; }
  double culledFraction() const override;

 protected:
  void resetCounters() override { fragmentsPassed = fragmentsTotal = 0; }

 private:
  const bool fragmentMapping;
  gl::Framebuffer framebuffer;
  gl::VertexArray quad;
  std::map<int, gl::Program> programs;  // by window size
  bool layered = false;                 // all slices in one draw (gl_Layer); false: slice by slice
  // Region of interest in the stencil (see the header): per-slice masks or the paper's 8 sub-stacks.
  gl::Texture stencil;
  bool regionSet = false;
  bool substacks = false;
  std::vector<std::uint8_t> activeHost;  // the stencil's content per voxel, mirrored on the host
  double fragmentsPerPass = 0;           // fragments that pass the stencil in one window's draw
  double fragmentsPassed = 0, fragmentsTotal = 0;
  gl::Program killProgram;
  bool killed = false;
  // AG-GPU slabs (see slabImages()): a framebuffer without attachments of the whole slice's size, and the
  // region as a per-voxel mask texture (R8UI array, the slab's rows).
  gl::Framebuffer slabFramebuffer;
  gl::Texture regionMask;


  // AG-GPU in slab mode rasterizes each slice exactly as without slabs: the same quad in the same viewport of
  // the whole slice, into a framebuffer without attachments (so window coordinates are the whole grid's: the
  // rasterizer's attribute interpolation is not bitwise translation-invariant, llvmpipe evaluates it from the
  // framebuffer's origin), scissored to the slab's rows; the fragment shader adds its sum into the slab's
  // volume by image load/store at the local row, the same float addition the additive blending does. Translating
  // the viewport instead (the slab's rows in a slab-tall framebuffer) changed the rounding of the interpolated
  // coordinates: on llvmpipe most voxels of slabs after the first differed, by up to 7e-5 in sums of order 1. MP-GPU computes from the fragment's row plus blockFirst, exact, and keeps its framebuffer.
  bool slabImages() const { return volume_.blockCapacity > 0 && !fragmentMapping; }

  gl::Program& program(int w) {
    auto it = programs.find(w);
    if (it != programs.end()) return it->second;
    const bool slab = slabImages();
    std::vector<std::string> defines = {"#define W " + std::to_string(w),
                                        "#define PACKED " + std::to_string((3 * w + (slab ? 1 : 0) + 3) / 4)};
    if (slab) defines.push_back("#define SLAB 1");
    else if (layered) defines.push_back("#define LAYERED 1");
    gl::Program p = fragmentMapping
                        ? gl::buildProgram({{GL_VERTEX_SHADER, "backproject_mp.vert"}, {GL_FRAGMENT_SHADER, "backproject_mp.frag"}}, defines)
                        : gl::buildProgram({{GL_VERTEX_SHADER, "backproject_ag.vert"}, {GL_FRAGMENT_SHADER, "backproject_ag.frag"}}, defines);
    return programs.emplace(w, std::move(p)).first->second;
  }

  // Slices are split into 8 consecutive sub-stacks, one per stencil bit.
  int substackOf(int k) const { return static_cast<int>(static_cast<long long>(k) * 8 / grid_.size[2]); }

  // AG-GPU slab mode (slabImages()): one instanced draw of every slice's whole quad, scissored to the slab.
  void drawSlabImages(gl::Program& p) {
    glBindFramebuffer(GL_FRAMEBUFFER, slabFramebuffer.id());
    glViewport(0, 0, grid_.size[0], grid_.size[1]);
    glEnable(GL_SCISSOR_TEST);
    glScissor(0, volume_.blockFirst, grid_.size[0], volume_.rows);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glDisable(GL_STENCIL_TEST);
    glDisable(GL_BLEND);
    glUniform1i(glGetUniformLocation(p.id(), "slabFirst"), volume_.blockFirst);
    glUniform1i(glGetUniformLocation(p.id(), "useRegion"), regionSet ? 1 : 0);
    glUniform1i(glGetUniformLocation(p.id(), "firstSlice"), 0);
    glBindImageTexture(0, volume_.volume.id(), 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
    if (regionSet) glBindTextureUnit(2, regionMask.id());
    fragmentsTotal += static_cast<double>(volume_.heldVoxels());
    fragmentsPassed += regionSet ? fragmentsPerPass : static_cast<double>(volume_.heldVoxels());
    glBindVertexArray(quad.id());
    GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, grid_.size[2]));
    glDisable(GL_SCISSOR_TEST);
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);  // the next window reads what this one stored (readback and
                                                          // clears bring their own barriers)
  }

  // One window: every slice's proxy quad, additive blending into the volume.
  void drawWindow() override {
    const int w = static_cast<int>(volume_.pending.size());
    gl::Program& p = program(w);
    volume_.uploadMatrices();
    glUseProgram(p.id());
    glUniform2i(glGetUniformLocation(p.id(), "sliceSize"), grid_.size[0], grid_.size[1]);
    glUniform2f(glGetUniformLocation(p.id(), "detectorSize"), static_cast<float>(volume_.geometry.detector.nu),
                static_cast<float>(volume_.geometry.detector.nv));
    glUniform1i(glGetUniformLocation(p.id(), "layerBase"), volume_.layerBase);
    const GLint firstSlice = glGetUniformLocation(p.id(), "firstSlice");
    glBindTextureUnit(0, volume_.projections.id());
    if (slabImages()) return drawSlabImages(p);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer.id());
    if (fragmentMapping) glUniform1i(glGetUniformLocation(p.id(), "slabFirst"), volume_.blockFirst);  // MP: global row = local + blockFirst
    glViewport(0, 0, grid_.size[0], volume_.rows);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    if (regionSet) {
      glEnable(GL_STENCIL_TEST);
      glStencilMask(0);
      glStencilOp(GL_KEEP, GL_KEEP, GL_KEEP);
      glStencilFunc(GL_EQUAL, 1, 0xFF);  // per-slice masks hold 1 inside; sub-stacks set their bit below
    } else {
      glDisable(GL_STENCIL_TEST);
    }
    fragmentsTotal += static_cast<double>(volume_.heldVoxels());
    fragmentsPassed += regionSet ? fragmentsPerPass : static_cast<double>(volume_.heldVoxels());
    glEnable(GL_BLEND);
    glBlendEquation(GL_FUNC_ADD);
    glBlendFunc(GL_ONE, GL_ONE);
    glBindVertexArray(quad.id());
    if (layered && !substacks) {
      glUniform1i(firstSlice, 0);
      GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, grid_.size[2]));
    } else {
      for (int k = 0; k < grid_.size[2]; ++k) {
        glNamedFramebufferTextureLayer(framebuffer.id(), GL_COLOR_ATTACHMENT0, volume_.volume.id(), 0, k);
        if (substacks) {
          const GLuint bit = 1u << substackOf(k);
          glStencilFunc(GL_EQUAL, static_cast<GLint>(bit), bit);
        }
        glUniform1i(firstSlice, k);
        GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, 1));
      }
    }
    glDisable(GL_BLEND);
    glDisable(GL_STENCIL_TEST);
  }

  // Per-slice stencil: a stencil texture array beside the volume (as many rows), attached layered; the mask
  // covers the rows held now (a slab's, or the grid's).
  void uploadSliceStencil(const std::vector<std::uint8_t>& mask) {
    if (!stencil) {
      stencil = gl::createTexture(GL_TEXTURE_2D_ARRAY);
      glTextureStorage3D(stencil.id(), 1, GL_STENCIL_INDEX8, grid_.size[0], volume_.allocatedRows, grid_.size[2]);
      glNamedFramebufferTexture(framebuffer.id(), GL_STENCIL_ATTACHMENT, stencil.id(), 0);
    }
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTextureSubImage3D(stencil.id(), 0, 0, 0, 0, grid_.size[0], volume_.rows, grid_.size[2], GL_STENCIL_INDEX, GL_UNSIGNED_BYTE,
                        mask.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    activeHost = mask;
    fragmentsPerPass = static_cast<double>(std::count(mask.begin(), mask.end(), std::uint8_t{1}));
  }

  // Back to no region (a new slab): stencil test off; the sub-stack scheme's 2D stencil goes and the volume
  // is attached layered again. The per-slice stencil texture stays allocated for the next region.
  void clearRegion() {
    if (substacks) {
      glNamedFramebufferTexture(framebuffer.id(), GL_STENCIL_ATTACHMENT, 0, 0);
      stencil.reset();
      if (layered) glNamedFramebufferTexture(framebuffer.id(), GL_COLOR_ATTACHMENT0, volume_.volume.id(), 0);
      substacks = false;
    }
    regionSet = false;
    activeHost.clear();
    fragmentsPerPass = 0;
  }
};

void GraphicsOperator::setRegion(const RegionOfInterest& roi) {
  volume_.context().makeCurrent();
  // In slab mode the region is on the slab's grid (slabRegion).
  if (roi.size != volume_.heldGrid().size) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  volume_.flush([&] { drawWindow(); });  // projections already uploaded belong to the unrestricted part
  substacks = volume_.options.substackStencil || !layered;
  if (slabImages()) {
    // AG-GPU slab: a per-voxel mask texture, tested first in the fragment shader. With substackStencil it
    // holds what the sub-stack stencil lets through (the union of a sub-stack's slices per column), so the slab
    // updates exactly the voxels the one-block reconstruction does.
    const int nx = grid_.size[0], ny = volume_.rows, nz = grid_.size[2];
    const std::size_t slice = static_cast<std::size_t>(nx) * ny;
    std::vector<std::uint8_t> mask = roi.mask;
    if (substacks) {
      std::vector<std::uint8_t> bits(slice, 0);
      for (int k = 0; k < nz; ++k)
        for (std::size_t i = 0; i < slice; ++i)
          if (roi.mask[k * slice + i]) bits[i] |= static_cast<std::uint8_t>(1u << substackOf(k));
      for (int k = 0; k < nz; ++k)
        for (std::size_t i = 0; i < slice; ++i) mask[k * slice + i] = (bits[i] >> substackOf(k)) & 1u;
    }
    if (!regionMask) {
      regionMask = gl::createTexture(GL_TEXTURE_2D_ARRAY);
      glTextureStorage3D(regionMask.id(), 1, GL_R8UI, nx, volume_.allocatedRows, nz);
      glTextureParameteri(regionMask.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
      glTextureParameteri(regionMask.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    }
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTextureSubImage3D(regionMask.id(), 0, 0, 0, 0, nx, ny, nz, GL_RED_INTEGER, GL_UNSIGNED_BYTE, mask.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    substacks = false;  // nothing to undo in the framebuffers
    activeHost = roi.mask;
    fragmentsPerPass = static_cast<double>(std::count(mask.begin(), mask.end(), std::uint8_t{1}));
    regionSet = true;
    gl::checkError("setting the slab's region");
    return;
  }
  if (!substacks) {
    uploadSliceStencil(roi.mask);
  } else {
    // The paper's scheme: one 2D 8-bit stencil shared by all slice framebuffers; bit s holds the union of
    // the masks of sub-stack s's slices, so a slice is drawn where any slice of its sub-stack is inside.
    const int nx = grid_.size[0], ny = volume_.rows, nz = grid_.size[2];
    std::vector<std::uint8_t> bits(static_cast<std::size_t>(nx) * ny, 0);
    for (int k = 0; k < nz; ++k)
      for (std::size_t i = 0; i < bits.size(); ++i)
        if (roi.mask[static_cast<std::size_t>(k) * bits.size() + i]) bits[i] |= static_cast<std::uint8_t>(1u << substackOf(k));
    fragmentsPerPass = 0;
    for (int k = 0; k < nz; ++k) {
      const std::uint8_t bit = static_cast<std::uint8_t>(1u << substackOf(k));
      fragmentsPerPass += static_cast<double>(std::count_if(bits.begin(), bits.end(), [&](std::uint8_t b) { return b & bit; }));
    }
    stencil = gl::createTexture(GL_TEXTURE_2D);
    glTextureStorage2D(stencil.id(), 1, GL_STENCIL_INDEX8, nx, ny);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTextureSubImage2D(stencil.id(), 0, 0, 0, nx, ny, GL_STENCIL_INDEX, GL_UNSIGNED_BYTE, bits.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glNamedFramebufferTextureLayer(framebuffer.id(), GL_COLOR_ATTACHMENT0, volume_.volume.id(), 0, 0);  // non-layered from now on
    glNamedFramebufferTexture(framebuffer.id(), GL_STENCIL_ATTACHMENT, stencil.id(), 0);
    activeHost = roi.mask;
  }
  const GLenum status = glCheckNamedFramebufferStatus(framebuffer.id(), GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE)
    throw gl::GlError("graphics backprojector: the stencil region cannot be attached (framebuffer status " + std::to_string(status) + ")");
  regionSet = true;
  gl::checkError("setting the stencil region");
}

void GraphicsOperator::killOutsideRange(double low, double high, double scale) {
  volume_.context().makeCurrent();
  if (volume_.blockCapacity > 0) throw UsageError(field("densityRange") + ": not with slabs");
  if (!regionSet) {
    RegionOfInterest all;
    all.size = grid_.size;
    all.mask.assign(grid_.voxelCount(), 1);
    setRegion(all);
  }
  if (substacks)
    throw UsageError(field("densityRange") + ": needs the per-slice stencil (not " + field("roiStencil") + " substack): sub-stack bits are shared by slices");
  volume_.flush([&] { drawWindow(); });
  const int nx = grid_.size[0], ny = grid_.size[1], nz = grid_.size[2];
  // Reading the volume while it is the render target would be a feedback loop: read a copy.
  gl::Texture copy = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(copy.id(), 1, GL_R32F, nx, ny, nz);
  glCopyImageSubData(volume_.volume.id(), GL_TEXTURE_2D_ARRAY, 0, 0, 0, 0, copy.id(), GL_TEXTURE_2D_ARRAY, 0, 0, 0, 0, nx, ny, nz);
  killed = true;
  if (!killProgram) {
    std::vector<std::string> defines = {"#define W 1"};
    if (layered) defines.push_back("#define LAYERED 1");
    killProgram = gl::buildProgram({{GL_VERTEX_SHADER, "backproject_mp.vert"}, {GL_FRAGMENT_SHADER, "density_kill.frag"}}, defines);
  }
  glUseProgram(killProgram.id());
  glUniform1f(glGetUniformLocation(killProgram.id(), "scale"), static_cast<float>(scale));
  glUniform1f(glGetUniformLocation(killProgram.id(), "low"), static_cast<float>(low));
  glUniform1f(glGetUniformLocation(killProgram.id(), "high"), static_cast<float>(high));
  glUniform1i(glGetUniformLocation(killProgram.id(), "firstSlice"), 0);
  glBindTextureUnit(1, copy.id());
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer.id());
  glViewport(0, 0, nx, ny);
  glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_FALSE);
  glEnable(GL_STENCIL_TEST);
  glStencilMask(0xFF);
  glStencilFunc(GL_EQUAL, 1, 0xFF);
  glStencilOp(GL_KEEP, GL_KEEP, GL_ZERO);
  glBindVertexArray(quad.id());
  GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, nz));
  glStencilMask(0);
  glDisable(GL_STENCIL_TEST);
  glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
  // Mirror the new stencil on the host: it gives the culled fraction and the killed voxels.
  std::vector<std::uint8_t> mask(grid_.voxelCount());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glGetTextureImage(stencil.id(), 0, GL_STENCIL_INDEX, GL_UNSIGNED_BYTE, static_cast<GLsizei>(mask.size()), mask.data());
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  activeHost = mask;
  fragmentsPerPass = static_cast<double>(std::count(mask.begin(), mask.end(), std::uint8_t{1}));
  gl::checkError("density-range kill");
}

double GraphicsOperator::culledFraction() const {
  return fragmentsTotal > 0 ? 1.0 - fragmentsPassed / fragmentsTotal : 0.0;
}

}  // namespace

std::unique_ptr<ConeBeamOperator> makeGraphicsOperator(const Geometry& geometry, const VolumeGrid& grid, const OperatorOptions& options,
                                                       bool fragmentMapping) {
  return std::make_unique<GraphicsOperator>(geometry, grid, options, fragmentMapping);
}

}  // namespace glrecon
