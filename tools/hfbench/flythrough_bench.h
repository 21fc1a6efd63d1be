// flythrough_bench.h - `hfbench flythrough` (issue 6): one process flies the same camera path
// over one DEM's raw and HFPaC archives with every streaming strategy (raw; cpu; cuda with 1, 2
// and 4 streams; cuda on a 2DRBUC twin when given), then writes one CSV per run, a Markdown
// report (table, targets, where the time goes) and a frame-time plot (PNG). docs/benchmarks.md
// explains the measurements.
#pragma once

namespace hfbench {

// argv[1] == "flythrough". Returns the process exit status.
int runFlythroughCommand(int argc, char** argv);

}  // namespace hfbench
