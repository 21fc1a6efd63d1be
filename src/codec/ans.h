// ans.h - HFPaC's entropy stage: lossless patches coded as horizontal differences through an
// interleaved rANS coder (issue 17; the design is chosen by `hfbench entropy`,
// bench/results/entropy/README.md). Format: docs/format.md, "Entropy-coded patches (HFAN)".
//
// What it is for: the DEMs where fixed-width residual bits lose to general-purpose codecs (flat
// sea, 8-bit re-saves, noisy lidar): 1.05-1.3x zstd-19's ratio there, at the price of HFPaC's
// layers (no lossy first view, no single-point decode): a codec option chosen per tile.
//
// Model. A sample's residual is its value minus a prediction, in the sample type's domain (Int16
// signed): the last unmasked sample before it in raster order, except in the first column, where
// the sample above is used when it is unmasked (the first sample: 0). With a masked value (the
// DEM's nodata), samples equal to it are one escape token each and are never predictions; the
// tokens then have two tables, chosen by whether the lane's previous sample was masked (runs of
// voids cost almost nothing).
// The zigzagged residual z becomes a token: z < 2^d is its own token, a larger z is the token
// 2^d + 4 (bitLength(z) - d - 1) + the two bits under its top bit, followed by bitLength(z) - 3
// raw bits (JPEG XL's hybrid integers); d = 4, or 8 where the residuals' fine structure pays
// for the larger table (lidar quantised finer than its own step: values near a lattice), chosen
// per patch by the encoder. Tokens are coded with one static frequency table per patch
// (12-bit precision), raw bits with a uniform one, by `lanes` rANS coders (32-bit state, 16-bit
// words) that take the patch's samples in turn (sample i -> lane i mod lanes) and share one word
// stream, read group by group (all lanes' tokens, then all lanes' raw bits): lanes decode in
// lockstep on a GPU and interleave on a CPU.
//
// Contract. ansEncode never fails on valid arguments (any uint16 raster, 1..kMaxPatchSide per
// side). ansDecode reads any byte string safely: it checks every field, every table and every
// read against the stream's bounds, and refuses a stream that decodes to a different number of
// words or to a final state other than the initial one. Damage inside the word stream can still
// decode to other samples (raw bits carry no redundancy; about one single-byte corruption in
// five in the tests): the archive's tile CRC is the integrity check, as for HFPaC streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/hfpac.h"

namespace hfpac {

constexpr uint8_t kAnsMagic[4] = {'H', 'F', 'A', 'N'};
constexpr int kAnsVersion = 1;
constexpr int kAnsHeaderBytes = 16;
constexpr int kAnsMaxLanes = 64;
// Lane counts: kAnsAutoLanes lets the encoder choose per patch by the stream's estimated size,
// since every lane costs 4 bytes of state: 32 lanes from 768 bytes on (96 bytes more than 8
// lanes: at most 12.5 % of such a patch, whose samples code to under 0.4 bits each), 16 from 384
// (32 more), else 8. More lanes decode faster: on a CPU, more independent chains per AVX2 group
// (32 lanes: about twice 8 lanes' speed), on a GPU, more threads of the patch's warp at work.
// Measured on ps_height_4k, the smoothest shared DEM (bench/results/codec.md, session 19): 2.7 %
// of its HFAN ratio for 1.6x its decode speed against 4096 / 2048 bytes; under 0.9 % elsewhere.
constexpr int kAnsAutoLanes = 0;
constexpr int kAnsWideLanes = 32;
constexpr int kAnsMidLanes = 16;
constexpr int kAnsNarrowLanes = 8;
constexpr int kAnsWideLanesMinBytes = 768;
constexpr int kAnsMidLanesMinBytes = 384;

struct AnsOptions {
  int lanes = kAnsAutoLanes;     // kAnsAutoLanes, or 1..kAnsMaxLanes
  bool hasMask = false;          // samples equal to maskValue are coded as masked
  uint16_t maskValue = 0;        // bit pattern, as in the input
};

struct AnsInfo {
  int width = 0, height = 0;
  SampleType type = SampleType::UInt16;
  int lanes = 0;
  bool masked = false;
  uint16_t maskValue = 0;
  int directLog2 = 4;        // residuals z < 2^directLog2 are tokens of their own (4 or 8)
  uint32_t streamBytes = 0;  // the whole stream, header included
};

// True if `data` starts with the HFAN magic (so it is not a layered HFPaC stream).
bool isAnsStream(const uint8_t* data, size_t size);

// Encodes a width x height patch (row stride `stride` >= width samples) into `out` (replaced).
// A mask is written only if some sample equals options.maskValue.
Status ansEncode(const uint16_t* samples, size_t stride, int width, int height, SampleType type,
                 std::vector<uint8_t>& out, const AnsOptions& options = {});

// Header fields, checked (not the payload).
Status ansReadInfo(const uint8_t* data, size_t size, AnsInfo& info);

// Decodes the whole patch into dst (row stride dstStride >= width; dstCapacity samples).
Status ansDecode(const uint8_t* data, size_t size, uint16_t* dst, size_t dstStride, size_t dstCapacity);

}  // namespace hfpac
