// encode.h - tile encoding shared by pack and transcode (internal to hfpack_lib).
//
// TileEncoder turns batches of p x p tiles into payloads of one archive codec: on the CPU
// threads (hfpac::encode, hfpac::ansEncode for hfan, or little-endian samples for raw) or, with
// --device cuda in a build with the GPU codec (HFPACK_CUDA), with one
// hfgpu::BatchEncoder::encodeHost call per batch. The GPU streams are byte-identical to
// hfpac::encode's, so the device never changes a payload. Codec auto codes every tile both ways
// (HFPaC on the GPU when it is used, HFAN on the CPU threads meanwhile) and keeps the smaller
// (ties: hfpac, which has layers and the GPU decoder); Batch::codecs says which.
// --device cuda that cannot be honoured (raw, hfpac+rbuc, hfan, no GPU codec in this build, no
// device, a CUDA failure midway) falls back to the CPU and reports a note; it is never an error.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive.h"

namespace hfpack {

// Runs f(i) for i in [0, n) on up to `threads` threads.
template <class F>
void parallelFor(size_t n, int threads, F f) {
  const size_t t = std::min<size_t>(n, size_t(std::max(1, threads)));
  if (t <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t k = 0; k < t; ++k)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
    });
  for (auto& th : pool) th.join();
}

// 0 = all cores.
int threadCount(int threads);

// Checks the encoding options pack and transcode share; a one-line error naming the option.
bool checkEncodeOptions(int segment, int bits, const std::string& device, int gpuBatch,
                        std::string& error);

// What the header's codecOptions records for these options: "segment=9 bits=auto",
// "segment=9 rbuc" (2DRBUC ignores bits), "lanes=auto" (hfan), "segment=9 bits=auto lanes=auto"
// (auto), "" for raw.
std::string codecOptionsText(hfa::Codec codec, int segment, int bits);

// The codec's options for one archive: `nodata` is masked when hasNodata (--nodata keep).
hfpac::EncodeOptions encodeOptions(hfa::Codec codec, int segment, int bits, bool hasNodata,
                                   uint16_t nodata);

class TileEncoder {
 public:
  // device "cpu" or "cuda" (checked by checkEncodeOptions). A fallback from cuda to the CPU
  // (now or in a later encode()) sets note() and calls onNote with it.
  TileEncoder(hfa::Codec codec, const hfpac::EncodeOptions& options, hfpac::SampleType type,
              int tileSize, int threads, const std::string& device,
              std::function<void(const std::string&)> onNote = nullptr);
  ~TileEncoder();
  TileEncoder(const TileEncoder&) = delete;
  TileEncoder& operator=(const TileEncoder&) = delete;

  bool onGpu() const;                          // the next encode() runs on the GPU
  const char* device() const { return onGpu() ? "cuda" : "cpu"; }
  const std::string& note() const { return note_; }  // why cuda fell back (empty: it did not)
  uint64_t gpuBatches() const { return gpuBatches_; }

  struct Batch {
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<hfpac::EncodeStats> stats;  // layer sizes (info) of hfpac payloads (zero for hfan)
    std::vector<hfpac::Status> statuses;    // Ok, or why tile i failed
    std::vector<hfa::Codec> codecs;         // what payload i is (the index entry's codec)
  };
  // Encodes tiles[i] (tileSize^2 samples, stride tileSize) into out.payloads[i]. cpuWork(i), if
  // given, runs once for every i on the CPU threads (on the GPU path while the GPU encodes, so
  // it must not need the payloads). Every status is Ok unless a tile failed.
  void encode(const std::vector<const uint16_t*>& tiles, const std::function<void(size_t)>& cpuWork,
              Batch& out);

 private:
  void encodeOnCpu(const uint16_t* tile, Batch& out, size_t i) const;
  hfpac::Status encodeAns(const uint16_t* tile, std::vector<uint8_t>& out) const;
  // Codec auto: payload i becomes `ans` if that is smaller.
  static void keepSmaller(Batch& out, size_t i, std::vector<uint8_t>& ans);
  void fallBack(const std::string& why);
  hfa::Codec codec_;
  hfpac::EncodeOptions options_;
  hfpac::SampleType type_;
  int p_, threads_;
  std::function<void(const std::string&)> onNote_;
  std::string note_;
  uint64_t gpuBatches_ = 0;
  struct Gpu;
  std::unique_ptr<Gpu> gpu_;  // null: the CPU encodes
};

// For the summaries pack and transcode print.
long peakRssKiB();
std::string human(double bytes);  // "1.23 MiB", "4.5 KiB", "12 B"

}  // namespace hfpack
