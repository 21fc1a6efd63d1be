// bitpack.h - the fixed-width bit fields every HFPaC section is made of (internal).
//
// A section is a sequence of little-endian 32-bit words; field k of width w starts at bit
// offset o and bit t of the stream is bit (t mod 32) of word (t / 32). A field of up to 25 bits
// therefore spans at most two words, which is what lets one GPU thread fetch any field with two
// aligned 32-bit loads (docs/format.md, "Bit packing").
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

// Functions shared with the CUDA kernels are __host__ __device__ under nvcc.
#ifndef HFPAC_HD
#ifdef __CUDACC__
#define HFPAC_HD __host__ __device__
#else
#define HFPAC_HD
#endif
#endif

namespace hfpac::detail {

inline uint32_t loadWordLE(const uint8_t* p) {
  // memcpy + explicit byte order: the stream may be unaligned and hosts may be big-endian.
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

HFPAC_HD inline uint32_t lowMask(int bits) { return bits >= 32 ? 0xffffffffu : ((1u << bits) - 1u); }

// Reads fields from a section of `words` 32-bit words at `base`. The caller has checked that
// every field it asks for lies inside the section; the second word is fetched only if it exists,
// so a field ending exactly at the section end never reads past it.
class BitReader {
 public:
  BitReader() = default;
  BitReader(const uint8_t* base, uint64_t words) : base_(base), words_(words) {}

  uint32_t field(uint64_t bitOffset, int bits) const {
    if (bits == 0) return 0;
    const uint64_t w = bitOffset >> 5;
    const int shift = int(bitOffset & 31);
    uint64_t v = loadWordLE(base_ + 4 * w);
    if (shift + bits > 32 && w + 1 < words_) v |= uint64_t(loadWordLE(base_ + 4 * (w + 1))) << 32;
    return uint32_t(v >> shift) & lowMask(bits);
  }
  uint8_t byteAt(uint64_t index) const { return base_[index]; }

 private:
  const uint8_t* base_ = nullptr;
  uint64_t words_ = 0;
};

// Appends fields LSB-first; flush() pads the last word with zero bits.
class BitWriter {
 public:
  void put(uint32_t value, int bits) {
    if (bits == 0) return;
    acc_ |= uint64_t(value & lowMask(bits)) << fill_;
    fill_ += bits;
    bits_ += uint64_t(bits);
    while (fill_ >= 32) {
      words_.push_back(uint32_t(acc_));
      acc_ >>= 32;
      fill_ -= 32;
    }
  }
  uint64_t bitCount() const { return bits_; }
  // Pads to a whole word and appends the little-endian bytes to `out`.
  void flushTo(std::vector<uint8_t>& out) {
    if (fill_ > 0) {
      words_.push_back(uint32_t(acc_));
      acc_ = 0;
      fill_ = 0;
    }
    for (uint32_t w : words_) {
      out.push_back(uint8_t(w));
      out.push_back(uint8_t(w >> 8));
      out.push_back(uint8_t(w >> 16));
      out.push_back(uint8_t(w >> 24));
    }
    words_.clear();
  }

 private:
  std::vector<uint32_t> words_;
  uint64_t acc_ = 0;
  int fill_ = 0;
  uint64_t bits_ = 0;
};

// Bytes of a section holding `bits` bits: whole 32-bit words.
HFPAC_HD inline uint64_t sectionBytes(uint64_t bits) { return ((bits + 31) / 32) * 4; }

inline uint32_t zigzag(int32_t v) { return (uint32_t(v) << 1) ^ uint32_t(v >> 31); }
HFPAC_HD inline int32_t unzigzag(uint32_t z) { return int32_t(z >> 1) ^ -int32_t(z & 1); }

// Number of bits needed to hold v (0 for 0).
inline int bitLength(uint32_t v) { return v ? 32 - __builtin_clz(v) : 0; }

}  // namespace hfpac::detail
