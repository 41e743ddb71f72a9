#include "glrecon/graphics_backprojector.h"

#include <algorithm>
#include <map>

#include "gl_volume_backend.h"
#include "glrecon/errors.h"
#include "device/gl/shader.h"
#include "glrecon/slab.h"

namespace glrecon {

struct GraphicsBackprojector::Impl {
  detail::GlVolumeBackend base;
  bool fragmentMapping;
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

  Impl(gl::Context* context, const Geometry& g, const VolumeGrid& v, const BackprojectorOptions& o, bool mp)
      : base(context, g, v, o, mp ? "graphics-mp backprojector" : "graphics backprojector"), fragmentMapping(mp) {}

  const VolumeGrid& grid() const { return base.grid; }

  // AG-GPU in slab mode rasterizes each slice exactly as without slabs: the same quad in the same viewport of
  // the whole slice, into a framebuffer without attachments (so window coordinates are the whole grid's: the
  // rasterizer's attribute interpolation is not bitwise translation-invariant, llvmpipe evaluates it from the
  // framebuffer's origin), scissored to the slab's rows; the fragment shader adds its sum into the slab's
  // volume by image load/store at the local row, the same float addition the additive blending does. Translating
  // the viewport instead (the slab's rows in a slab-tall framebuffer) changed the rounding of the interpolated
  // coordinates: on llvmpipe most voxels of slabs after the first differed, by up to 7e-5 in sums of order 1. MP-GPU computes from the fragment's row plus slabFirst, exact, and keeps its framebuffer.
  bool slabImages() const { return base.slabCapacity > 0 && !fragmentMapping; }

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
  int substackOf(int k) const { return static_cast<int>(static_cast<long long>(k) * 8 / grid().size[2]); }

  // AG-GPU slab mode (slabImages()): one instanced draw of every slice's whole quad, scissored to the slab.
  void drawSlabImages(gl::Program& p) {
    glBindFramebuffer(GL_FRAMEBUFFER, slabFramebuffer.id());
    glViewport(0, 0, grid().size[0], grid().size[1]);
    glEnable(GL_SCISSOR_TEST);
    glScissor(0, base.slabFirst, grid().size[0], base.rows);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glDisable(GL_STENCIL_TEST);
    glDisable(GL_BLEND);
    glUniform1i(glGetUniformLocation(p.id(), "slabFirst"), base.slabFirst);
    glUniform1i(glGetUniformLocation(p.id(), "useRegion"), regionSet ? 1 : 0);
    glUniform1i(glGetUniformLocation(p.id(), "firstSlice"), 0);
    glBindImageTexture(0, base.volume.id(), 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
    if (regionSet) glBindTextureUnit(2, regionMask.id());
    fragmentsTotal += static_cast<double>(base.heldVoxels());
    fragmentsPassed += regionSet ? fragmentsPerPass : static_cast<double>(base.heldVoxels());
    glBindVertexArray(quad.id());
    GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, grid().size[2]));
    glDisable(GL_SCISSOR_TEST);
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);  // the next window reads what this one stored (readback and
                                                          // clears bring their own barriers)
  }

  // One window: every slice's proxy quad, additive blending into the volume.
  void draw() {
    const int w = static_cast<int>(base.pending.size());
    gl::Program& p = program(w);
    base.uploadMatrices();
    glUseProgram(p.id());
    glUniform2i(glGetUniformLocation(p.id(), "sliceSize"), grid().size[0], grid().size[1]);
    glUniform2f(glGetUniformLocation(p.id(), "detectorSize"), static_cast<float>(base.geometry.detector.nu),
                static_cast<float>(base.geometry.detector.nv));
    glUniform1i(glGetUniformLocation(p.id(), "layerBase"), base.layerBase);
    const GLint firstSlice = glGetUniformLocation(p.id(), "firstSlice");
    glBindTextureUnit(0, base.projections.id());
    if (slabImages()) return drawSlabImages(p);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer.id());
    if (fragmentMapping) glUniform1i(glGetUniformLocation(p.id(), "slabFirst"), base.slabFirst);  // MP: global row = local + slabFirst
    glViewport(0, 0, grid().size[0], base.rows);
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
    fragmentsTotal += static_cast<double>(base.heldVoxels());
    fragmentsPassed += regionSet ? fragmentsPerPass : static_cast<double>(base.heldVoxels());
    glEnable(GL_BLEND);
    glBlendEquation(GL_FUNC_ADD);
    glBlendFunc(GL_ONE, GL_ONE);
    glBindVertexArray(quad.id());
    if (layered && !substacks) {
      glUniform1i(firstSlice, 0);
      GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, grid().size[2]));
    } else {
      for (int k = 0; k < grid().size[2]; ++k) {
        glNamedFramebufferTextureLayer(framebuffer.id(), GL_COLOR_ATTACHMENT0, base.volume.id(), 0, k);
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
      glTextureStorage3D(stencil.id(), 1, GL_STENCIL_INDEX8, grid().size[0], base.allocatedRows, grid().size[2]);
      glNamedFramebufferTexture(framebuffer.id(), GL_STENCIL_ATTACHMENT, stencil.id(), 0);
    }
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTextureSubImage3D(stencil.id(), 0, 0, 0, 0, grid().size[0], base.rows, grid().size[2], GL_STENCIL_INDEX, GL_UNSIGNED_BYTE,
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
      if (layered) glNamedFramebufferTexture(framebuffer.id(), GL_COLOR_ATTACHMENT0, base.volume.id(), 0);
      substacks = false;
    }
    regionSet = false;
    activeHost.clear();
    fragmentsPerPass = 0;
  }
};

