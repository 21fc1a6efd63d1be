// decode_desc.h - the descriptors the decode kernels read, and the per-tile records they are built
// from (internal: shared by src/gpu/*.cpp and cuda/*.cu; plain C++, no CUDA types).
//
// A prepared batch is ONE blob, uploaded with one copy:
//   [TileRecord x patches][stream words]
// Every stream starts on a 16-byte boundary of the stream words. On the device a first kernel
// (cuda/descriptors.cu, logic in desc_build.h) builds one PatchDesc per tile and one AreaDesc per
// 16 x 16 area from the records and the streams themselves, so host->device bytes are the payload
// plus 48 bytes per tile (issue 13); then the decode kernel runs one thread block per AreaDesc.
// All offsets in the descriptors are relative to the stream's first byte (so a stream is limited
// to 512 MiB: bit offsets fit in 32 bits) or to the words base. A patch whose stream failed host
// validation has a record with no areas: a zero PatchDesc, no AreaDesc, so no thread ever reads
// its bytes. The areas of 2DRBUC patches (kKindRbuc) come after all the others and are decoded by
// their own kernel (cuda/decode_rbuc.cu), launched after the layered one.
#pragma once

#include <cstdint>
#include <vector>

namespace hfgpu::detail {

enum PatchKind : uint8_t { kKindCoded = 0, kKindFlat = 1, kKindStored = 2, kKindRbuc = 3 };

// Per-patch error flags written by the kernel (atomicOr).
constexpr uint32_t kFlagOutOfRange = 1u;

struct PatchDesc {         // 64 bytes
  uint64_t streamWord;     // first 32-bit word of the stream in the stream words
  uint64_t dstOffset;      // linear target: sample index of (0, 0)
  uint32_t dstPitch;       // linear target: row pitch in samples
  uint32_t surface;        // surface target: index into the surfaces of the launch
  int32_t dstX, dstY;      // surface target: texel of (0, 0)
  uint16_t width, height;
  uint16_t base;           // corner base, or the value of a flat patch (unsigned domain)
  uint16_t maskOut;        // masked value as output (flip applied)
  uint16_t flip;           // 0x8000 for Int16 patches
  uint8_t kind;            // PatchKind
  uint8_t segLog;
  uint8_t cornerBits, edgeBits, centreBits, highBits;
  uint16_t segX, segY;     // segments (<= 4096 each)
  uint32_t hedgeBit;       // section A group offsets, bits from the stream start
  uint32_t vedgeBit;
  uint32_t centreBit;      // (cornerBit is 8 * 32: section A starts after the header)
};
static_assert(sizeof(PatchDesc) == 64, "PatchDesc layout");

struct AreaDesc {          // 32 bytes; one thread block each
  uint32_t patch;          // index into the PatchDescs
  uint16_t ax, ay;         // area coordinates inside the patch
  uint32_t lowBit;         // first layer-3 field (stored: first sample of section D), bits from
                           // the stream start
  uint32_t maskBit;        // first mask-bitmap bit (mask code 2), bits from the stream start
  uint32_t highBit;        // first high-part field of the area, bits from the stream start
  uint32_t posByte;        // first position byte of the area, bytes from the stream start
  uint16_t count;          // prominent entries (<= 256)
  uint8_t bits;            // b
  uint8_t maskCode;        // 0 none, 1 all, 2 bitmap
  uint32_t reserved;
};
// For a 2DRBUC area only patch, ax, ay, maskBit and maskCode are as above; lowBit is the first
// bit (from the stream start) of the 32 x 32 block (ax / 2, ay / 2) that holds the area, and
// count, bits, highBit and posByte are 0.
static_assert(sizeof(AreaDesc) == 32, "AreaDesc layout");

// One tile of a launch: where its stream is, where it decodes to, where its AreaDescs go. The
// device builds the tile's descriptors from this and the stream (desc_build.h).
struct TileRecord {        // 48 bytes
  uint64_t streamByte;     // the stream's first byte, from the launch's words base (16-aligned)
  uint64_t dstOffset;      // linear target
  uint32_t dstPitch;       // linear target (already resolved: >= width)
  uint32_t surface;
  int32_t dstX, dstY;
  uint32_t areaStart;      // first AreaDesc of this tile in the layered or the 2DRBUC part
  uint32_t areas;          // its AreaDescs; 0: the stream failed validation (zero PatchDesc)
  uint32_t rbuc;           // 1: its areas go to the 2DRBUC part
  uint32_t reserved;
};
static_assert(sizeof(TileRecord) == 48, "TileRecord layout");

struct DescriptorLaunch {
  const TileRecord* records = nullptr;  // device
  uint64_t recordCount = 0;
  const uint32_t* words = nullptr;      // device: the base TileRecord::streamByte counts from
  PatchDesc* patches = nullptr;         // out: one per record
  AreaDesc* areas = nullptr;            // out: layered areas, then the 2DRBUC ones
  uint64_t layeredAreas = 0;            // where the 2DRBUC part starts
};

// A plan's descriptors computed on the host from the CPU decoder's stream index (its streams
// must still be readable): the reference the device build must reproduce (tests; defined in
// src/gpu/decoder.cpp).
struct HostDescriptors {
  std::vector<PatchDesc> patches;     // one per patch (zero for invalid ones)
  std::vector<AreaDesc> areas;        // layered areas
  std::vector<AreaDesc> rbucAreas;    // 2DRBUC areas
};
}  // namespace hfgpu::detail
namespace hfgpu {
class DecodePlan;
}
namespace hfgpu::detail {
HostDescriptors hostDescriptors(const DecodePlan& plan);

// Enqueues the descriptor build on `stream` (a cudaStream_t passed as void*). Defined in
// cuda/descriptors.cu. Throws on launch errors.
void launchBuildDescriptors(const DescriptorLaunch& launch, void* stream);

enum class Mode : uint8_t { L1 = 1, L12 = 2, All = 3, Refine = 4 };

// Maximum number of distinct surfaces one decode launch can write (they travel as kernel
// parameters, so a launch needs no extra upload).
constexpr int kMaxSurfaces = 256;

struct DecodeLaunch {
  const PatchDesc* patches = nullptr;  // device: built by launchBuildDescriptors
  const AreaDesc* areas = nullptr;
  const uint32_t* words = nullptr;
  uint32_t* flags = nullptr;           // one per patch, cleared by the caller
  uint64_t areaCount = 0;
  const AreaDesc* rbucAreas = nullptr; // the 2DRBUC areas (launchDecodeRbuc)
  uint64_t rbucAreaCount = 0;
  Mode mode = Mode::All;
  uint16_t* linear = nullptr;          // linear target, or null for surfaces
  const unsigned long long* surfaces = nullptr;  // host array (copied into the launch)
  int surfaceCount = 0;
};

// Enqueues the decode kernel(s) on `stream` (a cudaStream_t passed as void* so that this
// header stays free of CUDA types). Defined in cuda/decode.cu. Throws on launch errors.
void launchDecode(const DecodeLaunch& launch, void* stream);
// The same for the 2DRBUC areas (rbucAreas, rbucAreaCount); nothing when there are none.
// Defined in cuda/decode_rbuc.cu.
void launchDecodeRbuc(const DecodeLaunch& launch, void* stream);

}  // namespace hfgpu::detail

// ---------------------------------------------------------------- resident entries
// (resident_decoder.h; kernels in cuda/resident.cu)
namespace hfgpu::detail {

// A miss's entry bytes: from the uploaded batch into the pool.
struct ResidentCopy {      // 24 bytes
  uint64_t srcByte;        // offset in the uploaded batch
  uint64_t dstByte;        // offset in the pool
  uint64_t bytes;          // a multiple of 16
};
static_assert(sizeof(ResidentCopy) == 24, "ResidentCopy layout");

// Enqueues the copies of a batch's misses (`count` of them, from the uploaded `batch` into
// `pool`) on `stream` (void* as above). Defined in cuda/resident.cu.
void launchResidentCopies(const ResidentCopy* copies, uint64_t count, const uint8_t* batch, uint8_t* pool,
                          void* stream);

}  // namespace hfgpu::detail
