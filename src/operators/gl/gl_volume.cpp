#include "operators/gl/gl_volume.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/user_cache.h"
#include "glrecon/errors.h"
#include "glrecon/filter.h"
#include "glrecon/parallel.h"
#include "glrecon/progress.h"
#include "glrecon/slab.h"
#include "device/gl/shader.h"
#include "device/gl/state_scope.h"

namespace glrecon::detail {
int uniformWindowLimit() { return gl::integer(GL_MAX_UNIFORM_BLOCK_SIZE) / (3 * 16); }

GlVolume::GlVolume(gl::Context* borrowed, const Geometry& g, const VolumeGrid& v, const OperatorOptions& o,
                                 const std::string& name)
    : geometry(g),
      grid(v),
      options(o),
      blockCapacity(std::max(0, o.blockRows)),
      allocatedRows(o.blockRows > 0 ? std::min(o.blockRows, v.size[1]) : v.size[1]),
      rows(allocatedRows) {
  if (borrowed) {
    context_ = borrowed;
  } else {
    ownedContext_ = gl::Context::headless(o.device);
    context_ = ownedContext_.get();
  }
  context_->makeCurrent();
  where_ = name + " on " + context_->info().renderer;

  // Limits: the volume lives in one texture array, processed at slice resolution; projections in another.
  const GLint maxTexture = gl::integer(GL_MAX_TEXTURE_SIZE), maxLayers = gl::integer(GL_MAX_ARRAY_TEXTURE_LAYERS);
  GLint viewport[2] = {0, 0};
  glGetIntegerv(GL_MAX_VIEWPORT_DIMS, viewport);
  // Slabs split y only: the suggestion goes with the limits they lift (height, memory), not with width or slices.
  const auto limit = [&](const std::string& field, long long value, long long max, bool slabsHelp = false) {
    if (value > max)
      throwInputError(where_, field,
                      "at most " + std::to_string(max) + " (this GPU's limit" +
                          (slabsHelp && blockCapacity == 0 ? std::string("; ") + slabSuggestion() : std::string()) + ")",
                      std::to_string(value));
  };
  limit("volume size x", grid.size[0], std::min<GLint>(maxTexture, viewport[0]));
  if (blockCapacity > 0) {
    // The texture holds allocatedRows of y, but the graphics path's viewport spans the whole grid's rows.
    limit("volume size y", grid.size[1], viewport[1]);
    limit("volume size y (rows per slab)", allocatedRows, maxTexture);
  } else {
    limit("volume size y", grid.size[1], std::min<GLint>(maxTexture, viewport[1]), true);
  }
  limit("volume size z (slices, texture array layers)", grid.size[2], maxLayers);
  limit("detector width", geometry.detector.nu, maxTexture);
  limit("detector height", geometry.detector.nv, maxTexture);
  if (const long long free = gl::freeDeviceMemory(); free >= 0)
    limit("GPU memory for the volume (bytes)", static_cast<long long>(grid.size[0]) * allocatedRows * grid.size[2] * 4, free, true);

  volume = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(volume.id(), 1, GL_R32F, grid.size[0], allocatedRows, grid.size[2]);
  const float zero = 0.0f;
  glClearTexImage(volume.id(), 0, GL_RED, GL_FLOAT, &zero);
  gl::checkError(("allocating the " + std::to_string(grid.size[0]) + " x " + std::to_string(allocatedRows) + " x " +
                  std::to_string(grid.size[2]) + " volume texture").c_str());
}

GlVolume::~GlVolume() {
  context_->makeCurrent();  // the members' GL objects go in this context
}

void GlVolume::setWindowLimit(int limit) {
  maxWindow = std::max(1, std::min({limit, gl::integer(GL_MAX_ARRAY_TEXTURE_LAYERS), static_cast<int>(geometry.size())}));
  if (options.window < kMaximumWindow || options.window > maxWindow)
    throw UsageError(field("window") + ": expected 1 to " + std::to_string(maxWindow) + " (this device's limit), max or auto, found " +
                     std::to_string(options.window));
  if (const long long free = gl::freeDeviceMemory(); free >= 0) {
    const long long bytes = 2LL * 2 * geometry.detector.nu * geometry.detector.nv * maxWindow * 4;  // texture and staging, two halves
    if (bytes > free)
      throwInputError(where_, "GPU memory for the projection window (bytes)", "at most " + std::to_string(free), std::to_string(bytes));
  }
  projections = gl::createTexture(GL_TEXTURE_2D_ARRAY);
  glTextureStorage3D(projections.id(), 1, GL_R32F, geometry.detector.nu, geometry.detector.nv, 2 * maxWindow);
  const GLsizeiptr stagingBytes = static_cast<GLsizeiptr>(2) * maxWindow * geometry.detector.nu * geometry.detector.nv * sizeof(float);
  staging_ = gl::MappedBuffer(stagingBytes, GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT);
  if (!staging_.as<float>()) throw gl::GlError(where_ + ": cannot map the projection staging buffer");
  glTextureParameteri(projections.id(), GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTextureParameteri(projections.id(), GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  // Outside the detector a sample is 0 (border colour 0): the convention every backend shares.
  glTextureParameteri(projections.id(), GL_TEXTURE_WRAP_S, GL_CLAMP_TO_BORDER);
  glTextureParameteri(projections.id(), GL_TEXTURE_WRAP_T, GL_CLAMP_TO_BORDER);
  const float border[4] = {0, 0, 0, 0};
  glTextureParameterfv(projections.id(), GL_TEXTURE_BORDER_COLOR, border);
  if (blockCapacity > 0) {
    // Row bands leave the other rows of a layer as they were: never sampled by the slab's voxels, but defined.
    const float zero = 0.0f;
    glClearTexImage(projections.id(), 0, GL_RED, GL_FLOAT, &zero);
  }
  matrices = gl::createBuffer();
  glNamedBufferStorage(matrices.id(), static_cast<GLsizeiptr>(maxWindow) * 3 * 16, nullptr, GL_DYNAMIC_STORAGE_BIT);

  if (options.window == kMaximumWindow) {
    window = maxWindow;
  } else if (options.window > 0) {
    window = options.window;
  } else if (const int remembered = rememberedWindow(); remembered > 0) {
    window = remembered;
  } else {
    searching_ = true;
    for (int w : {1, 2, 4, 8, 16, 32})
      if (w < maxWindow) candidates_.push_back(w);
    candidates_.push_back(maxWindow);
    window = candidates_.front();
  }
  gl::checkError(where_.c_str());
}

void GlVolume::uploadMatrices() {
  std::vector<float> rows(static_cast<std::size_t>(12) * pending.size());
  for (std::size_t s = 0; s < pending.size(); ++s) {
    const ProjectionMatrix m = geometry.matrix(pending[s], grid);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) rows[(s * 3 + r) * 4 + c] = static_cast<float>(m.m[r][c]);
  }
  glNamedBufferSubData(matrices.id(), 0, static_cast<GLsizeiptr>(rows.size() * sizeof(float)), rows.data());
  glBindBufferBase(GL_UNIFORM_BUFFER, 0, matrices.id());
}

namespace {
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

void GlVolume::add(const float* data, const std::size_t* views, std::size_t count, const std::function<void()>& draw) {
  context_->makeCurrent();
  const int nu = geometry.detector.nu, nv = geometry.detector.nv;
  const std::size_t pixels = static_cast<std::size_t>(nu) * nv;
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry.size()) throw std::out_of_range("backproject: view index beyond the geometry");
  for (std::size_t p = 0; p < count;) {
    const int slot = static_cast<int>(pending.size());
    const auto t = std::chrono::steady_clock::now();
    const int half = layerBase == 0 ? 0 : 1;
    // The last pass that read this half must be done before its staging memory and layers are rewritten.
    if (slot == 0) fences_[half].wait(GLuint64{60} * 1000000000);
    // The projections that fill this window, copied by several threads (one core copies about 8 GB/s, and
    // this thread also feeds the GPU), then one upload call for all of them.
    const std::size_t n = std::min(count - p, static_cast<std::size_t>(window - slot));
    const std::size_t layer = static_cast<std::size_t>(layerBase + slot);
    float* to = staging_.as<float>() + layer * pixels;
    const int threads = std::min(8, resolveThreadCount(options.threads));
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, staging_.id());
    if (blockCapacity > 0) {
      // Each projection's band of rows only, staged and uploaded at its own rows of its own layer: texture
      // coordinates and size stay those of the whole detector; by the band's construction the slab's voxels
      // sample no row outside it.
      // The bands copied on the threads at once (a parallel copy per projection started and joined its threads for
      // every projection of every slab), then uploaded one by one.
      std::vector<RowBand> bands(n);
      for (std::size_t s = 0; s < n; ++s) bands[s] = blockBands()[views[p + s]];
      parallelFor(n, 1, threads, [&](std::size_t b, std::size_t e) {
        for (std::size_t s = b; s < e; ++s) {
          const std::size_t offset = s * pixels + static_cast<std::size_t>(bands[s].first) * nu;
          const float* from = data + (p + s) * pixels + static_cast<std::size_t>(bands[s].first) * nu;
          std::copy(from, from + static_cast<std::size_t>(std::max(0, bands[s].count)) * nu, to + offset);
        }
      });
      for (std::size_t s = 0; s < n; ++s) {
        const RowBand band = bands[s];
        if (band.count == 0) continue;
        const std::size_t offset = s * pixels + static_cast<std::size_t>(band.first) * nu;
        const std::size_t length = static_cast<std::size_t>(band.count) * nu;
        GLRECON_CHECK_GL(glTextureSubImage3D(projections.id(), 0, 0, band.first, static_cast<GLint>(layer + s), nu, band.count, 1, GL_RED,
                                             GL_FLOAT, reinterpret_cast<const void*>((layer * pixels + offset) * sizeof(float))));
        uploaded += static_cast<double>(length) * sizeof(float);
      }
    } else {
      parallelFor(n * pixels, std::size_t{1} << 18, threads,
                  [&](std::size_t b, std::size_t e) { std::copy(data + p * pixels + b, data + p * pixels + e, to + b); });
      GLRECON_CHECK_GL(glTextureSubImage3D(projections.id(), 0, 0, 0, static_cast<GLint>(layer), nu, nv, static_cast<GLsizei>(n), GL_RED,
                                           GL_FLOAT, reinterpret_cast<const void*>(layer * pixels * sizeof(float))));
      uploaded += static_cast<double>(n * pixels) * sizeof(float);
    }
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    if (options.profile) {  // upload and draw timed apart: each upload finished before the clock stops
      glFinish();
      profile.upload += since(t);
    }
    pending.insert(pending.end(), views + p, views + p + n);
    p += n;
    if (static_cast<int>(pending.size()) == window) drawWindow(draw);
  }
  gl::checkError(where_.c_str());
}

gl::ProjectionWindow* GlVolume::nextWindow(const std::function<void()>& draw) {
  context_->makeCurrent();
  if (!pending.empty()) drawPending(draw);
  const int half = layerBase == 0 ? 0 : 1;
  // The last pass that read this half must be done before its staging memory and layers are rewritten.
  fences_[half].wait(GLuint64{60} * 1000000000);
  const std::size_t pixels = static_cast<std::size_t>(geometry.detector.nu) * geometry.detector.nv;
  window_.capacity = static_cast<std::size_t>(maxWindow);
  window_.context = context_;
  window_.texture = projections.id();
  window_.firstLayer = layerBase;
  window_.width = geometry.detector.nu;
  window_.height = geometry.detector.nv;
  window_.stagingBuffer = staging_.id();
  window_.stagingOffset = static_cast<std::size_t>(layerBase) * pixels * sizeof(float);
  window_.staging = staging_.as<float>() + static_cast<std::size_t>(layerBase) * pixels;
  window_.rowBands = blockCapacity > 0 ? blockBands() : nullptr;  // a twin sends and filters only the block's rows
  return &window_;
}

void GlVolume::addWindow(const std::size_t* views, std::size_t count, const std::function<void()>& draw) {
  context_->makeCurrent();
  for (std::size_t p = 0; p < count; ++p)
    if (views[p] >= geometry.size()) throw std::out_of_range("back: view index beyond the geometry");
  if (!pending.empty() || count == 0 || static_cast<int>(count) > window)
    throw std::logic_error("back(window): expected 1 to " + std::to_string(window) + " projections and nothing waiting, found " +
                           std::to_string(count));
  pending.assign(views, views + count);
  uploaded += std::exchange(window_.sentBytes, 0.0);  // what the twin sent into this window
  // A full window is drawn as add() draws one (timed while the window search runs), a last partial one as flush() does.
  if (static_cast<int>(count) == window)
    drawWindow(draw);
  else
    drawPending(draw);
}

void GlVolume::flush(const std::function<void()>& draw) {
  context_->makeCurrent();
  if (!pending.empty()) drawPending(draw);
}

void GlVolume::finishWindow() {
  const int half = layerBase == 0 ? 0 : 1;
  fences_[half] = gl::Fence::insert();
  layerBase = layerBase == 0 ? maxWindow : 0;
}

void GlVolume::drawPending(const std::function<void()>& draw) {
  const auto t = std::chrono::steady_clock::now();
  draw();
  pending.clear();
  finishWindow();
  if (options.profile) {
    glFinish();
    profile.compute += since(t);
  }
}

// While searching, runs each candidate size for two passes and times the second: the first pays for
// first-use costs (Mesa's llvmpipe compiles a shader variant at its first draw, which made a first pass of
// W = 2 look 30 times slower per projection than W = 1). Every pass is real work.
void GlVolume::drawWindow(const std::function<void()>& draw) {
  if (!searching_) return drawPending(draw);
  glFinish();
  const auto start = std::chrono::steady_clock::now();
  const int w = static_cast<int>(pending.size());
  draw();
  pending.clear();
  finishWindow();
  glFinish();
  const double seconds = since(start);
  profile.compute += seconds;
  if (++passesAtCandidate_ < 2) return;
  timings.emplace_back(w, seconds / w);
  passesAtCandidate_ = 0;
  if (++candidate_ < candidates_.size()) {
    window = candidates_[candidate_];
  } else {
    searching_ = false;
    window = std::min_element(timings.begin(), timings.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    rememberWindow(window);
  }
}

VolumeGrid GlVolume::heldGrid() const { return blockCapacity > 0 ? slabGrid(grid, blockFirst, rows) : grid; }

Image GlVolume::readVolume() {
  Image result(heldGrid());
  readVolumeInto(result.data.data());
  return result;
}

// glGetTextureImage into client memory made the driver copy through its own small buffer and ran at
// 0.6-1.8 GB/s on the H200; into a pixel-pack buffer the copy is the GPU's, and chunks let it overlap the
// host's copy out of the mapped memory.
void GlVolume::readVolumeInto(float* destination, int volumeRows) {
  context_->makeCurrent();
  if (options.profile) glFinish();
  const auto t = std::chrono::steady_clock::now();
  glMemoryBarrier(GL_TEXTURE_UPDATE_BARRIER_BIT | GL_PIXEL_BUFFER_BARRIER_BIT);  // after image stores (compute) as after rendering
  // In slab mode the buffer is laid out for the allocated rows; a shorter (last) slab uses part of each half.
  const int nx = grid.size[0], ny = rows, nz = grid.size[2];
  const std::size_t sliceFloats = static_cast<std::size_t>(nx) * ny;
  const std::size_t halfSliceFloats = static_cast<std::size_t>(nx) * allocatedRows;
  if (!readback_) {
    // A 64th of the volume (of the block, in slabs), from 32 to 256 MiB: the host's copies bound the readback (the
    // GPU's copies run ahead: 4-6 ms of 2 s waiting for them at 32 GiB on an H200), and each chunk's copy starts and
    // joins its threads, about a millisecond a chunk. Two H200s reading 16 GiB each took 1.34 s in 32 MiB chunks,
    // 0.88 s in 256 MiB; one reading 32 GiB 1.96 s and 0.97 s. But the mapped buffer (two chunks) is pinned host
    // memory made at the first readback: two of 256 MiB took 0.19 s there, more than 256 MiB chunks save on a 4 GiB
    // volume. GLRECON_READBACK_MIB sets the size, to measure.
    const std::size_t volumeBytes = halfSliceFloats * sizeof(float) * static_cast<std::size_t>(nz);
    const char* mib = std::getenv("GLRECON_READBACK_MIB");
    const unsigned long asked = mib ? std::strtoul(mib, nullptr, 10) : 0;
    const std::size_t chunkBytes = asked > 0 ? std::min<std::size_t>(asked, 1024) << 20
                                             : std::clamp(volumeBytes / 64, std::size_t{32} << 20, std::size_t{256} << 20);
    // A chunk's bytes are a GLsizei in the copy: at most INT_MAX (one slice at least).
    const std::size_t sliceBytes = halfSliceFloats * sizeof(float);
    readbackLayers_ = std::clamp<std::size_t>(std::min(chunkBytes, static_cast<std::size_t>(INT_MAX)) / sliceBytes, 1, static_cast<std::size_t>(nz));
    const GLsizeiptr bytes = static_cast<GLsizeiptr>(2 * readbackLayers_ * halfSliceFloats * sizeof(float));
    readback_ = gl::MappedBuffer(bytes, GL_MAP_READ_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT, GL_CLIENT_STORAGE_BIT);
    if (!readback_.as<float>()) throw gl::GlError(where_ + ": cannot map the readback buffer");
  }
  const std::size_t chunks = (static_cast<std::size_t>(nz) + readbackLayers_ - 1) / readbackLayers_;
  gl::Fence done[2];
  const auto issue = [&](std::size_t c) {
    const int first = static_cast<int>(c * readbackLayers_);
    const int layers = std::min<int>(static_cast<int>(readbackLayers_), nz - first);
    const std::size_t offset = (c % 2) * readbackLayers_ * halfSliceFloats * sizeof(float);
    glBindBuffer(GL_PIXEL_PACK_BUFFER, readback_.id());
    glGetTextureSubImage(volume.id(), 0, 0, 0, first, nx, ny, layers, GL_RED, GL_FLOAT,
                         static_cast<GLsizei>(layers * sliceFloats * sizeof(float)), reinterpret_cast<void*>(offset));
    glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
    done[c % 2] = gl::Fence::insert();
    glFlush();
  };
  // GLRECON_TRACE: how the readback's time splits between waiting for the GPU's copies and the host's.
  double waiting = 0, copying = 0;
  issue(0);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) issue(c + 1);  // its half held chunk c - 1, already copied out
    const auto tw = std::chrono::steady_clock::now();
    done[c % 2].wait(GLuint64{60} * 1000000000);
    waiting += since(tw);
    const auto tc = std::chrono::steady_clock::now();
    const std::size_t first = c * readbackLayers_;
    const std::size_t n = std::min(readbackLayers_, static_cast<std::size_t>(nz) - first) * sliceFloats;
    const float* from = readback_.as<float>() + (c % 2) * readbackLayers_ * halfSliceFloats;
    if (volumeRows <= 0) {
      float* to = destination + first * sliceFloats;
      parallelFor(n, std::size_t{1} << 18, options.threads,
                  [&](std::size_t b, std::size_t e) { std::copy(from + b, from + e, to + b); });
    } else {
      const std::size_t base = first * sliceFloats;
      parallelFor(n, std::size_t{1} << 18, options.threads, [&](std::size_t b, std::size_t e) {
        copyBlockRangeToVolume({nx, volumeRows, nz}, blockFirst, ny, base + b, base + e, from + b, destination);
      });
    }
    copying += since(tc);
  }
  gl::checkError("reading the volume back");
  profile.readback += since(t);
  trace(("gl readback: " + std::to_string(chunks) + " chunks in " + std::to_string(since(t)) + " s: waiting for the GPU " +
         std::to_string(waiting) + " s, copying " + std::to_string(copying) + " s")
            .c_str());
}

