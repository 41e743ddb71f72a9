#pragma once
/// Move-only owners of OpenGL objects (as Magnum's GL wrappers): copy deleted, noexcept move, id(),
/// release(), and an empty state that needs no context. Created with the DSA (4.5) functions.
#include <GL/glew.h>

#include <string>
#include <utility>

#include "device/gl/context.h"

namespace glrecon::gl {

template <void (*Delete)(GLuint)>
class Object {
 public:
  Object() = default;
  explicit Object(GLuint id) : id_(id) {}
  ~Object() { reset(); }
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  Object(Object&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  Object& operator=(Object&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  GLuint id() const { return id_; }
  explicit operator bool() const { return id_ != 0; }
  GLuint release() { return std::exchange(id_, 0); }
  void reset() {
    if (id_) Delete(id_);
    id_ = 0;
  }

 private:
  GLuint id_ = 0;
};

namespace detail {
inline void deleteBuffer(GLuint id) { glDeleteBuffers(1, &id); }
inline void deleteTexture(GLuint id) { glDeleteTextures(1, &id); }
inline void deleteFramebuffer(GLuint id) { glDeleteFramebuffers(1, &id); }
inline void deleteVertexArray(GLuint id) { glDeleteVertexArrays(1, &id); }
inline void deleteQuery(GLuint id) { glDeleteQueries(1, &id); }
inline void deleteProgram(GLuint id) { glDeleteProgram(id); }
inline void deleteShader(GLuint id) { glDeleteShader(id); }
}  // namespace detail

using Buffer = Object<detail::deleteBuffer>;
using Texture = Object<detail::deleteTexture>;
using Framebuffer = Object<detail::deleteFramebuffer>;
using VertexArray = Object<detail::deleteVertexArray>;
using Query = Object<detail::deleteQuery>;
using Program = Object<detail::deleteProgram>;
using Shader = Object<detail::deleteShader>;

inline Buffer createBuffer() {
  GLuint id = 0;
  glCreateBuffers(1, &id);
  return Buffer(id);
}
inline Texture createTexture(GLenum target) {
  GLuint id = 0;
  glCreateTextures(target, 1, &id);
  return Texture(id);
}
inline Framebuffer createFramebuffer() {
  GLuint id = 0;
  glCreateFramebuffers(1, &id);
  return Framebuffer(id);
}
inline VertexArray createVertexArray() {
  GLuint id = 0;
  glCreateVertexArrays(1, &id);
  return VertexArray(id);
}
inline Query createQuery(GLenum target) {
  GLuint id = 0;
  glCreateQueries(target, 1, &id);
  return Query(id);
}

/// A buffer with immutable storage, persistently mapped (uploads and readbacks stream through such buffers): unmapped
/// and deleted together.
class MappedBuffer {
 public:
  MappedBuffer() = default;
  /// `bytes` of storage with `flags` (GL_MAP_*_BIT | GL_MAP_PERSISTENT_BIT ...) plus `storageOnly` flags, mapped whole;
  /// data() is null where the driver refused the mapping (the caller says what for).
  MappedBuffer(GLsizeiptr bytes, GLbitfield flags, GLbitfield storageOnly = 0) {
    GLuint id = 0;
    glCreateBuffers(1, &id);
    buffer_ = Buffer(id);
    glNamedBufferStorage(id, bytes, nullptr, flags | storageOnly);
    memory_ = glMapNamedBufferRange(id, 0, bytes, flags);
  }
  ~MappedBuffer() { reset(); }
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  MappedBuffer(MappedBuffer&& other) noexcept : buffer_(std::move(other.buffer_)), memory_(std::exchange(other.memory_, nullptr)) {}
  MappedBuffer& operator=(MappedBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      buffer_ = std::move(other.buffer_);
      memory_ = std::exchange(other.memory_, nullptr);
    }
    return *this;
  }
  GLuint id() const { return buffer_.id(); }
  explicit operator bool() const { return static_cast<bool>(buffer_); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(memory_);
  }
  void reset() {
    if (memory_) glUnmapNamedBuffer(buffer_.id());
    memory_ = nullptr;
    buffer_.reset();
  }

 private:
  Buffer buffer_;
  void* memory_ = nullptr;
};

/// An integer state of the current context (a limit: GL_MAX_TEXTURE_SIZE ...).
inline GLint integer(GLenum name) {
  GLint value = 0;
  glGetIntegerv(name, &value);
  return value;
}

/// A fence (GLsync): move-only like the objects above; wait() blocks until the GPU has passed it, then drops it.
class Fence {
 public:
  Fence() = default;
  ~Fence() { reset(); }
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;
  Fence(Fence&& other) noexcept : sync_(std::exchange(other.sync_, nullptr)) {}
  Fence& operator=(Fence&& other) noexcept {
    if (this != &other) {
      reset();
      sync_ = std::exchange(other.sync_, nullptr);
    }
    return *this;
  }
  /// A fence after every command issued so far.
  static Fence insert() {
    Fence f;
    f.sync_ = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    return f;
  }
  explicit operator bool() const { return sync_ != nullptr; }
  /// Waits (commands flushed) for at most `timeoutNs`, then drops the fence; nothing without one.
  void wait(GLuint64 timeoutNs = GLuint64{10'000'000'000}) {
    if (!sync_) return;
    glClientWaitSync(sync_, GL_SYNC_FLUSH_COMMANDS_BIT, timeoutNs);
    reset();
  }
  /// True once the GPU has passed it (without waiting).
  bool signalled() const {
    if (!sync_) return true;
    GLint status = GL_UNSIGNALED;
    glGetSynciv(sync_, GL_SYNC_STATUS, 1, nullptr, &status);
    return status == GL_SIGNALED;
  }
  void reset() {
    if (sync_) glDeleteSync(sync_);
    sync_ = nullptr;
  }

 private:
  GLsync sync_ = nullptr;
};

/// Throws GlError naming `what` when the GL error flag is set (all pending errors are cleared).
void checkError(const char* what);

}  // namespace glrecon::gl

/// In debug builds: check the GL error flag after a call, naming the function and line. Compiled away under
/// NDEBUG, where the debug-output callback and the explicit checkError() calls at stage ends remain.
#ifndef NDEBUG
#define GLRECON_CHECK_GL(call)                                                                    \
  do {                                                                                            \
    call;                                                                                         \
    ::glrecon::gl::checkError((std::string(#call) + " at " __FILE__ ":" + std::to_string(__LINE__)).c_str()); \
  } while (0)
#else
#define GLRECON_CHECK_GL(call) call
#endif