GraphicsBackprojector::GraphicsBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options,
                                             bool fragmentMapping)
    : impl_(std::make_unique<Impl>(nullptr, geometry, grid, options, fragmentMapping)) {
  initialise();
}

GraphicsBackprojector::GraphicsBackprojector(gl::Context& context, const Geometry& geometry, const VolumeGrid& grid,
                                             const BackprojectorOptions& options, bool fragmentMapping)
    : impl_(std::make_unique<Impl>(&context, geometry, grid, options, fragmentMapping)) {
  initialise();
}

void GraphicsBackprojector::initialise() {
  Impl& d = *impl_;
  d.layered = GLEW_ARB_shader_viewport_layer_array != 0;
  d.framebuffer = gl::createFramebuffer();
  if (d.layered)
    glNamedFramebufferTexture(d.framebuffer.id(), GL_COLOR_ATTACHMENT0, d.base.volume.id(), 0);
  else
    glNamedFramebufferTextureLayer(d.framebuffer.id(), GL_COLOR_ATTACHMENT0, d.base.volume.id(), 0, 0);
  glNamedFramebufferDrawBuffer(d.framebuffer.id(), GL_COLOR_ATTACHMENT0);
  const GLenum status = glCheckNamedFramebufferStatus(d.framebuffer.id(), GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE)
    throw gl::GlError(d.base.where() + ": the volume texture cannot be rendered to (framebuffer status " + std::to_string(status) + ")");
  d.quad = gl::createVertexArray();  // the quad's corners come from gl_VertexID: no vertex buffer
  if (d.slabImages()) {
    // The attachment-less framebuffer spans the whole slice (only its size counts, no memory).
    const GLint maxWidth = detail::glInteger(GL_MAX_FRAMEBUFFER_WIDTH), maxHeight = detail::glInteger(GL_MAX_FRAMEBUFFER_HEIGHT);
    if (d.grid().size[0] > maxWidth)
      throwInputError(d.base.where(), "volume size x", "at most " + std::to_string(maxWidth) + " (this GPU's framebuffer limit, slabs)",
                      std::to_string(d.grid().size[0]));
    if (d.grid().size[1] > maxHeight)
      throwInputError(d.base.where(), "volume size y", "at most " + std::to_string(maxHeight) + " (this GPU's framebuffer limit, slabs)",
                      std::to_string(d.grid().size[1]));
    d.slabFramebuffer = gl::createFramebuffer();
    glNamedFramebufferParameteri(d.slabFramebuffer.id(), GL_FRAMEBUFFER_DEFAULT_WIDTH, d.grid().size[0]);
    glNamedFramebufferParameteri(d.slabFramebuffer.id(), GL_FRAMEBUFFER_DEFAULT_HEIGHT, d.grid().size[1]);
    const GLenum slabStatus = glCheckNamedFramebufferStatus(d.slabFramebuffer.id(), GL_FRAMEBUFFER);
    if (slabStatus != GL_FRAMEBUFFER_COMPLETE)
      throw gl::GlError(d.base.where() + ": cannot make the slab framebuffer without attachments (status " + std::to_string(slabStatus) +
                        ")");
  }

  // Largest window: AG-GPU passes 3 floats per projection as varyings; both read 3 vec4 uniform rows each.
  const int varyingComponents =
      std::min({detail::glInteger(GL_MAX_VARYING_COMPONENTS), detail::glInteger(GL_MAX_VERTEX_OUTPUT_COMPONENTS),
                detail::glInteger(GL_MAX_FRAGMENT_INPUT_COMPONENTS)});
  int limit = d.fragmentMapping ? std::min(64, detail::uniformWindowLimit()) : std::min(varyingComponents / 3, detail::uniformWindowLimit());
  limit = std::min(limit, static_cast<int>(d.base.geometry.size()));
  // Some drivers pack varyings less tightly than the component count promises: step down until it links.
  if (!d.fragmentMapping)
    for (;;) {
      try {
        d.program(limit);
        break;
      } catch (const gl::ShaderError&) {
        if (limit <= 1) throw;
        --limit;
      }
    }
  d.base.setWindowLimit(limit);
}

