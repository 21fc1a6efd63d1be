// jpeg_encoder.h - the archive's JPEG imagery tiles encoded on the GPU (kernels in
// cuda/imagery/jpeg_encode*.cu): the pipeline of "CUDA-based fast image compression" -
// colour conversion and 4:2:0 subsampling, forward DCT, quantisation, zig-zag, Huffman coding
// of every restart interval in parallel, byte stuffing, and stream assembly by prefix sums.
//
// Output: per tile the abbreviated stream himg::encodeJpegTile (libjpeg-turbo 2.1.5) writes for
// the same RGBA8 tile and quality (imagery.h: baseline, YCbCr 4:2:0, standard Annex K Huffman
// tables, DRI = one MCU row, APP9 "HFCOV" coverage when some alpha < 128, uncovered texels coded
// as grey 128), byte for byte: the kernels replicate libjpeg's integer arithmetic (colour
// conversion, h2v2 downsampling, islow FDCT, rounding quantisation, jchuff's coding), and the
// quantisation and Huffman tables are read from himg::makeJpegTables(quality), so they are the
// archive's. Tested on the device (tests/gpu/jpeg_encode_test.cpp) and, through the kernels'
// __host__ __device__ core (cuda/imagery/jpeg_encode_core.cuh), on the CPU against libjpeg for
// synthetic and real tiles at qualities 1..100 (tests/gpu/jpeg_encode_core_test.cpp).
//
//   hfgpu::GpuJpegEncoder enc(90);
//   enc.encodeAsync(deviceRgba, n, 256, stream);   // tile i at deviceRgba + i * 256 * 256 * 4
//   enc.finish(streams);                           // waits; n abbreviated streams (host)
// or `enc.encode(hostRgba, n, 256, streams)` (upload from host memory + the above).
//
// The coverage segment's zlib compression runs on the host in finish() (on host threads), for
// the tiles whose device-built coverage mask says some texel is uncovered.
//
// Device memory (grown to the largest batch, kept): about 18 bytes per texel of a batch beyond
// its input (coefficients 3; worst-case entropy scratch: unstuffed bits per MCU 4.9, stuffed
// bytes per interval 9.8; coverage 0.125), so about 1.2 GB for 1024 tiles of 256 x 256;
// plus the packed result (0.5 bytes per texel at first; finish() grows it and packs again when a
// batch codes larger, e.g. noise at quality 100). One encoder per stream; not thread-safe. CUDA
// errors throw std::runtime_error (CUDA_CHECK); bad sizes or qualities, more than 65535 tiles,
// or input not 8-byte aligned std::invalid_argument; a coverage bitmap that zlib cannot fit in
// one marker segment (64 KiB: only for huge tiles with noisy coverage, where encodeJpegTile fails
// too) std::runtime_error from finish().
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace hfgpu {

class GpuJpegEncoder {
 public:
  explicit GpuJpegEncoder(int quality);  // 1..100, as himg::makeJpegTables
  ~GpuJpegEncoder();
  GpuJpegEncoder(const GpuJpegEncoder&) = delete;
  GpuJpegEncoder& operator=(const GpuJpegEncoder&) = delete;

  int quality() const;
  // Encodes `count` tiles of size x size (a multiple of 16, at most 4096) RGBA8 texels in
  // device memory, one after another at `rgba`, on `stream`: all device work, ending with every
  // tile's entropy-coded data assembled in one device buffer (what benchmarks time, device to
  // device). The input must stay unchanged until the stream has run this work.
  void encodeAsync(const uint8_t* rgba, size_t count, int size, cudaStream_t stream);
  // Copies the last encodeAsync()'s result to the host, waits, and returns the streams, one per
  // tile, in order (headers and the coverage segment added on the host). Exactly one finish()
  // per encodeAsync() (std::logic_error otherwise).
  void finish(std::vector<std::vector<uint8_t>>& streams);
  // Host memory in, host streams out (uploads, encodes, finishes).
  void encode(const uint8_t* hostRgba, size_t count, int size, std::vector<std::vector<uint8_t>>& streams,
              cudaStream_t stream = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfgpu
