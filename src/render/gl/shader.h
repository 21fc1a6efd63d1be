// shader.h - GLSL program loading from shaders/ with #include "file", and the GL extension
// query the programs' users need (internal to hf_render).
#pragma once

#include <string>
#include <vector>

namespace hfr {

// Reads `file` under `dir`, replacing each line `#include "name"` by that file (relative to
// `dir`, recursively, each file once per source), with #line directives so that the driver's
// log points at the right line; `files` receives the names in #line index order.
bool preprocessShader(const std::string& dir, const std::string& file, std::string& source,
                      std::vector<std::string>& files, std::string& error);

// Compiles and links a vertex + fragment program. On failure returns 0 and an error naming the
// file and holding the full driver log (with "source N" mapped to file names). `defines` (lines
// such as "#define N 128u\n") go right after each stage's #version line: compile-time sizes
// of shared arrays and work groups, variants of a program.
unsigned compileProgram(const std::string& dir, const std::string& vertexFile,
                        const std::string& fragmentFile, std::string& error,
                        const std::string& defines = "");

// The same for a compute program (one stage), with `defines` as above.
unsigned compileComputeProgram(const std::string& dir, const std::string& file, std::string& error,
                               const std::string& defines = "");

// Where the shaders are: `explicitDir` when set, else $HF_SHADER_DIR, else the first shaders/
// folder src/runtime finds (beside the executable, an install prefix, the source tree). Empty
// and a one-line error when there is none.
std::string resolveShaderDir(const std::string& explicitDir, std::string& error);

// True when the current context lists the GL extension `name` (glad loads core 4.5 only).
bool hasGlExtension(const char* name);

}  // namespace hfr
