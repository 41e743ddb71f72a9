#include "device/gl/shader.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "device/gl/shader_sources.h"

namespace glrecon::gl {
namespace {

const char* stageName(GLenum type) {
  switch (type) {
    case GL_VERTEX_SHADER: return "vertex";
    case GL_FRAGMENT_SHADER: return "fragment";
    case GL_COMPUTE_SHADER: return "compute";
    case GL_GEOMETRY_SHADER: return "geometry";
    default: return "unknown";
  }
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

std::string infoLog(GLuint object, bool program) {
  GLint length = 0;
  program ? glGetProgramiv(object, GL_INFO_LOG_LENGTH, &length) : glGetShaderiv(object, GL_INFO_LOG_LENGTH, &length);
  std::string log(std::max(length, 1), '\0');
  program ? glGetProgramInfoLog(object, length, nullptr, log.data()) : glGetShaderInfoLog(object, length, nullptr, log.data());
  return trim(log);
}

}  // namespace

void checkError(const char* what) {
  GLenum first = glGetError();
  if (first == GL_NO_ERROR) return;
  while (glGetError() != GL_NO_ERROR) {
  }
  std::ostringstream s;
  s << "OpenGL error 0x" << std::hex << first << " after " << what;
  throw GlError(s.str());
}

std::string shaderSource(const std::string& name) {
  if (const char* dir = std::getenv("GLRECON_SHADER_DIR")) {
    const std::filesystem::path override = std::filesystem::path(dir) / name;
    if (std::filesystem::exists(override)) {
      std::ifstream in(override);
      return std::string(std::istreambuf_iterator<char>(in), {});
    }
  }
  for (const EmbeddedShader& s : embeddedShaders())
    if (name == s.name) return s.source;
  throw ShaderError("shader " + name + ": no such file among the embedded shaders");
}

Program buildProgramFromSources(const std::vector<std::pair<ShaderStage, std::string>>& stages, const std::vector<std::string>& defines) {
  Program program(glCreateProgram());
  std::vector<Shader> shaders;
  for (const auto& [stage, source] : stages) {
    Shader shader(glCreateShader(stage.type));
    std::string header = "#version 450 core\n";
    for (const std::string& d : defines) header += d + "\n";
    // Keep the file's own line numbers in the log: the header's lines come before line 1 of the file.
    header += "#line 1\n";
    const char* parts[2] = {header.c_str(), source.c_str()};
    glShaderSource(shader.id(), 2, parts, nullptr);
    glCompileShader(shader.id());
    GLint ok = GL_FALSE;
    glGetShaderiv(shader.id(), GL_COMPILE_STATUS, &ok);
    if (!ok)
      throw ShaderError("shader " + stage.name + " (" + stageName(stage.type) + " stage) failed to compile:\n" +
                        infoLog(shader.id(), false));
    glAttachShader(program.id(), shader.id());
    shaders.push_back(std::move(shader));
  }
  glLinkProgram(program.id());
  GLint ok = GL_FALSE;
  glGetProgramiv(program.id(), GL_LINK_STATUS, &ok);
  if (!ok) {
    std::string names;
    for (const auto& [stage, source] : stages) names += (names.empty() ? "" : " + ") + stage.name;
    throw ShaderError("program " + names + " failed to link:\n" + infoLog(program.id(), true));
  }
  for (Shader& s : shaders) glDetachShader(program.id(), s.id());
  return program;
}

Program buildProgram(const std::vector<ShaderStage>& stages, const std::vector<std::string>& defines) {
  std::vector<std::pair<ShaderStage, std::string>> sources;
  for (const ShaderStage& s : stages) sources.emplace_back(s, shaderSource(s.name));
  return buildProgramFromSources(sources, defines);
}

}  // namespace glrecon::gl
