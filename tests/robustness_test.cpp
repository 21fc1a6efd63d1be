// robustness_test.cpp - the decoders against untrusted bytes (hfpac.h: "any truncated, corrupted
// or hostile stream yields a non-Ok Status, never a crash, an out-of-bounds access, a hang, or an
// allocation larger than a small multiple of the stream's own size").
//
// Built into its own binary because it replaces the global operator new to add up what the
// codec allocates during each decoder call. Every stream handed to a decoder lives in a heap
// buffer of exactly its size, so ASan catches a read one byte past the end. CI runs this under
// ASan+UBSan; keep the total well under a minute there.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "codec/hfpac.h"
#include "test_util.h"

// ---- Allocation accounting ----

#if defined(__GNUC__) && !defined(__clang__)
// The replacement operator delete below frees what the replacement operator new malloc'ed;
// GCC inlines both and cannot see that they pair up.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocatedBytes{0};
std::atomic<uint64_t> g_largestAllocation{0};

void* countedAlloc(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocatedBytes.fetch_add(n, std::memory_order_relaxed);
    uint64_t prev = g_largestAllocation.load(std::memory_order_relaxed);
    while (n > prev && !g_largestAllocation.compare_exchange_weak(prev, n)) {
    }
  }
  return std::malloc(n ? n : 1);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = countedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = countedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return countedAlloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return countedAlloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using hfpac::EncodeOptions;
using hfpac::Layers;
using hfpac::PatchInfo;
using hfpac::PatchView;
using hfpac::SampleType;
using hfpac::Status;
using hftest::Patch;

// Measures the codec's allocations inside a scope (single-threaded use only).
class AllocationScope {
 public:
  AllocationScope() {
    g_allocatedBytes = 0;
    g_largestAllocation = 0;
    g_counting = true;
  }
  ~AllocationScope() { g_counting = false; }
  uint64_t total() const { return g_allocatedBytes.load(); }
};

// "A small multiple of the stream's own size" (plus a little constant room).
uint64_t allocationLimit(size_t streamBytes) { return 64 * uint64_t(streamBytes) + 64 * 1024; }

constexpr size_t kMaxDecodeSamples = size_t(1) << 20;  // test-side cap on output buffers

using hftest::opts;

struct Sample {
  std::string name;
  std::vector<uint8_t> stream;
  Patch patch;
};

// A few valid streams covering the stream kinds: uniform b, per-area b, b = 0, b = 16, flat,
// signed, 1 x 1, thin, prominent-heavy.
const std::vector<Sample>& validStreams() {
  static const std::vector<Sample> streams = [] {
    struct Src {
      Patch p;
      EncodeOptions o;
    };
    const Src srcs[] = {
        {hftest::smooth(33, 33, SampleType::UInt16, 301), opts(9, -1)},
        {hftest::noise(20, 17, SampleType::UInt16, 302), opts(5, 16)},
        {hftest::seaMountain(40, 40, SampleType::Int16, 303), opts(0, -1)},
        {hftest::withHoles(24, 24, SampleType::Int16, 304), opts(17, 3)},
        {hftest::constant(10, 10, 321), opts(9, -1)},
        {hftest::rampBumps(17, 17, SampleType::Int16, 305), opts(33, 0)},
        {hftest::noise(2, 1, SampleType::UInt16, 306), opts(9, -1)},
        {hftest::withHoles(30, 26, SampleType::UInt16, 309), opts(9, -1)},
        {hftest::seaMountain(33, 17, SampleType::UInt16, 310), opts(5, 5)},
        {hftest::extremes(70, 5, 307), opts(9, -1)},
        {hftest::smooth(48, 20, SampleType::Int16, 308, -200, 300), opts(5, 2)},
        {hftest::smooth(70, 40, SampleType::UInt16, 311), hftest::rbucOpts(9)},
        {hftest::withHoles(40, 36, SampleType::Int16, 312), hftest::rbucOpts(5)},
        {hftest::extremes(33, 9, 313), hftest::rbucOpts(17)},
    };
    std::vector<Sample> v;
    for (const Src& s : srcs) {
      Sample smp;
      smp.name = s.p.name + "_" + std::to_string(s.p.width) + "x" + std::to_string(s.p.height) + "_" +
                 hftest::optionsName(s.o);
      Status st;
      smp.stream = hftest::encodeOrDie(s.p, s.o, &st);
      if (st != Status::Ok) {
        ADD_FAILURE() << "cannot encode " << smp.name << ": " << hftest::statusName(st);
        continue;
      }
      smp.patch = s.p;
      v.push_back(std::move(smp));
    }
    return v;
  }();
  return streams;
}