GraphicsBackprojector::~GraphicsBackprojector() {
  // GL objects must go while their context is current (the base's destructor handles its own).
  if (impl_) {
    impl_->base.context().makeCurrent();
    impl_->programs.clear();
    impl_->killProgram.reset();
    impl_->stencil.reset();
    impl_->regionMask.reset();
    impl_->slabFramebuffer.reset();
    impl_->framebuffer.reset();
    impl_->quad.reset();
  }
}

std::string GraphicsBackprojector::name() const { return impl_->fragmentMapping ? "graphics-mp" : "graphics"; }

std::string GraphicsBackprojector::description() const {
  return name() + " on " + impl_->base.context().info().renderer + ", " + impl_->base.windowDescription();
}

const gl::DeviceInfo& GraphicsBackprojector::device() const { return impl_->base.context().info(); }
unsigned GraphicsBackprojector::volumeTexture() const { return impl_->base.volume.id(); }
int GraphicsBackprojector::maxWindow() const { return impl_->base.maxWindow; }
int GraphicsBackprojector::window() const { return impl_->base.window; }
const std::vector<std::pair<int, double>>& GraphicsBackprojector::windowTimings() const { return impl_->base.timings; }

void GraphicsBackprojector::backproject(const float* projections, const std::size_t* views, std::size_t count) {
  impl_->base.add(projections, views, count, [this] { impl_->draw(); });
}

Image GraphicsBackprojector::volume() {
  impl_->base.flush([this] { impl_->draw(); });  // the last, partial window
  return impl_->base.readVolume();
}

void GraphicsBackprojector::readVolume(float* destination) {
  impl_->base.flush([this] { impl_->draw(); });
  impl_->base.readVolumeInto(destination);
}

void GraphicsBackprojector::reset() {
  Impl& d = *impl_;
  // The kill rewrote the stencil from the volume of this scan: it cannot carry over to the next one.
  if (d.killed) throw UsageError("reset: not after a density-range kill (make a new backprojector)");
  d.base.reset();
  d.fragmentsPassed = d.fragmentsTotal = 0;
}

void GraphicsBackprojector::setSlab(int firstRow, int rows) {
  Impl& d = *impl_;
  if (d.killed) throw UsageError("setSlab: not after a density-range kill");
  d.base.setSlab(firstRow, rows);
  d.clearRegion();
  d.fragmentsPassed = d.fragmentsTotal = 0;
  gl::checkError("starting a slab");
}

double GraphicsBackprojector::uploadedBytes() const { return impl_->base.uploaded; }

bool GraphicsBackprojector::filterOnDevice(const DeviceFilter* filter, bool force) { return impl_->base.filterOnDevice(filter, force); }
bool GraphicsBackprojector::filterProjections(const DeviceFilter& filter, const float* raw, const std::size_t* views, std::size_t count, float* filtered,
                           bool force) {
  return impl_->base.filterProjections(filter, raw, views, count, filtered, force);
}

