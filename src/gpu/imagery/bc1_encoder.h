// bc1_encoder.h - BC1 (DXT1) encoding and tile mip levels on the GPU (kernels in
// cuda/imagery/bc1*.cu): the CUDA twins of himg::encodeBc1 and himg::buildMipChain
// (src/imagery/imagery.h), bit-identical to them for every input and both modes.
//
// - Fast mode: one thread per 4x4 block, the integer algorithm of bc1.cpp ("Fast mode", steps
//   0-6) - for content recompressed every frame.
// - Quality mode: Castano's cluster fit, one warp per block: principal axis by power
//   iteration, every ordered 4- and 3-cluster split evaluated in parallel by the warp's lanes,
//   the least-squares best kept (ties: the earlier split, as on the CPU), then the 565
//   refinement, with the CPU's float operations in the CPU's order (no FMA: these files are
//   built with -fmad=false).
//
// Speed on an H100 (commit-time measurement, encodeBc1Async on 4096^2 / 8192^2 images tiled from
// the shared imagery): fast about 280-380 G texels/s, quality about 1.9 G texels/s on detailed
// texture and 2.7 on the Blue Marble (many flat blocks).
//
// Images are RGBA8 in device memory, row-major, tightly packed (width * 4 bytes per row). A
// batch of equally sized tiles stored one after another is one tall image (height = size *
// count): BC1 blocks never straddle tiles because the size is a multiple of 4. Blocks are
// written row-major (width / 4 blocks per row), 8 bytes each, as himg::encodeBc1 does.
//
// Every call is asynchronous on `stream`, launches kernels only, never allocates and never
// synchronises, except the process's first call, which makes the encoders' tables and waits
// for them (so that kernels on any stream, non-blocking ones too, see them). CUDA errors throw
// std::runtime_error (CUDA_CHECK). Sizes that are not multiples of 4, negative or too large
// (more than 2^31 blocks) throw std::invalid_argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "imagery/imagery.h"

namespace hfgpu {

// himg::encodeBc1 on the device: (width / 4) x (height / 4) blocks into `blocks`
// (width * height / 2 bytes).
void encodeBc1Async(const uint8_t* rgba, int width, int height, himg::Bc1Mode mode, uint8_t* blocks,
                    cudaStream_t stream);

// One step of himg::buildMipChain on the device for `count` tiles of size x size stored one
// after another at `src`: writes the count tiles of (size / 2) x (size / 2) one after another
// at `dst`. Chaining kTileMipLevels - 1 calls gives buildMipChain's levels 1.. bit for bit.
void reduceMipAsync(const uint8_t* src, int size, size_t count, uint8_t* dst, cudaStream_t stream);

// Bytes of one tile's BC1 mip chain (levels 0 .. levels-1 of a size x size tile, each level's
// blocks one after another, level 0 first): what encodeTileChainsAsync writes per tile.
size_t bc1ChainBytes(int size, int levels);
// Offset of level `level` inside a chain.
size_t bc1ChainLevelOffset(int size, int level);

// The whole per-tile pipeline the renderer and benchmarks use: `count` RGBA8 tiles of
// size x size (one after another at `tiles`) -> for each tile its `levels` mip levels
// (buildMipChain) encoded to BC1 in `mode`, tile i's chain at chains + i * bc1ChainBytes.
// `scratch` must hold mipScratchBytes(size, levels, count) bytes of device memory.
size_t mipScratchBytes(int size, int levels, size_t count);
void encodeTileChainsAsync(const uint8_t* tiles, int size, int levels, size_t count, himg::Bc1Mode mode,
                           uint8_t* scratch, uint8_t* chains, cudaStream_t stream);

}  // namespace hfgpu