// Runs every decoder entry point on `bytes` (which must be an exactly sized heap buffer) and
// checks that nothing allocates too much and that the two decoders agree when both accept.
// Returns decode()'s status at Layers::All (or readInfo's if the header is refused).
Status exerciseDecoders(const std::vector<uint8_t>& bytes, bool checkAllocations = true) {
  const uint8_t* data = bytes.empty() ? nullptr : bytes.data();
  const size_t size = bytes.size();
  const uint64_t limit = allocationLimit(size);

  PatchInfo info;
  Status infoStatus;
  {
    AllocationScope scope;
    infoStatus = hfpac::readInfo(data, size, info);
    if (checkAllocations) {
      EXPECT_EQ(scope.total(), 0u) << "readInfo allocates";
    }
  }
  if (infoStatus != Status::Ok) {
    // Everything else must refuse the same bytes too.
    std::vector<uint16_t> dst(16);
    for (Layers layers : {Layers::L1, Layers::L12, Layers::All})
      EXPECT_NE(hfpac::decode(data, size, dst.data(), 4, dst.size(), layers), Status::Ok);
    PatchView view;
    EXPECT_NE(PatchView::open(data, size, view), Status::Ok);
    return infoStatus;
  }
  EXPECT_GE(info.width, 1);
  EXPECT_GE(info.height, 1);
  EXPECT_LE(info.width, hfpac::kMaxPatchSide);
  EXPECT_LE(info.height, hfpac::kMaxPatchSide);
  EXPECT_LE(info.streamBytes, size);
  EXPECT_EQ(uint64_t(info.layer1Bytes) + info.layer2Bytes + info.layer3Bytes, uint64_t(info.streamBytes));

  const size_t w = size_t(info.width), h = size_t(info.height);
  const bool decodable = w * h <= kMaxDecodeSamples;
  std::vector<uint16_t> decoded[3];
  Status decodeStatus[3] = {Status::InvalidArgument, Status::InvalidArgument, Status::InvalidArgument};
  const Layers allLayers[3] = {Layers::L1, Layers::L12, Layers::All};
  for (int li = 0; li < 3; ++li) {
    if (decodable) {
      decoded[li].assign(w * h, 0);
      AllocationScope scope;
      decodeStatus[li] = hfpac::decode(data, size, decoded[li].data(), w, decoded[li].size(), allLayers[li]);
      if (checkAllocations) {
        EXPECT_LE(scope.total(), limit) << "decode allocated " << scope.total() << " bytes";
      }
    } else {
      // Too big for the test: a tiny buffer must be refused before any work.
      std::vector<uint16_t> small(64);
      AllocationScope scope;
      EXPECT_NE(hfpac::decode(data, size, small.data(), 8, small.size(), allLayers[li]), Status::Ok);
      if (checkAllocations) {
        EXPECT_LE(scope.total(), limit);
      }
    }
  }

  PatchView view;
  Status viewStatus;
  {
    AllocationScope scope;
    viewStatus = PatchView::open(data, size, view);
    if (checkAllocations) {
      EXPECT_LE(scope.total(), limit) << "PatchView::open allocated " << scope.total() << " bytes for a "
                                      << size << "-byte stream of " << w << "x" << h;
    }
  }
  if (viewStatus == Status::Ok) {
    // Sample everything (or a lattice of about 64 x 64 points of a big patch, borders included).
    auto lattice = [](size_t n) {
      std::vector<size_t> v;
      const size_t step = std::max<size_t>(1, n / 64);
      for (size_t i = 0; i < n; i += step) v.push_back(i);
      if (v.back() != n - 1) v.push_back(n - 1);
      return v;
    };
    const std::vector<size_t> xs = lattice(w), ys = lattice(h);
    for (int li = 0; li < 3; ++li)
      for (size_t y : ys)
        for (size_t x : xs) {
          const uint16_t v = view.sample(int(x), int(y), allLayers[li]);
          if (decodable && decodeStatus[li] == Status::Ok) {
            if (v != decoded[li][y * w + x]) {
              ADD_FAILURE() << "PatchView::sample and decode disagree at (" << x << "," << y << ") layers " << li + 1
                            << ": " << v << " vs " << decoded[li][y * w + x];
              return decodeStatus[2];
            }
          }
        }
    // decodePoint on the corners.
    uint16_t v = 0;
    for (auto [x, y] : {std::pair<int, int>{0, 0}, {info.width - 1, info.height - 1}}) {
      AllocationScope scope;
      const Status s = hfpac::decodePoint(data, size, x, y, v);
      if (checkAllocations) {
        EXPECT_LE(scope.total(), limit);
      }
      EXPECT_EQ(s, Status::Ok) << "decodePoint refuses what PatchView::open accepts";
      EXPECT_EQ(v, view.sample(x, y));
    }
  }
  // decode validates everything open validates (and at All also the value range).
  if (decodable && decodeStatus[2] == Status::Ok) {
    EXPECT_EQ(viewStatus, Status::Ok);
  }
  return decodable ? decodeStatus[2] : viewStatus;
}

