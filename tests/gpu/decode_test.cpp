// decode_test.cpp - the GPU decoder is bit-identical to hfpac::decode for every stream, layer
// choice and destination kind; corrupt streams get the CPU decoder's status and are never
// decoded. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "codec/hfpac.h"
#include "gpu/cuda_util.h"
#include "gpu/decoder.h"
#include "gpu/upload_ring.h"
#include "gpu_test_util.h"
#include "test_util.h"
#ifdef HF_HAVE_DEMIO
#include "demio/dem_io.h"
#endif

namespace {

using hfgpu::DecodeMode;
using hfpac::Layers;
using hfpac::Status;

constexpr uint16_t kSentinel = 0xA5C3;

struct Item {
  std::string name;
  std::vector<uint8_t> stream;
  int width = 0, height = 0;
};

Item encodeItem(const hftest::Patch& p, const hfpac::EncodeOptions& o) {
  Item it;
  it.name = p.name + " " + std::to_string(p.width) + "x" + std::to_string(p.height) + " " +
            hftest::optionsName(o) + (p.type == hfpac::SampleType::Int16 ? " i16" : " u16");
  Status s = Status::Ok;
  it.stream = hftest::encodeOrDie(p, o, &s);
  EXPECT_EQ(s, Status::Ok) << it.name;
  it.width = p.width;
  it.height = p.height;
  return it;
}

// CPU reference of one stream at one layer choice; status as hfpac::decode returns it.
Status cpuDecode(const Item& it, Layers layers, std::vector<uint16_t>& out) {
  hfpac::PatchInfo info;
  out.clear();
  if (hfpac::readInfo(it.stream.data(), it.stream.size(), info) != Status::Ok)
    return hfpac::decode(it.stream.data(), it.stream.size(), nullptr, 0, 0, layers);
  out.assign(size_t(info.width) * size_t(info.height), 0);
  return hfpac::decode(it.stream.data(), it.stream.size(), out.data(), size_t(info.width), out.size(),
                       layers);
}

struct Placement {
  size_t offset = 0, pitch = 0;  // linear
  uint32_t surface = 0;
  int x = 0, y = 0;  // surface
};

// Linear layout with odd pitches and gaps, so stray writes land in sentinel memory.
std::vector<Placement> linearLayout(const std::vector<Item>& items, size_t& total) {
  std::vector<Placement> pl(items.size());
  size_t at = 7;
  for (size_t i = 0; i < items.size(); ++i) {
    pl[i].pitch = size_t(std::max(items[i].width, 1)) + 1 + (i % 3);
    pl[i].offset = at;
    at += pl[i].pitch * size_t(std::max(items[i].height, 1)) + 5;
  }
  total = at + 3;
  return pl;
}

// Shelf packing into `surfaces` surfaces of width `sw`: returns the heights needed.
std::vector<Placement> surfaceLayout(const std::vector<Item>& items, int surfaces, int sw,
                                     std::vector<int>& heights) {
  std::vector<Placement> pl(items.size());
  std::vector<int> cx(size_t(surfaces), 1), cy(size_t(surfaces), 1), shelf(size_t(surfaces), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    const size_t s = i % size_t(surfaces);
    const int w = std::max(items[i].width, 1), h = std::max(items[i].height, 1);
    if (cx[s] + w + 1 > sw) {
      cx[s] = 1;
      cy[s] += shelf[s] + 1;
      shelf[s] = 0;
    }
    pl[i].surface = uint32_t(s);
    pl[i].x = cx[s];
    pl[i].y = cy[s];
    cx[s] += w + 1;
    shelf[s] = std::max(shelf[s], h);
  }
  heights.assign(size_t(surfaces), 0);
  for (int s = 0; s < surfaces; ++s) heights[size_t(s)] = cy[size_t(s)] + shelf[size_t(s)] + 1;
  return pl;
}

std::vector<hfgpu::PatchInput> inputs(const std::vector<Item>& items, const std::vector<Placement>& pl) {
  std::vector<hfgpu::PatchInput> in(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    in[i].data = items[i].stream.data();
    in[i].size = items[i].stream.size();
    in[i].dstOffset = pl[i].offset;
    in[i].dstPitch = pl[i].pitch;
    in[i].surface = pl[i].surface;
    in[i].x = pl[i].x;
    in[i].y = pl[i].y;
  }
  return in;
}

// Decodes `items` on the GPU into a linear buffer (mode, or L1 then Refine) and compares every
// sample and status with the CPU, and that nothing outside the patches was written.
// `reserveFor` > 0: the decoder is first reserved for a batch of the first reserveFor items.
void checkLinear(const std::vector<Item>& items, DecodeMode mode, size_t reserveFor = 0) {
  SCOPED_TRACE("linear mode " + std::to_string(int(mode)));
  size_t total = 0;
  const std::vector<Placement> pl = linearLayout(items, total);
  std::vector<uint16_t> expected(total, kSentinel);
  std::vector<Status> cpuStatus(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<uint16_t> out;
    cpuStatus[i] = cpuDecode(items[i], hfgpu::toLayers(mode), out);
    if (cpuStatus[i] != Status::Ok && cpuStatus[i] != Status::OutOfRange) continue;
    if (cpuStatus[i] == Status::OutOfRange) continue;  // contents unspecified; compared below
    for (int y = 0; y < items[i].height; ++y)
      for (int x = 0; x < items[i].width; ++x)
        expected[pl[i].offset + size_t(y) * pl[i].pitch + size_t(x)] = out[size_t(y) * size_t(items[i].width) + size_t(x)];
  }
  hfgpu::Stream stream;
  hfgpu::DeviceBuffer<uint16_t> dst(total);
  std::vector<uint16_t> init(total, kSentinel);
  CUDA_CHECK(cudaMemcpyAsync(dst.get(), init.data(), total * 2, cudaMemcpyHostToDevice, stream));
  const std::vector<hfgpu::PatchInput> in = inputs(items, pl);
  hfgpu::GpuDecoder dec;
  if (reserveFor > 0) {
    uint64_t bytes = 0, areas = 0;
    for (size_t i = 0; i < reserveFor && i < items.size(); ++i) {
      bytes += items[i].stream.size();
      areas += uint64_t((items[i].width + 15) / 16) * uint64_t((items[i].height + 15) / 16);
    }
    dec.reserve(reserveFor, bytes, areas);
  }
  std::vector<Status> st;
  if (mode == DecodeMode::Refine) {
    dec.decode(in.data(), in.size(), DecodeMode::L1, hfgpu::Target::linear(dst.get()), stream);
    st = dec.decode(in.data(), in.size(), DecodeMode::Refine, hfgpu::Target::linear(dst.get()), stream);
  } else {
    st = dec.decode(in.data(), in.size(), mode, hfgpu::Target::linear(dst.get()), stream);
  }
  std::vector<uint16_t> got(total);
  CUDA_CHECK(cudaMemcpy(got.data(), dst.get(), total * 2, cudaMemcpyDeviceToHost));
  ASSERT_EQ(st.size(), items.size());
  size_t bad = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(hftest::statusName(st[i]), hftest::statusName(cpuStatus[i])) << items[i].name;
    if (cpuStatus[i] == Status::OutOfRange) {
      // Written (clamped) but unspecified: blank it out of the comparison.
      for (int y = 0; y < items[i].height; ++y)
        for (int x = 0; x < items[i].width; ++x)
          got[pl[i].offset + size_t(y) * pl[i].pitch + size_t(x)] = kSentinel;
    }
  }
  for (size_t k = 0; k < total; ++k)
    if (got[k] != expected[k] && bad++ < 5) {
      size_t owner = items.size();
      for (size_t i = 0; i < items.size(); ++i)
        if (k >= pl[i].offset && k < pl[i].offset + pl[i].pitch * size_t(items[i].height)) owner = i;
      ADD_FAILURE() << "sample " << k << " expected " << expected[k] << " got " << got[k]
                    << (owner < items.size() ? " in " + items[owner].name : std::string(" outside patches"));
    }
  EXPECT_EQ(bad, 0u);
}

