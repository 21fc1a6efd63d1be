// decode_resident_test.cpp - decoding from entries resident in device memory
// (gpu/resident_decoder.h) is bit-identical to hfpac::decode, for misses (copied into the pool by
// the batch), hits (decoded again from the pool, elsewhere), and batches mixing both; entries are
// built with the CPU decoder's validation. The device tests skip without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "codec/hfpac.h"
#include "gpu/cuda_util.h"
#include "gpu/resident_decoder.h"
#include "gpu_test_util.h"
#include "test_util.h"

namespace {

using hfgpu::DecodeMode;
using hfpac::Layers;
using hfpac::SampleType;
using hfpac::Status;

struct Tile {
  std::string name;
  std::vector<uint8_t> stream;
  int width = 0, height = 0;
  std::vector<uint8_t> entryBytes;
  hfgpu::ResidentEntry entry;
};

// Every kind of stream: coded (uniform and per-area b), masked (codes and bitmaps), stored, flat,
// 2DRBUC, odd sizes, both sample types.
std::vector<Tile> tiles() {
  std::vector<Tile> out;
  auto add = [&](const hftest::Patch& p, const hfpac::EncodeOptions& o) {
    Tile t;
    t.name = p.name + " " + std::to_string(p.width) + "x" + std::to_string(p.height) + " " + hftest::optionsName(o) +
             (o.rbuc ? " rbuc" : "");
    t.stream = hftest::encodeOrDie(p, o);
    t.width = p.width;
    t.height = p.height;
    out.push_back(std::move(t));
  };
  add(hftest::smooth(129, 129, SampleType::UInt16, 1), hftest::opts(9, -1));
  add(hftest::rampBumps(129, 129, SampleType::Int16, 2), hftest::opts(17, 6));
  add(hftest::seaMountain(129, 129), hftest::opts(9, -1));
  add(hftest::withHoles(97, 61, SampleType::UInt16, 4), [] {
    hfpac::EncodeOptions o = hftest::opts(5, -1);
    o.hasNodata = true;
    o.nodata = 0xFFFF;
    return o;
  }());
  add(hftest::extremes(45, 70, 407), hftest::opts(9, -1));   // stored
  add(hftest::constant(33, 20, 7), hftest::opts(9, -1));     // flat
  add(hftest::noise(40, 37), hftest::opts(5, 4));
  add(hftest::smooth(129, 129, SampleType::Int16, 5), hftest::rbucOpts(9));
  add(hftest::rampBumps(65, 31, SampleType::UInt16, 6), hftest::rbucOpts(17));
  add(hftest::seaMountain(129, 129), hftest::rbucOpts(9));
  for (Tile& t : out) {
    EXPECT_EQ(hfgpu::makeResidentEntry(t.stream.data(), t.stream.size(), t.entryBytes, t.entry), Status::Ok) << t.name;
  }
  return out;
}

TEST(ResidentEntry, LaidOutWithinTheBoundAndCorruptStreamsRejectedLikeTheCpu) {
  for (const Tile& t : tiles()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.entry.bytes, t.entryBytes.size());
    EXPECT_EQ(t.entry.bytes % 16, 0u);
    EXPECT_EQ(t.entry.width, t.width);
    EXPECT_EQ(t.entry.height, t.height);
    EXPECT_LE(t.entry.bytes, hfgpu::residentEntryBound(t.stream.size()));
    // Truncated and damaged streams: the status hfpac::decode gives, and no entry.
    std::vector<uint16_t> out(size_t(t.width) * size_t(t.height));
    for (size_t cut : {size_t(0), size_t(5), t.stream.size() / 2, t.stream.size() - 1}) {
      if (cut >= t.stream.size()) continue;
      std::vector<uint8_t> bytes;
      hfgpu::ResidentEntry e;
      const Status cpu = hfpac::decode(t.stream.data(), cut, out.data(), size_t(t.width), out.size());
      const Status st = hfgpu::makeResidentEntry(t.stream.data(), cut, bytes, e);
      EXPECT_EQ(st, cpu) << "cut at " << cut;
      if (st != Status::Ok) {
        EXPECT_TRUE(bytes.empty());
      }
    }
  }
}

// CPU reference, and a check of a linear device buffer against it.
void expectDecoded(const std::vector<uint16_t>& got, const Tile& t, size_t offset, size_t pitch, Layers layers) {
  std::vector<uint16_t> ref;
  ASSERT_EQ(hftest::decodeTo(t.stream, t.width, t.height, ref, layers), Status::Ok) << t.name;
  for (int y = 0; y < t.height; ++y)
    for (int x = 0; x < t.width; ++x)
      ASSERT_EQ(got[offset + size_t(y) * pitch + size_t(x)], ref[size_t(y) * size_t(t.width) + size_t(x)])
          << t.name << " at " << x << "," << y;
}

