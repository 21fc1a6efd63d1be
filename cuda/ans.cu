// ans.cu - HFAN patches (codec/ans.h, docs/format.md section 10) decoded on the GPU, one warp per
// patch (src/gpu/ans_decoder.h). The rANS lanes of a patch step in lockstep: each group of
// `lanes` samples decodes its tokens, then its raw bits, a ballot and a prefix count giving each
// refilling lane its word; residuals go to an int32 scratch, and each row is then rebuilt by warp
// scans (the prediction is the last unmasked sample, or the sample above at the row start).
// Every check of the CPU decoder is made here too, in the same order, so both accept and refuse
// the same streams.
#include <cstdint>

#include "codec/bitpack.h"
#include "codec/hfpac.h"
#include "gpu/ans_launch.h"

namespace hfgpu::detail {
namespace {

constexpr int kWarpsPerBlock = 2;
constexpr int kMaxAlphabet = 293;  // 256 + 9 * 4 value tokens + the escape
constexpr uint32_t kScale = 4096;
constexpr uint32_t kStateLow = 1u << 16;
constexpr unsigned kFull = 0xffffffffu;
constexpr int32_t kMaskedResidual = INT32_MIN;

struct WarpTables {
  uint16_t token[2][kScale];        // per slot: its token
  uint16_t freq[2][kMaxAlphabet];   // per token: frequency (<= 4096)
  uint16_t start[2][kMaxAlphabet];  // per token: first slot
};

__device__ uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
__device__ uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }
using hfpac::detail::unzigzag;

__device__ int32_t warpInclusiveSum(int32_t v, int lane) {
  for (int d = 1; d < 32; d <<= 1) {
    const int32_t u = __shfl_up_sync(kFull, v, d);
    if (lane >= d) v += u;
  }
  return v;
}

// One context's table (presence bitmap, zero byte, freq - 1 per present token), warp-wide.
__device__ int readTable(const uint8_t* s, uint32_t& off, uint32_t end, int used, int presenceBytes,
                         uint16_t* token, uint16_t* freq, uint16_t* start, int lane) {
  using hfpac::Status;
  const uint32_t tableBytes = uint32_t(presenceBytes) + 1;
  if (off + tableBytes > end) return int(Status::TruncatedStream);
  const uint8_t* presence = s + off;
  off += tableBytes;
  bool stray = false;
  for (int t = used + lane; t < 8 * presenceBytes; t += 32) stray |= (presence[t / 8] >> (t % 8)) & 1u;
  if (__any_sync(kFull, stray) || presence[presenceBytes] != 0) return int(Status::InvalidHeader);
  uint32_t rank = 0, sum = 0;
  bool truncated = false;
  for (int chunk = 0; chunk < used; chunk += 32) {
    const int t = chunk + lane;
    const bool present = t < used && ((presence[t / 8] >> (t % 8)) & 1u);
    const unsigned mask = __ballot_sync(kFull, present);
    const uint32_t r = rank + __popc(mask & ((1u << lane) - 1u));
    uint32_t f = 0;
    if (present) {
      if (off + 2 * (r + 1) > end) {
        truncated = true;
      } else {
        f = le16(s + off + 2 * r) + 1;
      }
    }
    const int32_t incl = warpInclusiveSum(int32_t(f), lane);
    if (t < used) {
      freq[t] = uint16_t(f > kScale ? 0 : f);
      start[t] = uint16_t(min(sum + uint32_t(incl) - f, kScale));
    }
    rank += __popc(mask);
    sum += uint32_t(__shfl_sync(kFull, incl, 31));
  }
  // Both decoders refuse the same tables (the code may differ when one is both cut short and
  // inconsistent: the CPU decoder reports whichever it meets first).
  if (__any_sync(kFull, truncated)) return int(Status::TruncatedStream);
  off += 2 * rank;
  if (sum != kScale) return int(Status::InvalidHeader);
  __syncwarp();
  for (uint32_t slot = lane; slot < kScale; slot += 32) {
    int lo = 0, hi = used - 1;  // the last token whose start <= slot
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (start[mid] <= slot) lo = mid; else hi = mid - 1;
    }
    token[slot] = uint16_t(lo);
  }
  __syncwarp();
  return int(Status::Ok);
}

__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    ansDecodeKernel(const uint8_t* streams, const AnsPatchDesc* patches, uint32_t count, uint16_t* out,
                    int32_t* scratch, int32_t* status) {
  using hfpac::Status;
  __shared__ WarpTables shared[kWarpsPerBlock];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const uint32_t p = blockIdx.x * kWarpsPerBlock + uint32_t(warp);
  if (p >= count) return;  // the whole warp leaves together
  WarpTables& T = shared[warp];
  const AnsPatchDesc d = patches[p];
  const uint8_t* s = streams + d.streamOffset;
  const uint32_t end = d.streamBytes;
  auto finish = [&](int st) {
    if (lane == 0) status[p] = st;
  };
  // The header was checked on the host (ansReadInfo, lanes <= 32).
  const bool isSigned = s[5] & 1u, masked = s[5] & 2u;
  const int lanes = s[6], dlog = s[7];
  const uint32_t width = le16(s + 8), height = le16(s + 10);
  const int direct = 1 << dlog, tokens = direct + (17 - dlog) * 4, escape = tokens;
  const int presenceBytes = (tokens + 1 + 7) / 8;
  uint32_t off = 16;
  uint16_t maskValue = 0;
  if (masked) {
    maskValue = uint16_t(le16(s + 16));
    off += 4;
  }
  for (int c = 0; c < (masked ? 2 : 1); ++c) {
    const int st = readTable(s, off, end, masked ? tokens + 1 : tokens, presenceBytes, T.token[c], T.freq[c],
                             T.start[c], lane);
    if (st != int(Status::Ok)) return finish(st);
  }
  if (off + 4 * uint32_t(lanes) > end) return finish(int(Status::TruncatedStream));
  uint32_t x = kStateLow;
  if (lane < lanes) x = le32(s + off + 4 * uint32_t(lane));
  off += 4 * uint32_t(lanes);
  if (__any_sync(kFull, x < kStateLow)) return finish(int(Status::InvalidHeader));
  const uint8_t* words = s + off;
  const uint32_t wordCount = (end - off) / 2;
  uint32_t pos = 0;
  const unsigned below = (1u << lane) - 1u;
  bool truncated = false, laneMasked = false;
  // Refills the lanes that need a word, in lane order, from the shared stream.
  auto refill = [&](bool active) {
    const bool need = active && x < kStateLow;
    const unsigned mask = __ballot_sync(kFull, need);
    if (need) {
      const uint32_t at = pos + __popc(mask & below);
      if (at < wordCount) {
        x = (x << 16) | le16(words + 2 * at);
      } else {
        truncated = true;
      }
    }
    pos += __popc(mask);
  };

  const uint64_t n = uint64_t(width) * height;
  int32_t* residual = scratch + d.outOffset;
  for (uint64_t first = 0; first < n; first += uint64_t(lanes)) {
    const bool active = lane < lanes && first + uint64_t(lane) < n;
    int t = 0;
    if (active) {
      const int c = masked && laneMasked ? 1 : 0;
      const uint32_t slot = x & (kScale - 1);
      t = T.token[c][slot];
      x = uint32_t(T.freq[c][t]) * (x >> 12) + slot - T.start[c][t];
    }
    refill(active);
    uint32_t z = uint32_t(t);
    if (active && t >= direct && t != escape) {
      const int k = t - direct, rawBits = dlog - 2 + k / 4;
      z = ((4u | uint32_t(k & 3)) << rawBits) | (x & ((1u << rawBits) - 1u));
      x >>= rawBits;
    }
    refill(active);
    if (__any_sync(kFull, truncated)) return finish(int(Status::TruncatedStream));
    if (active) {
      residual[first + uint64_t(lane)] = t == escape ? kMaskedResidual : unzigzag(z);
      laneMasked = t == escape;
    }
  }
  __syncwarp();

  // Rows: v = S + the prefix sum of the row's unmasked residuals, S being the sample above when
  // the row's first sample and the one above it are unmasked, else the last unmasked sample.
  const int32_t lo = isSigned ? -32768 : 0, hi = isSigned ? 32767 : 65535;
  int64_t last = 0;
  bool bad = false;
  for (uint32_t y = 0; y < height; ++y) {
    uint16_t* row = out + d.outOffset + uint64_t(y) * width;
    const int32_t* r = residual + uint64_t(y) * width;
    int64_t carry = last;
    if (y > 0 && r[0] != kMaskedResidual) {
      const uint16_t above = row[-int64_t(width)];
      if (!masked || above != maskValue) carry = isSigned ? int64_t(int16_t(above)) : int64_t(above);
    }
    bool anyUnmasked = false;
    for (uint32_t x0 = 0; x0 < width; x0 += 32) {
      const uint32_t col = x0 + uint32_t(lane);
      const bool inside = col < width;
      const int32_t rv = inside ? r[col] : kMaskedResidual;
      const bool isMasked = rv == kMaskedResidual;
      const int32_t incl = warpInclusiveSum(isMasked ? 0 : rv, lane);
      const int64_t v = carry + incl;
      if (inside) {
        if (isMasked) {
          row[col] = maskValue;
        } else {
          bad |= v < lo || v > hi || (masked && uint16_t(v) == maskValue);
          row[col] = uint16_t(v);
        }
      }
      carry += __shfl_sync(kFull, incl, 31);
      anyUnmasked |= __any_sync(kFull, inside && !isMasked);
    }
    if (anyUnmasked) last = carry;
    __syncwarp();
  }
  if (__any_sync(kFull, bad)) return finish(int(Status::OutOfRange));
  const bool finalState = lane >= lanes || x == kStateLow;
  const bool wordsUsed = pos == wordCount || (pos + 1 == wordCount && le16(words + 2 * pos) == 0);
  if (!__all_sync(kFull, finalState) || !wordsUsed) return finish(int(Status::SizeMismatch));
  finish(int(Status::Ok));
}

// One block per patch: a thread per column, rows in turn (coalesced reads of the linear output).
// A patch the decoder refused is not copied (its scratch holds whatever was there).
__global__ void ansCopyKernel(const uint16_t* out, const AnsCopyDesc* copies, const int32_t* status,
                              AnsSurfaces surfaces) {
  if (status[blockIdx.x] != int32_t(hfpac::Status::Ok)) return;
  const AnsCopyDesc c = copies[blockIdx.x];
  const cudaSurfaceObject_t target = surfaces.surface[c.surface];
  for (uint32_t j = 0; j < c.height; ++j)
    for (uint32_t i = threadIdx.x; i < c.width; i += blockDim.x)
      surf2Dwrite(out[c.outOffset + uint64_t(j) * c.width + i], target, int((c.x + i) * sizeof(uint16_t)), int(c.y + j));
}

}  // namespace

void launchAnsCopyToSurfaces(const uint16_t* out, const AnsCopyDesc* copies, const int32_t* status, uint32_t count,
                             const AnsSurfaces& surfaces, void* stream) {
  if (count == 0) return;
  ansCopyKernel<<<count, 128, 0, static_cast<cudaStream_t>(stream)>>>(out, copies, status, surfaces);
}

void launchAnsDecode(const uint8_t* streams, const AnsPatchDesc* patches, uint32_t count, uint16_t* out,
                     int32_t* scratch, int32_t* status, void* stream) {
  if (count == 0) return;
  const uint32_t blocks = (count + kWarpsPerBlock - 1) / kWarpsPerBlock;
  ansDecodeKernel<<<blocks, 32 * kWarpsPerBlock, 0, static_cast<cudaStream_t>(stream)>>>(streams, patches, count,
                                                                                          out, scratch, status);
}

}  // namespace hfgpu::detail
