// soak_bench.h - `hfbench soak` (issue 16): the viewer's render loop for a long time, with
// faults injected into its archive reads, watching memory and counting errors.
//
//   hfbench soak ARCHIVE [--minutes 60] [--stream cpu|cuda] [--inject-faults SPEC]
//                [--sample-seconds 60] [--size 640x360] [--cycle-frames 240] [--json OUT.json]
//                [--max-rss-growth 0.05]
//
// One renderer and one strategy for the whole run (as a viewer left open), flying the archive's
// diagonal there and back every --cycle-frames frames (default 240); every --sample-seconds the process's resident memory
// (VmRSS) and, with CUDA, the device's used memory are sampled. Faults (archive/
// fault_injection.h) are switched on once the top level is loaded. At the end: frames, the
// injected faults by kind, the tiles the strategy reported as failed, memory growth after the
// warm-up (the first sample at or after one fifth of the run and after the first cycle), and a
// verdict: exit 0 when every injected I/O error and corruption became exactly one failed tile
// and resident memory grew by at most --max-rss-growth after the warm-up; else 1. A crash is
// the process dying (the caller sees it).
#pragma once

namespace hfbench {

int runSoakCommand(int argc, char** argv);

}  // namespace hfbench