TEST(ResidentDecode, MissesThenHitsThenMixedMatchTheCpu) {
  HF_REQUIRE_CUDA_DEVICE();
  std::vector<Tile> ts = tiles();
  // Place the entries back to back in the pool (with a gap, so that offsets are not all 0-based).
  uint64_t at = 256;
  for (Tile& t : ts) {
    t.entry.offset = at;
    at += t.entry.bytes + 48;
  }
  hfgpu::ResidentPool pool(at + 1024);
  size_t pitch = 0;
  for (const Tile& t : ts) pitch = std::max(pitch, size_t(t.width) + 3);
  const size_t rows = 130, slot = pitch * rows, total = slot * ts.size() + 11;
  hfgpu::DeviceBuffer<uint16_t> dst(total);
  hfgpu::Stream stream;
  hfgpu::ResidentBatch batch;
  std::vector<uint16_t> got(total);

  auto run = [&](const std::vector<size_t>& order, const std::vector<bool>& miss, DecodeMode mode, Layers layers) {
    CUDA_CHECK(cudaMemset(dst.get(), 0, total * 2));
    batch.clear();
    for (size_t k = 0; k < order.size(); ++k) {
      const Tile& t = ts[order[k]];
      hfgpu::ResidentTarget d;
      d.dstOffset = 5 + k * slot;  // the k-th slot: a different place each batch
      d.dstPitch = pitch;
      ASSERT_TRUE(miss[k] ? batch.addMiss(t.entryBytes.data(), t.entry, d) : batch.addHit(t.entry, d)) << t.name;
    }
    batch.launchAsync(pool, mode, hfgpu::Target::linear(dst.get()), stream);
    stream.synchronize();
    const std::vector<Status> st = batch.statuses();
    ASSERT_EQ(st.size(), order.size());
    for (Status s : st) ASSERT_EQ(s, Status::Ok);
    CUDA_CHECK(cudaMemcpy(got.data(), dst.get(), total * 2, cudaMemcpyDeviceToHost));
    for (size_t k = 0; k < order.size(); ++k)
      ASSERT_NO_FATAL_FAILURE(expectDecoded(got, ts[order[k]], 5 + k * slot, pitch, layers));
  };

  std::vector<size_t> all(ts.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  // 1. every tile a miss: copied into the pool and decoded.
  ASSERT_NO_FATAL_FAILURE(run(all, std::vector<bool>(all.size(), true), DecodeMode::All, Layers::All));
  EXPECT_GT(batch.missBytes(), 0u);
  // 2. every tile a hit, in reverse order (other destinations), at every layer choice.
  std::vector<size_t> reversed(all.rbegin(), all.rend());
  const std::vector<bool> hits(all.size(), false);
  ASSERT_NO_FATAL_FAILURE(run(reversed, hits, DecodeMode::All, Layers::All));
  EXPECT_EQ(batch.missBytes(), 0u);
  EXPECT_LE(batch.uploadBytes(), 64 * all.size() + 64);  // records only
  ASSERT_NO_FATAL_FAILURE(run(reversed, hits, DecodeMode::L1, Layers::L1));
  ASSERT_NO_FATAL_FAILURE(run(reversed, hits, DecodeMode::L12, Layers::L12));
  // 3. the smallest entry re-sent as a miss into the place of the largest (overwriting it),
  //    with every other tile but the largest as a hit.
  size_t small = 0, large = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].entry.bytes < ts[small].entry.bytes) small = i;
    if (ts[i].entry.bytes > ts[large].entry.bytes) large = i;
  }
  ts[small].entry.offset = ts[large].entry.offset;
  std::vector<size_t> order;
  std::vector<bool> miss;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (i == large) continue;
    order.push_back(i);
    miss.push_back(i == small);
  }
  ASSERT_NO_FATAL_FAILURE(run(order, miss, DecodeMode::All, Layers::All));
}

TEST(ResidentDecode, InvalidDestinationsAreRefused) {
  std::vector<Tile> ts = tiles();
  hfgpu::ResidentBatch batch;
  hfgpu::ResidentTarget d;
  d.x = -1;
  EXPECT_FALSE(batch.addHit(ts[0].entry, d));
  d = {};
  d.surface = 256;
  EXPECT_FALSE(batch.addHit(ts[0].entry, d));
  d = {};
  d.dstPitch = size_t(ts[0].width) - 1;
  EXPECT_FALSE(batch.addHit(ts[0].entry, d));
  d = {};
  hfgpu::ResidentEntry odd = ts[0].entry;
  odd.offset = 8;  // not 16-byte aligned
  EXPECT_FALSE(batch.addHit(odd, d));
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_TRUE(batch.addHit(ts[0].entry, d));
  EXPECT_EQ(batch.size(), 1u);
}

}  // namespace