std::vector<uint8_t> exactCopy(const uint8_t* p, size_t n) { return std::vector<uint8_t>(p, p + n); }

// The accounting itself works (operator new is really replaced in this binary).
std::vector<uint8_t>* volatile g_escape = nullptr;
TEST(Robustness, AllocationAccountingIsActive) {
  AllocationScope scope;
  g_escape = new std::vector<uint8_t>(12345);
  const uint64_t counted = scope.total();
  delete g_escape;
  EXPECT_GE(counted, 12345u);
}

// ---- Valid streams are accepted by every entry point ----

TEST(Robustness, ValidStreamsPass) {
  for (const Sample& s : validStreams()) {
    SCOPED_TRACE(s.name);
    PatchInfo info;
    ASSERT_EQ(hfpac::readInfo(s.stream.data(), s.stream.size(), info), Status::Ok);
    std::printf("[robustness] %-36s %5zu bytes%s%s%s%s\n", s.name.c_str(), s.stream.size(), info.flat ? " flat" : "",
                info.stored ? " stored" : "", info.perAreaBits ? " per-area-b" : "", info.masked ? " masked" : "");
    EXPECT_EQ(exerciseDecoders(s.stream), Status::Ok);
  }
}

// ---- Every truncation ----

TEST(Robustness, EveryTruncationIsRefused) {
  for (const Sample& s : validStreams()) {
    SCOPED_TRACE(s.name);
    for (size_t len = 0; len < s.stream.size(); ++len) {
      const std::vector<uint8_t> cut = exactCopy(s.stream.data(), len);
      PatchInfo info;
      const Status st = hfpac::readInfo(cut.empty() ? nullptr : cut.data(), cut.size(), info);
      EXPECT_NE(st, Status::Ok) << "length " << len;
      EXPECT_EQ(st, len < size_t(hfpac::kHeaderBytes) ? Status::TruncatedHeader : Status::TruncatedStream)
          << "length " << len;
      std::vector<uint16_t> dst(size_t(s.patch.width) * size_t(s.patch.height));
      for (Layers layers : {Layers::L1, Layers::L12, Layers::All}) {
        const Status d = hfpac::decode(cut.empty() ? nullptr : cut.data(), cut.size(), dst.data(),
                                       size_t(s.patch.width), dst.size(), layers);
        EXPECT_NE(d, Status::Ok) << "length " << len << " layers " << int(layers);
      }
      PatchView view;
      EXPECT_NE(PatchView::open(cut.empty() ? nullptr : cut.data(), cut.size(), view), Status::Ok) << "length " << len;
      uint16_t v;
      EXPECT_NE(hfpac::decodePoint(cut.empty() ? nullptr : cut.data(), cut.size(), 0, 0, v), Status::Ok);
      ASSERT_FALSE(HasFailure()) << "length " << len;
    }
  }
}

