// encode.cpp - TileEncoder and the encoding options pack and transcode share (encode.h).
#include "encode.h"

#include <exception>

#include "codec/ans.h"

#ifdef HFPACK_CUDA
#include "gpu/encoder.h"
#endif

namespace hfpack {

int threadCount(int threads) {
  return threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
}

bool checkEncodeOptions(int segment, int bits, const std::string& device, int gpuBatch,
                        std::string& error) {
  if (segment != 0 && segment != 5 && segment != 9 && segment != 17 && segment != 33) {
    error = "--segment " + std::to_string(segment) + ": must be 5, 9, 17, 33 or 0 (try all)";
    return false;
  }
  if (bits < -1 || bits > 16) {
    error = "--bits " + std::to_string(bits) + ": must be auto or 0..16";
    return false;
  }
  if (device != "cpu" && device != "cuda") {
    error = "--device " + device + ": must be cpu or cuda";
    return false;
  }
  if (gpuBatch < 1) {
    error = "--gpu-batch must be at least 1";
    return false;
  }
  return true;
}

std::string codecOptionsText(hfa::Codec codec, int segment, int bits) {
  const std::string lanes = "lanes=auto";  // per tile, codec/ans.h (kAnsAutoLanes)
  if (codec == hfa::Codec::Raw) return "";
  if (codec == hfa::Codec::Hfan) return lanes;
  if (codec == hfa::Codec::HfpacRbuc) return "segment=" + std::to_string(segment) + " rbuc";
  const std::string hfpacText =
      "segment=" + std::to_string(segment) + " bits=" + (bits < 0 ? std::string("auto") : std::to_string(bits));
  return codec == hfa::Codec::Auto ? hfpacText + " " + lanes : hfpacText;
}

hfpac::EncodeOptions encodeOptions(hfa::Codec codec, int segment, int bits, bool hasNodata,
                                   uint16_t nodata) {
  hfpac::EncodeOptions eo;
  eo.segment = segment;
  eo.bits = bits;
  eo.hasNodata = hasNodata;
  eo.nodata = nodata;
  eo.rbuc = codec == hfa::Codec::HfpacRbuc;
  return eo;
}

struct TileEncoder::Gpu {
#ifdef HFPACK_CUDA
  hfgpu::BatchEncoder encoder;
#endif
};

TileEncoder::TileEncoder(hfa::Codec codec, const hfpac::EncodeOptions& options,
                         hfpac::SampleType type, int tileSize, int threads,
                         const std::string& device, std::function<void(const std::string&)> onNote)
    : codec_(codec), options_(options), type_(type), p_(tileSize), threads_(threadCount(threads)),
      onNote_(std::move(onNote)) {
  if (device != "cuda") return;
  if (codec == hfa::Codec::Raw) {
    fallBack("--device cuda: codec raw encodes nothing; packing on the CPU");
  } else if (codec == hfa::Codec::Hfan) {
    fallBack("--device cuda: the GPU encoder has no HFAN (codec hfan); encoding on the CPU instead");
  } else if (codec == hfa::Codec::HfpacRbuc) {
    fallBack("--device cuda: the GPU encoder has no 2DRBUC (codec hfpac+rbuc); encoding on the CPU instead");
  } else {
#ifdef HFPACK_CUDA
    try {
      gpu_ = std::make_unique<Gpu>();
    } catch (const std::exception& e) {
      std::string why = e.what();
      std::replace(why.begin(), why.end(), '\n', ' ');
      fallBack("--device cuda: no usable CUDA device (" + why + "); encoding on the CPU instead");
    }
#else
    fallBack("--device cuda: this hfpack is built without the GPU codec (HF_CUDA=OFF); encoding on the CPU instead");
#endif
  }
}

TileEncoder::~TileEncoder() = default;

bool TileEncoder::onGpu() const { return gpu_ != nullptr; }

void TileEncoder::fallBack(const std::string& why) {
  gpu_.reset();
  note_ = why;
  if (onNote_) onNote_(why);
}

hfpac::Status TileEncoder::encodeAns(const uint16_t* tile, std::vector<uint8_t>& out) const {
  hfpac::AnsOptions ao;
  ao.hasMask = options_.hasNodata;  // nodata kept: masked as HFPaC masks it
  ao.maskValue = options_.nodata;
  return hfpac::ansEncode(tile, size_t(p_), p_, p_, type_, out, ao);
}

void TileEncoder::keepSmaller(Batch& out, size_t i, std::vector<uint8_t>& ans) {
  if (ans.empty() || ans.size() >= out.payloads[i].size()) return;
  out.payloads[i].swap(ans);
  out.codecs[i] = hfa::Codec::Hfan;
  out.stats[i] = hfpac::EncodeStats();  // no layers
}

void TileEncoder::encodeOnCpu(const uint16_t* tile, Batch& out, size_t i) const {
  const size_t samples = size_t(p_) * size_t(p_);
  std::vector<uint8_t>& payload = out.payloads[i];
  if (codec_ == hfa::Codec::Raw) {
    payload.resize(samples * 2);
    for (size_t k = 0; k < samples; ++k) {
      payload[2 * k] = uint8_t(tile[k]);
      payload[2 * k + 1] = uint8_t(tile[k] >> 8);
    }
  } else if (codec_ == hfa::Codec::Hfan) {
    out.statuses[i] = encodeAns(tile, payload);
  } else {
    out.statuses[i] = hfpac::encode(tile, size_t(p_), p_, p_, type_, options_, payload, &out.stats[i]);
    if (codec_ == hfa::Codec::Auto && out.statuses[i] == hfpac::Status::Ok) {
      std::vector<uint8_t> ans;
      out.statuses[i] = encodeAns(tile, ans);
      keepSmaller(out, i, ans);
    }
  }
}

void TileEncoder::encode(const std::vector<const uint16_t*>& tiles,
                         const std::function<void(size_t)>& cpuWork, Batch& out) {
  const size_t n = tiles.size();
  out.payloads.assign(n, std::vector<uint8_t>());
  out.stats.assign(n, hfpac::EncodeStats());
  out.statuses.assign(n, hfpac::Status::Ok);
  // Auto's tiles start as hfpac and become hfan where that is smaller.
  out.codecs.assign(n, codec_ == hfa::Codec::Auto ? hfa::Codec::Hfpac : codec_);
  const bool on_gpu = gpu_ != nullptr;
  // Auto on the GPU: the HFAN streams, coded on the CPU threads while the GPU codes HFPaC.
  std::vector<std::vector<uint8_t>> ans(on_gpu && codec_ == hfa::Codec::Auto ? n : 0);
  std::vector<hfpac::Status> ansStatus(ans.size(), hfpac::Status::Ok);
#ifdef HFPACK_CUDA
  // GPU: one encodeHost call for the whole batch on a helper thread while the CPU threads do
  // cpuWork. A CUDA failure falls back to the CPU for this batch and every later one.
  std::thread gpu_thread;
  std::string gpu_error;
  hfpac::Status gpu_status = hfpac::Status::Ok;
  std::vector<hfpac::PatchIn> ins;
  if (on_gpu) {
    ins.resize(n);
    for (size_t i = 0; i < n; ++i) {
      ins[i].samples = tiles[i];
      ins[i].stride = size_t(p_);
      ins[i].width = ins[i].height = p_;
      ins[i].type = type_;
    }
    gpu_thread = std::thread([&] {
      try {
        gpu_status = gpu_->encoder.encodeHost(ins.data(), n, options_, nullptr, out.payloads);
      } catch (const std::exception& e) {
        gpu_error = e.what();
        std::replace(gpu_error.begin(), gpu_error.end(), '\n', ' ');
      }
    });
  }
#endif
  parallelFor(n, threads_, [&](size_t i) {
    if (cpuWork) cpuWork(i);
    if (!on_gpu) encodeOnCpu(tiles[i], out, i);
    else if (!ans.empty()) ansStatus[i] = encodeAns(tiles[i], ans[i]);
  });
#ifdef HFPACK_CUDA
  if (on_gpu) {
    gpu_thread.join();
    if (!gpu_error.empty() || gpu_status != hfpac::Status::Ok || out.payloads.size() != n) {
      const std::string why = gpu_error.empty() ? hfpac::statusMessage(gpu_status) : gpu_error;
      fallBack("--device cuda: the GPU encoder failed (" + why + "); encoding on the CPU instead");
      out.payloads.assign(n, std::vector<uint8_t>());
      parallelFor(n, threads_, [&](size_t i) { encodeOnCpu(tiles[i], out, i); });
    } else {
      gpuBatches_ += 1;
      for (size_t i = 0; i < n; ++i) {  // layer sizes for the summary (O(1) per stream)
        if (hfpac::readInfo(out.payloads[i].data(), out.payloads[i].size(), out.stats[i].info) != hfpac::Status::Ok)
          out.statuses[i] = hfpac::Status::InvalidArgument;
        if (!ans.empty()) {
          if (ansStatus[i] != hfpac::Status::Ok) out.statuses[i] = ansStatus[i];
          keepSmaller(out, i, ans[i]);
        }
      }
    }
  }
#endif
}

}  // namespace hfpack