void checkSurface(const std::vector<Item>& items, DecodeMode mode) {
  SCOPED_TRACE("surface mode " + std::to_string(int(mode)));
  const int surfaces = 3, sw = 700;
  std::vector<int> heights;
  const std::vector<Placement> pl = surfaceLayout(items, surfaces, sw, heights);
  std::vector<hfgpu::SurfaceArray16> arrays;
  std::vector<cudaSurfaceObject_t> objs;
  std::vector<std::vector<uint16_t>> expected;
  hfgpu::Stream stream;
  for (int s = 0; s < surfaces; ++s) {
    arrays.emplace_back(sw, heights[size_t(s)]);
    objs.push_back(arrays.back().surface());
    expected.emplace_back(size_t(sw) * size_t(heights[size_t(s)]), kSentinel);
    arrays.back().uploadAsync(expected.back().data(), size_t(sw), stream);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<uint16_t> out;
    if (cpuDecode(items[i], hfgpu::toLayers(mode), out) != Status::Ok) continue;
    auto& img = expected[pl[i].surface];
    for (int y = 0; y < items[i].height; ++y)
      for (int x = 0; x < items[i].width; ++x)
        img[size_t(pl[i].y + y) * size_t(sw) + size_t(pl[i].x + x)] = out[size_t(y) * size_t(items[i].width) + size_t(x)];
  }
  const std::vector<hfgpu::PatchInput> in = inputs(items, pl);
  hfgpu::GpuDecoder dec;
  const hfgpu::Target target = hfgpu::Target::surfaceSet(objs.data(), surfaces);
  if (mode == DecodeMode::Refine) dec.decode(in.data(), in.size(), DecodeMode::L1, target, stream);
  const std::vector<Status> st = dec.decode(in.data(), in.size(), mode, target, stream);
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<uint16_t> out;
    EXPECT_EQ(hftest::statusName(st[i]), hftest::statusName(cpuDecode(items[i], hfgpu::toLayers(mode), out)));
  }
  // A patch the CPU rejects has unspecified contents: an OutOfRange stream is written clamped,
  // and in Refine mode the layer-1 pass has already written any stream valid at layer 1.
  std::vector<std::vector<uint8_t>> unspecified;
  for (int s = 0; s < surfaces; ++s) unspecified.emplace_back(expected[size_t(s)].size(), 0);
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<uint16_t> out;
    if (cpuDecode(items[i], hfgpu::toLayers(mode), out) == Status::Ok) continue;
    for (int y = 0; y < items[i].height; ++y)
      for (int x = 0; x < items[i].width; ++x)
        unspecified[pl[i].surface][size_t(pl[i].y + y) * size_t(sw) + size_t(pl[i].x + x)] = 1;
  }
  for (int s = 0; s < surfaces; ++s) {
    std::vector<uint16_t> got(expected[size_t(s)].size());
    arrays[size_t(s)].downloadAsync(got.data(), size_t(sw), stream);
    stream.synchronize();
    size_t bad = 0;
    for (size_t k = 0; k < got.size(); ++k)
      if (!unspecified[size_t(s)][k] && got[k] != expected[size_t(s)][k] && bad++ < 5)
        ADD_FAILURE() << "surface " << s << " texel (" << k % size_t(sw) << ", " << k / size_t(sw)
                      << ") expected " << expected[size_t(s)][k] << " got " << got[k];
    EXPECT_EQ(bad, 0u);
  }
}

