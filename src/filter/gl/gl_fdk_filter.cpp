// The FDK filter's GL twin (see glrecon/filter.h): raw projections staged in the window's mapped buffer, copied on the
// device into a storage buffer, and filtered by shaders/filter_rows.comp into the window's texture layers.
#include <algorithm>
#include <memory>

#include "device/gl/objects.h"
#include "device/gl/projection_window.h"
#include "device/gl/shader.h"
#include "glrecon/filter.h"
#include "glrecon/slab.h"

namespace glrecon {
namespace {

class GlFdkFilter final : public DeviceFdkFilter {
 public:
  GlFdkFilter(gl::Context& context, const DeviceFilter& tables, std::size_t chunk, std::size_t capacity)
      : context_(context), nu_(tables.nu), nv_(tables.nv), chunk_(chunk) {
    program_ = gl::buildProgram({{GL_COMPUTE_SHADER, "filter_rows.comp"}}, {});
    // Sizes follow from the geometry: made once, the buffers serve every call.
    const auto make = [](gl::Buffer& buffer, std::size_t bytes, const void* data) {
      buffer = gl::createBuffer();
      glNamedBufferStorage(buffer.id(), static_cast<GLsizeiptr>(bytes), data, GL_DYNAMIC_STORAGE_BIT);
    };
    make(cosine_, tables.cosine.size() * sizeof(float), tables.cosine.data());
    make(columns_, tables.viewWeights.size() * sizeof(float), tables.viewWeights.data());
    make(taps_, tables.taps.size() * sizeof(float), tables.taps.data());
    make(views_, capacity * sizeof(GLint), nullptr);
    make(raw_, chunk * bytes(), nullptr);
    gl::checkError("the device filter's buffers");
  }

  ~GlFdkFilter() override { context_.makeCurrent(); }  // the members' GL objects go in this context

  void filter(const float* raw, const std::size_t* views, std::size_t count, DeviceProjections& target, std::size_t slot) override {
    auto& window = static_cast<gl::ProjectionWindow&>(target);
    window.context->makeCurrent();
    const std::size_t pixels = static_cast<std::size_t>(nu_) * nv_;
    // A slab's operator samples only its band of rows: those alone are sent and filtered, one band for the whole call
    // so that each projection's rows stay one contiguous block (as the CUDA twin does).
    const RowBand band = window.rowBands ? bandUnion(window.rowBands, views, count) : RowBand{0, nv_};
    if (band.count == 0) return;  // no voxel of the block sees these views
    // The raw projections' bands into the window's staging memory, then a device-side copy into the storage buffer
    // the shader reads.
    copyRowBands(raw, count, pixels, nu_, band, window.staging + slot * pixels);
    const std::size_t bandBytes = static_cast<std::size_t>(band.count) * nu_ * sizeof(float);
    window.sentBytes += static_cast<double>(count * bandBytes);
    glUseProgram(program_.id());
    glUniform1i(glGetUniformLocation(program_.id(), "nu"), nu_);
    glUniform1i(glGetUniformLocation(program_.id(), "firstV"), band.first);
    glUniform1i(glGetUniformLocation(program_.id(), "bandRows"), band.count);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 2, cosine_.id());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 3, columns_.id());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 4, taps_.id());
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 5, views_.id());
    glBindImageTexture(2, window.texture, 0, GL_TRUE, 0, GL_WRITE_ONLY, GL_R32F);
    for (std::size_t first = 0; first < count; first += chunk_) {
      const std::size_t n = std::min(chunk_, count - first);
      glCopyNamedBufferSubData(window.stagingBuffer, raw_.id(), static_cast<GLintptr>(window.stagingOffset + slot * bytes() + first * bandBytes),
                               0, static_cast<GLsizeiptr>(n * bandBytes));
      std::vector<GLint> list(n);
      for (std::size_t s = 0; s < n; ++s) list[s] = static_cast<GLint>(views[first + s]);
      glNamedBufferSubData(views_.id(), 0, static_cast<GLsizeiptr>(n * sizeof(GLint)), list.data());
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 1, raw_.id(), 0, static_cast<GLsizeiptr>(n * bandBytes));
      const int rows = static_cast<int>(n) * band.count;
      glUniform1i(glGetUniformLocation(program_.id(), "rows"), rows);
      glUniform1i(glGetUniformLocation(program_.id(), "firstLayer"), static_cast<GLint>(window.firstLayer + slot + first));
      GLRECON_CHECK_GL(glDispatchCompute((nu_ + 63) / 64, (rows + 63) / 64, 1));
      // The backprojection samples the layers written; the next copy rewrites the raw buffer this one reads.
      glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
    }
    glUseProgram(0);
    gl::checkError("filtering projections");
  }

 private:
  std::size_t bytes() const { return static_cast<std::size_t>(nu_) * nv_ * sizeof(float); }

  gl::Context& context_;
  int nu_, nv_;
  std::size_t chunk_;  // projections per dispatch: what one storage block may hold
  gl::Program program_;
  gl::Buffer raw_, cosine_, columns_, taps_, views_;
};

}  // namespace

std::unique_ptr<DeviceFdkFilter> makeGlFdkFilter(const DeviceFilter& tables, gl::ProjectionWindow& window, bool force) {
  window.context->makeCurrent();
  if (window.context->info().software && !force) return nullptr;
  // The raw projections of one dispatch in one storage block, which has a size limit (128 MiB on Mesa): a larger
  // detector filters on the CPU.
  const std::size_t bytes = static_cast<std::size_t>(tables.nu) * tables.nv * sizeof(float);
  const std::size_t blockLimit = static_cast<std::size_t>(std::max(gl::integer(GL_MAX_SHADER_STORAGE_BLOCK_SIZE), 0));
  if (bytes > blockLimit) return nullptr;
  const std::size_t chunk = std::min(window.capacity, blockLimit / bytes);
  // Without room beside the volume the CPU filters.
  const std::size_t tableBytes = (tables.cosine.size() + tables.viewWeights.size() + tables.taps.size()) * sizeof(float);
  if (const long long free = gl::freeDeviceMemory(); free >= 0 && static_cast<long long>(chunk * bytes + tableBytes) > free) return nullptr;
  return std::make_unique<GlFdkFilter>(*window.context, tables, chunk, window.capacity);
}

}  // namespace glrecon