// ---- Random corruption ----

void mutate(std::vector<uint8_t>& b, hftest::Rng& rng) {
  const int kinds = 7;
  const int edits = 1 + int(rng.below(4));
  for (int e = 0; e < edits; ++e) {
    if (b.empty()) return;
    // Half of the edits land in the header: its fields steer everything else.
    const size_t span = (rng.below(2) == 0) ? std::min(b.size(), size_t(hfpac::kHeaderBytes)) : b.size();
    const size_t pos = rng.below(uint32_t(span));
    switch (rng.below(kinds)) {
      case 0:  // flip one bit
        b[pos] ^= uint8_t(1u << rng.below(8));
        break;
      case 1:  // random byte
        b[pos] = uint8_t(rng.u32());
        break;
      case 2: {  // a range set to one value
        const size_t len = std::min(b.size() - pos, size_t(1 + rng.below(16)));
        const uint8_t v = (rng.below(3) == 0) ? 0x00 : (rng.below(2) ? 0xFF : uint8_t(rng.u32()));
        std::memset(b.data() + pos, v, len);
        break;
      }
      case 3: {  // a random range
        const size_t len = std::min(b.size() - pos, size_t(1 + rng.below(32)));
        for (size_t i = 0; i < len; ++i) b[pos + i] = uint8_t(rng.u32());
        break;
      }
      case 4: {  // small arithmetic on a byte (keeps values plausible)
        b[pos] = uint8_t(b[pos] + int(rng.range(-3, 3)));
        break;
      }
      case 5: {  // interesting 32-bit values at an aligned position
        const size_t p4 = pos & ~size_t(3);
        if (p4 + 4 > b.size()) break;
        const uint32_t vals[] = {0, 1, 4, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 0xFFFFFFFCu, 0x10000u, 0x4000u};
        const uint32_t v = vals[rng.below(uint32_t(std::size(vals)))];
        for (int i = 0; i < 4; ++i) b[p4 + size_t(i)] = uint8_t(v >> (8 * i));
        break;
      }
      default: {  // interesting 16-bit values (width, height, base are u16)
        if (pos + 2 > b.size()) break;
        const uint16_t vals[] = {0, 1, 2, 16, 17, 0x3FFF, 0x4000, 0x4001, 0x7FFF, 0x8000, 0xFFFF};
        const uint16_t v = vals[rng.below(uint32_t(std::size(vals)))];
        b[pos] = uint8_t(v);
        b[pos + 1] = uint8_t(v >> 8);
        break;
      }
    }
  }
  // Sometimes also cut or extend the stream.
  const uint32_t r = rng.below(8);
  if (r == 0 && !b.empty()) b.resize(rng.below(uint32_t(b.size())));
  if (r == 1) b.resize(b.size() + 4 * (1 + rng.below(4)), uint8_t(rng.u32()));
}

TEST(Robustness, RandomCorruptionNeverCrashes) {
  hftest::Rng rng(0x5EED0001u);
  const int kIterations = 20000;
  int accepted = 0;
  for (int it = 0; it < kIterations; ++it) {
    const Sample& s = validStreams()[rng.below(uint32_t(validStreams().size()))];
    std::vector<uint8_t> b = s.stream;
    mutate(b, rng);
    const std::vector<uint8_t> exact = exactCopy(b.data(), b.size());
    const Status st = exerciseDecoders(exact);
    if (st == Status::Ok) ++accepted;
    ASSERT_FALSE(HasFailure()) << "iteration " << it << " on " << s.name;
  }
  // Most corruptions of data bits are still well-formed streams (the format has no checksum).
  RecordProperty("accepted", accepted);
  std::printf("[robustness] %d of %d corrupted streams decoded Ok\n", accepted, kIterations);
}

