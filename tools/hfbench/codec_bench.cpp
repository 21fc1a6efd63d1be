// codec_bench.cpp - one input of `hfbench codec` (codec_bench.h).
#include "codec_bench.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>

#include "codec/ans.h"
#include "decode_rounds.h"
#include "timer.h"
#ifdef HF_BENCH_CUDA
#include "gpu/ans_decoder.h"
#include "gpu_encode_bench.h"
#endif

namespace hfbench {

namespace {

void say(const LogFn& log, const std::string& message) {
  if (log) log(message);
}

std::string where(const PatchSet& set, size_t i) {
  const PatchRect& r = set.rects[i];
  return "patch " + std::to_string(i) + " at (" + std::to_string(r.x0) + ", " +
         std::to_string(r.y0) + ") " + std::to_string(r.width) + "x" + std::to_string(r.height);
}

// Codec inconsistencies: the first occurrence of each kind, with a count, so that a systematic
// problem makes one readable line rather than thousands.
class Notes {
 public:
  void add(const std::string& kind, const std::string& first) {
    for (Entry& e : entries_) {
      if (e.kind == kind) {
        ++e.count;
        return;
      }
    }
    entries_.push_back(Entry{kind, first, 1});
  }
  void appendTo(std::vector<std::string>& out) const {
    for (const Entry& e : entries_) {
      std::string line = e.kind + ": " + e.first;
      if (e.count > 1) line += " (and " + std::to_string(e.count - 1) + " more)";
      out.push_back(line);
    }
  }

