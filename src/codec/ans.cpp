// ans.cpp - see ans.h; the byte layout is docs/format.md, "Entropy-coded patches (HFAN)".
#include "codec/ans.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace hfpac {
namespace {

constexpr int kDirectTokens = 16;
constexpr int kMaxResidualBits = 17;                                  // |dx| <= 65535 -> z < 2^17
constexpr int kTokens = kDirectTokens + (kMaxResidualBits - 4) * 4;  // 68
constexpr int kEscape = kTokens;                                      // "this sample is masked"
constexpr int kAlphabet = kTokens + 1;
constexpr int kPresenceBytes = (kAlphabet + 7) / 8;                   // the presence bitmap (9)
constexpr int kTableBytes = kPresenceBytes + 1;                       // + a zero byte: even offsets
constexpr int kMaskBytes = 4;                                         // mask value + 2 zero bytes
constexpr int kScaleBits = 12;
constexpr uint32_t kScale = 1u << kScaleBits;
constexpr uint32_t kStateLow = 1u << 16;  // states live in [2^16, 2^32)

int bitLength(uint32_t z) { return z ? 32 - __builtin_clz(z) : 0; }

uint32_t zigzag(int32_t v) { return v >= 0 ? uint32_t(v) << 1 : (uint32_t(-(v + 1)) << 1) | 1u; }
int32_t unzigzag(uint32_t z) { return (z & 1u) ? -int32_t(z >> 1) - 1 : int32_t(z >> 1); }

// Token of z and its raw bits (count, value).
struct Token {
  int token, rawBits;
  uint32_t raw;
};
Token tokenOf(uint32_t z) {
  if (z < uint32_t(kDirectTokens)) return {int(z), 0, 0};
  const int len = bitLength(z);
  const int rawBits = len - 3;
  return {kDirectTokens + (len - 5) * 4 + int((z >> rawBits) & 3u), rawBits, z & ((1u << rawBits) - 1u)};
}
// The inverse: z from a token >= kDirectTokens and its raw bits.
int rawBitsOf(int token) { return token < kDirectTokens ? 0 : (token - kDirectTokens) / 4 + 2; }
uint32_t zOf(int token, uint32_t raw) {
  if (token < kDirectTokens) return uint32_t(token);
  const int k = token - kDirectTokens, rawBits = k / 4 + 2;
  return ((4u | uint32_t(k & 3)) << rawBits) | raw;
}

void putLE16(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(uint8_t(v));
  out.push_back(uint8_t(v >> 8));
}
void putLE32(std::vector<uint8_t>& out, uint32_t v) {
  putLE16(out, v & 0xffffu);
  putLE16(out, v >> 16);
}
uint32_t getLE16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t getLE32(const uint8_t* p) { return getLE16(p) | getLE16(p + 2) << 16; }

int32_t valueOf(uint16_t bits, bool isSigned) { return isSigned ? int32_t(int16_t(bits)) : int32_t(bits); }

// Frequencies summing to kScale, at least 1 for every token that occurs.
// A context no sample uses gets a valid table all the same (the escape token alone).
std::array<uint32_t, kAlphabet> normalise(const std::array<uint64_t, kAlphabet>& counts, uint64_t n) {
  std::array<uint32_t, kAlphabet> f{};
  if (n == 0) {
    f[kEscape] = kScale;
    return f;
  }
  int64_t sum = 0;
  for (int t = 0; t < kAlphabet; ++t)
    if (counts[size_t(t)]) {
      f[size_t(t)] = uint32_t(std::max<uint64_t>(1, counts[size_t(t)] * kScale / n));
      sum += f[size_t(t)];
    }
  // Rounding left the sum off by at most kTokens: take from / give to the largest.
  while (sum != int64_t(kScale)) {
    const auto largest = std::max_element(f.begin(), f.end());
    if (sum > int64_t(kScale)) {
      --*largest;  // the largest is > 1 while the sum exceeds kScale (kTokens << kScale)
      --sum;
    } else {
      ++*largest;
      ++sum;
    }
  }
  return f;
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
  const int lanes = options.lanes;
  if (samples == nullptr || width < 1 || height < 1 || width > kMaxPatchSide || height > kMaxPatchSide ||
      stride < size_t(width) || lanes < 1 || lanes > kAnsMaxLanes ||
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

  // Residuals -> tokens and raw bits, in raster order, with their context: whether the lane's
  // previous sample (i - lanes) was masked, which a lane knows without waiting for the others.
  std::vector<Token> tokens(n);
  std::vector<uint8_t> context(n);
  std::array<std::array<uint64_t, kAlphabet>, 2> counts{};
  std::array<uint64_t, 2> perContext{};
  int32_t last = 0;  // the last unmasked sample in raster order
  for (int y = 0; y < height; ++y) {
    const uint16_t* row = samples + size_t(y) * stride;
    for (int x = 0; x < width; ++x) {
      const size_t i = size_t(y) * size_t(width) + size_t(x);
      context[i] = i >= size_t(lanes) && tokens[i - size_t(lanes)].token == kEscape;
      Token t{kEscape, 0, 0};
      if (!isMasked(row[x])) {
        int32_t pred = last;
        if (x == 0 && y > 0 && !isMasked((row - stride)[0])) pred = valueOf((row - stride)[0], isSigned);
        last = valueOf(row[x], isSigned);
        t = tokenOf(zigzag(last - pred));
      }
      tokens[i] = t;
      ++counts[context[i]][size_t(t.token)];
      ++perContext[context[i]];
    }
  }
  const int tables = masked ? 2 : 1;
  std::array<std::array<uint32_t, kAlphabet>, 2> freq{}, start{};
  for (int c = 0; c < tables; ++c) {
    freq[size_t(c)] = normalise(counts[size_t(c)], perContext[size_t(c)]);
    for (int t = 1; t < kAlphabet; ++t) start[size_t(c)][size_t(t)] = start[size_t(c)][size_t(t - 1)] + freq[size_t(c)][size_t(t - 1)];
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
      if (tokens[i].rawBits) encodePut(state[i - first], tokens[i].raw, 1, tokens[i].rawBits, words);
    for (size_t i = end; i-- > first;) {
      const size_t c = context[i];
      const int t = tokens[i].token;
      encodePut(state[i - first], start[c][size_t(t)], freq[c][size_t(t)], kScaleBits, words);
    }
  }

  out.clear();
  out.reserve(size_t(kAnsHeaderBytes + kMaskBytes + 2 * kTableBytes) + 4 * kAlphabet + 4 * size_t(lanes) +
              2 * words.size() + 2);
  for (uint8_t b : kAnsMagic) out.push_back(b);
  out.push_back(uint8_t(kAnsVersion));
  out.push_back(uint8_t((isSigned ? 1 : 0) | (masked ? 2 : 0)));
  out.push_back(uint8_t(lanes));
  out.push_back(0);
  putLE16(out, uint32_t(width));  // kMaxPatchSide < 2^16
  putLE16(out, uint32_t(height));
  putLE32(out, 0);  // stream bytes, set below
  if (masked) putLE32(out, options.maskValue);
  for (int c = 0; c < tables; ++c) {
    uint8_t table[kTableBytes] = {};
    for (int t = 0; t < kAlphabet; ++t)
      if (freq[size_t(c)][size_t(t)]) table[t / 8] |= uint8_t(1u << (t % 8));
    for (uint8_t b : table) out.push_back(b);
    for (int t = 0; t < kAlphabet; ++t)
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
  if ((data[5] & ~3u) != 0 || data[6] < 1 || data[6] > kAnsMaxLanes || data[7] != 0) return Status::InvalidHeader;
  AnsInfo i;
  i.type = (data[5] & 1u) ? SampleType::Int16 : SampleType::UInt16;
  i.lanes = data[6];
  i.masked = (data[5] & 2u) != 0;
  i.width = int(getLE16(data + 8));
  i.height = int(getLE16(data + 10));
  i.streamBytes = getLE32(data + 12);
  if (i.width < 1 || i.height < 1 || i.width > kMaxPatchSide || i.height > kMaxPatchSide) return Status::InvalidHeader;
  const uint32_t fixed = uint32_t(kAnsHeaderBytes + (i.masked ? kMaskBytes + 2 * kTableBytes : kTableBytes));
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
struct DecodeTable {
  std::array<uint32_t, kAlphabet> freq{}, start{};
  // Per slot, packed for one load: bits 0-11 freq - 1, 12-23 slot - start, 24-30 token.
  std::array<uint32_t, kScale> slot;
};

// Per token: its raw bits, and z without them (z = base | raw).
struct TokenInfo {
  std::array<uint8_t, kAlphabet> rawBits{};
  std::array<uint32_t, kAlphabet> base{};
  TokenInfo() {
    for (int t = 0; t < kTokens; ++t) {
      rawBits[size_t(t)] = uint8_t(rawBitsOf(t));
      base[size_t(t)] = zOf(t, 0);
    }
  }
};
const TokenInfo kTokenInfo;

Status readTable(const uint8_t*& p, const uint8_t* end, bool masked, DecodeTable& table) {
  if (end - p < kTableBytes) return Status::TruncatedStream;
  const uint8_t* presence = p;
  p += kTableBytes;
  // No bits past the last token (the escape only in masked streams), the padding byte zero.
  const int used = masked ? kAlphabet : kTokens;
  if ((presence[kPresenceBytes - 1] >> (used - 8 * (kPresenceBytes - 1))) || presence[kPresenceBytes])
    return Status::InvalidHeader;
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
  for (int t = 0; t < used; ++t)
    for (uint32_t k = 0; k < table.freq[size_t(t)]; ++k)
      table.slot[table.start[size_t(t)] + k] = (table.freq[size_t(t)] - 1) | k << 12 | uint32_t(t) << 24;
  return Status::Ok;
}

}  // namespace

Status ansDecode(const uint8_t* data, size_t size, uint16_t* dst, size_t dstStride, size_t dstCapacity) {
  AnsInfo info;
  if (Status st = ansReadInfo(data, size, info); st != Status::Ok) return st;
  if (dst == nullptr || dstStride < size_t(info.width) ||
      dstCapacity < size_t(info.height - 1) * dstStride + size_t(info.width))
    return Status::InvalidArgument;
  const uint8_t* p = data + kAnsHeaderBytes + (info.masked ? kMaskBytes : 0);
  const uint8_t* const end = data + info.streamBytes;
  DecodeTable tables[2];
  for (int c = 0; c < (info.masked ? 2 : 1); ++c)
    if (Status st = readTable(p, end, info.masked, tables[c]); st != Status::Ok) return st;

  const size_t lanes = size_t(info.lanes);
  if (size_t(end - p) < 4 * lanes) return Status::TruncatedStream;
  uint32_t state[kAnsMaxLanes];
  for (size_t l = 0; l < lanes; ++l, p += 4) {
    state[l] = getLE32(p);
    if (state[l] < kStateLow) return Status::InvalidHeader;
  }
  const uint8_t* const wordBytes = p;
  const size_t words = size_t(end - p) / 2;
  size_t pos = 0;
  // A refill without a branch: the word at `pos` is read whether it is needed or not, so the
  // caller guarantees pos < words (the fast path below checks it once per group).
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
  const int32_t lo = isSigned ? -32768 : 0, hi = isSigned ? 32767 : 65535;
  const uint16_t maskValue = info.maskValue;
  const size_t width = size_t(info.width), n = width * size_t(info.height);
  // Group by group (`lanes` consecutive samples): every lane's token, then every lane's raw
  // bits, both in lane order (what lanes in lockstep on a GPU do); then the group's values.
  uint8_t token[kAnsMaxLanes] = {}, laneMasked[kAnsMaxLanes] = {};
  uint32_t z[kAnsMaxLanes];
  int32_t last = 0;  // the last unmasked sample in raster order
  uint32_t bad = 0;  // out-of-range values seen (one branch at the end)
  size_t x = 0, y = 0;
  uint16_t* row = dst;
  size_t first = 0;
  // The common case in its own loop: no mask, the default lane count, whole groups and words
  // enough for every read: constant trip counts, so the lanes' states stay in registers.
  if (!info.masked && lanes == size_t(kAnsDefaultLanes)) {
    constexpr size_t L = kAnsDefaultLanes;
    const DecodeTable& table = tables[0];
    uint32_t st[L];
    std::copy_n(state, L, st);
    while (n - first >= L && words - pos > 2 * L) {
      uint32_t tok[L], zz[L];
#pragma GCC unroll 8
      for (size_t l = 0; l < L; ++l) {
        const uint32_t e = table.slot[st[l] & (kScale - 1)];
        uint32_t s = ((e & 4095u) + 1) * (st[l] >> kScaleBits) + ((e >> 12) & 4095u);
        refillFast(s);
        st[l] = s;
        tok[l] = e >> 24;
      }
#pragma GCC unroll 8
      for (size_t l = 0; l < L; ++l) {
        const uint32_t k = kTokenInfo.rawBits[tok[l]];
        uint32_t s = st[l];
        zz[l] = kTokenInfo.base[tok[l]] | (s & ((1u << k) - 1u));
        s >>= k;
        refillFast(s);
        st[l] = s;
      }
      for (size_t l = 0; l < L; ++l) {
        int32_t pred = last;
        if (x == 0 && y > 0) pred = valueOf(row[-std::ptrdiff_t(dstStride)], isSigned);
        const int32_t v = pred + unzigzag(zz[l]);
        bad |= uint32_t(v < lo) | uint32_t(v > hi);
        row[x] = uint16_t(v);
        last = v;
        if (++x == width) {
          x = 0;
          ++y;
          row += dstStride;
        }
      }
      first += L;
    }
    std::copy_n(st, L, state);
  }
  for (; first < n; first += lanes) {
    const size_t count = std::min(lanes, n - first);
    // Each sample reads at most two words; with that many left, no read needs its own check.
    const bool fast = words - pos > 2 * count;
    for (size_t l = 0; l < count; ++l) {
      const uint32_t e = tables[laneMasked[l]].slot[state[l] & (kScale - 1)];
      uint32_t s = ((e & 4095u) + 1) * (state[l] >> kScaleBits) + ((e >> 12) & 4095u);
      if (fast) {
        refillFast(s);
      } else if (!refillChecked(s)) {
        return Status::TruncatedStream;
      }
      state[l] = s;
      token[l] = uint8_t(e >> 24);
      laneMasked[l] = token[l] == kEscape;  // the escape only exists in masked streams' tables
    }
    for (size_t l = 0; l < count; ++l) {
      const uint32_t k = kTokenInfo.rawBits[token[l]];  // 0 for direct tokens and the escape
      uint32_t s = state[l];
      z[l] = kTokenInfo.base[token[l]] | (s & ((1u << k) - 1u));
      s >>= k;
      if (fast) {
        refillFast(s);
      } else if (!refillChecked(s)) {
        return Status::TruncatedStream;
      }
      state[l] = s;
    }
    for (size_t l = 0; l < count; ++l) {
      if (token[l] == kEscape) {
        row[x] = maskValue;
      } else {
        int32_t pred = last;
        if (x == 0 && y > 0) {
          const uint16_t above = row[-std::ptrdiff_t(dstStride)];
          // Unmasked samples never equal the masked value (checked below): this tells them apart.
          if (!info.masked || above != maskValue) pred = valueOf(above, isSigned);
        }
        const int32_t v = pred + unzigzag(z[l]);
        bad |= uint32_t(v < lo) | uint32_t(v > hi) | uint32_t(info.masked && uint16_t(v) == maskValue);
        row[x] = uint16_t(v);
        last = v;
      }
      if (++x == width) {
        x = 0;
        ++y;
        row += dstStride;
      }
    }
  }
  if (bad) return Status::OutOfRange;
  // Exactly the words the encoder wrote (one zero word of padding allowed), and every lane back
  // at the encoder's initial state: anything else is a corrupt stream.
  if (!(pos == words || (pos + 1 == words && getLE16(wordBytes + 2 * pos) == 0))) return Status::SizeMismatch;
  for (size_t l = 0; l < lanes; ++l)
    if (state[l] != kStateLow) return Status::SizeMismatch;
  return Status::Ok;
}

}  // namespace hfpac
