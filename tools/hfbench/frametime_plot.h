// frametime_plot.h - the flythrough report's frame-time plot, drawn by matplotlib
// (bench/plot_frametimes.py, run as a child process; issue 15: a plotting library instead of a
// hand-written PNG writer). The script is found in $HF_BENCH_DIR, else in the source tree's
// bench/ (HF_BENCH_SCRIPT_DIR, set at build time); the interpreter is Debian's /usr/bin/python3
// where it exists (its python3-matplotlib), else the first python3 on the PATH.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hfbench {

// Writes `png` from the flythrough CSVs (label, path). False with a one-line reason when the
// script, Python or matplotlib is missing or the script fails (its Error line).
bool plotFrameTimes(const std::string& png, const std::string& title,
                    const std::vector<std::pair<std::string, std::string>>& runs, std::string& error);

}  // namespace hfbench