 private:
  struct Entry {
    std::string kind, first;
    size_t count;
  };
  std::vector<Entry> entries_;
};

int highestBits(const hfpac::EncodeStats& stats) {
  for (int b = hfpac::kMaxBits; b > 0; --b)
    if (stats.bitsHistogram[b] != 0) return b;
  return 0;
}

bool sameInfo(const hfpac::PatchInfo& a, const hfpac::PatchInfo& b) {
  return a.width == b.width && a.height == b.height && a.type == b.type && a.flat == b.flat &&
         a.stored == b.stored && a.perAreaBits == b.perAreaBits && a.masked == b.masked &&
         (!a.masked || a.maskValue == b.maskValue) && a.segment == b.segment &&
         a.uniformBits == b.uniformBits && a.layer1Bytes == b.layer1Bytes &&
         a.layer2Bytes == b.layer2Bytes && a.layer3Bytes == b.layer3Bytes &&
         a.streamBytes == b.streamBytes;
}

std::vector<hfpac::PatchOut> patchOuts(const PatchSet& set,
                                       const std::vector<std::vector<uint8_t>>& streams,
                                       uint16_t* decoded) {
  std::vector<hfpac::PatchOut> outs(set.rects.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const PatchRect& r = set.rects[i];
    outs[i].data = streams[i].data();
    outs[i].size = streams[i].size();
    outs[i].dst = decoded + r.offset;
    outs[i].dstStride = static_cast<size_t>(r.width);
    outs[i].dstCapacity = r.points();
  }
  return outs;
}

// PatchView::sample at the corners and a few pseudo-random points of every patch, compared with
// `reference` (packed layout): the original for Layers::All, the whole-patch decode otherwise.
void checkPoints(const PatchSet& set, const std::vector<std::vector<uint8_t>>& streams,
                 hfpac::Layers layers, const uint16_t* reference, HfpacResult& result,
                 Notes& notes) {
  const char* layer_name = layers == hfpac::Layers::L1 ? "L1" : layers == hfpac::Layers::L12 ? "L12" : "All";
  uint32_t rng = 0x9e3779b9u;
  for (size_t i = 0; i < set.rects.size(); ++i) {
    const PatchRect& r = set.rects[i];
    hfpac::PatchView view;
    const hfpac::Status st = hfpac::PatchView::open(streams[i].data(), streams[i].size(), view);
    if (st != hfpac::Status::Ok) {
      result.pointDecodeOk = false;
      notes.add("PatchView::open failed", where(set, i) + ": " + hfpac::statusMessage(st));
      continue;
    }
    constexpr int kRandomPoints = 12;
    for (int k = 0; k < 4 + kRandomPoints; ++k) {
      int x, y;
      if (k < 4) {
        x = (k & 1) ? r.width - 1 : 0;
        y = (k & 2) ? r.height - 1 : 0;
      } else {
        rng = rng * 1664525u + 1013904223u;
        x = static_cast<int>((rng >> 8) % static_cast<uint32_t>(r.width));
        rng = rng * 1664525u + 1013904223u;
        y = static_cast<int>((rng >> 8) % static_cast<uint32_t>(r.height));
      }
      const uint16_t want = reference[r.offset + static_cast<size_t>(y) * r.width + x];
      const uint16_t got = view.sample(x, y, layers);
      ++result.pointsChecked;
      if (got != want) {
        result.pointDecodeOk = false;
        notes.add(std::string("PatchView::sample(") + layer_name + ") differs",
                  where(set, i) + ", point (" + std::to_string(x) + ", " + std::to_string(y) +
                      "): " + std::to_string(sampleValue(got, set.type)) + " instead of " +
                      std::to_string(sampleValue(want, set.type)));
      }
    }
  }
}

hfpac::EncodeOptions encodeOptionsFor(const CodecBenchOptions& options, const demio::Dem& dem) {
  hfpac::EncodeOptions o;
  o.segment = options.segment;
  o.bits = options.bits;
  o.autoMask = options.autoMask;
  if (options.passNodata && dem.nodataInSamples) {
    o.hasNodata = true;
    o.nodata = dem.nodataSample;
  }
  return o;
}

std::vector<hfpac::PatchIn> patchIns(const PatchSet& set) {
  std::vector<hfpac::PatchIn> ins(set.rects.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    const PatchRect& r = set.rects[i];
    ins[i].samples = set.packed.data() + r.offset;
    ins[i].stride = static_cast<size_t>(r.width);
    ins[i].width = r.width;
    ins[i].height = r.height;
    ins[i].type = set.type;
  }
  return ins;
}

#ifdef HF_BENCH_CUDA
// The entropy stage on the GPU (gpu/ans_decoder.h), in gpu.extra: ans_gpu_lossless (1 when the
// GPU decode of every patch equals the input), ans_gpu_decode_pts_per_s (the kernel alone, on
// the patches replicated to >= 64 M points like the HFPaC figures, best of `repeat`).
void addGpuAnsFigures(const PatchSet& set, const hfpac::EncodeOptions& o, int repeat,
                      std::map<std::string, double>& extra) {
  hfpac::AnsOptions ao;
  ao.hasMask = o.hasNodata;
  ao.maskValue = o.nodata;
  std::vector<std::vector<uint8_t>> streams(set.rects.size());
  for (size_t i = 0; i < set.rects.size(); ++i) {
    const PatchRect& r = set.rects[i];
    if (hfpac::ansEncode(set.packed.data() + r.offset, size_t(r.width), r.width, r.height, set.type, streams[i], ao) !=
        hfpac::Status::Ok)
      return;
  }
  std::vector<std::vector<uint16_t>> outputs;
  std::vector<hfpac::Status> statuses;
  hfgpu::ansDecodeBatch(streams, outputs, statuses);
  bool lossless = true;
  for (size_t i = 0; i < streams.size() && lossless; ++i) {
    const PatchRect& r = set.rects[i];
    lossless = statuses[i] == hfpac::Status::Ok &&
               std::equal(outputs[i].begin(), outputs[i].end(), set.packed.begin() + std::ptrdiff_t(r.offset));
  }
  extra["ans_gpu_lossless"] = lossless ? 1 : 0;
  std::vector<std::vector<uint8_t>> batch;
  for (uint64_t points = 0; points < (uint64_t(64) << 20) && !streams.empty();)
    for (size_t i = 0; i < streams.size(); ++i) {
      batch.push_back(streams[i]);
      points += set.rects[i].points();
    }
  const hfgpu::AnsKernelTiming t = hfgpu::ansDecodeKernelTime(batch, repeat);
  if (t.seconds > 0) extra["ans_gpu_decode_pts_per_s"] = double(t.samples) / t.seconds;
  extra["ans_gpu_batch_points"] = double(t.samples);
}
#endif

// GPU figures: the streams are encoded again with encodeBatch (byte-identical to the ones
// measured above, see deterministic_mt), so runHfpac keeps its memory profile.
GpuResult runGpu(const PatchSet& set, const CodecBenchOptions& options, const demio::Dem& dem,
                 double cpuEncodePointsPerSecond) {
#ifdef HF_BENCH_CUDA
  const std::vector<hfpac::PatchIn> ins = patchIns(set);
  const hfpac::EncodeOptions o = encodeOptionsFor(options, dem);
  std::vector<std::vector<uint8_t>> streams;
  std::vector<hfpac::Status> statuses;
  GpuResult g;
  if (hfpac::encodeBatch(ins.data(), ins.size(), o, streams, statuses, options.threads) != hfpac::Status::Ok) {
    g.error = "encodeBatch failed";
    return g;
  }
  GpuResult gpu = benchGpuDecode(set, streams, options.repeat);
  // ---- GPU encoder figures (gpu_encode_* in gpu.extra; tools/hfbench/gpu_encode_bench.h) ----
  addGpuEncodeFigures(ins, streams, o, options.repeat, cpuEncodePointsPerSecond, gpu.extra, gpu.error);
  if (gpu.measured) addGpuAnsFigures(set, o, options.repeat, gpu.extra);
  return gpu;
#else
  (void)set;
  (void)options;
  (void)dem;
  (void)cpuEncodePointsPerSecond;
  GpuResult g;
  g.error = "hfbench was built without CUDA (HF_CUDA=OFF)";
  return g;
#endif
}

// Runs decodeOne(i) over every patch once (false, with a.error, on the first patch that fails),
// then registers that decode with `rounds`, which times it with the other codecs'
// (decode_rounds.h). decodeOne must keep what it uses alive until the rounds have run.
template <class DecodeOne>
bool checkAndRegister(const PatchSet& set, DecodeRounds& rounds, AnchorResult& a, DecodeOne decodeOne) {
  for (size_t i = 0; i < set.rects.size(); ++i)
    if (const hfpac::Status st = decodeOne(i); st != hfpac::Status::Ok) {
      a.error = "decode failed on " + where(set, i) + ": " + hfpac::statusMessage(st);
      return false;
    }
  a.decodeRound = rounds.add([&set, decodeOne] {
    for (size_t i = 0; i < set.rects.size(); ++i)
      if (decodeOne(i) != hfpac::Status::Ok) return false;
    return true;
  });
  return true;
}

// HFPaC with 2DRBUC residual coding, measured like an anchor: one single-thread encode,
// single-thread decodes timed in `rounds`, lossless check against the input.
AnchorResult benchRbuc(const PatchSet& set, hfpac::EncodeOptions options, DecodeRounds& rounds,
                       std::vector<uint16_t>& decoded) {
  AnchorResult a;
  a.method = "HFPaC, 2DRBUC residuals (EncodeOptions::rbuc), same segment/nodata options";
  options.rbuc = true;
  const std::vector<hfpac::PatchIn> ins = patchIns(set);
  auto streamsOwner = std::make_shared<std::vector<std::vector<uint8_t>>>(ins.size());
  std::vector<std::vector<uint8_t>>& streams = *streamsOwner;
  {
    Stopwatch watch;
    for (size_t i = 0; i < ins.size(); ++i) {
      const hfpac::PatchIn& p = ins[i];
      const hfpac::Status st =
          hfpac::encode(p.samples, p.stride, p.width, p.height, p.type, options, streams[i]);
      if (st != hfpac::Status::Ok) {
        a.error = "encode failed on " + where(set, i) + ": " + hfpac::statusMessage(st);
        return a;
      }
      a.compressedBytes += streams[i].size();
    }
    a.encodeSeconds = watch.seconds();
  }
  decoded.assign(set.packed.size(), 0);
  auto outs = std::make_shared<const std::vector<hfpac::PatchOut>>(patchOuts(set, streams, decoded.data()));
  if (!checkAndRegister(set, rounds, a, [outs, streamsOwner](size_t i) {
        const hfpac::PatchOut& o = (*outs)[i];
        return hfpac::decode(o.data, o.size, o.dst, o.dstStride, o.dstCapacity);
      }))
    return a;
  a.lossless = decoded == set.packed;
  a.ok = true;
  return a;
}

// The entropy stage (codec/ans.h), measured like an anchor; `autoBytes` gets the per-patch
// smaller of this and the HFPaC stream (`hfpacBytes`, runHfpac's): what a per-tile codec choice
// stores. `options` gives the DEM's nodata as the mask.
AnchorResult benchAns(const PatchSet& set, const hfpac::EncodeOptions& options,
                      const std::vector<uint32_t>& hfpacBytes, DecodeRounds& rounds, std::vector<uint16_t>& decoded,
                      uint64_t& autoBytes) {
  AnchorResult a;
  a.method =
      "horizontal differences, hybrid-integer tokens, interleaved rANS (codec/ans.h), 8, 16 or 32 lanes (auto), "
      "the DEM's nodata as mask";
  hfpac::AnsOptions ansOptions;
  ansOptions.hasMask = options.hasNodata;  // the DEM's nodata (encodeOptionsFor), as HFPaC gets it
  ansOptions.maskValue = options.nodata;
  const std::vector<hfpac::PatchIn> ins = patchIns(set);
  auto streamsOwner = std::make_shared<std::vector<std::vector<uint8_t>>>(ins.size());
  std::vector<std::vector<uint8_t>>& streams = *streamsOwner;
  {
    Stopwatch watch;
    for (size_t i = 0; i < ins.size(); ++i) {
      const hfpac::PatchIn& p = ins[i];
      const hfpac::Status st = hfpac::ansEncode(p.samples, p.stride, p.width, p.height, p.type, streams[i], ansOptions);
      if (st != hfpac::Status::Ok) {
        a.error = "encode failed on " + where(set, i) + ": " + hfpac::statusMessage(st);
        return a;
      }
      a.compressedBytes += streams[i].size();
    }
    a.encodeSeconds = watch.seconds();
  }
  autoBytes = 0;
  for (size_t i = 0; i < ins.size() && i < hfpacBytes.size(); ++i)
    autoBytes += std::min<uint64_t>(hfpacBytes[i], streams[i].size());
  decoded.assign(set.packed.size(), 0);
  if (!checkAndRegister(set, rounds, a, [&set, &decoded, streamsOwner](size_t i) {
        const PatchRect& r = set.rects[i];
        const std::vector<uint8_t>& in = (*streamsOwner)[i];
        return hfpac::ansDecode(in.data(), in.size(), decoded.data() + r.offset, size_t(r.width), r.points());
      }))
    return a;
  a.lossless = decoded == set.packed;
  a.ok = true;
  return a;
}

bool runHfpac(const PatchSet& set, const CodecBenchOptions& options, const demio::Dem& dem,
              std::vector<uint16_t>& decoded, DecodeRounds& rounds, HfpacResult& result, std::string& error,
              const LogFn& log) {
  const size_t count = set.rects.size();
  Notes notes;

  const std::vector<hfpac::PatchIn> ins = patchIns(set);
  const hfpac::EncodeOptions encode_options = encodeOptionsFor(options, dem);

  // Encode, single thread.
  say(log, "hfpac encode");
  auto streamsOwner = std::make_shared<std::vector<std::vector<uint8_t>>>(count);
  std::vector<std::vector<uint8_t>>& streams = *streamsOwner;
  std::vector<hfpac::EncodeStats> stats(count);
  {
    Stopwatch watch;
    for (size_t i = 0; i < count; ++i) {
      const hfpac::PatchIn& p = ins[i];
      const hfpac::Status st = hfpac::encode(p.samples, p.stride, p.width, p.height, p.type,
                                             encode_options, streams[i], &stats[i]);
      if (st != hfpac::Status::Ok) {
        error = "hfpac::encode failed on " + where(set, i) + ": " + hfpac::statusMessage(st);
        return false;
      }
    }
    result.encodeSeconds = watch.seconds();
  }

  // Encode, threads; must be byte-identical (the format promises deterministic streams).
  say(log, "hfpac encodeBatch");
  {
    std::vector<std::vector<uint8_t>> streams_mt;
    std::vector<hfpac::Status> statuses;
    Stopwatch watch;
    const hfpac::Status st = hfpac::encodeBatch(ins.data(), count, encode_options, streams_mt,
                                                statuses, options.threads);
    result.encodeMtSeconds = watch.seconds();
    result.deterministicMt = st == hfpac::Status::Ok && streams_mt.size() == count;
    if (st != hfpac::Status::Ok)
      notes.add("encodeBatch failed", hfpac::statusMessage(st));
    for (size_t i = 0; result.deterministicMt && i < count; ++i) {
      if (streams_mt[i] != streams[i]) {
        result.deterministicMt = false;
        notes.add("encodeBatch bytes differ from encode", where(set, i));
      }
    }
  }

  // Sizes and statistics, cross-checked with readInfo().
  for (size_t i = 0; i < count; ++i) {
    const hfpac::EncodeStats& s = stats[i];
    const std::vector<uint8_t>& stream = streams[i];
    result.compressedBytes += stream.size();
    result.patchBytes.push_back(uint32_t(stream.size()));
    result.layer1Bytes += s.info.layer1Bytes;
    result.layer2Bytes += s.info.layer2Bytes;
    result.layer3Bytes += s.info.layer3Bytes;
    uint64_t histogram_points = 0;
    for (int b = 0; b <= hfpac::kMaxBits; ++b) {
      result.bitsHistogram[b] += s.bitsHistogram[b];
      histogram_points += s.bitsHistogram[b];
    }
    result.prominentPoints += s.prominentPoints;
    if (s.info.flat) ++result.flatPatches;
    if (s.info.perAreaBits) ++result.perAreaBitsPatches;
    if (s.info.stored) ++result.storedPatches;
    if (s.info.masked) ++result.maskedPatches;
    ++result.segmentHistogram[s.info.segment];

    if (stream.size() % 4 != 0)
      notes.add("stream size not a multiple of 4", where(set, i) + ": " + std::to_string(stream.size()) + " B");
    if (s.info.streamBytes != stream.size() ||
        s.info.streamBytes != uint64_t(s.info.layer1Bytes) + s.info.layer2Bytes + s.info.layer3Bytes)
      notes.add("EncodeStats sizes disagree with the stream",
                where(set, i) + ": stream " + std::to_string(stream.size()) + " B, info " +
                    std::to_string(s.info.streamBytes) + " = " + std::to_string(s.info.layer1Bytes) +
                    " + " + std::to_string(s.info.layer2Bytes) + " + " +
                    std::to_string(s.info.layer3Bytes));
    if (!s.info.flat && histogram_points != set.rects[i].points())
      notes.add("bits histogram does not count every point",
                where(set, i) + ": " + std::to_string(histogram_points) + " counted");
    hfpac::PatchInfo info;
    const hfpac::Status st = hfpac::readInfo(stream.data(), stream.size(), info);
    if (st != hfpac::Status::Ok)
      notes.add("readInfo failed on an encoder stream", where(set, i) + ": " + hfpac::statusMessage(st));
    else if (!sameInfo(info, s.info))
      notes.add("readInfo disagrees with EncodeStats", where(set, i));
  }

  // Decode, single thread: checked once here, timed in `rounds` with the other codecs.
  say(log, "hfpac decode");
  decoded.assign(set.points(), 0);
  const DecodeRounds::Decode decodeAll = [&set, &decoded, streamsOwner] {
    for (size_t i = 0; i < set.rects.size(); ++i) {
      const PatchRect& r = set.rects[i];
      const std::vector<uint8_t>& in = (*streamsOwner)[i];
      if (hfpac::decode(in.data(), in.size(), decoded.data() + r.offset, static_cast<size_t>(r.width), r.points(),
                        hfpac::Layers::All) != hfpac::Status::Ok)
        return false;
    }
    return true;
  };
  for (size_t i = 0; i < count && result.decodeError.empty(); ++i) {
    const PatchRect& r = set.rects[i];
    const hfpac::Status st = hfpac::decode(streams[i].data(), streams[i].size(), decoded.data() + r.offset,
                                           static_cast<size_t>(r.width), r.points(), hfpac::Layers::All);
    if (st != hfpac::Status::Ok)
      result.decodeError = "decode failed on " + where(set, i) + ": " + hfpac::statusMessage(st);
  }
  result.lossless = result.decodeError.empty() && comparePatches(set, decoded.data(), result.mismatch);
  if (result.decodeError.empty()) result.decodeRound = rounds.add(decodeAll);

  // Decode, threads, best of repeat, into a poisoned buffer so that unwritten samples show.
  say(log, "hfpac decodeBatch");
  std::fill(decoded.begin(), decoded.end(), uint16_t{0x5a5a});
  {
    const std::vector<hfpac::PatchOut> outs = patchOuts(set, streams, decoded.data());
    std::vector<hfpac::Status> statuses;
    hfpac::Status batch_status = hfpac::Status::Ok;
    result.decodeMtSeconds = bestOf(options.repeat, [&] {
      batch_status = hfpac::decodeBatch(outs.data(), count, hfpac::Layers::All, statuses, options.threads);
      return batch_status == hfpac::Status::Ok;
    });
    Mismatch mt_mismatch;
    result.losslessMt = batch_status == hfpac::Status::Ok && comparePatches(set, decoded.data(), mt_mismatch);
    if (batch_status != hfpac::Status::Ok) {
      result.decodeMtSeconds = 0;
      notes.add("decodeBatch failed", hfpac::statusMessage(batch_status));
    } else if (mt_mismatch.any) {
      notes.add("decodeBatch output differs from the input",
                where(set, mt_mismatch.patch) + ", point (" + std::to_string(mt_mismatch.x) +
                    ", " + std::to_string(mt_mismatch.y) + ")");
    }
  }
  checkPoints(set, streams, hfpac::Layers::All, set.packed.data(), result, notes);

  // Progressive layers: max error of L1 and L12, the L12 bound, and point decode at each.
  say(log, "hfpac layers");
  for (const hfpac::Layers layers : {hfpac::Layers::L1, hfpac::Layers::L12}) {
    const std::vector<hfpac::PatchOut> outs = patchOuts(set, streams, decoded.data());
    std::vector<hfpac::Status> statuses;
    const hfpac::Status st = hfpac::decodeBatch(outs.data(), count, layers, statuses, options.threads);
    const char* name = layers == hfpac::Layers::L1 ? "L1" : "L12";
    if (st != hfpac::Status::Ok) {
      notes.add(std::string("decodeBatch(") + name + ") failed", hfpac::statusMessage(st));
      continue;
    }
    long worst = 0;
    for (size_t i = 0; i < count; ++i) {
      const long err = maxAbsError(set, i, decoded.data());
      worst = std::max(worst, err);
      if (layers == hfpac::Layers::L12) {
        const int b = highestBits(stats[i]);
        const long bound = b == 0 ? 0 : (1L << (b - 1));
        if (err > bound) {
          if (result.l12BoundViolations == 0) result.l12FirstViolation = i;
          ++result.l12BoundViolations;
          notes.add("L12 error above 2^(b-1)", where(set, i) + ": error " + std::to_string(err) +
                                                   ", largest b " + std::to_string(b));
        }
      }
    }
    (layers == hfpac::Layers::L1 ? result.maxErrL1 : result.maxErrL12) = worst;
    checkPoints(set, streams, layers, decoded.data(), result, notes);
  }

  notes.appendTo(result.notes);
  return true;
}

}  // namespace

InputResult benchCodecInput(const std::string& path, const CodecBenchOptions& options,
                            const LogFn& log) {
  InputResult result;
  result.input = path;
  result.patchSide = options.patch;
  try {
    Stopwatch total;
    say(log, "read");
    {
      Stopwatch watch;
      std::string error;
      if (!demio::readDem(path, result.dem, error, options.read)) {
        result.error = error;
        return result;
      }
      result.readSeconds = watch.seconds();
    }
    const demio::Dem& dem = result.dem;
    PatchSet set = cutPatches(dem.samples.data(), dem.width, dem.height, options.patch, dem.type);
    result.dem.samples.clear();
    result.dem.samples.shrink_to_fit();
    result.patches = set.rects.size();
    result.points = set.points();

    std::vector<uint16_t> decoded;  // before `rounds`: its decodes write here
    DecodeRounds rounds;
    std::string error;
    if (!runHfpac(set, options, result.dem, decoded, rounds, result.hfpac, error, log)) {
      result.error = error;
      return result;
    }
    say(log, "zstd");
    result.zstd = benchZstd(set, options.zstdLevel, decoded, rounds);
    say(log, "lerc");
    result.lerc = benchLerc(set, decoded, rounds);
    say(log, "hfpac+rbuc");
    result.rbuc = benchRbuc(set, encodeOptionsFor(options, result.dem), rounds, decoded);
    say(log, "hfpac+ans");
    result.ans = benchAns(set, encodeOptionsFor(options, result.dem), result.hfpac.patchBytes, rounds, decoded,
                          result.autoBytes);
    // Every codec's single-thread decode, `repeat` rounds, interleaved (decode_rounds.h).
    say(log, "decode rounds");
    rounds.run(options.repeat);
    if (result.hfpac.decodeError.empty()) result.hfpac.decodeSeconds = rounds.best(result.hfpac.decodeRound);
    for (AnchorResult* a : {&result.zstd, &result.lerc, &result.rbuc, &result.ans})
      if (a->ok) a->decodeSeconds = rounds.best(a->decodeRound);
    if (options.cuda) {
      say(log, "gpu");
      const double cpuEncodePps =
          result.hfpac.encodeSeconds > 0 ? double(result.points) / result.hfpac.encodeSeconds : 0.0;
      result.gpu = runGpu(set, options, result.dem, cpuEncodePps);
    }
    result.ok = true;
    result.totalSeconds = total.seconds();
  } catch (const std::bad_alloc&) {
    result.error = "out of memory";
  } catch (const std::exception& e) {
    result.error = std::string("unexpected exception: ") + e.what();
  }
  return result;
}

}  // namespace hfbench
