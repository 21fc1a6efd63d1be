// fft_bench.h - `hfbench fft` (issue 14): the shared-memory GPU FFT (gpu/fft.h) against cuFFT on
// the same device, sizes and batches (cuFFT is loaded at run time, libcufft.so.12: absent, its
// columns are null) and against FFTW in single precision on all cores (FFTW_MEASURE plans, at
// most 5 s of planning each); accuracy of both GPU results against FFTW in double precision
// (relative RMS error). Times are medians of --repeat runs after warm-up runs (device times from
// CUDA events, FFTW wall time). Writes the JSON (docs/benchmarks.md, bench/results/fft).
#pragma once

namespace hfbench {

// argv[1] == "fft". Returns the process exit status.
int runFftCommand(int argc, char** argv);

}  // namespace hfbench
