// The forward and Adjoint passes of the GL operators (graphics: raster, compute: compute shaders), in the operator's
// context: the volume is sampled from a 3D texture (R32F, trilinear, border 0) copied from the operator's volume;
// projections from a 2D texture array (R32F, bilinear, border 0). graphics: forward renders one full-detector
// triangle per view into a layer of an R32F array (one fragment per pixel); back renders one proxy slice per z into a
// volume layer (one fragment per voxel), additive blending over batches. compute: the same functions in a compute
// shader.
#include "operators/gl/gl_ray_passes.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "device/gl/context.h"
#include "device/gl/shader.h"
#include "operators/plane_gather.h"

namespace glrecon::detail {
namespace {

// Floats per view in the views' buffer: project_common.glsl's View (12 vec4).
constexpr int kViewFloats = 48;

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

}  // namespace

GlRayPasses::GlRayPasses(bool compute, ProjectorPair pair, const Geometry& geometry, const VolumeGrid& grid, double step)
    : compute_(compute), matched_(pair != ProjectorPair::Interpolating), distanceDriven_(pair == ProjectorPair::DistanceDriven), grid_(grid), nu_(geometry.detector.nu), nv_(geometry.detector.nv), step_(static_cast<float>(step)) {
  views_ = projectorViews(geometry, grid);
  const GLint max3d = integer(GL_MAX_3D_TEXTURE_SIZE), max2d = integer(GL_MAX_TEXTURE_SIZE);
  if (grid.size[0] > max3d || grid.size[1] > max3d || grid.size[2] > max3d || nu_ > max2d || nv_ > max2d)
    throw gl::GlError(std::string(compute ? "compute" : "graphics") + " operator: volume " + std::to_string(grid.size[0]) + "x" +
                      std::to_string(grid.size[1]) + "x" + std::to_string(grid.size[2]) + " or detector " + std::to_string(nu_) + "x" +
                      std::to_string(nv_) + " exceeds the device's texture limits for forward projection (3D " + std::to_string(max3d) +
                      ", 2D " + std::to_string(max2d) + ")");
  // Views per batch: one projection texture layer each (256 keep the texture small; batches accumulate).
  maxLayers_ = std::max(1, std::min<int>(integer(GL_MAX_ARRAY_TEXTURE_LAYERS), 256));
  sampled_ = gl::createTexture(GL_TEXTURE_3D);
  glTextureStorage3D(sampled_.id(), 1, GL_R32F, grid.size[0], grid.size[1], grid.size[2]);
  setBorderSampling(sampled_.id(), true);
  projectionLayers_ = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(projectionLayers_.id(), 1, GL_R32F, nu_, nv_, maxLayers_);
  setBorderSampling(projectionLayers_.id(), false);
  viewBuffer_ = gl::createBuffer();
  glNamedBufferStorage(viewBuffer_.id(), static_cast<GLsizeiptr>(maxLayers_) * kViewFloats * sizeof(float), nullptr, GL_DYNAMIC_STORAGE_BIT);
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
  if (matched_) {
    matchedForward_ = build({{GL_COMPUTE_SHADER, "project_matched.comp"}}, {"#define FORWARD 1"});
    matchedBack_ = build({{GL_COMPUTE_SHADER, "project_matched.comp"}}, {});
    matchedCopy_ = build({{GL_COMPUTE_SHADER, "project_matched.comp"}}, {"#define COPY 1"});
    if (step == 0.0) {  // plane form: one sample per plane only
      matchedWeigh_ = build({{GL_COMPUTE_SHADER, "project_matched.comp"}}, {"#define WEIGH 1"});
      matchedGather_ = build({{GL_COMPUTE_SHADER, "project_matched.comp"}}, {"#define GATHER 1"});
      const FloatSpacing h(grid);
      const int size[3] = {grid.size[0], grid.size[1], grid.size[2]};
      for (const ProjectorView& view : views_) planeGather_.push_back(planeGatherable(view, h, size, nu_, nv_) ? 1 : 0);
    }
    const std::uint64_t bytes = 4 * static_cast<std::uint64_t>(grid.voxelCount());
    const GLint64 largest = [] {
      GLint64 v = 0;
      glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &v);
      return v;
    }();
    if (bytes > static_cast<std::uint64_t>(largest))
      throw gl::GlError(std::string(compute ? "compute" : "graphics") + " operator, matched pair: the transpose's buffer of " +
                        std::to_string(bytes) + " bytes exceeds the device's largest shader storage block (" + std::to_string(largest) +
                        " bytes); use the cuda or cpu backend");
    scatter_ = gl::createBuffer();
    glNamedBufferStorage(scatter_.id(), static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_STORAGE_BIT);
  }
  gl::checkError("preparing the forward and Adjoint passes");
}

GlRayPasses::~GlRayPasses() = default;  // the operator makes its context current first

void GlRayPasses::sample(GLuint volume) {
  // The rays sample a 3D texture (trilinear across slices): the volume's layers copied into it, bit for bit.
  glMemoryBarrier(GL_TEXTURE_UPDATE_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
  glCopyImageSubData(volume, GL_TEXTURE_2D_ARRAY, 0, 0, 0, 0, sampled_.id(), GL_TEXTURE_3D, 0, 0, 0, 0, grid_.size[0], grid_.size[1],
                     grid_.size[2]);
}

void GlRayPasses::forward(GLuint volume, const std::size_t* views, std::size_t count, float* projections) {
  sample(volume);
  forwardTexture(views, count, projections);
}

void GlRayPasses::back(const float* projections, const std::size_t* views, std::size_t count, GLuint target) {
  backInto(projections, views, count, target, /*clear=*/false);
  gl::checkError(compute_ ? "compute Adjoint back projection" : "graphics Adjoint back projection");
}

void GlRayPasses::setMask(const std::uint8_t* mask) {
  masked_ = mask != nullptr;
  if (!mask) return;
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
  gl::checkError("uploading the update mask");
}

void GlRayPasses::updateSubset(GLuint iterate, const float* correction, const std::size_t* views, std::size_t count,
                               const SubsetRule& rule) {
  if (!updateProgram_) {
    maxProgram_ = gl::buildProgram({{GL_COMPUTE_SHADER, "subset_update.comp"}}, {"#define MAX 1"});
    updateProgram_ = gl::buildProgram({{GL_COMPUTE_SHADER, "subset_update.comp"}});
    for (gl::Texture* t : {&updateTarget_, &weightTarget_}) {
      *t = gl::createTexture(GL_TEXTURE_2D_ARRAY);
      glTextureStorage3D(t->id(), 1, GL_R32F, grid_.size[0], grid_.size[1], grid_.size[2]);
    }
    largest_ = gl::createBuffer();
    glNamedBufferStorage(largest_.id(), sizeof(GLuint), nullptr, GL_DYNAMIC_STORAGE_BIT);
    // B_S(1) per subset kept in half the device memory free now (where the driver tells; else 512 MiB, as the host
    // operators cache theirs), at most 8 GiB: it depends on the geometry and the pair only, and recomputing it cost one
    // of every subset's two back projections.
    const long long freeBytes = gl::freeDeviceMemory();
    const std::uint64_t budget = freeBytes > 0 ? std::min<std::uint64_t>(static_cast<std::uint64_t>(freeBytes) / 2, std::uint64_t{8} << 30)
                                               : std::uint64_t{512} << 20;
    cacheCapacity_ = static_cast<std::size_t>(budget / (4 * static_cast<std::uint64_t>(grid_.voxelCount())));
  }
  const GLuint groups[3] = {static_cast<GLuint>((grid_.size[0] + 7) / 8), static_cast<GLuint>((grid_.size[1] + 7) / 8),
                            static_cast<GLuint>((grid_.size[2] + 3) / 4)};
  if (correction) {
    backInto(correction, views, count, updateTarget_.id(), /*clear=*/true);
  } else {
    // The correction correctSubset formed for these views on the device.
    if (correctionViews_ != count) throw std::logic_error("updateSubset: no correction on the device for this subset (correctSubset first)");
    backInto(nullptr, views, count, updateTarget_.id(), /*clear=*/true, /*repeatFirstBatch=*/false, correction_.id());
    correctionViews_ = 0;
  }
  const std::vector<std::size_t> key(views, views + count);
  GLuint weights = weightTarget_.id();
  float largest = 0.0f;
  if (auto cached = weightCache_.find(key); cached != weightCache_.end()) {
    weights = cached->second.weights.id();
    largest = cached->second.largest;
  } else {
    gl::Texture kept;
    if (weightCache_.size() < cacheCapacity_) {
      kept = gl::createTexture(GL_TEXTURE_2D_ARRAY);
      glTextureStorage3D(kept.id(), 1, GL_R32F, grid_.size[0], grid_.size[1], grid_.size[2]);
      weights = kept.id();
    }
    ones_.resize(std::max(ones_.size(), std::min<std::size_t>(count, maxLayers_) * static_cast<std::size_t>(nu_) * nv_), 1.0f);
    backInto(ones_.data(), views, count, weights, /*clear=*/true, /*repeatFirstBatch=*/true);
    // The largest weight, to the host (4 bytes) for the floor, computed there as applySubsetRule does.
    const GLuint zero = 0;
    glNamedBufferSubData(largest_.id(), 0, sizeof zero, &zero);
    glUseProgram(maxProgram_.id());
    glUniform3i(glGetUniformLocation(maxProgram_.id(), "volumeSize"), grid_.size[0], grid_.size[1], grid_.size[2]);
    glBindImageTexture(1, weights, 0, GL_TRUE, 0, GL_READ_ONLY, GL_R32F);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, largest_.id());
    glDispatchCompute(groups[0], groups[1], groups[2]);
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
    GLuint bits = 0;
    glGetNamedBufferSubData(largest_.id(), 0, sizeof bits, &bits);
    std::memcpy(&largest, &bits, sizeof largest);
    if (kept) weightCache_.emplace(key, SubsetWeights{std::move(kept), largest});
  }
  const float floor = subsetWeightFloor(largest, count);
  const GLuint program = updateProgram_.id();
  glUseProgram(program);
  glUniform3i(glGetUniformLocation(program, "volumeSize"), grid_.size[0], grid_.size[1], grid_.size[2]);
  glUniform1i(glGetUniformLocation(program, "masked"), masked_ ? 1 : 0);
  glUniform1i(glGetUniformLocation(program, "multiplicative"), rule.multiplicative ? 1 : 0);
  glUniform1i(glGetUniformLocation(program, "positivity"), rule.positivity ? 1 : 0);
  glUniform1f(glGetUniformLocation(program, "weightFloor"), floor);
  glUniform1f(glGetUniformLocation(program, "lambda"), rule.lambda);
  glBindImageTexture(0, iterate, 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
  glBindImageTexture(1, weights, 0, GL_TRUE, 0, GL_READ_ONLY, GL_R32F);
  glBindImageTexture(2, updateTarget_.id(), 0, GL_TRUE, 0, GL_READ_ONLY, GL_R32F);
  if (masked_) glBindTextureUnit(3, maskTexture_.id());
  glDispatchCompute(groups[0], groups[1], groups[2]);
  // The next forward projection copies the iterate; a readback reads it.
  glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
  gl::checkError("the subset update");
}

void GlRayPasses::drawForward(const std::size_t* views, int n) {
  uploadViews(views, n);
  const GLuint program = matched_ ? matchedForward_.id() : forwardProgram_.id();
  glUseProgram(program);
  setCommonUniforms(program);
  glBindTextureUnit(0, sampled_.id());
  if (compute_ || matched_) {
    glUniform1i(glGetUniformLocation(program, "count"), n);
    glBindImageTexture(0, projectionLayers_.id(), 0, GL_TRUE, 0, GL_WRITE_ONLY, GL_R32F);
    glDispatchCompute((nu_ + 7) / 8, (nv_ + 7) / 8, n);
    glMemoryBarrier(GL_TEXTURE_UPDATE_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
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
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
  }
}

// The forward projection of what the 3D texture holds.
void GlRayPasses::forwardTexture(const std::size_t* views, std::size_t count, float* projections) {
  const std::size_t pixels = static_cast<std::size_t>(nu_) * nv_;
  for (std::size_t first = 0; first < count; first += maxLayers_) {
    const int n = static_cast<int>(std::min<std::size_t>(maxLayers_, count - first));
    drawForward(views + first, n);
    glGetTextureSubImage(projectionLayers_.id(), 0, 0, 0, 0, nu_, nv_, n, GL_RED, GL_FLOAT, static_cast<GLsizei>(pixels * n * sizeof(float)),
                         projections + first * pixels);
  }
  gl::checkError(compute_ ? "compute forward projection" : "graphics forward projection");
}

void GlRayPasses::uploadBatch(const float* projections, std::size_t first, int n, bool repeatFirstBatch, GLuint unpack) {
  const std::size_t pixels = static_cast<std::size_t>(nu_) * nv_, offset = repeatFirstBatch ? 0 : first * pixels;
  if (!unpack) {
    glTextureSubImage3D(projectionLayers_.id(), 0, 0, 0, 0, nu_, nv_, n, GL_RED, GL_FLOAT, projections + offset);
    return;
  }
  // From the device buffer: the pointer argument is a byte offset into the bound unpack buffer.
  glMemoryBarrier(GL_PIXEL_BUFFER_BARRIER_BIT);
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, unpack);
  glTextureSubImage3D(projectionLayers_.id(), 0, 0, 0, 0, nu_, nv_, n, GL_RED, GL_FLOAT,
                      reinterpret_cast<const void*>(static_cast<std::uintptr_t>(offset * sizeof(float))));
  glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
}

// B of the host projections into `target`: cleared first (`clear`), or added to what it holds. With repeatFirstBatch
// every batch reads the first batch's projections (a buffer of ones as large as one batch). Per voxel a batch's sum
// is formed, then added (compute) or blended (graphics) into the target.
void GlRayPasses::backInto(const float* projections, const std::size_t* views, std::size_t count, GLuint target, bool clear,
                           bool repeatFirstBatch, GLuint unpack) {
  if (matched_) return matchedBackInto(projections, views, count, target, clear, repeatFirstBatch, unpack);
  if (clear) {
    const float zero = 0.0f;
    glClearTexImage(target, 0, GL_RED, GL_FLOAT, &zero);
  }
  for (std::size_t first = 0; first < count; first += maxLayers_) {
    const int n = static_cast<int>(std::min<std::size_t>(maxLayers_, count - first));
    uploadViews(views + first, n);
    uploadBatch(projections, first, n, repeatFirstBatch, unpack);
    glUseProgram(backProgram_.id());
    setCommonUniforms(backProgram_.id());
    glUniform1i(glGetUniformLocation(backProgram_.id(), "count"), n);
    glBindTextureUnit(1, projectionLayers_.id());
    if (compute_) {
      // A cleared target's first batch stores its sums; otherwise each batch adds to what is there.
      glUniform1i(glGetUniformLocation(backProgram_.id(), "accumulate"), !clear || first > 0 ? 1 : 0);
      glBindImageTexture(0, target, 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
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
        glNamedFramebufferTextureLayer(framebuffer_.id(), GL_COLOR_ATTACHMENT0, target, 0, k);
        glUniform1i(sliceLocation, k);
        glDrawArrays(GL_TRIANGLES, 0, 3);
      }
      glDisable(GL_BLEND);
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
    }
  }
}

// The matched pair's transpose: every batch's rays scatter into the buffer of float bits (zeroed first), which is then
// added to the target (or stored, where `clear`).
void GlRayPasses::matchedBackInto(const float* projections, const std::size_t* views, std::size_t count, GLuint target, bool clear,
                                  bool repeatFirstBatch, GLuint unpack) {
  const GLuint zero = 0;
  glClearNamedBufferData(scatter_.id(), GL_R32UI, GL_RED_INTEGER, GL_UNSIGNED_INT, &zero);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, scatter_.id());
  for (std::size_t first = 0; first < count; first += maxLayers_) {
    const int n = static_cast<int>(std::min<std::size_t>(maxLayers_, count - first));
    uploadViews(views + first, n);
    uploadBatch(projections, first, n, repeatFirstBatch, unpack);
    const int inPlaneForm = planeGather_.empty() ? 0 : static_cast<int>(std::count_if(views + first, views + first + n, [&](std::size_t v) {
      return planeGather_[v] != 0;
    }));
    glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    if (inPlaneForm > 0) {
      // The plane-form views: each pixel times its ray's length in place, then every voxel run gathers its share.
      glUseProgram(matchedWeigh_.id());
      setCommonUniforms(matchedWeigh_.id());
      glUniform1i(glGetUniformLocation(matchedWeigh_.id(), "count"), n);
      glBindImageTexture(0, projectionLayers_.id(), 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
      glDispatchCompute((nu_ + 7) / 8, (nv_ + 7) / 8, n);
      // The gather fetches the weighed layers; the next batch's upload replaces them (after the gather's reads).
      glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT);
      glUseProgram(matchedGather_.id());
      setCommonUniforms(matchedGather_.id());
      glUniform1i(glGetUniformLocation(matchedGather_.id(), "count"), n);
      glBindTextureUnit(1, projectionLayers_.id());
      glDispatchCompute((grid_.size[0] + 31) / 32, (grid_.size[2] + 1) / 2, (grid_.size[1] + 7) / 8);
      glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT);
    }
    if (inPlaneForm < n) {
      glUseProgram(matchedBack_.id());
      setCommonUniforms(matchedBack_.id());
      glUniform1i(glGetUniformLocation(matchedBack_.id(), "count"), n);
      glBindTextureUnit(1, projectionLayers_.id());
      glDispatchCompute((nu_ + 7) / 8, (nv_ + 7) / 8, n);
      glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT);
    }
  }
  glUseProgram(matchedCopy_.id());
  setCommonUniforms(matchedCopy_.id());
  glUniform1i(glGetUniformLocation(matchedCopy_.id(), "accumulate"), clear ? 0 : 1);
  glBindImageTexture(0, target, 0, GL_TRUE, 0, GL_READ_WRITE, GL_R32F);
  glDispatchCompute((grid_.size[0] + 7) / 8, (grid_.size[1] + 7) / 8, grid_.size[2]);
  glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT | GL_TEXTURE_FETCH_BARRIER_BIT);
}