float GlVolume::largestMagnitude() {
  context_->makeCurrent();
  if (!largest_) {
    largest_ = gl::buildProgram({{GL_COMPUTE_SHADER, "volume_largest.comp"}});
    largestBits_ = gl::createBuffer();
    glNamedBufferStorage(largestBits_.id(), sizeof(GLuint), nullptr, GL_DYNAMIC_STORAGE_BIT);
  }
  gl::StateScope keep;
  const GLuint zero = 0;
  glNamedBufferSubData(largestBits_.id(), 0, sizeof zero, &zero);
  glUseProgram(largest_.id());
  glBindTextureUnit(0, volume.id());
  {
    const gl::StorageBinding result(7, largestBits_.id());
    glUniform3i(glGetUniformLocation(largest_.id(), "size"), grid.size[0], rows, grid.size[2]);
    // Image stores (compute, AG-GPU blocks) are seen by texture fetches only after this barrier.
    glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT);
    glDispatchCompute(static_cast<GLuint>((grid.size[0] + 255) / 256), static_cast<GLuint>(rows), static_cast<GLuint>((grid.size[2] + 15) / 16));
    glMemoryBarrier(GL_BUFFER_UPDATE_BARRIER_BIT);
  }
  GLuint bits = 0;
  glGetNamedBufferSubData(largestBits_.id(), 0, sizeof bits, &bits);
  gl::checkError("finding the volume's largest voxel");
  float largest = 0.0f;
  std::memcpy(&largest, &bits, sizeof largest);
  return largest;
}

