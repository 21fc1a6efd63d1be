// jpeg_decoder.h - the archive's JPEG imagery tiles decoded on the GPU (kernels in
// cuda/imagery/jpeg_decode*.cu), batched over many tiles per launch.
//
// Input: abbreviated tile streams as himg::encodeJpegTile writes them (imagery.h: baseline,
// YCbCr 4:2:0, DRI = one MCU row, RSTn after every row, optional APP9 "HFCOV" coverage) and the
// archive's tables-only stream (himg::makeJpegTables). Output: size x size RGBA8 per tile in
// device memory, alpha from the coverage segment (255 without one), equal to what
// himg::JpegTileDecoder (libjpeg-turbo, accurate integer IDCT, fancy upsampling) produces -
// bit for bit where the implementation says so in its .cpp, and never more than 1 per channel
// away (tested on the device and, through the kernels' __host__ __device__ cores, on the CPU).
//
// Work split:
// - host, prepare(): parses each tile's marker segments (not its entropy-coded data: O(number
//   of segments)), checks them against the tile format, inflates a coverage segment (zlib) into
//   a 1-bit mask, staged as row bands where every row's coverage is one run (a tile cut by the
//   DEM's edge: ~20 bytes instead of size^2 / 8), and packs the entropy-coded bytes, masks and a
//   descriptor per tile into pinned staging. A tile that fails here gets its error and is never
//   launched.
// - device, decodeAsync(): locates the restart markers, Huffman-decodes every restart interval
//   in parallel (one interval = one MCU row = 16 MCUs), then dequantisation, IDCT (8x8 blocks
//   in shared memory), chroma upsampling and colour conversion, written as RGBA8. A corrupt
//   interval (bad Huffman code, wrong RST, data running past its interval or the stream, too few
//   or too many coefficients) marks its tile failed; the kernels never read outside the staged
//   bytes and always terminate. A failed tile's output is unspecified (its pixels are written
//   or not); the caller must not use it.
//
//   hfgpu::GpuJpegDecoder dec;
//   dec.setTables(tables, tablesSize, error);       // the archive's tables-only stream
//   dec.prepare(tiles, n, 256);                      // host: parse, inflate coverage, pack
//   dec.uploadAsync(stream);                         // one cudaMemcpyAsync
//   dec.decodeAsync(deviceRgba, stream);             // tile i at deviceRgba + i * 256 * 256 * 4
//   dec.fetchStatusesAsync(stream);
//   cudaStreamSynchronize(stream);
//   dec.errors();                                    // "" per decoded tile, else a one-line error
// or `dec.decode(tiles, n, size, deviceRgba, stream)` (all of the above + wait).
//
// Exactness (jpeg_decode_core.cuh says how): bit-exact with JpegTileDecoder for every tile
// himg::encodeJpegTile writes (tested: synthetic and real tiles, qualities 10-100, sizes 16-528,
// coverage). Corrupt tiles: every tile libjpeg rejects is rejected; a few that libjpeg accepts
// with garbage are rejected too (a coefficient past zig-zag 63, whole bytes after an interval's
// last MCU, 0xFF fill before a marker); corrupt tiles both accept decode identically unless their
// coefficients leave the range any 8-bit image produces (libjpeg-turbo's C and SIMD IDCTs then
// disagree with each other; this decoder follows jidctint.c).
//
// Memory: device scratch grows to the largest batch seen: the staged bytes twice (the upload and
// its unstuffed copy) plus count * size^2 * 3 bytes of coefficients (196 KiB per 256^2 tile).
//
// Nothing here synchronises with the device except decode(), prepare() (which waits for the
// previous upload out of the pinned staging, and - only when a device buffer must grow - for the
// previous decode and status fetch) and the destructor. Not thread-safe: one decoder per stream.
// CUDA errors throw std::runtime_error (CUDA_CHECK).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hfgpu {

struct JpegTileInput {
  const uint8_t* data = nullptr;  // one abbreviated tile stream in host memory (read in prepare())
  size_t size = 0;
};

class GpuJpegDecoder {
 public:
  GpuJpegDecoder();
  ~GpuJpegDecoder();
  GpuJpegDecoder(const GpuJpegDecoder&) = delete;
  GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

  // Loads the tables-only stream (quantisation and Huffman tables) for the following batches and
  // copies them to the device once (synchronous; ~10 KiB that no batch carries again).
  // False with a one-line error when it is not one this decoder supports (8-bit baseline
  // tables: two quantisation tables, DC and AC Huffman tables 0 and 1).
  bool setTables(const uint8_t* tables, size_t size, std::string& error);

  // Validates and packs `count` tiles of size x size texels (size a multiple of 16, at most
  // 4096) into pinned staging. Returns the number of tiles that passed the host checks.
  size_t prepare(const JpegTileInput* tiles, size_t count, int size);
  // Bytes staged by the last prepare() (what uploadAsync moves across PCIe).
  size_t stagedBytes() const;
  void uploadAsync(cudaStream_t stream);
  // Decodes the uploaded batch: tile i (in prepare() order, failed ones included) at
  // rgba + i * size * size * 4. Clears, then sets the per-tile failure flags.
  void decodeAsync(uint8_t* rgba, cudaStream_t stream);
  void fetchStatusesAsync(cudaStream_t stream);
  // Per tile of the last prepare(): "" when decoded, else a one-line error (host checks, or the
  // kernel's flags of the last fetchStatusesAsync(), which must have completed).
  std::vector<std::string> errors() const;
  // prepare()'s verdicts alone, per tile of the last prepare() ("" = staged for the kernels):
  // what is known before anything runs on the device.
  const std::vector<std::string>& hostErrors() const;

  // prepare + upload + decode + fetch + wait; returns errors().
  std::vector<std::string> decode(const JpegTileInput* tiles, size_t count, int size, uint8_t* rgba,
                                  cudaStream_t stream = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfgpu
