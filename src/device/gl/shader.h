#pragma once
/// GLSL programs from the files under shaders/, embedded in the binary at build time. Setting
/// GLRECON_SHADER_DIR to a folder makes files there override the embedded ones (for shader development).
/// Variants are made by prepending #define lines. Compile and link failures throw ShaderError carrying the
/// stage, the file name and the driver's trimmed info log.
#include <string>
#include <vector>

#include "device/gl/objects.h"

namespace glrecon::gl {

struct ShaderError : GlError {
  using GlError::GlError;
};

/// The source of a shader file by name ("backproject_ag.vert"); throws ShaderError for an unknown name.
std::string shaderSource(const std::string& name);

struct ShaderStage {
  GLenum type;       ///< GL_VERTEX_SHADER, GL_FRAGMENT_SHADER, GL_COMPUTE_SHADER
  std::string name;  ///< file name under shaders/
};

/// Compiles and links the stages; `defines` are lines placed after #version (e.g. "#define W 8").
Program buildProgram(const std::vector<ShaderStage>& stages, const std::vector<std::string>& defines = {});
/// Same, from source text (the name is used in messages only); used by tests of the failure path.
Program buildProgramFromSources(const std::vector<std::pair<ShaderStage, std::string>>& stages,
                                const std::vector<std::string>& defines = {});

}  // namespace glrecon::gl
