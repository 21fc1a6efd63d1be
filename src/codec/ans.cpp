// ans.cpp - see ans.h; the byte layout is docs/format.md, "Entropy-coded patches (HFAN)".
#include "codec/ans.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>

#include "codec/ans_lanes.h"
#include "codec/bitpack.h"

namespace hfpac {
namespace {

constexpr int kMaxResidualBits = 17;  // |dx| <= 65535 -> z < 2^17
// Token sets: z < 2^d is its own token (d = 4 or 8), larger z a (bit length, 2 mantissa bits)
// token plus raw bits; the escape (a masked sample) follows the value tokens.
constexpr int tokenCount(int d) { return (1 << d) + (kMaxResidualBits - d) * 4; }
constexpr int kMaxAlphabet = tokenCount(8) + 1;  // 293
constexpr int kMaskBytes = 4;                     // mask value + 2 zero bytes
constexpr int kScaleBits = detail::kAnsScaleBits;
constexpr uint32_t kScale = 1u << kScaleBits;
constexpr uint32_t kStateLow = detail::kAnsStateLow;  // states live in [2^16, 2^32)

using detail::bitLength;
using detail::unzigzag;
using detail::zigzag;

// One token set: d, its sizes, and per token its raw bits and z without them (z = base | raw).
struct TokenSet {
  int d = 4, direct = 16, tokens = 0, escape = 0, alphabet = 0, presenceBytes = 0, tableBytes = 0;
  std::array<uint8_t, kMaxAlphabet> rawBits{};
  std::array<uint32_t, kMaxAlphabet> base{};
  explicit TokenSet(int directLog2) : d(directLog2), direct(1 << directLog2) {
    tokens = tokenCount(d);
    escape = tokens;
    alphabet = tokens + 1;
    presenceBytes = (alphabet + 7) / 8;
    tableBytes = presenceBytes + 1;  // + a zero byte: even offsets
    for (int t = 0; t < tokens; ++t) {
      if (t < direct) {
        base[size_t(t)] = uint32_t(t);
        continue;
      }
      const int k = t - direct, len = d + 1 + k / 4, raw = len - 3;
      rawBits[size_t(t)] = uint8_t(raw);
      base[size_t(t)] = (4u | uint32_t(k & 3)) << raw;
    }
  }
  struct Token {
    int token, rawBits;
    uint32_t raw;
  };
  Token tokenOf(uint32_t z) const {
    if (z < uint32_t(direct)) return {int(z), 0, 0};
    const int len = bitLength(z), raw = len - 3;
    return {direct + (len - d - 1) * 4 + int((z >> raw) & 3u), raw, z & ((1u << raw) - 1u)};
  }
};
const TokenSet kSmallSet(4), kLargeSet(8);
const TokenSet& tokenSet(int d) { return d == 8 ? kLargeSet : kSmallSet; }

void putLE16(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(uint8_t(v));
  out.push_back(uint8_t(v >> 8));
}
void putLE32(std::vector<uint8_t>& out, uint32_t v) {
  putLE16(out, v & 0xffffu);
  putLE16(out, v >> 16);
}
uint32_t getLE16(const uint8_t* p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint16_t v;  // one unaligned load (the byte-wise form was not merged in the decode loop)
  std::memcpy(&v, p, 2);
  return v;
#else
  return uint32_t(p[0]) | uint32_t(p[1]) << 8;
#endif
}
uint32_t getLE32(const uint8_t* p) { return getLE16(p) | getLE16(p + 2) << 16; }

int32_t valueOf(uint16_t bits, bool isSigned) { return isSigned ? int32_t(int16_t(bits)) : int32_t(bits); }

using Counts = std::array<uint64_t, kMaxAlphabet>;
using Freqs = std::array<uint32_t, kMaxAlphabet>;

// Frequencies summing to kScale, at least 1 for every token that occurs. A context no sample
// uses gets a valid table all the same (the escape alone).
Freqs normalise(const Counts& counts, uint64_t n, const TokenSet& set) {
  Freqs f{};
  if (n == 0) {
    f[size_t(set.escape)] = kScale;
    return f;
  }
  int64_t sum = 0;
  for (int t = 0; t < set.alphabet; ++t)
    if (counts[size_t(t)]) {
      f[size_t(t)] = uint32_t(std::max<uint64_t>(1, counts[size_t(t)] * kScale / n));
      sum += f[size_t(t)];
    }
  // Rounding left the sum off by at most the alphabet size: take from / give to the largest.
  while (sum != int64_t(kScale)) {
    const auto largest = std::max_element(f.begin(), f.end());
    if (sum > int64_t(kScale)) {
      --*largest;  // the largest is > 1 while the sum exceeds kScale (alphabet << kScale)
      --sum;
    } else {
      ++*largest;
      ++sum;
    }
  }
  return f;
}

// Estimated bytes of the tables and coded tokens (order-0 entropy + raw bits): how the encoder
// picks the token set.
double estimateBytes(const std::array<Counts, 2>& counts, const std::array<uint64_t, 2>& n, double rawBits,
                     int tables, const TokenSet& set) {
  double bits = rawBits;
  for (int c = 0; c < tables; ++c) {
    bits += 8.0 * set.tableBytes;
    for (int t = 0; t < set.alphabet; ++t)
      if (const uint64_t k = counts[size_t(c)][size_t(t)])
        bits += 16.0 - double(k) * std::log2(double(k) / double(n[size_t(c)]));
  }
  return bits / 8;
}

// One rANS encoder step (x is a lane's state): pushes at most one word.
inline void encodePut(uint32_t& x, uint32_t start, uint32_t freq, int scaleBits, std::vector<uint16_t>& words) {
  const uint64_t xMax = (uint64_t(kStateLow >> scaleBits) << 16) * freq;
  if (x >= xMax) {
    words.push_back(uint16_t(x));
    x >>= 16;
  }
  x = ((x / freq) << scaleBits) + (x % freq) + start;
}

}  // namespace

bool isAnsStream(const uint8_t* data, size_t size) {
  return data != nullptr && size >= 4 && std::memcmp(data, kAnsMagic, 4) == 0;
}

Status ansEncode(const uint16_t* samples, size_t stride, int width, int height, SampleType type,
                 std::vector<uint8_t>& out, const AnsOptions& options) {
  if (samples == nullptr || width < 1 || height < 1 || width > kMaxPatchSide || height > kMaxPatchSide ||
      stride < size_t(width) || options.lanes < kAnsAutoLanes || options.lanes > kAnsMaxLanes ||
      (type != SampleType::UInt16 && type != SampleType::Int16))
    return Status::InvalidArgument;
  const bool isSigned = type == SampleType::Int16;
  const size_t n = size_t(width) * size_t(height);
  bool masked = false;
  if (options.hasMask)
    for (int y = 0; y < height && !masked; ++y)
      masked = std::find(samples + size_t(y) * stride, samples + size_t(y) * stride + size_t(width),
                         options.maskValue) != samples + size_t(y) * stride + size_t(width);
  auto isMasked = [&](uint16_t v) { return masked && v == options.maskValue; };

  // Residuals in raster order (kMaskedZ: masked).
  constexpr uint32_t kMaskedZ = ~0u;
  std::vector<uint32_t> zs(n);
  int32_t last = 0;  // the last unmasked sample in raster order
  for (int y = 0; y < height; ++y) {
    const uint16_t* row = samples + size_t(y) * stride;
    for (int x = 0; x < width; ++x) {
      const size_t i = size_t(y) * size_t(width) + size_t(x);
      if (isMasked(row[x])) {
        zs[i] = kMaskedZ;
        continue;
      }
      int32_t pred = last;
      if (x == 0 && y > 0 && !isMasked((row - stride)[0])) pred = valueOf((row - stride)[0], isSigned);
      last = valueOf(row[x], isSigned);
      zs[i] = zigzag(last - pred);
    }
  }

  // Each residual's context: whether the lane's previous sample (i - lanes) was masked, which a
  // lane knows without waiting for the others. Then the token set that codes this patch smaller
  // (by the order-0 estimate).
  const int tables = masked ? 2 : 1;
  std::vector<uint8_t> context(n);
  const TokenSet* set = nullptr;
  std::array<Counts, 2> counts{};
  std::array<uint64_t, 2> perContext{};
  double bestBytes = 0;
  auto model = [&](int laneCount) {
    for (size_t i = 0; i < n; ++i) context[i] = i >= size_t(laneCount) && zs[i - size_t(laneCount)] == kMaskedZ;
    set = nullptr;
    for (const TokenSet* candidate : {&kSmallSet, &kLargeSet}) {
      std::array<Counts, 2> c{};
      std::array<uint64_t, 2> m{};
      double rawBits = 0;
      for (size_t i = 0; i < n; ++i) {
        const int t = zs[i] == kMaskedZ ? candidate->escape : candidate->tokenOf(zs[i]).token;
        ++c[context[i]][size_t(t)];
        ++m[context[i]];
        rawBits += candidate->rawBits[size_t(t)] * (t != candidate->escape);
      }
      const double bytes = estimateBytes(c, m, rawBits, tables, *candidate);
      if (set == nullptr || bytes < bestBytes) {
        set = candidate;
        bestBytes = bytes;
        counts = c;
        perContext = m;
      }
    }
  };
  int lanes = options.lanes == kAnsAutoLanes ? kAnsWideLanes : options.lanes;
  model(lanes);
  if (options.lanes == kAnsAutoLanes && bestBytes < double(kAnsWideLanesMinBytes)) {
    lanes = bestBytes < double(kAnsMidLanesMinBytes) ? kAnsNarrowLanes : kAnsMidLanes;
    if (masked) model(lanes);  // contexts follow the lanes; unmasked ones are all 0
  }
  std::array<Freqs, 2> freq{}, start{};
  for (int c = 0; c < tables; ++c) {
    freq[size_t(c)] = normalise(counts[size_t(c)], perContext[size_t(c)], *set);
    for (int t = 1; t < set->alphabet; ++t)
      start[size_t(c)][size_t(t)] = start[size_t(c)][size_t(t - 1)] + freq[size_t(c)][size_t(t - 1)];
  }

  // Encode backwards (rANS is last in, first out). Sample i is on lane i mod lanes; a group is
  // `lanes` consecutive samples; the decoder reads a group's tokens (lane order), then its raw
  // bits (lane order): so, per group from the last, raw bits of the lanes in reverse, then the
  // tokens in reverse.
  std::vector<uint32_t> state(size_t(lanes), kStateLow);
  std::vector<uint16_t> words;
  words.reserve(n);
  const size_t groups = (n + size_t(lanes) - 1) / size_t(lanes);
  for (size_t g = groups; g-- > 0;) {
    const size_t first = g * size_t(lanes), end = std::min(n, first + size_t(lanes));
    for (size_t i = end; i-- > first;)
      if (zs[i] != kMaskedZ)
        if (const TokenSet::Token t = set->tokenOf(zs[i]); t.rawBits)
          encodePut(state[i - first], t.raw, 1, t.rawBits, words);
    for (size_t i = end; i-- > first;) {
      const size_t c = context[i];
      const int t = zs[i] == kMaskedZ ? set->escape : set->tokenOf(zs[i]).token;
      encodePut(state[i - first], start[c][size_t(t)], freq[c][size_t(t)], kScaleBits, words);
    }
  }

  out.clear();
  out.reserve(size_t(kAnsHeaderBytes + kMaskBytes) + size_t(tables) * (size_t(set->tableBytes) + 2 * size_t(set->alphabet)) +
              4 * size_t(lanes) + 2 * words.size() + 2);
  for (uint8_t b : kAnsMagic) out.push_back(b);
  out.push_back(uint8_t(kAnsVersion));
  out.push_back(uint8_t((isSigned ? 1 : 0) | (masked ? 2 : 0)));
  out.push_back(uint8_t(lanes));
  out.push_back(uint8_t(set->d));
  putLE16(out, uint32_t(width));  // kMaxPatchSide < 2^16
  putLE16(out, uint32_t(height));
  putLE32(out, 0);  // stream bytes, set below
  if (masked) putLE32(out, options.maskValue);
  for (int c = 0; c < tables; ++c) {
    std::vector<uint8_t> table(size_t(set->tableBytes), 0);
    for (int t = 0; t < set->alphabet; ++t)
      if (freq[size_t(c)][size_t(t)]) table[size_t(t / 8)] |= uint8_t(1u << (t % 8));
    for (uint8_t b : table) out.push_back(b);
    for (int t = 0; t < set->alphabet; ++t)
      if (freq[size_t(c)][size_t(t)]) putLE16(out, freq[size_t(c)][size_t(t)] - 1);
  }
  for (uint32_t x : state) putLE32(out, x);
  for (size_t k = words.size(); k-- > 0;) putLE16(out, words[k]);  // first read first
  if (out.size() % 4) putLE16(out, 0);                             // pad to whole 32-bit words
  const uint32_t total = uint32_t(out.size());
  for (int k = 0; k < 4; ++k) out[size_t(12 + k)] = uint8_t(total >> (8 * k));
  return Status::Ok;
}

Status ansReadInfo(const uint8_t* data, size_t size, AnsInfo& info) {
  if (data == nullptr) return Status::InvalidArgument;
  if (size < size_t(kAnsHeaderBytes)) return Status::TruncatedHeader;
  if (!isAnsStream(data, size)) return Status::BadMagic;
  if (data[4] != kAnsVersion) return Status::UnsupportedVersion;
  if ((data[5] & ~3u) != 0 || data[6] < 1 || data[6] > kAnsMaxLanes || (data[7] != 4 && data[7] != 8))
    return Status::InvalidHeader;
  AnsInfo i;
  i.type = (data[5] & 1u) ? SampleType::Int16 : SampleType::UInt16;
  i.lanes = data[6];
  i.masked = (data[5] & 2u) != 0;
  i.directLog2 = data[7];
  i.width = int(getLE16(data + 8));
  i.height = int(getLE16(data + 10));
  i.streamBytes = getLE32(data + 12);
  if (i.width < 1 || i.height < 1 || i.width > kMaxPatchSide || i.height > kMaxPatchSide) return Status::InvalidHeader;
  const uint32_t tableBytes = uint32_t(tokenSet(i.directLog2).tableBytes);
  const uint32_t fixed = uint32_t(kAnsHeaderBytes) + (i.masked ? kMaskBytes + 2 * tableBytes : tableBytes);
  if (i.streamBytes % 4 != 0 || i.streamBytes < fixed) return Status::InvalidHeader;
  if (i.streamBytes > size) return Status::TruncatedStream;
  if (i.masked) {
    if (getLE16(data + kAnsHeaderBytes + 2) != 0) return Status::InvalidHeader;
    i.maskValue = uint16_t(getLE16(data + kAnsHeaderBytes));
  }
  info = i;
  return Status::Ok;
}

namespace {

// One context's decoding table, read from the stream: presence bitmap, then freq - 1 per present
// token; the frequencies must sum to kScale.
// One 64-bit entry per slot holds everything a lane needs after its lookup, so decoding a
// symbol is one load: freq - 1 (bits 0-11), slot - start (12-23), the token's raw bit count
// (24-28), the escape flag (29) and the token's base value (32-63).
struct DecodeTable {
  Freqs freq{}, start{};
  std::array<uint64_t, kScale> entry;    // filled unless compact
  std::array<uint32_t, kScale> compact;  // filled when compact (ans_lanes.h)
};
constexpr uint64_t kEntryEscape = detail::kAnsEntryEscape;
inline uint32_t entryRawBits(uint64_t e) { return uint32_t(e >> 24) & 31u; }
inline uint32_t entryBase(uint64_t e) { return uint32_t(e >> 32); }
// The rANS step of a lane in state x whose slot's entry is e (before the refill).
inline uint32_t entryStep(uint64_t e, uint32_t x) {
  return ((uint32_t(e) & 4095u) + 1) * (x >> kScaleBits) + (uint32_t(e >> 12) & 4095u);
}

// The 64-bit entry of a compact one (the same token; ans_lanes.h has both layouts).
uint64_t expandCompact(uint32_t e) {
  const uint32_t rawBits = (e >> detail::kAnsCompactRawShift) & 15u;
  if (rawBits == detail::kAnsCompactEscapeRaw) return (e & 0xffffffu) | kEntryEscape;
  const uint32_t base = (e >> detail::kAnsCompactFieldShift) << rawBits;
  return (e & 0xffffffu) | uint64_t(rawBits) << 24 | uint64_t(base) << 32;
}

// `compact`: fill table.compact (d = 4 only) instead of table.entry.
Status readTable(const uint8_t*& p, const uint8_t* end, bool masked, const TokenSet& set, bool compact,
                 DecodeTable& table) {
  if (end - p < set.tableBytes) return Status::TruncatedStream;
  const uint8_t* presence = p;
  p += set.tableBytes;
  // No bits past the last allowed token (the escape only in masked streams), padding zero.
  const int used = masked ? set.alphabet : set.tokens;
  for (int t = used; t < 8 * set.presenceBytes; ++t)
    if (presence[t / 8] >> (t % 8) & 1u) return Status::InvalidHeader;
  if (presence[set.presenceBytes]) return Status::InvalidHeader;
  uint32_t sum = 0;
  for (int t = 0; t < used; ++t) {
    table.freq[size_t(t)] = 0;
    if (!(presence[t / 8] >> (t % 8) & 1u)) continue;
    if (end - p < 2) return Status::TruncatedStream;
    const uint32_t f = getLE16(p) + 1;
    p += 2;
    if (f > kScale || sum + f > kScale) return Status::InvalidHeader;
    table.freq[size_t(t)] = f;
    table.start[size_t(t)] = sum;
    sum += f;
  }
  if (sum != kScale) return Status::InvalidHeader;
  if (compact) {  // d = 4: every token's fields fit 32 bits
    for (int t = 0; t < used; ++t) {
      const bool escape = t == set.escape;
      const uint32_t rawBits = escape ? detail::kAnsCompactEscapeRaw : set.rawBits[size_t(t)];
      // The token (direct), 4..7 (others), 0 (the escape).
      const uint32_t field = escape ? 0 : set.base[size_t(t)] >> rawBits;
      const uint32_t fields = field << detail::kAnsCompactFieldShift | rawBits << detail::kAnsCompactRawShift |
                              (table.freq[size_t(t)] - 1);
      for (uint32_t k = 0; k < table.freq[size_t(t)]; ++k) table.compact[table.start[size_t(t)] + k] = fields | k << 12;
    }
    return Status::Ok;
  }
  for (int t = 0; t < used; ++t) {
    const bool escape = t == set.escape;
    const uint64_t fields = (escape ? kEntryEscape : uint64_t(set.rawBits[size_t(t)]) << 24) |
                            (escape ? 0 : uint64_t(set.base[size_t(t)]) << 32) | (table.freq[size_t(t)] - 1);
    for (uint32_t k = 0; k < table.freq[size_t(t)]; ++k) table.entry[table.start[size_t(t)] + k] = fields | k << 12;
  }
  return Status::Ok;
}

std::atomic<bool> constantShortcutDisabled{false};
std::atomic<uint64_t> constantShortcuts{0};

}  // namespace

namespace detail {
void setAnsConstantShortcutDisabledForTesting(bool disabled) {
  constantShortcutDisabled.store(disabled, std::memory_order_relaxed);
}
uint64_t ansConstantShortcutsForTesting() { return constantShortcuts.load(std::memory_order_relaxed); }
}  // namespace detail

Status ansDecode(const uint8_t* data, size_t size, uint16_t* dst, size_t dstStride, size_t dstCapacity) {
  AnsInfo info;
  if (Status st = ansReadInfo(data, size, info); st != Status::Ok) return st;
  if (dst == nullptr || dstStride < size_t(info.width) ||
      dstCapacity < size_t(info.height - 1) * dstStride + size_t(info.width))
    return Status::InvalidArgument;
  const TokenSet& set = tokenSet(info.directLog2);
  const uint8_t* p = data + kAnsHeaderBytes + (info.masked ? kMaskBytes : 0);
  const uint8_t* const end = data + info.streamBytes;
  const size_t lanes = size_t(info.lanes);
  // The AVX2 loop's compact tables where they apply (one gather per lookup instead of two).
  const bool compact = info.directLog2 == detail::kAnsCompactDirectLog2 && detail::ansAvx2ServesLanes(lanes);
  DecodeTable tables[2];
  for (int c = 0; c < (info.masked ? 2 : 1); ++c)
    if (Status st = readTable(p, end, info.masked, set, compact, tables[c]); st != Status::Ok) return st;

  if (size_t(end - p) < 4 * lanes) return Status::TruncatedStream;
  uint32_t state[kAnsMaxLanes];
  for (size_t l = 0; l < lanes; ++l, p += 4) {
    state[l] = getLE32(p);
    if (state[l] < kStateLow) return Status::InvalidHeader;
  }
  const uint8_t* const wordBytes = p;
  const size_t words = size_t(end - p) / 2;
  // A constant patch (flat sea at 0, a tile of nodata): every token the lanes can meet is one
  // token of frequency kScale without raw bits, so a step leaves each state as it is and reads no
  // word. Then the samples are known without decoding: 0 when that token is z = 0 (every
  // prediction 0 plus 0), the mask value when both tables hold only the escape. The checks are the
  // general loop's end checks, which is what it would reach.
  const auto onlyToken = [&](const DecodeTable& t, int token) { return t.freq[size_t(token)] == kScale; };
  const bool allZero = onlyToken(tables[0], 0);
  const bool allMasked = info.masked && onlyToken(tables[0], set.escape) && onlyToken(tables[1], set.escape);
  if ((allZero || allMasked) && !constantShortcutDisabled.load(std::memory_order_relaxed)) {
    constantShortcuts.fetch_add(1, std::memory_order_relaxed);
    // A decoded sample equal to the mask value is a corrupt stream (the general loop's flag).
    if (allZero && info.masked && info.maskValue == 0) return Status::OutOfRange;
    if (!(words == 0 || (words == 1 && getLE16(wordBytes) == 0))) return Status::SizeMismatch;
    for (size_t l = 0; l < lanes; ++l)
      if (state[l] != kStateLow) return Status::SizeMismatch;
    const uint16_t value = allZero ? 0 : info.maskValue;
    for (int y = 0; y < info.height; ++y) std::fill_n(dst + size_t(y) * dstStride, size_t(info.width), value);
    return Status::Ok;
  }
  size_t pos = 0;
  // A refill without a branch: the word at `pos` is read whether it is needed or not, so the
  // caller guarantees pos < words (checked once per group).
  auto refillFast = [&](uint32_t& x) {
    const uint32_t need = x < kStateLow;
    const uint32_t w = getLE16(wordBytes + 2 * pos);
    x = need ? (x << 16) | w : x;
    pos += need;
  };
  auto refillChecked = [&](uint32_t& x) {
    if (x < kStateLow) {
      if (pos >= words) return false;
      x = (x << 16) | getLE16(wordBytes + 2 * pos++);
    }
    return true;
  };

  const bool isSigned = info.type == SampleType::Int16;
  const size_t width = size_t(info.width), n = width * size_t(info.height);
  // Group by group (`lanes` consecutive samples): every lane's token, then every lane's raw
  // bits, both in lane order (what lanes in lockstep on a GPU do); then the group's values.
  detail::AnsGroupDecoder d;
  d.entries = tables[0].entry.data();
  d.tableStride = size_t(tables[1].entry.data() - tables[0].entry.data());
  d.compactEntries = compact ? tables[0].compact.data() : nullptr;
  d.compactStride = size_t(tables[1].compact.data() - tables[0].compact.data());
  d.wordBytes = wordBytes;
  d.words = words;
  d.n = n;
  d.width = width;
  d.dstStride = dstStride;
  d.masked = info.masked;
  d.isSigned = isSigned;
  d.maskValue = info.maskValue;
  d.lo = isSigned ? -32768 : 0;
  d.hi = isSigned ? 32767 : 65535;
  d.row = dst;
  uint32_t entryLow[kAnsMaxLanes];
  uint32_t z[kAnsMaxLanes];
  // Whole groups in the AVX2 loop where the CPU has it (lanes = 8, 16, 24, 32); else the default
  // lane count in a scalar loop with constant trip counts, so the lanes' states stay in
  // registers (unmasked streams); then the general loop for the rest.
  d.lanes = lanes;
  std::copy_n(state, lanes, d.state);
  if (!detail::ansDecodeGroupsAvx2(d) && !info.masked && lanes == size_t(kAnsNarrowLanes)) {
    constexpr size_t L = kAnsNarrowLanes;
    const DecodeTable& table = tables[0];
    uint32_t st[L];
    std::copy_n(d.state, L, st);
    pos = d.pos;
    while (n - d.first >= L && words - pos > 2 * L) {
      uint64_t entry[L];
#pragma GCC unroll 8
      for (size_t l = 0; l < L; ++l) {
        const uint64_t e = table.entry[st[l] & (kScale - 1)];
        uint32_t s = entryStep(e, st[l]);
        refillFast(s);
        st[l] = s;
        entry[l] = e;
      }
#pragma GCC unroll 8
      for (size_t l = 0; l < L; ++l) {
        const uint32_t k = entryRawBits(entry[l]);
        uint32_t s = st[l];
        z[l] = entryBase(entry[l]) | (s & ((1u << k) - 1u));
        s >>= k;
        refillFast(s);
        st[l] = s;
      }
      if (d.x != 0 && width - d.x >= L) {
        // The whole group inside one row and not at its start: every prediction is the
        // previous sample (no escapes without a mask), a running sum without branches.
        int64_t v = d.last;
#pragma GCC unroll 8
        for (size_t l = 0; l < L; ++l) {
          v += unzigzag(z[l]);
          d.bad |= uint32_t(v < d.lo) | uint32_t(v > d.hi);
          d.row[d.x + l] = uint16_t(v);
        }
        d.last = v;
        d.x += L;
        if (d.x == width) {
          d.x = 0;
          ++d.y;
          d.row += dstStride;
        }
      } else {
        for (size_t l = 0; l < L; ++l) entryLow[l] = uint32_t(entry[l]);
        d.emit(entryLow, z, L);
      }
      d.first += L;
    }
    std::copy_n(st, L, d.state);
    d.pos = pos;
  }
  if (d.truncated) return Status::TruncatedStream;
  std::copy_n(d.state, lanes, state);
  uint8_t* const laneMasked = d.laneMasked;
  pos = d.pos;
  for (size_t first = d.first; first < n; first += lanes) {
    const size_t count = std::min(lanes, n - first);
    // Each sample reads at most two words; with that many left, no read needs its own check.
    const bool fast = words - pos > 2 * count;
    uint64_t entry[kAnsMaxLanes];
    for (size_t l = 0; l < count; ++l) {
      const uint32_t slot = state[l] & (kScale - 1);
      const DecodeTable& table = tables[laneMasked[l]];
      const uint64_t e = compact ? expandCompact(table.compact[slot]) : table.entry[slot];
      uint32_t s = entryStep(e, state[l]);
      if (fast) {
        refillFast(s);
      } else if (!refillChecked(s)) {
        return Status::TruncatedStream;
      }
      state[l] = s;
      entry[l] = e;
      entryLow[l] = uint32_t(e);
      laneMasked[l] = (e & kEntryEscape) != 0;  // the escape only exists in masked streams' tables
    }
    for (size_t l = 0; l < count; ++l) {
      const uint32_t k = entryRawBits(entry[l]);  // 0 and base 0 for the escape
      uint32_t s = state[l];
      z[l] = entryBase(entry[l]) | (s & ((1u << k) - 1u));
      s >>= k;
      if (fast) {
        refillFast(s);
      } else if (!refillChecked(s)) {
        return Status::TruncatedStream;
      }
      state[l] = s;
    }
    d.emit(entryLow, z, count);
  }
  const uint32_t bad = d.bad;
  if (bad) return Status::OutOfRange;
  // Exactly the words the encoder wrote (one zero word of padding allowed), and every lane back
  // at the encoder's initial state: anything else is a corrupt stream.
  if (!(pos == words || (pos + 1 == words && getLE16(wordBytes + 2 * pos) == 0))) return Status::SizeMismatch;
  for (size_t l = 0; l < lanes; ++l)
    if (state[l] != kStateLow) return Status::SizeMismatch;
  return Status::Ok;
}

}  // namespace hfpac