gl::Program GlRayPasses::build(const std::vector<gl::ShaderStage>& stages, const std::vector<std::string>& defines) {
  std::vector<std::pair<gl::ShaderStage, std::string>> sources;
  // The shared functions go after the stage's own #extension-free preamble: the stage files have none.
  for (const gl::ShaderStage& s : stages) sources.push_back({s, gl::shaderSource("project_common.glsl") + "\n" + gl::shaderSource(s.name)});
  return gl::buildProgramFromSources(sources, defines);
}

void GlRayPasses::uploadViews(const std::size_t* views, int n) {
  std::vector<float> data(static_cast<std::size_t>(n) * kViewFloats, 0.0f);
  const FloatSpacing h(grid_);
  for (int p = 0; p < n; ++p) {
    const ProjectorView& o = views_[views[p]];
    float* d = data.data() + p * kViewFloats;
    if (!planeGather_.empty() && planeGather_[views[p]]) {  // View::plane (project_common.glsl)
      const PlaneView v = planeViewOf(o, h);
      const float plane[16] = {1.0f, static_cast<float>(v.m), v.sm, v.sn, v.sy, v.e0m, v.e0n, v.e0y,
                               v.eum, v.eun, v.evy, v.ratioN, v.ratioY, v.hm, distanceDriven_ ? 1.0f : 0.0f, 0.0f};
      std::copy(plane, plane + 16, d + 32);
    }
    for (int a = 0; a < 3; ++a) {
      d[a] = o.sourceIndex[a];
      d[4 + a] = o.e0[a];
      d[8 + a] = o.eu[a];
      d[12 + a] = o.ev[a];
      d[16 + a] = o.normal[a];
    }
    d[3] = static_cast<float>(o.mainAxis);  // sourceIndex.w
    d[7] = static_cast<float>(o.parallel);  // e0.w
    d[19] = o.weight;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) d[20 + 4 * r + c] = o.matrix[r][c];
  }
  glNamedBufferSubData(viewBuffer_.id(), 0, static_cast<GLsizeiptr>(data.size() * sizeof(float)), data.data());
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, viewBuffer_.id());
}

