// imagery_gpu_bench.h - the GPU columns of `hfbench imagery` (GpuImageryFigures in
// imagery_bench.h): the CUDA BC1 encoders, JPEG decoder and JPEG encoder of src/gpu/imagery on
// the image's archive tiles, against the CPU reference and nvJPEG (loaded at run time with
// dlopen when the device's CUDA toolkit ships libnvjpeg; absent = null in the report).
//
// Built only with the GPU imagery codec (HF_BENCH_IMAGERY_GPU). Never throws: CUDA errors and
// missing devices become r.gpu.note with r.gpu.measured false.
#pragma once

#include <cstdint>
#include <vector>

#include "imagery_bench.h"

namespace hfbench {

// `tiles` (cutTiles), `streams` (encodeJpegTile of each) and `tables` (makeJpegTables) are the
// image's archive tiles; the batch is `batch` tiles, tile i = tile i % streams.size().
// r.bc1's window (already measured) gives the BC1 PSNR window.
void benchImageryGpu(const RgbaImage& image, const ImageryBenchOptions& options, const std::vector<uint8_t>& tiles,
                     const std::vector<std::vector<uint8_t>>& streams, const std::vector<uint8_t>& tables,
                     size_t batch, ImageryResult& r, const ImageryLogFn& log);

}  // namespace hfbench
