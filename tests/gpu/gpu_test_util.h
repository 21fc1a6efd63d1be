// gpu_test_util.h - shared helpers of the GPU tests (decode and encode): device detection with
// a clean skip, and CPU <-> GPU decode parity checks.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gpu/cuda_util.h"

// Skips the current test (cleanly, with a message) when no CUDA device can be used: CI and
// developer machines have nvcc but no GPU; the device machine runs these tests for real.
#define HF_REQUIRE_CUDA_DEVICE()                                                            \
  do {                                                                                      \
    if (::hfgpu::cudaDeviceCountOrZero() == 0)                                              \
      GTEST_SKIP() << "no CUDA device (cudaGetDeviceCount failed or returned 0): GPU tests " \
                      "run on the device machine (scripts/device-check)";                   \
  } while (0)
