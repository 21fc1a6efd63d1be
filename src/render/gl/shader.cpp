// shader.cpp - #include preprocessing and program compilation with readable errors.
#include "render/gl/shader.h"

#include <glad/gl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <fstream>
#include <functional>
#include <sstream>

#include "runtime/runtime_files.h"

namespace hfr {
namespace {

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// Parses `#include "name"` (leading spaces allowed); false for any other line.
bool includeName(const std::string& line, std::string& name) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line.compare(i, 8, "#include") != 0) return false;
  const size_t a = line.find('"', i + 8);
  const size_t b = a == std::string::npos ? a : line.find('"', a + 1);
  if (b == std::string::npos) return false;
  name = line.substr(a + 1, b - a - 1);
  return true;
}

// Replaces "0:12(3)" / "0(12)" style references to source string numbers in a driver log
// with file names where it can; the log is kept in full either way.
std::string annotateLog(const std::string& log, const std::vector<std::string>& files) {
  std::string out;
  out += "  (sources:";
  for (size_t i = 0; i < files.size(); ++i) out += " " + std::to_string(i) + "=" + files[i];
  out += ")\n";
  out += log;
  return out;
}

}  // namespace

bool preprocessShader(const std::string& dir, const std::string& file, std::string& source,
                      std::vector<std::string>& files, std::string& error) {
  source.clear();
  files.clear();
  std::function<bool(const std::string&, int)> expand = [&](const std::string& name, int depth) {
    if (depth > 16) {
      error = "shader " + name + ": #include nested too deeply";
      return false;
    }
    for (const auto& f : files)
      if (f == name) return true;  // each file once per program source
    std::string text;
    if (!readFile(dir + "/" + name, text)) {
      error = "shader " + dir + "/" + name + ": cannot read";
      return false;
    }
    const std::string index = std::to_string(files.size());
    files.push_back(name);
    if (depth > 0) source += "#line 1 " + index + "\n";
    std::istringstream in(text);
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
      ++lineNo;
      std::string inc;
      if (includeName(line, inc)) {
        if (!expand(inc, depth + 1)) {
          error += " (included from " + name + ":" + std::to_string(lineNo) + ")";
          return false;
        }
        source += "#line " + std::to_string(lineNo + 1) + " " + index + "\n";
        continue;
      }
      source += line + "\n";
      // #version must come first; from the next line on, number lines as this file's.
      if (line.rfind("#version", 0) == 0)
        source += "#line " + std::to_string(lineNo + 1) + " " + index + "\n";
    }
    return true;
  };
  return expand(file, 0);
}

namespace {

unsigned compileStage(GLenum stage, const std::string& dir, const std::string& file,
                      std::string& error, const std::string& defines = "") {
  std::string source;
  std::vector<std::string> files;
  if (!preprocessShader(dir, file, source, files, error)) return 0;
  if (!defines.empty()) {
    // After the #version line; the #line directive that follows it keeps the numbering.
    const size_t version = source.find("#version");
    const size_t eol =
        version == std::string::npos ? std::string::npos : source.find('\n', version);
    if (eol == std::string::npos) {
      error = "shader " + dir + "/" + file + " has no #version line";
      return 0;
    }
    source.insert(eol + 1, defines);
  }
  const GLuint s = glCreateShader(stage);
  const char* src = source.c_str();
  glShaderSource(s, 1, &src, nullptr);
  glCompileShader(s);
  GLint ok = 0, len = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    glGetShaderiv(s, GL_INFO_LOG_LENGTH, &len);
    std::string log(size_t(std::max(len, 1)), '\0');
    glGetShaderInfoLog(s, len, nullptr, log.data());
    glDeleteShader(s);
    error = "shader " + dir + "/" + file + " does not compile:\n" + annotateLog(log.c_str(), files);
    return 0;
  }
  return s;
}

// Links the compiled stages (deleted here either way) into a program; 0 and `what` + the
// driver's log on failure.
unsigned linkProgram(std::initializer_list<GLuint> stages, const std::string& what, std::string& error) {
  const GLuint p = glCreateProgram();
  for (GLuint s : stages) glAttachShader(p, s);
  glLinkProgram(p);
  for (GLuint s : stages) glDeleteShader(s);
  GLint ok = 0, len = 0;
  glGetProgramiv(p, GL_LINK_STATUS, &ok);
  if (!ok) {
    glGetProgramiv(p, GL_INFO_LOG_LENGTH, &len);
    std::string log(size_t(std::max(len, 1)), '\0');
    glGetProgramInfoLog(p, len, nullptr, log.data());
    glDeleteProgram(p);
    error = what + ":\n" + std::string(log.c_str());
    return 0;
  }
  return p;
}

}  // namespace

unsigned compileProgram(const std::string& dir, const std::string& vertexFile,
                        const std::string& fragmentFile, std::string& error,
                        const std::string& defines) {
  const GLuint vs = compileStage(GL_VERTEX_SHADER, dir, vertexFile, error, defines);
  if (!vs) return 0;
  const GLuint fs = compileStage(GL_FRAGMENT_SHADER, dir, fragmentFile, error, defines);
  if (!fs) {
    glDeleteShader(vs);
    return 0;
  }
  return linkProgram({vs, fs}, "shaders " + dir + "/" + vertexFile + " + " + fragmentFile + " do not link", error);
}

unsigned compileComputeProgram(const std::string& dir, const std::string& file, std::string& error,
                               const std::string& defines) {
  const GLuint cs = compileStage(GL_COMPUTE_SHADER, dir, file, error, defines);
  if (!cs) return 0;
  return linkProgram({cs}, "shader " + dir + "/" + file + " does not link", error);
}

std::string resolveShaderDir(const std::string& explicitDir, std::string& error) {
  if (!explicitDir.empty()) return explicitDir;
  const char* env = std::getenv("HF_SHADER_DIR");
  const std::string dir = env && *env ? env : hfrt::runtimeDir("shaders");
  if (dir.empty())
    error = "no shaders/ folder beside the executable, in ../share/hfview or in the source tree; set HF_SHADER_DIR";
  return dir;
}

bool hasGlExtension(const char* name) {
  GLint n = 0;
  glGetIntegerv(GL_NUM_EXTENSIONS, &n);
  for (GLint i = 0; i < n; ++i) {
    const char* e = reinterpret_cast<const char*>(glGetStringi(GL_EXTENSIONS, GLuint(i)));
    if (e && std::strcmp(e, name) == 0) return true;
  }
  return false;
}

}  // namespace hfr