void GraphicsBackprojector::setRegion(const RegionOfInterest& roi) {
  Impl& d = *impl_;
  d.base.context().makeCurrent();
  // In slab mode the region is on the slab's grid (slabRegion).
  if (roi.size != d.base.heldGrid().size) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  d.base.flush([&] { d.draw(); });  // projections already uploaded belong to the unrestricted part
  d.substacks = d.base.options.substackStencil || !d.layered;
  if (d.slabImages()) {
    // AG-GPU slab: a per-voxel mask texture, tested first in the fragment shader. With substackStencil it
    // holds what the sub-stack stencil lets through (the union of a sub-stack's slices per column), so the slab
    // updates exactly the voxels the one-block reconstruction does.
    const int nx = d.grid().size[0], ny = d.base.rows, nz = d.grid().size[2];
    const std::size_t slice = static_cast<std::size_t>(nx) * ny;
    std::vector<std::uint8_t> mask = roi.mask;
    if (d.substacks) {
      std::vector<std::uint8_t> bits(slice, 0);
      for (int k = 0; k < nz; ++k)
        for (std::size_t i = 0; i < slice; ++i)
          if (roi.mask[k * slice + i]) bits[i] |= static_cast<std::uint8_t>(1u << d.substackOf(k));
      for (int k = 0; k < nz; ++k)
        for (std::size_t i = 0; i < slice; ++i) mask[k * slice + i] = (bits[i] >> d.substackOf(k)) & 1u;
    }
    if (!d.regionMask) {
      d.regionMask = gl::createTexture(GL_TEXTURE_2D_ARRAY);
      glTextureStorage3D(d.regionMask.id(), 1, GL_R8UI, nx, d.base.allocatedRows, nz);
      glTextureParameteri(d.regionMask.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
      glTextureParameteri(d.regionMask.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    }
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTextureSubImage3D(d.regionMask.id(), 0, 0, 0, 0, nx, ny, nz, GL_RED_INTEGER, GL_UNSIGNED_BYTE, mask.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    d.substacks = false;  // nothing to undo in the framebuffers
    d.activeHost = roi.mask;
    d.fragmentsPerPass = static_cast<double>(std::count(mask.begin(), mask.end(), std::uint8_t{1}));
    d.regionSet = true;
    gl::checkError("setting the slab's region");
    return;
  }
  if (!d.substacks) {
    d.uploadSliceStencil(roi.mask);
  } else {
    // The paper's scheme: one 2D 8-bit stencil shared by all slice framebuffers; bit s holds the union of
    // the masks of sub-stack s's slices, so a slice is drawn where any slice of its sub-stack is inside.
    const int nx = d.grid().size[0], ny = d.base.rows, nz = d.grid().size[2];
    std::vector<std::uint8_t> bits(static_cast<std::size_t>(nx) * ny, 0);
    for (int k = 0; k < nz; ++k)
      for (std::size_t i = 0; i < bits.size(); ++i)
        if (roi.mask[static_cast<std::size_t>(k) * bits.size() + i]) bits[i] |= static_cast<std::uint8_t>(1u << d.substackOf(k));
    d.fragmentsPerPass = 0;
    for (int k = 0; k < nz; ++k) {
      const std::uint8_t bit = static_cast<std::uint8_t>(1u << d.substackOf(k));
      d.fragmentsPerPass += static_cast<double>(std::count_if(bits.begin(), bits.end(), [&](std::uint8_t b) { return b & bit; }));
    }
    d.stencil = gl::createTexture(GL_TEXTURE_2D);
    glTextureStorage2D(d.stencil.id(), 1, GL_STENCIL_INDEX8, nx, ny);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTextureSubImage2D(d.stencil.id(), 0, 0, 0, nx, ny, GL_STENCIL_INDEX, GL_UNSIGNED_BYTE, bits.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glNamedFramebufferTextureLayer(d.framebuffer.id(), GL_COLOR_ATTACHMENT0, d.base.volume.id(), 0, 0);  // non-layered from now on
    glNamedFramebufferTexture(d.framebuffer.id(), GL_STENCIL_ATTACHMENT, d.stencil.id(), 0);
    d.activeHost = roi.mask;
  }
  const GLenum status = glCheckNamedFramebufferStatus(d.framebuffer.id(), GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE)
    throw gl::GlError("graphics backprojector: the stencil region cannot be attached (framebuffer status " + std::to_string(status) + ")");
  d.regionSet = true;
  gl::checkError("setting the stencil region");
}

void GraphicsBackprojector::killOutsideRange(double low, double high, double scale) {
  Impl& d = *impl_;
  d.base.context().makeCurrent();
  if (d.base.slabCapacity > 0) throw UsageError(field("densityRange") + ": not with slabs");
  if (!d.regionSet) {
    RegionOfInterest all;
    all.size = d.grid().size;
    all.mask.assign(d.grid().voxelCount(), 1);
    setRegion(all);
  }
  if (d.substacks)
    throw UsageError(field("densityRange") + ": needs the per-slice stencil (not " + field("roiStencil") + " substack): sub-stack bits are shared by slices");
  d.base.flush([&] { d.draw(); });
  const int nx = d.grid().size[0], ny = d.grid().size[1], nz = d.grid().size[2];
  // Reading the volume while it is the render target would be a feedback loop: read a copy.
  gl::Texture copy = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(copy.id(), 1, GL_R32F, nx, ny, nz);
  glCopyImageSubData(d.base.volume.id(), GL_TEXTURE_2D_ARRAY, 0, 0, 0, 0, copy.id(), GL_TEXTURE_2D_ARRAY, 0, 0, 0, 0, nx, ny, nz);
  d.killed = true;
  if (!d.killProgram) {
    std::vector<std::string> defines = {"#define W 1"};
    if (d.layered) defines.push_back("#define LAYERED 1");
    d.killProgram = gl::buildProgram({{GL_VERTEX_SHADER, "backproject_mp.vert"}, {GL_FRAGMENT_SHADER, "density_kill.frag"}}, defines);
  }
  glUseProgram(d.killProgram.id());
  glUniform1f(glGetUniformLocation(d.killProgram.id(), "scale"), static_cast<float>(scale));
  glUniform1f(glGetUniformLocation(d.killProgram.id(), "low"), static_cast<float>(low));
  glUniform1f(glGetUniformLocation(d.killProgram.id(), "high"), static_cast<float>(high));
  glUniform1i(glGetUniformLocation(d.killProgram.id(), "firstSlice"), 0);
  glBindTextureUnit(1, copy.id());
  glBindFramebuffer(GL_FRAMEBUFFER, d.framebuffer.id());
  glViewport(0, 0, nx, ny);
  glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_FALSE);
  glEnable(GL_STENCIL_TEST);
  glStencilMask(0xFF);
  glStencilFunc(GL_EQUAL, 1, 0xFF);
  glStencilOp(GL_KEEP, GL_KEEP, GL_ZERO);
  glBindVertexArray(d.quad.id());
  GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, nz));
  glStencilMask(0);
  glDisable(GL_STENCIL_TEST);
  glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
  // Mirror the new stencil on the host: it gives the culled fraction and the killed voxels.
  std::vector<std::uint8_t> mask(d.grid().voxelCount());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glGetTextureImage(d.stencil.id(), 0, GL_STENCIL_INDEX, GL_UNSIGNED_BYTE, static_cast<GLsizei>(mask.size()), mask.data());
  glPixelStorei(GL_PACK_ALIGNMENT, 4);
  d.activeHost = mask;
  d.fragmentsPerPass = static_cast<double>(std::count(mask.begin(), mask.end(), std::uint8_t{1}));
  gl::checkError("density-range kill");
}

std::vector<std::uint8_t> GraphicsBackprojector::activeMask() { return impl_->activeHost; }

double GraphicsBackprojector::culledFraction() const {
  return impl_->fragmentsTotal > 0 ? 1.0 - impl_->fragmentsPassed / impl_->fragmentsTotal : 0.0;
}

}  // namespace glrecon

namespace glrecon {
BackprojectorTimings GraphicsBackprojector::timings() const { return impl_->base.profile; }
}  // namespace glrecon