bool GlRayPasses::setSubsetData(const float* projections, const float* rayLengths, std::size_t views, float rayFloor, bool multiplicative) {
  const std::size_t values = views * static_cast<std::size_t>(nu_) * nv_;
  const std::uint64_t bytes = 3 * sizeof(float) * static_cast<std::uint64_t>(values);
  // As cuda: the data, the lengths and a whole scan's correction only where they take at most half of what is free
  // (where the driver does not tell, up to 2 GiB); else the caller forms the corrections on the host.
  const long long freeBytes = gl::freeDeviceMemory();
  if (bytes > (freeBytes > 0 ? static_cast<std::uint64_t>(freeBytes) / 2 : std::uint64_t{2} << 30)) return false;
  GLint64 largestBlock = 0;
  glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &largestBlock);
  if (values * sizeof(float) > static_cast<std::uint64_t>(largestBlock)) return false;
  if (!correctProgram_) correctProgram_ = gl::buildProgram({{GL_COMPUTE_SHADER, "subset_correct.comp"}});
  const auto make = [](gl::Buffer& buffer, std::size_t size, const void* values) {
    buffer = gl::createBuffer();
    glNamedBufferStorage(buffer.id(), static_cast<GLsizeiptr>(size), values, GL_DYNAMIC_STORAGE_BIT);
  };
  make(data_, values * sizeof(float), projections);
  make(lengths_, values * sizeof(float), rayLengths);
  make(correction_, values * sizeof(float), nullptr);
  make(viewIndex_, views * sizeof(GLint), nullptr);
  const std::size_t groups = static_cast<std::size_t>((nu_ + 7) / 8) * ((nv_ + 7) / 8) * maxLayers_;
  make(partials_, groups * sizeof(double), nullptr);
  rayFloor_ = rayFloor;
  multiplicative_ = multiplicative;
  correctionViews_ = 0;
  gl::checkError("keeping the subsets' data on the device");
  return true;
}

