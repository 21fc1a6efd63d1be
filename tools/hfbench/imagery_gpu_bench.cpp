// imagery_gpu_bench.cpp - the GPU columns of `hfbench imagery` (imagery_gpu_bench.h).
#include "imagery_gpu_bench.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>

#include "gpu/cuda_util.h"
#include "gpu/imagery/bc1_encoder.h"
#include "gpu/imagery/jpeg_decoder.h"
#include "gpu/imagery/jpeg_encoder.h"
#include "timer.h"

namespace hfbench {

namespace {

constexpr int kT = himg::kTileSize;
constexpr size_t kTileBytes = size_t(kT) * kT * 4;

void say(const ImageryLogFn& log, const std::string& message) {
  if (log) log(message);
}

// The options' repeat rule (imagery_bench.h, "Timing") on seconds measured by `measure`.
template <class F>
double repeatBest(const ImageryBenchOptions& options, F&& measure) {
  double best = std::numeric_limits<double>::infinity(), total = 0;
  int runs = 0;
  do {
    const double s = measure();
    best = std::min(best, s);
    total += s;
    ++runs;
  } while (runs < std::max(1, options.maxRuns) && total < options.minSeconds);
  return best;
}

// Device time of the work f() enqueues on `stream` (CUDA events), best run.
template <class F>
double deviceSeconds(const ImageryBenchOptions& options, cudaStream_t stream, F&& f) {
  hfgpu::Event start, stop;
  return repeatBest(options, [&] {
    start.record(stream);
    f();
    stop.record(stream);
    stop.synchronize();
    return double(stop.elapsedMsSince(start)) / 1e3;
  });
}

// Wall time of f() followed by waiting for `stream`, best run.
template <class F>
double wallSeconds(const ImageryBenchOptions& options, cudaStream_t stream, F&& f) {
  return repeatBest(options, [&] {
    Stopwatch watch;
    f();
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return watch.seconds();
  });
}

double perSecond(double count, double seconds) {
  return seconds > 0 && std::isfinite(seconds) ? count / seconds : 0.0;
}

// ---- nvJPEG, loaded at run time ----
// The few entry points used, declared from NVIDIA's nvJPEG documentation (the header is not
// installed on the build machine; the device machine's CUDA toolkit has the library).
struct NvjpegImage {
  unsigned char* channel[4];
  size_t pitch[4];
};
using NvjpegHandle = void*;
using NvjpegState = void*;
constexpr int kNvjpegBackendDefault = 0, kNvjpegBackendHardware = 3, kNvjpegOutputRgbi = 5;

class Nvjpeg {
 public:
  Nvjpeg() {
    for (const char* name : {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"})
      if ((lib_ = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (!lib_) return;
    createEx_ = reinterpret_cast<decltype(createEx_)>(dlsym(lib_, "nvjpegCreateEx"));
    destroy_ = reinterpret_cast<decltype(destroy_)>(dlsym(lib_, "nvjpegDestroy"));
    stateCreate_ = reinterpret_cast<decltype(stateCreate_)>(dlsym(lib_, "nvjpegJpegStateCreate"));
    stateDestroy_ = reinterpret_cast<decltype(stateDestroy_)>(dlsym(lib_, "nvjpegJpegStateDestroy"));
    batchedInit_ = reinterpret_cast<decltype(batchedInit_)>(dlsym(lib_, "nvjpegDecodeBatchedInitialize"));
    batched_ = reinterpret_cast<decltype(batched_)>(dlsym(lib_, "nvjpegDecodeBatched"));
    if (!createEx_ || !destroy_ || !stateCreate_ || !stateDestroy_ || !batchedInit_ || !batched_) close();
  }
  ~Nvjpeg() {
    release();
    close();
  }
  Nvjpeg(const Nvjpeg&) = delete;
  Nvjpeg& operator=(const Nvjpeg&) = delete;
  bool loaded() const { return lib_ != nullptr; }

  // A handle + state for batches of `batch` images on `backend`; false when it cannot.
  bool open(int backend, int batch) {
    release();
    if (createEx_(backend, nullptr, nullptr, 0, &handle_) != 0) {
      handle_ = nullptr;
      return false;
    }
    if (stateCreate_(handle_, &state_) != 0 || batchedInit_(handle_, state_, batch, 1, kNvjpegOutputRgbi) != 0) {
      release();
      return false;
    }
    return true;
  }
  bool decode(const unsigned char* const* data, const size_t* lengths, NvjpegImage* out, cudaStream_t stream) {
    return batched_(handle_, state_, data, lengths, out, stream) == 0;
  }

 private:
  void release() {
    if (state_) stateDestroy_(state_);
    if (handle_) destroy_(handle_);
    state_ = handle_ = nullptr;
  }
  void close() {
    if (lib_) dlclose(lib_);
    lib_ = nullptr;
  }
  void* lib_ = nullptr;
  NvjpegHandle handle_ = nullptr;
  NvjpegState state_ = nullptr;
  int (*createEx_)(int, void*, void*, unsigned, NvjpegHandle*) = nullptr;
  int (*destroy_)(NvjpegHandle) = nullptr;
  int (*stateCreate_)(NvjpegHandle, NvjpegState*) = nullptr;
  int (*stateDestroy_)(NvjpegState) = nullptr;
  int (*batchedInit_)(NvjpegHandle, NvjpegState, int, int, int) = nullptr;
  int (*batched_)(NvjpegHandle, NvjpegState, const unsigned char* const*, const size_t*, NvjpegImage*, cudaStream_t) =
      nullptr;
};

// ---- the parts ----

void benchBc1Gpu(const RgbaImage& image, const ImageryBenchOptions& options, ImageryResult& r, cudaStream_t stream,
                 const ImageryLogFn& log) {
  // Throughput: the image (cut to multiples of 4) repeated downwards to >= 2^26 texels.
  const int w = image.width / 4 * 4, h = image.height / 4 * 4;
  const uint64_t one = uint64_t(w) * uint64_t(h);
  const uint64_t copies = std::max<uint64_t>(1, ((uint64_t(1) << 26) + one - 1) / one);
  const int tall = int(uint64_t(h) * copies);
  std::vector<uint8_t> host(size_t(one) * copies * 4);
  for (uint64_t c = 0; c < copies; ++c)
    for (int y = 0; y < h; ++y)
      std::memcpy(host.data() + (size_t(c) * size_t(h) + size_t(y)) * size_t(w) * 4,
                  image.rgba.data() + size_t(y) * size_t(image.width) * 4, size_t(w) * 4);
  hfgpu::DeviceBuffer<uint8_t> rgba(host.size()), blocks(host.size() / 8);
  CUDA_CHECK(cudaMemcpyAsync(rgba.get(), host.data(), host.size(), cudaMemcpyHostToDevice, stream));

  // The bc1 window of the CPU figures, for PSNR and identity.
  const Bc1Figures& cpu = r.bc1;
  const int ww = cpu.windowWidth, wh = cpu.windowHeight;
  const size_t wtexels = size_t(ww) * size_t(wh);
  std::vector<uint8_t> window(wtexels * 4);
  for (int j = 0; j < wh; ++j)
    std::memcpy(window.data() + size_t(j) * size_t(ww) * 4,
                image.rgba.data() + (size_t(cpu.windowY + j) * size_t(image.width) + size_t(cpu.windowX)) * 4,
                size_t(ww) * 4);
  hfgpu::DeviceBuffer<uint8_t> dwindow(window.size()), dwblocks(wtexels / 2);
  CUDA_CHECK(cudaMemcpyAsync(dwindow.get(), window.data(), window.size(), cudaMemcpyHostToDevice, stream));

  auto run = [&](himg::Bc1Mode mode, GpuBc1Figure& f) {
    say(log, std::string("gpu bc1 ") + himg::bc1ModeName(mode));
    const double s = deviceSeconds(options, stream, [&] { hfgpu::encodeBc1Async(rgba.get(), w, tall, mode, blocks.get(), stream); });
    f.texels = one * copies;
    f.gtexelsS = perSecond(double(f.texels), s) / 1e9;
    hfgpu::encodeBc1Async(dwindow.get(), ww, wh, mode, dwblocks.get(), stream);
    std::vector<uint8_t> gpu(wtexels / 2), ref(wtexels / 2), decoded(wtexels * 4);
    CUDA_CHECK(cudaMemcpyAsync(gpu.data(), dwblocks.get(), gpu.size(), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    himg::encodeBc1(window.data(), ww, wh, mode, ref.data());
    f.identicalToCpu = gpu == ref;
    himg::decodeBc1(gpu.data(), ww, wh, decoded.data());
    f.psnr = himg::psnrRgb(window.data(), decoded.data(), wtexels, true);
  };
  run(himg::Bc1Mode::Fast, r.gpu.bc1Fast);
  run(himg::Bc1Mode::Quality, r.gpu.bc1Quality);
}

void benchJpegDecodeGpu(const ImageryBenchOptions& options, const std::vector<std::vector<uint8_t>>& streams,
                        const std::vector<uint8_t>& tables, size_t batch, GpuImageryFigures& g, cudaStream_t stream,
                        const ImageryLogFn& log) {
  say(log, "gpu jpeg decode");
  const size_t count = streams.size();
  std::vector<hfgpu::JpegTileInput> inputs(batch);
  for (size_t i = 0; i < batch; ++i) inputs[i] = {streams[i % count].data(), streams[i % count].size()};
  hfgpu::GpuJpegDecoder decoder;
  std::string error;
  if (!decoder.setTables(tables.data(), tables.size(), error)) throw std::runtime_error("GpuJpegDecoder::setTables: " + error);
  hfgpu::DeviceBuffer<uint8_t> out(batch * kTileBytes);
  const double texels = double(batch) * kT * kT;
  const double end_to_end = wallSeconds(options, stream, [&] {
    decoder.prepare(inputs.data(), batch, kT);
    decoder.uploadAsync(stream);
    decoder.decodeAsync(out.get(), stream);
  });
  g.jpegDecodeEndToEndMpxS = perSecond(texels, end_to_end) / 1e6;
  const double device = deviceSeconds(options, stream, [&] { decoder.decodeAsync(out.get(), stream); });
  g.jpegDecodeMpxS = perSecond(texels, device) / 1e6;
  decoder.fetchStatusesAsync(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  for (const std::string& e : decoder.errors()) g.jpegDecodeFailed += e.empty() ? 0 : 1;
  // Exactness: the image's own tiles (the first `count` of the batch) against libjpeg-turbo.
  std::vector<uint8_t> gpu(count * kTileBytes), ref(kTileBytes);
  CUDA_CHECK(cudaMemcpy(gpu.data(), out.get(), gpu.size(), cudaMemcpyDeviceToHost));
  himg::JpegTileDecoder cpu;
  if (!cpu.setTables(tables.data(), tables.size(), error)) throw std::runtime_error("setTables: " + error);
  int max_diff = 0;
  for (size_t t = 0; t < count; ++t) {
    if (!cpu.decode(streams[t].data(), streams[t].size(), kT, ref.data(), error))
      throw std::runtime_error("JpegTileDecoder: " + error);
    const uint8_t* a = gpu.data() + t * kTileBytes;
    for (size_t i = 0; i < kTileBytes; ++i) max_diff = std::max(max_diff, std::abs(int(a[i]) - int(ref[i])));
  }
  g.jpegDecodeMaxDiff = max_diff;
}

void benchJpegEncodeGpu(const ImageryBenchOptions& options, const std::vector<uint8_t>& tiles,
                        const std::vector<std::vector<uint8_t>>& streams, const std::vector<uint8_t>& tables,
                        size_t batch, GpuImageryFigures& g, cudaStream_t stream, const ImageryLogFn& log) {
  say(log, "gpu jpeg encode");
  const size_t count = streams.size();
  std::vector<uint8_t> host(batch * kTileBytes);
  for (size_t i = 0; i < batch; ++i)
    std::memcpy(host.data() + i * kTileBytes, tiles.data() + (i % count) * kTileBytes, kTileBytes);
  hfgpu::DeviceBuffer<uint8_t> rgba(host.size());
  CUDA_CHECK(cudaMemcpyAsync(rgba.get(), host.data(), host.size(), cudaMemcpyHostToDevice, stream));
  hfgpu::GpuJpegEncoder encoder(options.quality);
  const double texels = double(batch) * kT * kT;
  const double device = deviceSeconds(options, stream, [&] { encoder.encodeAsync(rgba.get(), batch, kT, stream); });
  g.jpegEncodeMpxS = perSecond(texels, device) / 1e6;
  std::vector<std::vector<uint8_t>> out;
  const double end_to_end = wallSeconds(options, stream, [&] { encoder.encode(host.data(), batch, kT, out, stream); });
  g.jpegEncodeEndToEndMpxS = perSecond(texels, end_to_end) / 1e6;
  // The image's own tiles against encodeJpegTile: identity, size, and PSNR of both decodes.
  himg::JpegTileDecoder cpu;
  std::string error;
  if (!cpu.setTables(tables.data(), tables.size(), error)) throw std::runtime_error("setTables: " + error);
  uint64_t gpu_bytes = 0, cpu_bytes = 0;
  double se_gpu = 0, se_cpu = 0;
  std::vector<uint8_t> decoded(kTileBytes);
  auto squaredError = [&](const std::vector<uint8_t>& s, const uint8_t* src) {
    if (!cpu.decode(s.data(), s.size(), kT, decoded.data(), error))
      throw std::runtime_error("a GPU-encoded tile does not decode with libjpeg-turbo: " + error);
    double se = 0;
    for (size_t i = 0; i < kTileBytes; i += 4)
      for (size_t k = 0; k < 3; ++k) {
        const double d = double(decoded[i + k]) - double(src[i + k]);
        se += d * d;
      }
    return se;
  };
  for (size_t t = 0; t < count && t < out.size(); ++t) {
    g.jpegEncodeIdenticalTiles += out[t] == streams[t] ? 1 : 0;
    gpu_bytes += out[t].size();
    cpu_bytes += streams[t].size();
    se_gpu += squaredError(out[t], tiles.data() + t * kTileBytes);
    se_cpu += squaredError(streams[t], tiles.data() + t * kTileBytes);
  }
  g.jpegEncodeSizeRatio = cpu_bytes ? double(gpu_bytes) / double(cpu_bytes) : 0.0;
  // Equal squared errors give 0 dB; both PSNRs over the same texels, so the difference is
  // 10 log10(se_cpu / se_gpu).
  g.jpegEncodePsnrDelta = se_gpu > 0 && se_cpu > 0 ? 10.0 * std::log10(se_cpu / se_gpu) : 0.0;
}

void benchNvjpeg(const ImageryBenchOptions& options, const std::vector<std::vector<uint8_t>>& streams,
                 const std::vector<uint8_t>& tables, size_t batch, GpuImageryFigures& g, cudaStream_t stream,
                 const ImageryLogFn& log) {
  Nvjpeg nv;
  if (!nv.loaded()) {
    g.note += (g.note.empty() ? "" : "; ") + std::string("nvJPEG not found (libnvjpeg.so.13 did not load)");
    return;
  }
  say(log, "nvjpeg decode");
  const size_t count = streams.size();
  std::vector<std::vector<uint8_t>> complete(count);
  std::string error;
  for (size_t t = 0; t < count; ++t)
    if (!himg::completeJpegStream(tables.data(), tables.size(), streams[t].data(), streams[t].size(), complete[t], error))
      throw std::runtime_error("completeJpegStream: " + error);
  std::vector<const unsigned char*> data(batch);
  std::vector<size_t> lengths(batch);
  for (size_t i = 0; i < batch; ++i) {
    data[i] = complete[i % count].data();
    lengths[i] = complete[i % count].size();
  }
  hfgpu::DeviceBuffer<uint8_t> out(batch * size_t(kT) * kT * 3);
  std::vector<NvjpegImage> images(batch);
  for (size_t i = 0; i < batch; ++i) {
    images[i] = NvjpegImage{};
    images[i].channel[0] = out.get() + i * size_t(kT) * kT * 3;
    images[i].pitch[0] = size_t(kT) * 3;
  }
  // The hardware decoder (the H100's NVJPG engines) when the library offers it for this batch,
  // else the default (CUDA) backend.
  for (const auto& [backend, name] : {std::pair<int, const char*>{kNvjpegBackendHardware, "hardware"},
                                      std::pair<int, const char*>{kNvjpegBackendDefault, "default"}}) {
    if (!nv.open(backend, int(batch))) continue;
    if (!nv.decode(data.data(), lengths.data(), images.data(), stream)) continue;  // warm-up / support check
    CUDA_CHECK(cudaStreamSynchronize(stream));
    bool ok = true;
    const double s = wallSeconds(options, stream, [&] { ok = nv.decode(data.data(), lengths.data(), images.data(), stream) && ok; });
    if (!ok) continue;
    g.nvjpegAvailable = true;
    g.nvjpegBackend = name;
    g.nvjpegDecodeMpxS = perSecond(double(batch) * kT * kT, s) / 1e6;
    return;
  }
  g.note += (g.note.empty() ? "" : "; ") + std::string("nvJPEG loaded but its batched decode failed on these tiles");
}

}  // namespace

void benchImageryGpu(const RgbaImage& image, const ImageryBenchOptions& options, const std::vector<uint8_t>& tiles,
                     const std::vector<std::vector<uint8_t>>& streams, const std::vector<uint8_t>& tables,
                     size_t batch, ImageryResult& r, const ImageryLogFn& log) {
  GpuImageryFigures& g = r.gpu;
  g.batchTiles = batch;
  if (hfgpu::cudaDeviceCountOrZero() == 0) {
    g.note = "no CUDA device";
    return;
  }
  try {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    g.device = prop.name;
    hfgpu::Stream stream;
    benchBc1Gpu(image, options, r, stream, log);
    benchJpegDecodeGpu(options, streams, tables, batch, g, stream, log);
    benchJpegEncodeGpu(options, tiles, streams, tables, batch, g, stream, log);
    benchNvjpeg(options, streams, tables, batch, g, stream, log);
    g.measured = true;
  } catch (const std::exception& e) {
    g.note += (g.note.empty() ? "" : "; ") + std::string(e.what());
  }
}

}  // namespace hfbench
