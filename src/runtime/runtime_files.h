// runtime_files.h - where the programs find the files they read at run time (issue 15): the
// GLSL sources (shaders/) and the assets (assets/: the small sample data, camera paths, and
// whatever else a tool needs beside its binary). A build runs from its tree, an installed or
// copied binary from wherever it was put; both must find them without flags.
//
// runtimeDir("assets") is the first existing folder of:
//   1. $HF_DATA_DIR/assets                     (an explicit choice)
//   2. <folder of the executable>/assets       (a binary copied with its folders beside it)
//   3. <folder of the executable>/../share/hfview/assets   (an install prefix: bin/, share/)
//   4. the source tree the binary was built from (HF_SOURCE_DIR, compiled in)
// and "" when none exists. findAsset("paths/tour.txt") is the first existing file of
// <each of those folders>/paths/tour.txt, or "". The executable's folder is /proc/self/exe's.
#pragma once

#include <string>
#include <vector>

namespace hfrt {

// The candidate folders for `folder` ("assets", "shaders"), in the order above (existing or not).
std::vector<std::string> runtimeDirCandidates(const std::string& folder);

// The first candidate that is a folder, or "".
std::string runtimeDir(const std::string& folder);

// assets/<relative> in the first candidate folder that has it, or "".
std::string findAsset(const std::string& relative);

}  // namespace hfrt
