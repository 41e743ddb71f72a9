#include "glrecon/graphics_backprojector.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "glrecon/error.h"
#include "glrecon/gl/objects.h"
#include "glrecon/gl/shader.h"

namespace glrecon {
namespace {

GLint glInteger(GLenum name) {
  GLint value = 0;
  glGetIntegerv(name, &value);
  return value;
}

// Free GPU memory in bytes where the driver tells it (NVIDIA's and AMD's extensions), else -1.
long long freeGpuMemory() {
  if (GLEW_NVX_gpu_memory_info) return static_cast<long long>(glInteger(0x9049 /* CURRENT_AVAILABLE_VIDMEM */)) * 1024;
  if (GLEW_ATI_meminfo) {
    GLint info[4] = {0, 0, 0, 0};
    glGetIntegerv(0x87FC /* TEXTURE_FREE_MEMORY_ATI */, info);
    return static_cast<long long>(info[0]) * 1024;
  }
  return -1;
}

// Uniform block limit: 3 vec4 rows per projection.
int uniformWindowLimit() { return glInteger(GL_MAX_UNIFORM_BLOCK_SIZE) / (3 * 16); }

}  // namespace

struct GraphicsBackprojector::Impl {
  const Geometry& geometry;
  VolumeGrid grid;
  BackprojectorOptions options;
  bool fragmentMapping;
  std::unique_ptr<gl::Context> ownedContext;
  gl::Context* context = nullptr;
  gl::Texture volume, projections;
  gl::Buffer matrices;
  gl::Framebuffer framebuffer;
  gl::VertexArray quad;
  std::map<int, gl::Program> programs;  // by window size
  bool layered = false;       // all slices in one draw (gl_Layer); false: slice by slice
  // Region of interest in the stencil (see the header): per-slice masks or the paper's 8 sub-stacks.
  gl::Texture stencil;
  bool regionSet = false;
  bool substacks = false;
  std::vector<std::uint8_t> activeHost;  // the per-slice stencil's content, mirrored on the host
  double fragmentsPerPass = 0;           // fragments that pass the stencil in one window's draw
  double fragmentsPassed = 0, fragmentsTotal = 0;
  gl::Program killProgram;
  int maxWindow = 1;
  int window = 1;
  std::vector<std::size_t> pending;  // views uploaded into the projection texture, slot = position

  // Automatic window search: two passes per candidate size, the second timed.
  bool searching = false;
  std::vector<int> candidates;
  std::size_t candidate = 0;
  int passesAtCandidate = 0;
  std::vector<std::pair<int, double>> timings;

  Impl(const Geometry& g, const VolumeGrid& v, const BackprojectorOptions& o, bool mp)
      : geometry(g), grid(v), options(o), fragmentMapping(mp) {}

  gl::Program& program(int w) {
    auto it = programs.find(w);
    if (it != programs.end()) return it->second;
    std::vector<std::string> defines = {"#define W " + std::to_string(w), "#define PACKED " + std::to_string((3 * w + 3) / 4)};
    if (layered) defines.push_back("#define LAYERED 1");
    gl::Program p = fragmentMapping
                        ? gl::buildProgram({{GL_VERTEX_SHADER, "backproject_mp.vert"}, {GL_FRAGMENT_SHADER, "backproject_mp.frag"}}, defines)
                        : gl::buildProgram({{GL_VERTEX_SHADER, "backproject_ag.vert"}, {GL_FRAGMENT_SHADER, "backproject_ag.frag"}}, defines);
    return programs.emplace(w, std::move(p)).first->second;
  }