void GlVolume::reset() {
  context_->makeCurrent();
  pending.clear();
  const float zero = 0.0f;
  glClearTexImage(volume.id(), 0, GL_RED, GL_FLOAT, &zero);
  profile = {};
  uploaded = 0;
  window_.sentBytes = 0;
  gl::checkError("clearing the volume");
}

void GlVolume::moveBlock(int firstRow, int count) {
  context_->makeCurrent();
  pending.clear();  // as reset(): the caller drew the previous block's projections
  blockFirst = firstRow;
  rows = count;
  glMemoryBarrier(GL_TEXTURE_UPDATE_BARRIER_BIT);  // image stores of the previous block (compute, AG-GPU) before the clear
  const float zero = 0.0f;
  glClearTexImage(volume.id(), 0, GL_RED, GL_FLOAT, &zero);
  gl::checkError("clearing the volume for a block");
}

// One line per (backend, renderer, driver, volume, detector, window limit): the problem size matters because
// the best window trades the volume's read-modify-write per pass against the projections' cache footprint.
std::string GlVolume::windowCacheKey() const {
  return where_ + " | " + context_->info().version + " | " + std::to_string(grid.size[0]) + "x" + std::to_string(grid.size[1]) + "x" +
         std::to_string(grid.size[2]) + " | " + std::to_string(geometry.detector.nu) + "x" + std::to_string(geometry.detector.nv) +
         " | max " + std::to_string(maxWindow) + (blockCapacity > 0 ? " | slabs of " + std::to_string(allocatedRows) : "");
}

int GlVolume::rememberedWindow() const {
  if (!options.rememberWindow || options.retune) return 0;
  const std::optional<std::string> found = rememberedValue("windows.txt", windowCacheKey());
  const int window = found ? std::atoi(found->c_str()) : 0;
  return window >= 1 && window <= maxWindow ? window : 0;
}

void GlVolume::rememberWindow(int chosen) const {
  if (options.rememberWindow) remember("windows.txt", windowCacheKey(), std::to_string(chosen));
}

std::string GlVolume::windowDescription() const {
  return "window " + std::to_string(window) +
         (options.window == kMaximumWindow ? " (max)"
          : options.window != 0            ? ""
          : searching_ || !timings.empty() ? " (auto)"
                                           : " (auto, remembered)");
}

}  // namespace glrecon::detail