double GlRayPasses::correctSubset(GLuint volume, const std::size_t* views, std::size_t count) {
  if (!data_) throw std::logic_error("correctSubset: no data on the device (setSubsetData first)");
  sample(volume);
  std::vector<GLint> indices(views, views + count);
  glNamedBufferSubData(viewIndex_.id(), 0, static_cast<GLsizeiptr>(count * sizeof(GLint)), indices.data());
  double squares = 0.0;
  std::vector<double> partials;
  for (std::size_t first = 0; first < count; first += maxLayers_) {
    const int n = static_cast<int>(std::min<std::size_t>(maxLayers_, count - first));
    drawForward(views + first, n);
    const GLuint program = correctProgram_.id();
    glUseProgram(program);
    glUniform2i(glGetUniformLocation(program, "detectorSize"), nu_, nv_);
    glUniform1i(glGetUniformLocation(program, "count"), n);
    glUniform1i(glGetUniformLocation(program, "first"), static_cast<GLint>(first));
    glUniform1f(glGetUniformLocation(program, "rayFloor"), rayFloor_);
    glUniform1i(glGetUniformLocation(program, "multiplicative"), multiplicative_ ? 1 : 0);
    glBindImageTexture(0, projectionLayers_.id(), 0, GL_TRUE, 0, GL_READ_ONLY, GL_R32F);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 2, data_.id());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 3, lengths_.id());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 4, viewIndex_.id());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 5, correction_.id());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 6, partials_.id());
    const GLuint gx = static_cast<GLuint>((nu_ + 7) / 8), gy = static_cast<GLuint>((nv_ + 7) / 8);
    glDispatchCompute(gx, gy, static_cast<GLuint>(n));
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT | GL_PIXEL_BUFFER_BARRIER_BIT | GL_SHADER_STORAGE_BARRIER_BIT);
    // The work groups' sums, added in order: the same bits every run (a few KB read back per batch).
    partials.resize(static_cast<std::size_t>(gx) * gy * n);
    glGetNamedBufferSubData(partials_.id(), 0, static_cast<GLsizeiptr>(partials.size() * sizeof(double)), partials.data());
    for (double p : partials) squares += p;
  }
  correctionViews_ = count;
  gl::checkError(compute_ ? "compute subset correction" : "graphics subset correction");
  return squares;
}

void GlRayPasses::setCommonUniforms(GLuint program) {
  glUniform3i(glGetUniformLocation(program, "volumeSize"), grid_.size[0], grid_.size[1], grid_.size[2]);
  glUniform3fv(glGetUniformLocation(program, "spacing"), 1, FloatSpacing(grid_));
  glUniform1f(glGetUniformLocation(program, "stepLength"), step_);
  glUniform2i(glGetUniformLocation(program, "detectorSize"), nu_, nv_);
}

}  // namespace glrecon::detail
