// jpeg_encoder.h - the archive's JPEG imagery tiles encoded on the GPU (kernels in
// cuda/imagery/jpeg_encode*.cu): the pipeline of "CUDA-based fast image compression" -
// colour conversion and 4:2:0 subsampling, forward DCT, quantisation, zig-zag, Huffman coding
// of every restart interval in parallel, byte stuffing, and stream assembly by prefix sums.
//
// Output: per tile the abbreviated stream himg::encodeJpegTile (libjpeg-turbo) writes for the
// same RGBA8 tile and quality (imagery.h: baseline, YCbCr 4:2:0, standard Annex K Huffman
// tables, DRI = one MCU row, APP9 "HFCOV" coverage when some alpha < 128, uncovered texels coded
// as grey 128): byte for byte equal where the implementation says so in its .cpp; at least
// decodable by libjpeg-turbo with the archive's tables (himg::makeJpegTables(quality)), within 3%
// of its size and 0.1 dB of its PSNR (tested on the device and, through the kernels'
// __host__ __device__ cores, on the CPU).
//
//   hfgpu::GpuJpegEncoder enc(90);
//   enc.encodeAsync(deviceRgba, n, 256, stream);   // tile i at deviceRgba + i * 256 * 256 * 4
//   enc.finish(streams);                           // waits; n abbreviated streams (host)
// or `enc.encode(hostRgba, n, 256, streams)` (upload from host memory + the above).
//
// The coverage segment's zlib compression runs on the host in finish(), for the tiles whose
// device-built coverage mask says some texel is uncovered. One encoder per stream; not
// thread-safe. CUDA errors throw std::runtime_error (CUDA_CHECK); bad sizes or qualities
// std::invalid_argument.
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
  // tile, in order (headers and the coverage segment added on the host).
  void finish(std::vector<std::vector<uint8_t>>& streams);
  // Host memory in, host streams out (uploads, encodes, finishes).
  void encode(const uint8_t* hostRgba, size_t count, int size, std::vector<std::vector<uint8_t>>& streams,
              cudaStream_t stream = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfgpu
