# Writes OUTPUT, a C++ file holding every file of SHADER_DIR as a raw string literal, so the program needs
# no shader files at run time (the binary can be copied to another machine, such as the GPU host).
file(GLOB shaders "${SHADER_DIR}/*.vert" "${SHADER_DIR}/*.frag" "${SHADER_DIR}/*.comp" "${SHADER_DIR}/*.glsl")
list(SORT shaders)
set(content "// Generated from shaders/ by cmake/embed_shaders.cmake: edit the .vert/.frag files instead.\n")
string(APPEND content "#include \"device/gl/shader_sources.h\"\n\nnamespace glrecon::gl {\n")
string(APPEND content "const std::vector<EmbeddedShader>& embeddedShaders() {\n  static const std::vector<EmbeddedShader> shaders = {\n")
foreach(path IN LISTS shaders)
  file(READ "${path}" text)
  get_filename_component(name "${path}" NAME)
  string(APPEND content "      {\"${name}\", R\"glrecon_glsl(${text})glrecon_glsl\"},\n")
endforeach()
string(APPEND content "  };\n  return shaders;\n}\n}  // namespace glrecon::gl\n")
file(WRITE "${OUTPUT}" "${content}")
