// bench_mode.h - `hfview --headless --bench`: one strategy's flythrough (issue 6), per-frame
// CSV and a summary on stdout. `hfbench flythrough` runs every strategy and writes the report.
#pragma once

#include <string>

#include "render/flythrough/flythrough.h"

namespace hfview {

// Flies options.path (or the diagonal) over `archive` with `strategy`; writes `csvPath`; prints
// the summary unless quiet. Needs a current GL context. Returns the process exit status.
int runBenchMode(const hfa::ArchiveReader& archive, hfr::StreamStrategy& strategy,
                 const hfr::RenderSettings& settings, const hfr::FlythroughOptions& options,
                 const std::string& csvPath, const std::string& device, bool quiet);

}  // namespace hfview
