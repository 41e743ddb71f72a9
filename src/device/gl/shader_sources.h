#pragma once
// The shader files, embedded at build time by cmake/embed_shaders.cmake.
#include <vector>

namespace glrecon::gl {
struct EmbeddedShader {
  const char* name;
  const char* source;
};
const std::vector<EmbeddedShader>& embeddedShaders();
}  // namespace glrecon::gl