void checkAll(const std::vector<Item>& items) {
  for (DecodeMode m : {DecodeMode::L1, DecodeMode::L12, DecodeMode::All, DecodeMode::Refine}) {
    ASSERT_NO_FATAL_FAILURE(checkLinear(items, m));
    ASSERT_NO_FATAL_FAILURE(checkSurface(items, m));
  }
}

// Deterministic adversarial and ordinary patches, all segment sizes, several b.
std::vector<Item> syntheticItems() {
  using hfpac::SampleType;
  std::vector<Item> items;
  const int segments[] = {5, 9, 17, 33, 0};
  const int sizes[][2] = {{129, 129}, {1, 1}, {1, 37}, {40, 1}, {17, 16}, {33, 50}, {65, 31}};
  int k = 0;
  for (int seg : segments)
    for (auto& wh : sizes) {
      const int w = wh[0], h = wh[1];
      const SampleType t = (k % 2) ? SampleType::Int16 : SampleType::UInt16;
      ++k;
      items.push_back(encodeItem(hftest::smooth(w, h, t, uint64_t(k)), hftest::opts(seg, -1)));
      items.push_back(encodeItem(hftest::rampBumps(w, h, t, uint64_t(k)), hftest::opts(seg, k % 17)));
    }
  for (int b = 0; b <= 16; ++b) {
    items.push_back(encodeItem(hftest::rampBumps(70, 45, SampleType::Int16, uint64_t(b)), hftest::opts(9, b)));
    items.push_back(encodeItem(hftest::smooth(48, 33, SampleType::UInt16, uint64_t(b)), hftest::opts(5, b)));
  }
  items.push_back(encodeItem(hftest::noise(129, 129), hftest::opts(9, -1)));          // stored
  items.push_back(encodeItem(hftest::noise(50, 20, SampleType::Int16), hftest::opts(0, 16)));
  items.push_back(encodeItem(hftest::cliffs(129, 129), hftest::opts(9, -1)));
  items.push_back(encodeItem(hftest::cliffs(77, 40, SampleType::Int16), hftest::opts(17, 2)));
  items.push_back(encodeItem(hftest::checkerboard(64, 64, 5), hftest::opts(5, -1)));
  items.push_back(encodeItem(hftest::constant(129, 129, 1234), hftest::opts(9, -1)));  // flat
  items.push_back(encodeItem(hftest::constant(30, 7, 0x8000, SampleType::Int16), hftest::opts(9, 3)));
  items.push_back(encodeItem(hftest::seaMountain(129, 129), hftest::opts(9, -1)));     // masked
  items.push_back(encodeItem(hftest::negative(100, 60), hftest::opts(0, -1)));
  items.push_back(encodeItem(hftest::extremes(45, 45), hftest::opts(9, -1)));
  for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
    hfpac::EncodeOptions o = hftest::opts(9, -1);
    o.hasNodata = true;
    o.nodata = t == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
    items.push_back(encodeItem(hftest::withHoles(129, 129, t), o));                  // masked bitmaps
    items.push_back(encodeItem(hftest::withHoles(53, 97, t, 5), o));
    o.segment = 5;
    o.bits = 4;
    items.push_back(encodeItem(hftest::withHoles(90, 33, t, 8), o));
  }
  return items;
}

TEST(GpuDecode, SyntheticParityAllLayersLinearAndSurface) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<Item> items = syntheticItems();
  checkAll(items);
}

TEST(GpuDecode, EachPatchAlone) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<Item> items = syntheticItems();
  for (size_t i = 0; i < items.size(); i += 7) {
    SCOPED_TRACE(items[i].name);
    ASSERT_NO_FATAL_FAILURE(checkLinear({items[i]}, DecodeMode::All));
  }
}

// reserve() sizes the decoder for a batch; batches within it and beyond it (which grow) decode
// as an unreserved decoder does.
TEST(GpuDecode, ReservedDecoderDecodesBatchesWithinAndBeyondTheReservation) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<Item> items = syntheticItems();
  ASSERT_GT(items.size(), 4u);
  const std::vector<Item> within(items.begin(), items.begin() + ptrdiff_t(items.size() / 2));
  ASSERT_NO_FATAL_FAILURE(checkLinear(within, DecodeMode::All, within.size()));
  ASSERT_NO_FATAL_FAILURE(checkLinear(items, DecodeMode::All, items.size() / 4));
  ASSERT_NO_FATAL_FAILURE(checkLinear(items, DecodeMode::L12, items.size()));
}

// Corrupt streams: truncations, flipped bytes, and a hostile header, mixed with valid ones.
TEST(GpuDecode, CorruptStreamsGetCpuStatusAndAreSkipped) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<Item> base = {
      encodeItem(hftest::withHoles(129, 129, hfpac::SampleType::Int16), hftest::opts(9, -1)),
      encodeItem(hftest::rampBumps(70, 45, hfpac::SampleType::UInt16, 3), hftest::opts(5, 6)),
      encodeItem(hftest::noise(40, 40), hftest::opts(9, -1)),
      encodeItem(hftest::seaMountain(64, 64), hftest::opts(17, -1))};
  std::vector<Item> items;
  hftest::Rng rng(42);
  for (const Item& b : base) {
    items.push_back(b);
    for (size_t cut : {size_t(0), size_t(5), size_t(31), b.stream.size() / 2, b.stream.size() - 4}) {
      Item t = b;
      t.name += " cut" + std::to_string(cut);
      t.stream.resize(cut);
      items.push_back(t);
    }
    for (int k = 0; k < 60; ++k) {
      Item t = b;
      const size_t at = rng.below(uint32_t(t.stream.size()));
      t.stream[at] = uint8_t(t.stream[at] ^ (1u << rng.below(8)));
      if (k % 3 == 0) t.stream[rng.below(uint32_t(t.stream.size()))] = uint8_t(rng.u32());
      t.name += " flip@" + std::to_string(at);
      hfpac::PatchInfo info;  // a corrupt header may still parse, with other dimensions
      if (hfpac::readInfo(t.stream.data(), t.stream.size(), info) == Status::Ok) {
        t.width = info.width;
        t.height = info.height;
      }
      items.push_back(t);
    }
  }
  for (DecodeMode m : {DecodeMode::L1, DecodeMode::L12, DecodeMode::All, DecodeMode::Refine})
    ASSERT_NO_FATAL_FAILURE(checkLinear(items, m));
  ASSERT_NO_FATAL_FAILURE(checkSurface(items, DecodeMode::All));
}