// Single-bit flips of small streams of each kind (per-area b, masked, stored, uniform b):
// every bit of the header and the first 96 bytes after it (tables), every 3rd bit beyond.
TEST(Robustness, SingleBitFlips) {
  for (size_t k : {size_t(0), size_t(3), size_t(6), size_t(7), size_t(5)}) {
    if (k >= validStreams().size()) continue;
    const Sample& s = validStreams()[k];
    SCOPED_TRACE(s.name);
    for (size_t bit = 0; bit < s.stream.size() * 8; bit += (bit < 128 * 8 ? 1 : 3)) {
      std::vector<uint8_t> b = s.stream;
      b[bit / 8] ^= uint8_t(1u << (bit % 8));
      exerciseDecoders(b);
      ASSERT_FALSE(HasFailure()) << "bit " << bit;
    }
  }
}

// ---- Hostile headers ----

// Header layout (docs/format.md, "Header"): magic u32 @0, version @4, flags @5 (1 signed,
// 2 flat, 4 per-area b, 8 stored, 16 masked), segLog @6, uniformBits @7, width u16 @8, height u16 @10, base u16 @12,
// cornerBits @14, edgeBits @15, centreBits @16, highBits @17, countBits @18, reserved @19,
// layer1Bytes u32 @20, layer2Bytes u32 @24, layer3Bytes u32 @28 (section sizes after the header).
struct HeaderBytes {
  uint8_t b[hfpac::kHeaderBytes] = {};
  HeaderBytes() {
    put32(0, hfpac::kMagic);
    b[4] = hfpac::kVersion;
  }
  void put16(int at, uint16_t v) {
    b[at] = uint8_t(v);
    b[at + 1] = uint8_t(v >> 8);
  }
  void put32(int at, uint32_t v) {
    put16(at, uint16_t(v));
    put16(at + 2, uint16_t(v >> 16));
  }
  std::vector<uint8_t> withTail(size_t tail, uint8_t fill = 0) const {
    std::vector<uint8_t> v(b, b + sizeof b);
    v.resize(v.size() + tail, fill);
    return v;
  }
};

HeaderBytes headerOf(const std::vector<uint8_t>& stream) {
  HeaderBytes h;
  std::memcpy(h.b, stream.data(), sizeof h.b);
  return h;
}