  void draw() {
    const int w = static_cast<int>(pending.size());
    if (w == 0) return;
    gl::Program& p = program(w);
    // The window's matrices, in float for the shaders (computed in double).
    std::vector<float> rows(static_cast<std::size_t>(12) * w);
    for (int s = 0; s < w; ++s) {
      const ProjectionMatrix m = geometry.matrix(pending[s], grid);
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) rows[(s * 3 + r) * 4 + c] = static_cast<float>(m.m[r][c]);
    }
    glNamedBufferSubData(matrices.id(), 0, static_cast<GLsizeiptr>(rows.size() * sizeof(float)), rows.data());
    glUseProgram(p.id());
    glUniform2i(glGetUniformLocation(p.id(), "sliceSize"), grid.size[0], grid.size[1]);
    glUniform2f(glGetUniformLocation(p.id(), "detectorSize"), static_cast<float>(geometry.detector.nu),
                static_cast<float>(geometry.detector.nv));
    const GLint firstSlice = glGetUniformLocation(p.id(), "firstSlice");
    glBindBufferBase(GL_UNIFORM_BUFFER, 0, matrices.id());
    glBindTextureUnit(0, projections.id());
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer.id());
    glViewport(0, 0, grid.size[0], grid.size[1]);
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
    fragmentsTotal += static_cast<double>(grid.voxelCount());
    fragmentsPassed += regionSet ? fragmentsPerPass : static_cast<double>(grid.voxelCount());
    glEnable(GL_BLEND);
    glBlendEquation(GL_FUNC_ADD);
    glBlendFunc(GL_ONE, GL_ONE);
    glBindVertexArray(quad.id());
    if (layered && !substacks) {
      glUniform1i(firstSlice, 0);
      GLRECON_CHECK_GL(glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, grid.size[2]));
    } else {
      for (int k = 0; k < grid.size[2]; ++k) {
        glNamedFramebufferTextureLayer(framebuffer.id(), GL_COLOR_ATTACHMENT0, volume.id(), 0, k);
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
    pending.clear();
  }

  // Slices are split into 8 consecutive sub-stacks, one per stencil bit.
  int substackOf(int k) const { return static_cast<int>(static_cast<long long>(k) * 8 / grid.size[2]); }

  // Per-slice stencil: a stencil texture array beside the volume, attached layered.
  void uploadSliceStencil(const std::vector<std::uint8_t>& mask) {
    if (!stencil) {
      stencil = gl::createTexture(GL_TEXTURE_2D_ARRAY);
      glTextureStorage3D(stencil.id(), 1, GL_STENCIL_INDEX8, grid.size[0], grid.size[1], grid.size[2]);
      glNamedFramebufferTexture(framebuffer.id(), GL_STENCIL_ATTACHMENT, stencil.id(), 0);
    }
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glTextureSubImage3D(stencil.id(), 0, 0, 0, 0, grid.size[0], grid.size[1], grid.size[2], GL_STENCIL_INDEX, GL_UNSIGNED_BYTE,
                        mask.data());
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    activeHost = mask;
    fragmentsPerPass = static_cast<double>(std::count(mask.begin(), mask.end(), std::uint8_t{1}));
  }

  // Draws the full window; while searching, runs each candidate size for two passes and times the second:
  // the first pays for first-use costs (Mesa's llvmpipe compiles a shader variant at its first draw, which
  // made a first pass of W = 2 look 30 times slower per projection than W = 1). Every pass is real work.
  void drawWindow() {
    if (!searching) return draw();
    glFinish();
    const auto start = std::chrono::steady_clock::now();
    const int w = static_cast<int>(pending.size());
    draw();
    glFinish();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (++passesAtCandidate < 2) return;
    timings.emplace_back(w, seconds / w);
    passesAtCandidate = 0;
    if (++candidate < candidates.size()) {
      window = candidates[candidate];
    } else {
      searching = false;
      window = std::min_element(timings.begin(), timings.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    }
  }
};

GraphicsBackprojector::GraphicsBackprojector(const Geometry& geometry, const VolumeGrid& grid, const BackprojectorOptions& options,
                                             bool fragmentMapping)
    : impl_(std::make_unique<Impl>(geometry, grid, options, fragmentMapping)) {
  // Owned by Impl and declared before the GL objects, so it outlives them even when initialise() throws.
  impl_->ownedContext = gl::Context::headless(options.gpu);
  impl_->context = impl_->ownedContext.get();
  initialise();
}

GraphicsBackprojector::GraphicsBackprojector(gl::Context& context, const Geometry& geometry, const VolumeGrid& grid,
                                             const BackprojectorOptions& options, bool fragmentMapping)
    : impl_(std::make_unique<Impl>(geometry, grid, options, fragmentMapping)) {
  impl_->context = &context;
  initialise();
}

void GraphicsBackprojector::initialise() {
  Impl& d = *impl_;
  const Geometry& geometry = d.geometry;
  const VolumeGrid& grid = d.grid;
  const BackprojectorOptions& options = d.options;
  const bool fragmentMapping = d.fragmentMapping;
  d.context->makeCurrent();
  geometry.validate("graphics backprojector");
  grid.validate("graphics backprojector");
  const std::string where = "graphics backprojector on " + d.context->info().renderer;

  // Limits: the volume lives in one texture array, drawn at slice resolution; projections in another.
  const GLint maxTexture = glInteger(GL_MAX_TEXTURE_SIZE), maxLayers = glInteger(GL_MAX_ARRAY_TEXTURE_LAYERS);
  GLint viewport[2] = {0, 0};
  glGetIntegerv(GL_MAX_VIEWPORT_DIMS, viewport);
  const auto limit = [&](const std::string& field, long long value, long long max) {
    if (value > max)
      throwInputError(where, field, "at most " + std::to_string(max) + " (this GPU's limit; larger volumes come with out-of-core reconstruction)",
                      std::to_string(value));
  };
  limit("volume size x", grid.size[0], std::min<GLint>(maxTexture, viewport[0]));
  limit("volume size y", grid.size[1], std::min<GLint>(maxTexture, viewport[1]));
  limit("volume size z (slices, texture array layers)", grid.size[2], maxLayers);
  limit("detector width", geometry.detector.nu, maxTexture);
  limit("detector height", geometry.detector.nv, maxTexture);

  // Largest window: AG-GPU passes 3 floats per projection as varyings; both read 3 vec4 uniform rows each.
  const int varyingComponents = std::min({glInteger(GL_MAX_VARYING_COMPONENTS), glInteger(GL_MAX_VERTEX_OUTPUT_COMPONENTS),
                                          glInteger(GL_MAX_FRAGMENT_INPUT_COMPONENTS)});
  d.maxWindow = fragmentMapping ? std::min(64, uniformWindowLimit()) : std::min(varyingComponents / 3, uniformWindowLimit());
  d.maxWindow = std::min({d.maxWindow, maxLayers, static_cast<int>(geometry.size())});
  if (options.window < kMaximumWindow || options.window > d.maxWindow)
    throw UsageError("--window: expected 1 to " + std::to_string(d.maxWindow) + " (this device's varyings), max or auto, found " +
                     std::to_string(options.window));

  const long long volumeBytes = static_cast<long long>(grid.voxelCount()) * 4;
  const long long projectionBytes = static_cast<long long>(geometry.detector.nu) * geometry.detector.nv * d.maxWindow * 4;
  if (const long long free = freeGpuMemory(); free >= 0)
    limit("GPU memory for volume and projections (bytes)", volumeBytes + projectionBytes, free);

  d.layered = GLEW_ARB_shader_viewport_layer_array != 0;
  d.volume = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(d.volume.id(), 1, GL_R32F, grid.size[0], grid.size[1], grid.size[2]);
  const float zero = 0.0f;
  glClearTexImage(d.volume.id(), 0, GL_RED, GL_FLOAT, &zero);
  gl::checkError(("allocating the " + std::to_string(grid.size[0]) + " x " + std::to_string(grid.size[1]) + " x " +
                  std::to_string(grid.size[2]) + " volume texture").c_str());

  d.projections = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(d.projections.id(), 1, GL_R32F, geometry.detector.nu, geometry.detector.nv, d.maxWindow);
  glTextureParameteri(d.projections.id(), GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTextureParameteri(d.projections.id(), GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  // Outside the detector a sample is 0 (border colour 0): the convention every backend shares.
  glTextureParameteri(d.projections.id(), GL_TEXTURE_WRAP_S, GL_CLAMP_TO_BORDER);
  glTextureParameteri(d.projections.id(), GL_TEXTURE_WRAP_T, GL_CLAMP_TO_BORDER);
  const float border[4] = {0, 0, 0, 0};
  glTextureParameterfv(d.projections.id(), GL_TEXTURE_BORDER_COLOR, border);

  d.matrices = gl::createBuffer();
  glNamedBufferStorage(d.matrices.id(), static_cast<GLsizeiptr>(d.maxWindow) * 3 * 16, nullptr, GL_DYNAMIC_STORAGE_BIT);
  d.framebuffer = gl::createFramebuffer();
  if (d.layered)
    glNamedFramebufferTexture(d.framebuffer.id(), GL_COLOR_ATTACHMENT0, d.volume.id(), 0);
  else
    glNamedFramebufferTextureLayer(d.framebuffer.id(), GL_COLOR_ATTACHMENT0, d.volume.id(), 0, 0);
  glNamedFramebufferDrawBuffer(d.framebuffer.id(), GL_COLOR_ATTACHMENT0);
  const GLenum status = glCheckNamedFramebufferStatus(d.framebuffer.id(), GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE)
    throw gl::GlError(where + ": the volume texture cannot be rendered to (framebuffer status " + std::to_string(status) + ")");
  d.quad = gl::createVertexArray();  // the quad's corners come from gl_VertexID: no vertex buffer

  // Some drivers pack varyings less tightly than the component count promises: step down until it links.
  if (!fragmentMapping)
    for (;;) {
      try {
        d.program(d.maxWindow);
        break;
      } catch (const gl::ShaderError&) {
        if (d.maxWindow <= 1) throw;
        --d.maxWindow;
      }
    }
  if (options.window == kMaximumWindow) {
    d.window = d.maxWindow;
  } else if (options.window > 0) {
    d.window = std::min(options.window, d.maxWindow);
  } else {
    d.searching = true;
    for (int w : {1, 2, 4, 8, 16, 32})
      if (w < d.maxWindow) d.candidates.push_back(w);
    d.candidates.push_back(d.maxWindow);
    d.window = d.candidates.front();
  }
  gl::checkError(where.c_str());
}

GraphicsBackprojector::~GraphicsBackprojector() {
  // GL objects must go while their context is current.
  if (impl_ && impl_->context) {
    impl_->context->makeCurrent();
    impl_->programs.clear();
    impl_->killProgram.reset();
    impl_->stencil.reset();
    impl_->volume.reset();
    impl_->projections.reset();
    impl_->matrices.reset();
    impl_->framebuffer.reset();
    impl_->quad.reset();
  }
}

std::string GraphicsBackprojector::name() const { return impl_->fragmentMapping ? "graphics-mp" : "graphics"; }

std::string GraphicsBackprojector::description() const {
  return name() + " on " + impl_->context->info().renderer + ", window " + std::to_string(impl_->window) +
         (impl_->options.window == 0 ? " (auto)" : impl_->options.window == kMaximumWindow ? " (max)" : "");
}

const gl::DeviceInfo& GraphicsBackprojector::device() const { return impl_->context->info(); }
int GraphicsBackprojector::maxWindow() const { return impl_->maxWindow; }
int GraphicsBackprojector::window() const { return impl_->window; }
const std::vector<std::pair<int, double>>& GraphicsBackprojector::windowTimings() const { return impl_->timings; }

void GraphicsBackprojector::backproject(const float* projections, const std::size_t* views, std::size_t count) {
  Impl& d = *impl_;
  d.context->makeCurrent();
  const int nu = d.geometry.detector.nu, nv = d.geometry.detector.nv;
  for (std::size_t p = 0; p < count; ++p) {
    if (views[p] >= d.geometry.size()) throw std::out_of_range("backproject: view index beyond the geometry");
    const int slot = static_cast<int>(d.pending.size());
    GLRECON_CHECK_GL(glTextureSubImage3D(d.projections.id(), 0, 0, 0, slot, nu, nv, 1, GL_RED, GL_FLOAT,
                                         projections + p * static_cast<std::size_t>(nu) * nv));
    d.pending.push_back(views[p]);
    if (static_cast<int>(d.pending.size()) == d.window) d.drawWindow();
  }
  gl::checkError("graphics backprojection");
}

void GraphicsBackprojector::setRegion(const RegionOfInterest& roi) {
  Impl& d = *impl_;
  if (roi.size != d.grid.size) throw std::invalid_argument("setRegion: the region's grid differs from the volume's");
  d.context->makeCurrent();
  d.draw();  // projections already uploaded belong to the unrestricted part
  d.substacks = d.options.substackStencil || !d.layered;
  if (!d.substacks) {
    d.uploadSliceStencil(roi.mask);
  } else {
    // The paper's scheme: one 2D 8-bit stencil shared by all slice framebuffers; bit s holds the union of
    // the masks of sub-stack s's slices, so a slice is drawn where any slice of its sub-stack is inside.
    const int nx = d.grid.size[0], ny = d.grid.size[1], nz = d.grid.size[2];
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
    glNamedFramebufferTextureLayer(d.framebuffer.id(), GL_COLOR_ATTACHMENT0, d.volume.id(), 0, 0);  // non-layered from now on
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
  d.context->makeCurrent();
  if (!d.regionSet) {
    RegionOfInterest all;
    all.size = d.grid.size;
    all.mask.assign(d.grid.voxelCount(), 1);
    setRegion(all);
  }
  if (d.substacks)
    throw UsageError("--density-range: needs the per-slice stencil (not --roi-stencil substack): sub-stack bits are shared by slices");
  d.draw();
  const int nx = d.grid.size[0], ny = d.grid.size[1], nz = d.grid.size[2];
  // Reading the volume while it is the render target would be a feedback loop: read a copy.
  gl::Texture copy = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(copy.id(), 1, GL_R32F, nx, ny, nz);
  glCopyImageSubData(d.volume.id(), GL_TEXTURE_2D_ARRAY, 0, 0, 0, 0, copy.id(), GL_TEXTURE_2D_ARRAY, 0, 0, 0, 0, nx, ny, nz);
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
  std::vector<std::uint8_t> mask(d.grid.voxelCount());
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

Image GraphicsBackprojector::volume() {
  Impl& d = *impl_;
  d.context->makeCurrent();
  d.draw();  // the last, partial window
  Image result(d.grid);
  glGetTextureImage(d.volume.id(), 0, GL_RED, GL_FLOAT, static_cast<GLsizei>(result.data.size() * sizeof(float)), result.data.data());
  gl::checkError("reading the volume back");
  return result;
}

}  // namespace glrecon
