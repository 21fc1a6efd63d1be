// batch_test.cpp - encodeBatch / decodeBatch give exactly what the single calls give, on any
// number of threads, and report the first failing patch.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "codec/hfpac.h"
#include "test_util.h"

namespace {

using hfpac::EncodeOptions;
using hfpac::Layers;
using hfpac::SampleType;
using hfpac::Status;
using hftest::Patch;

std::vector<Patch> batchPatches() {
  std::vector<Patch> v;
  for (int i = 0; i < 6; ++i) {
    v.push_back(hftest::smooth(129, 129, SampleType::UInt16, 200 + uint64_t(i)));
    v.push_back(hftest::seaMountain(65 + i, 40, SampleType::Int16, 210 + uint64_t(i)));
  }
  v.push_back(hftest::noise(33, 20, SampleType::UInt16, 220));
  v.push_back(hftest::constant(16, 16, 5));
  v.push_back(hftest::withHoles(50, 77, SampleType::Int16, 221));
  v.push_back(hftest::noise(1, 1, SampleType::Int16, 222));
  v.push_back(hftest::rampBumps(129, 129, SampleType::Int16, 223, 7));  // stride > width
  return v;
}

std::vector<hfpac::PatchIn> inputs(const std::vector<Patch>& patches) {
  std::vector<hfpac::PatchIn> in(patches.size());
  for (size_t i = 0; i < patches.size(); ++i) {
    in[i].samples = patches[i].data();
    in[i].stride = patches[i].stride;
    in[i].width = patches[i].width;
    in[i].height = patches[i].height;
    in[i].type = patches[i].type;
  }
  return in;
}

TEST(Batch, EncodeMatchesSingleCallsOnAnyThreadCount) {
  const std::vector<Patch> patches = batchPatches();
  const std::vector<hfpac::PatchIn> in = inputs(patches);
  EncodeOptions options[3];
  options[1].segment = 0;
  options[2].segment = 17;
  options[2].bits = 6;
  for (const EncodeOptions& o : options) {
    std::vector<std::vector<uint8_t>> single(patches.size());
    std::vector<hfpac::EncodeStats> singleStats(patches.size());
    for (size_t i = 0; i < patches.size(); ++i) {
      Status s;
      single[i] = hftest::encodeOrDie(patches[i], o, &s, &singleStats[i]);
      ASSERT_EQ(s, Status::Ok);
    }
    for (int threads : {1, 2, 4, 0, 64}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " " + hftest::optionsName(o));
      std::vector<std::vector<uint8_t>> out(3);  // wrong size on purpose: must be resized
      std::vector<Status> statuses(1, Status::BadMagic);
      std::vector<hfpac::EncodeStats> stats;
      ASSERT_EQ(hfpac::encodeBatch(in.data(), in.size(), o, out, statuses, threads, &stats), Status::Ok);
      ASSERT_EQ(out.size(), patches.size());
      ASSERT_EQ(statuses.size(), patches.size());
      ASSERT_EQ(stats.size(), patches.size());
      for (size_t i = 0; i < patches.size(); ++i) {
        EXPECT_EQ(statuses[i], Status::Ok) << i;
        EXPECT_EQ(out[i], single[i]) << "patch " << i;
        EXPECT_EQ(stats[i].prominentPoints, singleStats[i].prominentPoints) << i;
        EXPECT_EQ(stats[i].info.streamBytes, singleStats[i].info.streamBytes) << i;
        EXPECT_EQ(0, std::memcmp(stats[i].bitsHistogram, singleStats[i].bitsHistogram, sizeof stats[i].bitsHistogram));
      }
      // Without stats.
      std::vector<std::vector<uint8_t>> out2;
      ASSERT_EQ(hfpac::encodeBatch(in.data(), in.size(), o, out2, statuses, threads), Status::Ok);
      EXPECT_EQ(out2, single);
    }
  }
}

