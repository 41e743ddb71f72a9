// The graphics and compute projectors: OpenGL 4.5 in a headless EGL context of their own. The volume is a 3D
// texture (R32F, trilinear, border 0) sampled by the ray marcher; projections a 2D texture array (R32F, bilinear,
// border 0) sampled by the backprojector. graphics: forward renders one full-detector triangle per view into a
// layer of an R32F array (one fragment per pixel); back renders one proxy slice per z into the volume's layer
// (one fragment per voxel), additive blending over batches. compute: the same functions in a compute shader.
// Every call uploads its input and reads its output back (see include/glrecon/iterative.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "device/gl/context.h"
#include "device/gl/objects.h"
#include "device/gl/shader.h"
#include "operators/projector_backends.h"

namespace glrecon::detail {
namespace {

GLint integer(GLenum name) {
  GLint v = 0;
  glGetIntegerv(name, &v);
  return v;
}

void setBorderSampling(GLuint texture, bool volume) {
  const float border[4] = {0, 0, 0, 0};
  glTextureParameteri(texture, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTextureParameteri(texture, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTextureParameteri(texture, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_BORDER);
  glTextureParameteri(texture, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_BORDER);
  if (volume) glTextureParameteri(texture, GL_TEXTURE_WRAP_R, GL_CLAMP_TO_BORDER);
  glTextureParameterfv(texture, GL_TEXTURE_BORDER_COLOR, border);
}

class GlProjector final : public Projector {
 public:
  GlProjector(bool compute, const Geometry& geometry, const VolumeGrid& grid, const ProjectorOptions& options)
      : compute_(compute), grid_(grid), nu_(geometry.detector.nu), nv_(geometry.detector.nv) {
    checkProjectorGeometry(geometry, grid, std::string(compute ? "compute" : "graphics") + " projector");
    step_ = projectorStep(options, grid);
    pixels_ = static_cast<std::size_t>(nu_) * nv_;
    views_ = projectorViews(geometry, grid);
    if (options.context) {
      context_ = options.context;
      context_->makeCurrent();
    } else {
      owned_ = gl::Context::headless(options.gpu);
      context_ = owned_.get();
    }
    const GLint max3d = integer(GL_MAX_3D_TEXTURE_SIZE), max2d = integer(GL_MAX_TEXTURE_SIZE);
    if (grid.size[0] > max3d || grid.size[1] > max3d || grid.size[2] > max3d || nu_ > max2d || nv_ > max2d)
      throw gl::GlError(name() + " projector: volume " + std::to_string(grid.size[0]) + "x" + std::to_string(grid.size[1]) + "x" +
                        std::to_string(grid.size[2]) + " or detector " + std::to_string(nu_) + "x" + std::to_string(nv_) +
                        " exceeds the device's texture limits (3D " + std::to_string(max3d) + ", 2D " + std::to_string(max2d) + ")");
    // Views per batch: one projection texture layer each (256 keep the texture small; batches accumulate).
    maxLayers_ = std::max(1, std::min<int>(integer(GL_MAX_ARRAY_TEXTURE_LAYERS), 256));
    volumeTexture_ = gl::createTexture(GL_TEXTURE_3D);
    glTextureStorage3D(volumeTexture_.id(), 1, GL_R32F, grid.size[0], grid.size[1], grid.size[2]);
    setBorderSampling(volumeTexture_.id(), true);
    volumeTarget_ = gl::createTexture(GL_TEXTURE_2D_ARRAY);
    glTextureStorage3D(volumeTarget_.id(), 1, GL_R32F, grid.size[0], grid.size[1], grid.size[2]);
    projectionLayers_ = gl::createTexture(GL_TEXTURE_2D_ARRAY);
    glTextureStorage3D(projectionLayers_.id(), 1, GL_R32F, nu_, nv_, maxLayers_);
    setBorderSampling(projectionLayers_.id(), false);
    viewBuffer_ = gl::createBuffer();
    glNamedBufferStorage(viewBuffer_.id(), static_cast<GLsizeiptr>(maxLayers_) * 32 * sizeof(float), nullptr, GL_DYNAMIC_STORAGE_BIT);
    if (compute_) {
      forwardProgram_ = build({{GL_COMPUTE_SHADER, "project.comp"}}, {"#define FORWARD 1"});
      backProgram_ = build({{GL_COMPUTE_SHADER, "project.comp"}}, {});
    } else {
      forwardProgram_ = build({{GL_VERTEX_SHADER, "project_fullscreen.vert"}, {GL_FRAGMENT_SHADER, "project_forward.frag"}}, {});
      backProgram_ = build({{GL_VERTEX_SHADER, "project_fullscreen.vert"}, {GL_FRAGMENT_SHADER, "project_back.frag"}}, {});
      framebuffer_ = gl::createFramebuffer();
      glNamedFramebufferDrawBuffer(framebuffer_.id(), GL_COLOR_ATTACHMENT0);
      vertexArray_ = gl::createVertexArray();
    }
    gl::checkError("creating the projector");
  }

  ~GlProjector() override {
    context_->makeCurrent();
    forwardProgram_.reset();
    backProgram_.reset();
    volumeTexture_.reset();
    volumeTarget_.reset();
    projectionLayers_.reset();
    viewBuffer_.reset();
    framebuffer_.reset();
    vertexArray_.reset();
    maxProgram_.reset();
    updateProgram_.reset();
    weightTarget_.reset();
    maskTexture_.reset();
    largest_.reset();
  }

  std::string name() const override { return compute_ ? "compute" : "graphics"; }
  std::string description() const override { return name() + " on " + context_->info().renderer; }

  void forward(const float* volume, const std::size_t* views, std::size_t count, float* projections) override {
    const auto start = std::chrono::steady_clock::now();
    context_->makeCurrent();
    glTextureSubImage3D(volumeTexture_.id(), 0, 0, 0, 0, grid_.size[0], grid_.size[1], grid_.size[2], GL_RED, GL_FLOAT, volume);
    iterateHeld_ = false;  // the texture held the iterate
    forwardTexture(views, count, projections);
    timings_.forward += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void back(const float* projections, const std::size_t* views, std::size_t count, float* volume) override {
    const auto start = std::chrono::steady_clock::now();
    context_->makeCurrent();
    backInto(projections, views, count, volumeTarget_);
    glGetTextureImage(volumeTarget_.id(), 0, GL_RED, GL_FLOAT, static_cast<GLsizei>(grid_.voxelCount() * sizeof(float)), volume);
    gl::checkError(compute_ ? "compute backprojection" : "graphics backprojection");
    timings_.back += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // The iterate on the device: it is the volume texture the forward projection samples; B_S(c) and B_S(1) go to two
  // volume targets, and a compute pass updates the iterate (the graphics backend's raster passes included).
  bool iterateOnDevice() const override { return true; }

  void setIterate(const float* x, std::size_t voxels, const std::uint8_t* mask) override {
    context_->makeCurrent();
    if (voxels != grid_.voxelCount()) throw std::invalid_argument("setIterate: the iterate's size differs from the grid's");
    if (!updateProgram_) {
      maxProgram_ = gl::buildProgram({{GL_COMPUTE_SHADER, "subset_update.comp"}}, {"#define MAX 1"});
      updateProgram_ = gl::buildProgram({{GL_COMPUTE_SHADER, "subset_update.comp"}});
      weightTarget_ = gl::createTexture(GL_TEXTURE_2D_ARRAY);
      glTextureStorage3D(weightTarget_.id(), 1, GL_R32F, grid_.size[0], grid_.size[1], grid_.size[2]);
      largest_ = gl::createBuffer();
      glNamedBufferStorage(largest_.id(), sizeof(GLuint), nullptr, GL_DYNAMIC_STORAGE_BIT);
    }
    glTextureSubImage3D(volumeTexture_.id(), 0, 0, 0, 0, grid_.size[0], grid_.size[1], grid_.size[2], GL_RED, GL_FLOAT, x);
    iterateHeld_ = true;
    masked_ = mask != nullptr;
    if (mask) {
      if (!maskTexture_) {
        maskTexture_ = gl::createTexture(GL_TEXTURE_3D);
        glTextureStorage3D(maskTexture_.id(), 1, GL_R8UI, grid_.size[0], grid_.size[1], grid_.size[2]);
        // Integer textures must not filter; the default (mipmapped) filter would leave it incomplete, reading 0.
        glTextureParameteri(maskTexture_.id(), GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        glTextureParameteri(maskTexture_.id(), GL_TEXTURE_MAG_FILTER, GL_NEAREST);
      }
      glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
      glTextureSubImage3D(maskTexture_.id(), 0, 0, 0, 0, grid_.size[0], grid_.size[1], grid_.size[2], GL_RED_INTEGER, GL_UNSIGNED_BYTE, mask);
      glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    }
    gl::checkError("uploading the iterate");
  }

  void forwardIterate(const std::size_t* views, std::size_t count, float* projections) override {
    const auto start = std::chrono::steady_clock::now();
    context_->makeCurrent();
    requireIterate();
    forwardTexture(views, count, projections);
    timings_.forward += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void updateIterate(const float* correction, const std::size_t* views, std::size_t count, const SubsetRule& rule, const float*) override {
    const auto start = std::chrono::steady_clock::now();
    context_->makeCurrent();
    requireIterate();
    backInto(correction, views, count, volumeTarget_);
    ones_.resize(std::max(ones_.size(), std::min<std::size_t>(count, maxLayers_) * pixels_), 1.0f);
    backInto(ones_.data(), views, count, weightTarget_, /*repeatFirstBatch=*/true);
    const GLuint groups[3] = {static_cast<GLuint>((grid_.size[0] + 7) / 8), static_cast<GLuint>((grid_.size[1] + 7) / 8),
                              static_cast<GLuint>((grid_.size[2] + 3) / 4)};
    // The largest weight, to the host (4 bytes) for the floor, computed there as applySubsetRule does.
    const GLuint zero = 0;
    glNamedBufferSubData(largest_.id(), 0, sizeof zero, &zero);
    glUseProgram(maxProgram_.id());
    glUniform3i(glGetUniformLocation(maxProgram_.id(), "volumeSize"), grid_.size[0], grid_.size[1], grid_.size[2]);
    glBindImageTexture(1, weightTarget_.id(), 0, GL_TRUE, 0, GL_READ_ONLY, GL_R32F);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, largest_.id());
    glDispatchCompute(groups[0], groups[1], groups[2]);
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    GLuint bits = 0;
    glGetNamedBufferSubData(largest_.id(), 0, sizeof bits, &bits);
    float largest = 0.0f;
    std::memcpy(&largest, &bits, sizeof largest);
    const float floor = subsetWeightFloor(largest, count);
    glUseProgram(updateProgram_.id());
    const GLuint program = updateProgram_.id();
    glUniform3i(glGetUniformLocation(program, "volumeSize"), grid_.size[0], grid_.size[1], grid_.size[2]);
    glUniform1i(glGetUniformLocation(program, "masked"), masked_ ? 1 : 0);
    glUniform1i(glGetUniformLocation(program, "multiplicative"), rule.multiplicative ? 1 : 0);
    glUniform1i(glGetUniformLocation(program, "positivity"), rule.positivity ? 1 : 0);
    glUniform1f(glGetUniformLocation(program, "weightFloor"), floor);
    glUniform1f(glGetUniformLocation(program, "lambda"), rule.lambda);
    glBindImageTexture(0, volumeTexture_.id(), 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
    glBindImageTexture(1, weightTarget_.id(), 0, GL_TRUE, 0, GL_READ_ONLY, GL_R32F);
    glBindImageTexture(2, volumeTarget_.id(), 0, GL_TRUE, 0, GL_READ_ONLY, GL_R32F);
    if (masked_) glBindTextureUnit(3, maskTexture_.id());
    glDispatchCompute(groups[0], groups[1], groups[2]);
    // The next forward projection samples the iterate; getIterate reads it back.
    glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    gl::checkError("the subset update");
    timings_.back += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void getIterate(float* x) override {
    context_->makeCurrent();
    requireIterate();
    glGetTextureImage(volumeTexture_.id(), 0, GL_RED, GL_FLOAT, static_cast<GLsizei>(grid_.voxelCount() * sizeof(float)), x);
  }

 private:
  // The iterate shares the volume texture with forward(), which overwrites it: after a forward() the caller must
  // set the iterate again (reconstructIterative makes no such call in between).
  void requireIterate() const {
    if (!iterateHeld_) throw std::logic_error(name() + " projector: no iterate (setIterate first; forward() replaces it)");
  }

  // The forward projection of what the volume texture holds.
  void forwardTexture(const std::size_t* views, std::size_t count, float* projections) {
    const std::size_t pixels = static_cast<std::size_t>(nu_) * nv_;
    for (std::size_t first = 0; first < count; first += maxLayers_) {
      const int n = static_cast<int>(std::min<std::size_t>(maxLayers_, count - first));
      uploadViews(views + first, n);
      glUseProgram(forwardProgram_.id());
      setCommonUniforms(forwardProgram_.id());
      glBindTextureUnit(0, volumeTexture_.id());
      if (compute_) {
        glUniform1i(glGetUniformLocation(forwardProgram_.id(), "count"), n);
        glBindImageTexture(0, projectionLayers_.id(), 0, GL_TRUE, 0, GL_WRITE_ONLY, GL_R32F);
        glDispatchCompute((nu_ + 7) / 8, (nv_ + 7) / 8, n);
        glMemoryBarrier(GL_TEXTURE_UPDATE_BARRIER_BIT);
      } else {
        glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_.id());
        glBindVertexArray(vertexArray_.id());
        glViewport(0, 0, nu_, nv_);
        glDisable(GL_BLEND);
        const GLint viewLocation = glGetUniformLocation(forwardProgram_.id(), "view");
        for (int p = 0; p < n; ++p) {
          glNamedFramebufferTextureLayer(framebuffer_.id(), GL_COLOR_ATTACHMENT0, projectionLayers_.id(), 0, p);
          glUniform1i(viewLocation, p);
          glDrawArrays(GL_TRIANGLES, 0, 3);
        }
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
      }
      glGetTextureSubImage(projectionLayers_.id(), 0, 0, 0, 0, nu_, nv_, n, GL_RED, GL_FLOAT,
                           static_cast<GLsizei>(pixels * n * sizeof(float)), projections + first * pixels);
    }
    gl::checkError(compute_ ? "compute forward projection" : "graphics forward projection");
  }

  // B of the host projections into `target` (overwritten). With repeatFirstBatch every batch reads the first
  // batch's projections (a buffer of ones as large as one batch).
  void backInto(const float* projections, const std::size_t* views, std::size_t count, gl::Texture& target, bool repeatFirstBatch = false) {
    const std::size_t pixels = static_cast<std::size_t>(nu_) * nv_;
    const float zero = 0.0f;
    glClearTexImage(target.id(), 0, GL_RED, GL_FLOAT, &zero);
    for (std::size_t first = 0; first < count; first += maxLayers_) {
      const int n = static_cast<int>(std::min<std::size_t>(maxLayers_, count - first));
      uploadViews(views + first, n);
      glTextureSubImage3D(projectionLayers_.id(), 0, 0, 0, 0, nu_, nv_, n, GL_RED, GL_FLOAT,
                          projections + (repeatFirstBatch ? 0 : first * pixels));
      glUseProgram(backProgram_.id());
      setCommonUniforms(backProgram_.id());
      glUniform1i(glGetUniformLocation(backProgram_.id(), "count"), n);
      glBindTextureUnit(1, projectionLayers_.id());
      if (compute_) {
        glUniform1i(glGetUniformLocation(backProgram_.id(), "accumulate"), first > 0 ? 1 : 0);
        glBindImageTexture(0, target.id(), 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
        glDispatchCompute((grid_.size[0] + 7) / 8, (grid_.size[1] + 7) / 8, grid_.size[2]);
        glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT);
      } else {
        glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_.id());
        glBindVertexArray(vertexArray_.id());
        glViewport(0, 0, grid_.size[0], grid_.size[1]);
        glEnable(GL_BLEND);
        glBlendEquation(GL_FUNC_ADD);
        glBlendFunc(GL_ONE, GL_ONE);
        const GLint sliceLocation = glGetUniformLocation(backProgram_.id(), "slice");
        for (int k = 0; k < grid_.size[2]; ++k) {
          glNamedFramebufferTextureLayer(framebuffer_.id(), GL_COLOR_ATTACHMENT0, target.id(), 0, k);
          glUniform1i(sliceLocation, k);
          glDrawArrays(GL_TRIANGLES, 0, 3);
        }
        glDisable(GL_BLEND);
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
      }
    }
  }

  gl::Program build(const std::vector<gl::ShaderStage>& stages, const std::vector<std::string>& defines) {
    std::vector<std::pair<gl::ShaderStage, std::string>> sources;
    for (const gl::ShaderStage& s : stages) {
      // The shared functions go after the stage's own #extension-free preamble: the stage files have none.
      sources.push_back({s, gl::shaderSource("project_common.glsl") + "\n" + gl::shaderSource(s.name)});
    }
    return gl::buildProgramFromSources(sources, defines);
  }

  void uploadViews(const std::size_t* views, int n) {
    std::vector<float> data(static_cast<std::size_t>(n) * 32, 0.0f);
    for (int p = 0; p < n; ++p) {
      const ProjectorView& o = views_[views[p]];
      float* d = data.data() + p * 32;
      for (int a = 0; a < 3; ++a) {
        d[a] = o.sourceIndex[a];
        d[4 + a] = o.e0[a];
        d[8 + a] = o.eu[a];
        d[12 + a] = o.ev[a];
        d[16 + a] = o.normal[a];
      }
      d[19] = o.weight;
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) d[20 + 4 * r + c] = o.matrix[r][c];
    }
    glNamedBufferSubData(viewBuffer_.id(), 0, static_cast<GLsizeiptr>(data.size() * sizeof(float)), data.data());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, viewBuffer_.id());
  }

  void setCommonUniforms(GLuint program) {
    glUniform3i(glGetUniformLocation(program, "volumeSize"), grid_.size[0], grid_.size[1], grid_.size[2]);
    glUniform3f(glGetUniformLocation(program, "spacing"), static_cast<float>(grid_.spacing.x), static_cast<float>(grid_.spacing.y),
                static_cast<float>(grid_.spacing.z));
    glUniform1f(glGetUniformLocation(program, "stepLength"), static_cast<float>(step_));
    glUniform2i(glGetUniformLocation(program, "detectorSize"), nu_, nv_);
  }

  std::unique_ptr<gl::Context> owned_;  // first: destroyed after the objects below (the destructor resets them)
  gl::Context* context_ = nullptr;      // owned_ or a borrowed one
  bool compute_;
  VolumeGrid grid_;
  int nu_, nv_;
  int maxLayers_ = 1;
  std::vector<ProjectorView> views_;
  gl::Program forwardProgram_, backProgram_;
  gl::Texture volumeTexture_, volumeTarget_, projectionLayers_;
  gl::Buffer viewBuffer_;
  gl::Framebuffer framebuffer_;
  gl::VertexArray vertexArray_;
  // The iterate's passes (setIterate): programs, B_S(1)'s target, the mask, the largest weight.
  gl::Program maxProgram_, updateProgram_;
  gl::Texture weightTarget_, maskTexture_;
  gl::Buffer largest_;
  bool masked_ = false, iterateHeld_ = false;
  std::vector<float> ones_;
};

}  // namespace

std::unique_ptr<Projector> makeGlProjector(bool compute, const Geometry& geometry, const VolumeGrid& grid,
                                           const ProjectorOptions& options) {
  return std::make_unique<GlProjector>(compute, geometry, grid, options);
}

}  // namespace glrecon::detail
