#pragma once
// Saves the OpenGL state a drawing pass changes and restores it when the scope ends, so that a viewer drawing in the
// context an operator computes in leaves the operator's state as it was (framebuffer, viewport, blending, depth and
// stencil tests, program, vertex array, texture unit 0's bindings, pixel-store alignments).
#include <GL/glew.h>

namespace glrecon::gl {

class StateScope {
 public:
  StateScope() {
    glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &drawFramebuffer_);
    glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &readFramebuffer_);
    glGetIntegerv(GL_VIEWPORT, viewport_);
    blend_ = glIsEnabled(GL_BLEND);
    depth_ = glIsEnabled(GL_DEPTH_TEST);
    stencil_ = glIsEnabled(GL_STENCIL_TEST);
    glGetIntegerv(GL_BLEND_SRC_RGB, &blendSource_);
    glGetIntegerv(GL_BLEND_DST_RGB, &blendDestination_);
    glGetIntegerv(GL_BLEND_SRC_ALPHA, &blendSourceAlpha_);
    glGetIntegerv(GL_BLEND_DST_ALPHA, &blendDestinationAlpha_);
    glGetIntegerv(GL_CURRENT_PROGRAM, &program_);
    glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &vertexArray_);
    glGetIntegerv(GL_ACTIVE_TEXTURE, &activeTexture_);
    glActiveTexture(GL_TEXTURE0);
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &texture2d_);
    glGetIntegerv(GL_TEXTURE_BINDING_2D_ARRAY, &texture2dArray_);
    glGetIntegerv(GL_UNPACK_ROW_LENGTH, &unpackRowLength_);
    glGetIntegerv(GL_PACK_ALIGNMENT, &packAlignment_);
    glGetFloatv(GL_COLOR_CLEAR_VALUE, clearColour_);
  }
  ~StateScope() {
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, static_cast<GLuint>(drawFramebuffer_));
    glBindFramebuffer(GL_READ_FRAMEBUFFER, static_cast<GLuint>(readFramebuffer_));
    glViewport(viewport_[0], viewport_[1], viewport_[2], viewport_[3]);
    enable(GL_BLEND, blend_);
    enable(GL_DEPTH_TEST, depth_);
    enable(GL_STENCIL_TEST, stencil_);
    glBlendFuncSeparate(static_cast<GLenum>(blendSource_), static_cast<GLenum>(blendDestination_), static_cast<GLenum>(blendSourceAlpha_),
                        static_cast<GLenum>(blendDestinationAlpha_));
    glUseProgram(static_cast<GLuint>(program_));
    glBindVertexArray(static_cast<GLuint>(vertexArray_));
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(texture2d_));
    glBindTexture(GL_TEXTURE_2D_ARRAY, static_cast<GLuint>(texture2dArray_));
    glActiveTexture(static_cast<GLenum>(activeTexture_));
    glPixelStorei(GL_UNPACK_ROW_LENGTH, unpackRowLength_);
    glPixelStorei(GL_PACK_ALIGNMENT, packAlignment_);
    glClearColor(clearColour_[0], clearColour_[1], clearColour_[2], clearColour_[3]);
  }
  StateScope(const StateScope&) = delete;
  StateScope& operator=(const StateScope&) = delete;

 private:
  static void enable(GLenum capability, GLboolean on) { on ? glEnable(capability) : glDisable(capability); }
  GLint drawFramebuffer_ = 0, readFramebuffer_ = 0, viewport_[4] = {0, 0, 0, 0};
  GLboolean blend_ = GL_FALSE, depth_ = GL_FALSE, stencil_ = GL_FALSE;
  GLint blendSource_ = GL_ONE, blendDestination_ = GL_ZERO, blendSourceAlpha_ = GL_ONE, blendDestinationAlpha_ = GL_ZERO;
  GLint program_ = 0, vertexArray_ = 0, activeTexture_ = GL_TEXTURE0, texture2d_ = 0, texture2dArray_ = 0;
  GLint unpackRowLength_ = 0, packAlignment_ = 4;
  GLfloat clearColour_[4] = {0, 0, 0, 0};
};

/// `buffer` bound to shader storage binding `index` for the scope, the buffer bound there before put back after: the
/// operators keep their buffers bound between passes, and a pass of the viewer's (or a check's) in their context must
/// leave them so.
class StorageBinding {
 public:
  StorageBinding(GLuint index, GLuint buffer) : index_(index) {
    glGetIntegeri_v(GL_SHADER_STORAGE_BUFFER_BINDING, index, &previous_);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, index, buffer);
  }
  ~StorageBinding() { glBindBufferBase(GL_SHADER_STORAGE_BUFFER, index_, static_cast<GLuint>(previous_)); }
  StorageBinding(const StorageBinding&) = delete;
  StorageBinding& operator=(const StorageBinding&) = delete;

 private:
  GLuint index_;
  GLint previous_ = 0;
};

}  // namespace glrecon::gl
