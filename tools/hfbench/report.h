// report.h - the JSON report and the console table of `hfbench codec`.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "codec_bench.h"
#include "host.h"

namespace hfbench {

// The whole report: {"tool": "hfbench codec", "host": {...}, "options": {...},
// "inputs": [...], "summary": {...}}. `threads_used` is options.threads resolved.
std::string codecJson(const HostInfo& host, const CodecBenchOptions& options, int threads_used,
                      const std::vector<InputResult>& results);

// One aligned row per input, then the summary and any codec notes.
void printCodecTable(std::FILE* out, const std::vector<InputResult>& results);

}  // namespace hfbench