TEST(Batch, DecodeMatchesSingleCallsOnAnyThreadCount) {
  const std::vector<Patch> patches = batchPatches();
  const std::vector<hfpac::PatchIn> in = inputs(patches);
  std::vector<std::vector<uint8_t>> streams;
  std::vector<Status> statuses;
  ASSERT_EQ(hfpac::encodeBatch(in.data(), in.size(), EncodeOptions{}, streams, statuses, 2), Status::Ok);
  for (Layers layers : {Layers::L1, Layers::L12, Layers::All}) {
    std::vector<std::vector<uint16_t>> single(patches.size());
    for (size_t i = 0; i < patches.size(); ++i)
      ASSERT_EQ(hftest::decodeTo(streams[i], patches[i].width, patches[i].height, single[i], layers), Status::Ok);
    for (int threads : {1, 2, 4, 0, 64}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " layers " + std::to_string(int(layers)));
      std::vector<std::vector<uint16_t>> dst(patches.size());
      std::vector<hfpac::PatchOut> po(patches.size());
      for (size_t i = 0; i < patches.size(); ++i) {
        const size_t stride = size_t(patches[i].width) + (i % 3);  // some padded strides
        dst[i].assign(stride * size_t(patches[i].height), 0xBEEF);
        po[i].data = streams[i].data();
        po[i].size = streams[i].size();
        po[i].dst = dst[i].data();
        po[i].dstStride = stride;
        po[i].dstCapacity = dst[i].size();
      }
      ASSERT_EQ(hfpac::decodeBatch(po.data(), po.size(), layers, statuses, threads), Status::Ok);
      ASSERT_EQ(statuses.size(), patches.size());
      for (size_t i = 0; i < patches.size(); ++i) {
        EXPECT_EQ(statuses[i], Status::Ok);
        const Patch& p = patches[i];
        int bad = 0;
        for (int y = 0; y < p.height; ++y)
          for (int x = 0; x < p.width; ++x)
            bad += dst[i][size_t(y) * po[i].dstStride + size_t(x)] != single[i][size_t(y) * size_t(p.width) + size_t(x)];
        EXPECT_EQ(bad, 0) << "patch " << i;
        if (layers == Layers::All) {
          for (int y = 0; y < p.height; ++y)
            for (int x = 0; x < p.width; ++x)
              ASSERT_EQ(dst[i][size_t(y) * po[i].dstStride + size_t(x)], p.at(x, y)) << "patch " << i;
        }
      }
    }
  }
}

TEST(Batch, ReportsTheFirstFailureAndEncodesTheRest) {
  std::vector<Patch> patches = batchPatches();
  std::vector<hfpac::PatchIn> in = inputs(patches);
  in[3].width = 0;                      // InvalidArgument
  in[5].stride = size_t(in[5].width) - 1;  // InvalidArgument too
  in[7].samples = nullptr;
  for (int threads : {1, 2, 4}) {
    std::vector<std::vector<uint8_t>> out;
    std::vector<Status> statuses;
    EXPECT_EQ(hfpac::encodeBatch(in.data(), in.size(), EncodeOptions{}, out, statuses, threads), Status::InvalidArgument);
    ASSERT_EQ(statuses.size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (i == 3 || i == 5 || i == 7) {
        EXPECT_EQ(statuses[i], Status::InvalidArgument) << i;
      } else {
        EXPECT_EQ(statuses[i], Status::Ok) << i;
        EXPECT_EQ(out[i], hftest::encodeOrDie(patches[i], EncodeOptions{})) << i;
      }
    }
  }
  // Bad options fail every patch.
  EncodeOptions bad;
  bad.segment = 7;
  std::vector<std::vector<uint8_t>> out;
  std::vector<Status> statuses;
  EXPECT_EQ(hfpac::encodeBatch(in.data(), 2, bad, out, statuses, 2), Status::InvalidArgument);
}

TEST(Batch, DecodeReportsTheFirstFailure) {
  const std::vector<Patch> patches = batchPatches();
  const std::vector<hfpac::PatchIn> in = inputs(patches);
  std::vector<std::vector<uint8_t>> streams;
  std::vector<Status> statuses;
  ASSERT_EQ(hfpac::encodeBatch(in.data(), in.size(), EncodeOptions{}, streams, statuses, 1), Status::Ok);
  streams[2][0] = 'X';                                // BadMagic
  streams[4].resize(streams[4].size() - 4);           // TruncatedStream
  std::vector<std::vector<uint16_t>> dst(patches.size());
  std::vector<hfpac::PatchOut> po(patches.size());
  for (size_t i = 0; i < patches.size(); ++i) {
    dst[i].assign(size_t(patches[i].width) * size_t(patches[i].height), 0);
    const size_t capacity = i == 6 ? 1 : dst[i].size();  // patch 6: InvalidArgument
    po[i] = {streams[i].data(), streams[i].size(), dst[i].data(), size_t(patches[i].width), capacity};
  }
  for (int threads : {1, 2, 4}) {
    EXPECT_EQ(hfpac::decodeBatch(po.data(), po.size(), Layers::All, statuses, threads), Status::BadMagic);
    ASSERT_EQ(statuses.size(), po.size());
    EXPECT_EQ(statuses[2], Status::BadMagic);
    EXPECT_EQ(statuses[4], Status::TruncatedStream);
    EXPECT_EQ(statuses[6], Status::InvalidArgument);
    for (size_t i : {0, 1, 3, 5, 7, 8}) {
      EXPECT_EQ(statuses[i], Status::Ok) << i;
      for (int y = 0; y < patches[i].height; ++y)
        for (int x = 0; x < patches[i].width; ++x)
          ASSERT_EQ(dst[i][size_t(y) * size_t(patches[i].width) + size_t(x)], patches[i].at(x, y));
    }
  }
}

TEST(Batch, EmptyBatches) {
  std::vector<std::vector<uint8_t>> out(2);
  std::vector<Status> statuses(2);
  EXPECT_EQ(hfpac::encodeBatch(nullptr, 0, EncodeOptions{}, out, statuses, 4), Status::Ok);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(statuses.empty());
  EXPECT_EQ(hfpac::decodeBatch(nullptr, 0, Layers::All, statuses, 4), Status::Ok);
  EXPECT_TRUE(statuses.empty());
}

}  // namespace