TEST(GpuDecode, UploadRingMatchesCpu) {
  HF_REQUIRE_CUDA_DEVICE();
  std::vector<Item> items;
  for (int r = 0; r < 6; ++r)
    for (const Item& it : syntheticItems()) items.push_back(it);
  size_t total = 0;
  const std::vector<Placement> pl = linearLayout(items, total);
  const std::vector<hfgpu::PatchInput> in = inputs(items, pl);
  hfgpu::DeviceBuffer<uint16_t> dst(total);
  CUDA_CHECK(cudaMemset(dst.get(), 0, total * 2));
  // Small chunks so the ring wraps many times.
  hfgpu::UploadRing ring(64 * 1024, 3, 2);
  ring.decodeAsync(in.data(), in.size(), DecodeMode::All, hfgpu::Target::linear(dst.get()));
  ring.synchronize();
  const std::vector<Status> st = ring.statuses();
  ASSERT_EQ(st.size(), items.size());
  std::vector<uint16_t> got(total);
  CUDA_CHECK(cudaMemcpy(got.data(), dst.get(), total * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<uint16_t> out;
    ASSERT_EQ(cpuDecode(items[i], Layers::All, out), Status::Ok);
    ASSERT_EQ(st[i], Status::Ok) << items[i].name;
    for (int y = 0; y < items[i].height; ++y)
      for (int x = 0; x < items[i].width; ++x)
        ASSERT_EQ(got[pl[i].offset + size_t(y) * pl[i].pitch + size_t(x)], out[size_t(y) * size_t(items[i].width) + size_t(x)])
            << items[i].name << " at " << x << "," << y;
  }
}

// 2DRBUC streams (docs/format.md 5.2): every segment size, both sample types, partial blocks
// and nodes, masks (codes and bitmaps), extremes; a few come out flat or stored.
std::vector<Item> rbucItems() {
  using hfpac::SampleType;
  std::vector<Item> items;
  const int sizes[][2] = {{129, 129}, {3, 37}, {40, 2}, {17, 16}, {33, 50}, {65, 31}, {257, 75}};
  int k = 0;
  for (int seg : {5, 9, 17, 33, 0})
    for (auto& wh : sizes) {
      const SampleType t = (k % 2) ? SampleType::Int16 : SampleType::UInt16;
      ++k;
      items.push_back(encodeItem(hftest::smooth(wh[0], wh[1], t, uint64_t(300 + k)), hftest::rbucOpts(seg)));
      items.push_back(encodeItem(hftest::rampBumps(wh[0], wh[1], t, uint64_t(300 + k)), hftest::rbucOpts(seg)));
    }
  items.push_back(encodeItem(hftest::seaMountain(129, 129), hftest::rbucOpts(9)));  // masked
  items.push_back(encodeItem(hftest::smooth(70, 50, SampleType::UInt16, 9, 3000, 3000), hftest::rbucOpts(9)));
  items.push_back(encodeItem(hftest::smooth(40, 70, SampleType::Int16, 10, 29767, 3000), hftest::rbucOpts(17)));
  items.push_back(encodeItem(hftest::negative(31, 47, 408), hftest::rbucOpts(5)));
  items.push_back(encodeItem(hftest::cliffs(65, 33), hftest::rbucOpts(17)));
  items.push_back(encodeItem(hftest::checkerboard(48, 48, 3), hftest::rbucOpts(5)));
  items.push_back(encodeItem(hftest::extremes(45, 70, 407), hftest::rbucOpts(9)));     // stored
  items.push_back(encodeItem(hftest::constant(20, 20, 7), hftest::rbucOpts(9)));       // flat
  for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
    hfpac::EncodeOptions o = hftest::rbucOpts(9);
    o.hasNodata = true;
    o.nodata = t == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
    items.push_back(encodeItem(hftest::withHoles(129, 129, t), o));                  // mask bitmaps
    items.push_back(encodeItem(hftest::withHoles(97, 61, t, 404), o));
    o.segment = 5;
    items.push_back(encodeItem(hftest::withHoles(90, 33, t, 8), o));
  }
  size_t rbuc = 0;
  for (const Item& it : items) {
    hfpac::PatchInfo info;
    if (hfpac::readInfo(it.stream.data(), it.stream.size(), info) == Status::Ok && info.rbuc) ++rbuc;
  }
  EXPECT_GE(rbuc + 6, items.size()) << "nearly all of these patches are coded with 2DRBUC";
  return items;
}

TEST(GpuDecode, RbucParityAllLayersLinearAndSurface) {
  HF_REQUIRE_CUDA_DEVICE();
  checkAll(rbucItems());
}

// 2DRBUC and layered streams interleaved in one batch (two kernels, one flags array).
TEST(GpuDecode, RbucMixedWithLayeredInOneBatch) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<Item> layered = syntheticItems(), rbuc = rbucItems();
  std::vector<Item> items;
  for (size_t i = 0; i < std::max(layered.size(), rbuc.size()); ++i) {
    if (i < rbuc.size()) items.push_back(rbuc[i]);
    if (i < layered.size()) items.push_back(layered[i]);
  }
  checkAll(items);
  for (size_t i = 0; i < rbuc.size(); i += 9) {
    SCOPED_TRACE(rbuc[i].name);
    ASSERT_NO_FATAL_FAILURE(checkLinear({rbuc[i], layered[i % layered.size()]}, DecodeMode::Refine));
  }
}

// Corrupt 2DRBUC streams (block index, widths, residuals, truncations) mixed with valid ones:
// the CPU decoder's status (InvalidBlock, SizeMismatch, OutOfRange at L12/All, ...) and never a
// stray write.
TEST(GpuDecode, RbucCorruptStreamsGetCpuStatus) {
  HF_REQUIRE_CUDA_DEVICE();
  hfpac::EncodeOptions holes = hftest::rbucOpts(9);
  holes.hasNodata = true;
  holes.nodata = 0x8000;
  const std::vector<Item> base = {
      encodeItem(hftest::withHoles(129, 129, hfpac::SampleType::Int16), holes),
      encodeItem(hftest::rampBumps(70, 45, hfpac::SampleType::UInt16, 3), hftest::rbucOpts(5)),
      encodeItem(hftest::smooth(70, 50, hfpac::SampleType::UInt16, 9, 3000, 3000), hftest::rbucOpts(9)),
      encodeItem(hftest::smooth(40, 70, hfpac::SampleType::UInt16, 10, 62535, 3000), hftest::rbucOpts(5)),
      encodeItem(hftest::seaMountain(64, 64), hftest::rbucOpts(17)),
      encodeItem(hftest::rampBumps(70, 45, hfpac::SampleType::Int16, 4), hftest::opts(5, 6))};
  std::vector<Item> items;
  hftest::Rng rng(4242);
  for (const Item& b : base) {
    items.push_back(b);
    for (size_t cut : {size_t(0), size_t(40), b.stream.size() / 2, b.stream.size() - 4}) {
      Item t = b;
      t.name += " cut" + std::to_string(cut);
      t.stream.resize(cut);
      items.push_back(t);
    }
    for (int k = 0; k < 80; ++k) {
      Item t = b;
      // Mostly past layer 1 (block index, widths, residuals), some anywhere.
      const uint32_t from = k % 4 == 0 ? 0u : uint32_t(t.stream.size() / 3);
      const size_t at = from + rng.below(uint32_t(t.stream.size()) - from);
      t.stream[at] = uint8_t(t.stream[at] ^ (1u << rng.below(8)));
      if (k % 3 == 0) t.stream[from + rng.below(uint32_t(t.stream.size()) - from)] = uint8_t(rng.u32());
      t.name += " flip@" + std::to_string(at);
      hfpac::PatchInfo info;
      if (hfpac::readInfo(t.stream.data(), t.stream.size(), info) == Status::Ok) {
        t.width = info.width;
        t.height = info.height;
      }
      items.push_back(t);
    }
  }
  for (DecodeMode m : {DecodeMode::L1, DecodeMode::L12, DecodeMode::All, DecodeMode::Refine})
    ASSERT_NO_FATAL_FAILURE(checkLinear(items, m));
  ASSERT_NO_FATAL_FAILURE(checkSurface(items, DecodeMode::All));
  ASSERT_NO_FATAL_FAILURE(checkSurface(items, DecodeMode::Refine));
}

TEST(GpuDecode, RbucUploadRingMatchesCpu) {
  HF_REQUIRE_CUDA_DEVICE();
  std::vector<Item> items;
  for (int r = 0; r < 4; ++r) {
    for (const Item& it : rbucItems()) items.push_back(it);
    for (const Item& it : syntheticItems()) items.push_back(it);
  }
  size_t total = 0;
  const std::vector<Placement> pl = linearLayout(items, total);
  const std::vector<hfgpu::PatchInput> in = inputs(items, pl);
  hfgpu::DeviceBuffer<uint16_t> dst(total);
  CUDA_CHECK(cudaMemset(dst.get(), 0, total * 2));
  hfgpu::UploadRing ring(64 * 1024, 3, 2);
  ring.decodeAsync(in.data(), in.size(), DecodeMode::All, hfgpu::Target::linear(dst.get()));
  ring.synchronize();
  const std::vector<Status> st = ring.statuses();
  ASSERT_EQ(st.size(), items.size());
  std::vector<uint16_t> got(total);
  CUDA_CHECK(cudaMemcpy(got.data(), dst.get(), total * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<uint16_t> out;
    ASSERT_EQ(cpuDecode(items[i], Layers::All, out), Status::Ok);
    ASSERT_EQ(st[i], Status::Ok) << items[i].name;
    for (int y = 0; y < items[i].height; ++y)
      for (int x = 0; x < items[i].width; ++x)
        ASSERT_EQ(got[pl[i].offset + size_t(y) * pl[i].pitch + size_t(x)], out[size_t(y) * size_t(items[i].width) + size_t(x)])
            << items[i].name << " at " << x << "," << y;
  }
}

// Real DEMs: HF_GPU_DEM_DIR (a folder of .hfr dumps, for the device machine) or the shared DEM
// folder (read with demio: needs GDAL for non-.hfr files). Cut into 129 x 129 patches.
TEST(GpuDecode, RealDems) {
  HF_REQUIRE_CUDA_DEVICE();
#ifndef HF_HAVE_DEMIO
  GTEST_SKIP() << "tools/demio not built (HF_BUILD_TOOLS=OFF)";
#else
  namespace fs = std::filesystem;
  std::string dir = HF_SHARED_DEM_DIR;
  if (const char* env = std::getenv("HF_GPU_DEM_DIR")) dir = env;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) GTEST_SKIP() << "no DEM folder " << dir << " (set HF_GPU_DEM_DIR)";
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext == ".md" || ext == ".txt" || ext == ".xml" || ext == ".aux") continue;
    if (demio::hasGdal() || ext == ".hfr") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) GTEST_SKIP() << "no readable DEMs in " << dir;
  size_t tested = 0;
  for (const std::string& f : files) {
    demio::Dem dem;
    std::string err;
    if (!demio::readDem(f, dem, err)) continue;  // not a raster (e.g. a sidecar file)
    SCOPED_TRACE(f);
    std::vector<Item> items;
    const int side = 129;
    for (int y0 = 0; y0 + 1 < std::max(dem.height, 2); y0 += side - 1)
      for (int x0 = 0; x0 + 1 < std::max(dem.width, 2); x0 += side - 1) {
        const int w = std::min(side, dem.width - x0), h = std::min(side, dem.height - y0);
        if (w < 1 || h < 1) continue;
        Item it;
        it.width = w;
        it.height = h;
        it.name = f + " @" + std::to_string(x0) + "," + std::to_string(y0);
        hfpac::EncodeOptions o;
        o.hasNodata = dem.nodataInSamples;
        o.nodata = dem.nodataSample;
        EXPECT_EQ(hfpac::encode(dem.samples.data() + size_t(y0) * size_t(dem.width) + size_t(x0),
                                size_t(dem.width), w, h, dem.type, o, it.stream), Status::Ok);
        if (items.size() % 4 == 1) {  // a 2DRBUC copy of every fourth patch, in the same batch
          Item r = it;
          r.name += " rbuc";
          o.rbuc = true;
          EXPECT_EQ(hfpac::encode(dem.samples.data() + size_t(y0) * size_t(dem.width) + size_t(x0),
                                  size_t(dem.width), w, h, dem.type, o, r.stream), Status::Ok);
          items.push_back(std::move(r));
        }
        items.push_back(std::move(it));
        if (items.size() >= 4000) break;  // bound the time per DEM
      }
    ASSERT_NO_FATAL_FAILURE(checkLinear(items, DecodeMode::All));
    ASSERT_NO_FATAL_FAILURE(checkLinear(items, DecodeMode::L1));
    ASSERT_NO_FATAL_FAILURE(checkLinear(items, DecodeMode::L12));
    ASSERT_NO_FATAL_FAILURE(checkLinear(items, DecodeMode::Refine));
    ++tested;
  }
  std::printf("GpuDecode.RealDems: %zu DEMs from %s\n", tested, dir.c_str());
#endif
}

}  // namespace