TEST(Robustness, HostileHeadersAreRefused) {
  const Sample* nonFlat = nullptr;
  for (const Sample& s : validStreams())
    if (s.stream.size() > size_t(hfpac::kHeaderBytes) * 3) {
      nonFlat = &s;
      break;
    }
  ASSERT_NE(nonFlat, nullptr);
  const HeaderBytes good = headerOf(nonFlat->stream);
  const size_t tail = nonFlat->stream.size() - size_t(hfpac::kHeaderBytes);
  auto withGoodTail = [&](const HeaderBytes& h) {
    std::vector<uint8_t> v(h.b, h.b + sizeof h.b);
    v.insert(v.end(), nonFlat->stream.begin() + hfpac::kHeaderBytes, nonFlat->stream.end());
    return v;
  };
  ASSERT_EQ(exerciseDecoders(withGoodTail(good)), Status::Ok);

  struct Case {
    const char* what;
    std::function<void(HeaderBytes&)> edit;
  };
  const Case cases[] = {
      {"huge width and height, tiny stream", [](HeaderBytes& h) { h.put16(8, 16384), h.put16(10, 16384); }},
      {"width 0", [](HeaderBytes& h) { h.put16(8, 0); }},
      {"height 0", [](HeaderBytes& h) { h.put16(10, 0); }},
      {"width 16385", [](HeaderBytes& h) { h.put16(8, 16385); }},
      {"width 65535", [](HeaderBytes& h) { h.put16(8, 65535); }},
      {"height 65535", [](HeaderBytes& h) { h.put16(10, 65535); }},
      {"segment log 7", [](HeaderBytes& h) { h.b[6] = 7; }},
      {"segment log 0", [](HeaderBytes& h) { h.b[6] = 0; }},
      {"segment log 1", [](HeaderBytes& h) { h.b[6] = 1; }},
      {"segment log 6", [](HeaderBytes& h) { h.b[6] = 6; }},
      {"segment log 255", [](HeaderBytes& h) { h.b[6] = 255; }},
      {"bits 17", [](HeaderBytes& h) { h.b[7] = 17; }},
      {"bits 31", [](HeaderBytes& h) { h.b[7] = 31; }},
      {"bits 32", [](HeaderBytes& h) { h.b[7] = 32; }},
      {"bits 255", [](HeaderBytes& h) { h.b[7] = 255; }},
      {"corner bits 31", [](HeaderBytes& h) { h.b[14] = 31; }},
      {"corner bits 255", [](HeaderBytes& h) { h.b[14] = 255; }},
      {"edge bits 32", [](HeaderBytes& h) { h.b[15] = 32; }},
      {"centre bits 64", [](HeaderBytes& h) { h.b[16] = 64; }},
      {"high bits 33", [](HeaderBytes& h) { h.b[17] = 33; }},
      {"count bits 31", [](HeaderBytes& h) { h.b[18] = 31; }},
      {"reserved byte set", [](HeaderBytes& h) { h.b[19] = 1; }},
      {"unknown flag", [](HeaderBytes& h) { h.b[5] |= 0x80; }},
      {"version 0", [](HeaderBytes& h) { h.b[4] = 0; }},
      {"version 255", [](HeaderBytes& h) { h.b[4] = 255; }},
      {"layer1 size 0xFFFFFFFC", [](HeaderBytes& h) { h.put32(20, 0xFFFFFFFCu); }},
      {"layer2 size 0xFFFFFFFC", [](HeaderBytes& h) { h.put32(24, 0xFFFFFFFCu); }},
      {"layer3 size 0xFFFFFFFC", [](HeaderBytes& h) { h.put32(28, 0xFFFFFFFCu); }},
      {"sizes summing to 2^32", [](HeaderBytes& h) { h.put32(24, 0x80000000u), h.put32(28, 0x80000000u); }},
      {"sizes summing to 2^32 + 4",
       [](HeaderBytes& h) { h.put32(20, 0x80000000u), h.put32(24, 0x80000000u), h.put32(28, 4); }},
      {"all sizes 0xFFFFFFFC", [](HeaderBytes& h) { h.put32(20, 0xFFFFFFFCu), h.put32(24, 0xFFFFFFFCu), h.put32(28, 0xFFFFFFFCu); }},
      {"unaligned layer2 size", [](HeaderBytes& h) { h.put32(24, 2); }},
      {"layer3 size off by 4", [](HeaderBytes& h) {
         uint32_t v = uint32_t(h.b[28]) | uint32_t(h.b[29]) << 8 | uint32_t(h.b[30]) << 16 | uint32_t(h.b[31]) << 24;
         h.put32(28, v + 4);
       }},
      {"flat flag on a non-flat stream", [](HeaderBytes& h) { h.b[5] |= 2; }},
      {"stored flag on a coded stream", [](HeaderBytes& h) { h.b[5] |= 8; }},
      {"flag bit 5", [](HeaderBytes& h) { h.b[5] |= 0x20; }},
      {"per-area flag with uniform bits", [](HeaderBytes& h) { h.b[5] |= 4; h.b[7] = 5; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    HeaderBytes h = good;
    c.edit(h);
    // The real tail, a header-only stream, and a tail of 4 KiB of 0xFF.
    const std::vector<uint8_t> streams[] = {withGoodTail(h), h.withTail(0), h.withTail(4096, 0xFF)};
    for (const std::vector<uint8_t>& st : streams) {
      const Status s = exerciseDecoders(st);
      EXPECT_NE(s, Status::Ok) << "accepted with a tail of " << st.size() - 32 << " bytes (" << tail << " real)";
    }
  }
}

// The mask part of section B (docs/format.md 5): the mask word's high half must be 0 and
// every 2-bit area code <= 2.
TEST(Robustness, BadMaskPartIsRefused) {
  int tested = 0;
  for (const Sample& s : validStreams()) {
    PatchInfo info;
    ASSERT_EQ(hfpac::readInfo(s.stream.data(), s.stream.size(), info), Status::Ok);
    if (!info.masked) continue;
    SCOPED_TRACE(s.name);
    ++tested;
    const size_t b = info.layer1Bytes;  // section B starts right after header + section A
    ASSERT_LT(b + 8, s.stream.size());
    std::vector<uint8_t> st = s.stream;
    st[b + 2] = 1;  // high half of the mask word
    EXPECT_NE(exerciseDecoders(st), Status::Ok) << "mask word with a non-zero high half";
    const size_t areas = size_t((info.width + 15) / 16) * size_t((info.height + 15) / 16);
    for (size_t k = 0; k < std::min<size_t>(areas, 16); ++k) {
      st = s.stream;
      st[b + 4 + k / 4] |= uint8_t(3u << (2 * (k % 4)));  // code 3 for area k
      EXPECT_EQ(exerciseDecoders(st), Status::InvalidMask) << "area " << k;
    }
  }
  EXPECT_GE(tested, 2) << "the sample streams should include masked ones";
}

// Headers that are well-formed but announce a huge patch with almost no data: either refused
// or decoded with memory bounded by the stream size (PatchView must not build per-area tables
// for a million areas out of 32 bytes).
TEST(Robustness, HugePatchesFromTinyStreams) {
  // A flat 16384 x 16384 patch is a valid 32-byte stream.
  HeaderBytes flat;
  flat.b[5] = 2;  // flat
  flat.put16(8, 16384);
  flat.put16(10, 16384);
  flat.put16(12, 1234);
  const std::vector<uint8_t> flatStream = flat.withTail(0);
  PatchInfo info;
  ASSERT_EQ(hfpac::readInfo(flatStream.data(), flatStream.size(), info), Status::Ok);
  EXPECT_TRUE(info.flat);
  EXPECT_EQ(info.width, 16384);
  EXPECT_EQ(info.height, 16384);
  EXPECT_EQ(exerciseDecoders(flatStream), Status::Ok);  // sizes > 1M samples: tiny buffer refused
  uint16_t v = 0;
  ASSERT_EQ(hfpac::decodePoint(flatStream.data(), flatStream.size(), 16383, 16383, v), Status::Ok);
  EXPECT_EQ(v, 1234);
  // A flat stream that carries anything else is not canonical.
  for (int field : {6, 7, 14, 15, 16, 17, 18}) {
    HeaderBytes h = flat;
    h.b[field] = 2;
    EXPECT_NE(exerciseDecoders(h.withTail(0)), Status::Ok) << "flat with byte " << field << " set";
  }
  {
    HeaderBytes h = flat;
    h.b[5] |= 0x10;  // MASKED
    EXPECT_NE(exerciseDecoders(h.withTail(0)), Status::Ok) << "flat and masked";
    h = flat;
    h.b[5] |= 0x08;  // STORED
    EXPECT_NE(exerciseDecoders(h.withTail(0)), Status::Ok) << "flat and stored";
  }
  // Flat with signed flag: fine.
  HeaderBytes flatSigned = flat;
  flatSigned.b[5] |= 1;
  EXPECT_EQ(exerciseDecoders(flatSigned.withTail(0)), Status::Ok);

  // Non-flat, every field width 0, b = 0: all section sizes are 0 by the format's own rules, so
  // the 32-byte header alone describes 16384 x 16384 samples (all equal to base).
  for (int segLog = 2; segLog <= 5; ++segLog)
    for (int side : {16384, 4096, 1000}) {
      SCOPED_TRACE("non-flat, zero-width fields, segLog " + std::to_string(segLog) + ", " + std::to_string(side) + "^2");
      HeaderBytes h;
      h.b[6] = uint8_t(segLog);
      h.put16(8, uint16_t(side));
      h.put16(10, uint16_t(side));
      h.put16(12, 77);
      exerciseDecoders(h.withTail(0));  // any status; bounded allocations
      // With count fields, the area table must be present: a missing table is refused.
      h.b[18] = 1;
      EXPECT_NE(exerciseDecoders(h.withTail(0)), Status::Ok);
    }
}

// Section A's size as docs/format.md section 4 defines it.
uint32_t layer1Size(int s, int w, int h, int bc, int be, int bz) {
  const uint64_t n = uint64_t(1) << s;
  const uint64_t mx = w <= 1 ? 1 : (uint64_t(w) - 1 + n - 1) / n, my = h <= 1 ? 1 : (uint64_t(h) - 1 + n - 1) / n;
  const uint64_t bits = (mx + 1) * (my + 1) * uint64_t(bc) + (mx * (my + 1) + (mx + 1) * my) * uint64_t(be) +
                        mx * my * uint64_t(bz);
  return uint32_t(4 * ((bits + 31) / 32));
}

// Fuzz-like: random headers that pass the first validation steps (section A's size is made
// right most of the time) over random tails, so the table checks get exercised.
TEST(Robustness, RandomHeadersOverRandomTails) {
  hftest::Rng rng(0x5EED0002u);
  int accepted = 0, pastHeader = 0;
  for (int it = 0; it < 6000; ++it) {
    HeaderBytes h;
    const uint8_t flags = uint8_t(rng.below(8) == 0 ? rng.below(256) : (rng.below(2) ? 0 : 4) | rng.below(2));
    h.b[5] = flags;
    const int s = rng.below(8) == 0 ? int(rng.below(256)) : 2 + int(rng.below(4));
    h.b[6] = uint8_t(s);
    h.b[7] = uint8_t((flags & 4) ? 0 : (rng.below(8) == 0 ? rng.below(256) : rng.below(17)));
    const int w = rng.below(8) == 0 ? int(rng.below(65536)) : 1 + int(rng.below(48));
    const int ht = rng.below(8) == 0 ? int(rng.below(65536)) : 1 + int(rng.below(48));
    h.put16(8, uint16_t(w));
    h.put16(10, uint16_t(ht));
    h.put16(12, rng.u16());
    int widths[5];
    const int limits[5] = {16, 20, 20, 18, 9};
    for (int f = 0; f < 5; ++f) {
      widths[f] = rng.below(8) == 0 ? int(rng.below(256)) : int(rng.below(uint32_t(limits[f] + 1)));
      h.b[14 + f] = uint8_t(widths[f]);
    }
    const bool plausible = s >= 2 && s <= 5 && widths[0] <= 16 && widths[1] <= 20 && widths[2] <= 20 && w >= 1 &&
                           ht >= 1 && w <= 16384 && ht <= 16384;
    const uint32_t a = plausible && rng.below(8) != 0 ? layer1Size(s, w, ht, widths[0], widths[1], widths[2])
                                                       : 4 * rng.below(64);
    if (a > (1u << 20)) continue;  // keep the test's own buffers small
    const uint32_t b = rng.below(8) == 0 ? rng.u32() : 4 * rng.below(200);
    const uint32_t d = rng.below(8) == 0 ? rng.u32() : 4 * rng.below(400);
    h.put32(20, a);
    h.put32(24, b);
    h.put32(28, d);
    const uint64_t want = uint64_t(a) + b + d;
    const size_t tail = want <= (1u << 21) && rng.below(4) != 0 ? size_t(want) : 4 * size_t(rng.below(256));
    std::vector<uint8_t> st = h.withTail(tail);
    for (size_t i = hfpac::kHeaderBytes; i < st.size(); ++i) st[i] = uint8_t(rng.below(3) == 0 ? 0 : rng.u32());
    const Status r = exerciseDecoders(st);
    accepted += r == Status::Ok;
    pastHeader += r != Status::InvalidHeader && r != Status::TruncatedStream && r != Status::SizeMismatch;
    ASSERT_FALSE(HasFailure()) << "iteration " << it;
  }
  std::printf("[robustness] random headers: %d decoded Ok, %d got past the header checks\n", accepted, pastHeader);
}

}  // namespace
