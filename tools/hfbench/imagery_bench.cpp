// imagery_bench.cpp - `hfbench imagery` (imagery_bench.h): the imagery codec against
// TurboJPEG and libsquish.
#include "imagery_bench.h"

#include <squish.h>
#include <turbojpeg.h>
#if __has_include(<jconfig.h>)
#include <jconfig.h>  // LIBJPEG_TURBO_VERSION_NUMBER (TurboJPEG 2.1 has no run-time query)
#endif
#if HF_BENCH_GDAL
#include <cpl_error.h>
#include <gdal.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#include "json.h"
#if HF_BENCH_IMAGERY_GPU
#include "imagery_gpu_bench.h"
#endif
#include "timer.h"

#if !HF_BENCH_GDAL
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#include <stb/stb_image.h>
#endif

namespace hfbench {

namespace {

void say(const ImageryLogFn& log, const std::string& message) {
  if (log) log(message);
}

// Best time of f() under the options' repeat rule (imagery_bench.h, "Timing"); f returns false
// on failure, and then so does this.
template <class F>
bool timeBest(const ImageryBenchOptions& options, double& best, F&& f) {
  best = std::numeric_limits<double>::infinity();
  double total = 0;
  int runs = 0;
  do {
    Stopwatch watch;
    if (!f()) return false;
    const double s = watch.seconds();
    best = std::min(best, s);
    total += s;
    ++runs;
  } while (runs < std::max(1, options.maxRuns) && total < options.minSeconds);
  return true;
}

// Runs f(0) .. f(n - 1), f(0) on the calling thread. f must not throw.
template <class F>
void parallelFor(int n, F&& f) {
  std::vector<std::thread> threads;
  threads.reserve(size_t(std::max(0, n - 1)));
  int started = 1;
  try {
    for (; started < n; ++started) threads.emplace_back([&f, i = started] { f(i); });
  } catch (const std::exception&) {  // no more threads: the rest run here
    for (int i = started; i < n; ++i) f(i);
  }
  if (n > 0) f(0);
  for (std::thread& t : threads) t.join();
}

double mega(uint64_t texels, double seconds) { return rate(double(texels), seconds) / 1e6; }

// Sum of squared RGB differences -> PSNR in dB (as himg::psnrRgb).
double psnrOf(double se, uint64_t texels) {
  if (texels == 0 || se == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(255.0 * 255.0 / (se / (3.0 * double(texels))));
}

class TjHandle {
 public:
  explicit TjHandle(tjhandle h) : h_(h) {}
  ~TjHandle() {
    if (h_) tjDestroy(h_);
  }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
  tjhandle get() const { return h_; }
  std::string error() const { return h_ ? tjGetErrorStr2(h_) : "cannot create a TurboJPEG handle"; }

 private:
  tjhandle h_;
};

// One JPEG of rows [y0, y0 + rows) of the image; its own handles and buffers, so that strips
// code on separate threads.
struct JpegJob {
  int y0 = 0, rows = 0;
  TjHandle enc{tjInitCompress()}, dec{tjInitDecompress()};
  std::vector<unsigned char> buffer;  // tjBufSize: tjCompress2 never reallocates
  unsigned long size = 0;
  bool ok = true;
  std::string error;

  JpegJob(int first_row, int row_count, int width)
      : y0(first_row), rows(row_count), buffer(tjBufSize(width, row_count, TJSAMP_420)) {}

  bool encode(const RgbaImage& image, int quality) {
    unsigned char* dst = buffer.data();
    size = static_cast<unsigned long>(buffer.size());
    const unsigned char* src = image.rgba.data() + size_t(y0) * size_t(image.width) * 4;
    if (tjCompress2(enc.get(), src, image.width, image.width * 4, rows, TJPF_RGBA, &dst, &size,
                    TJSAMP_420, quality, TJFLAG_NOREALLOC) != 0) {
      ok = false;
      error = "tjCompress2: " + enc.error();
    }
    return ok;
  }

  bool decode(int width, uint8_t* rgba) {
    uint8_t* dst = rgba + size_t(y0) * size_t(width) * 4;
    if (tjDecompress2(dec.get(), buffer.data(), size, dst, width, width * 4, rows, TJPF_RGBA, 0) != 0) {
      ok = false;
      error = "tjDecompress2: " + dec.error();
    }
    return ok;
  }
};

bool benchJpeg(const RgbaImage& image, const ImageryBenchOptions& options, int threads,
               JpegFigures& f, std::string& error) {
  const int w = image.width, h = image.height;
  const uint64_t texels = uint64_t(w) * uint64_t(h);
  f.quality = options.quality;
  f.threads = threads;

  // One thread: the whole image.
  JpegJob whole(0, h, w);
  if (!whole.enc.get() || !whole.dec.get()) {
    error = "TurboJPEG: " + whole.enc.error();
    return false;
  }
  double encode_s = 0, decode_s = 0;
  if (!timeBest(options, encode_s, [&] { return whole.encode(image, options.quality); })) {
    error = whole.error;
    return false;
  }
  std::vector<uint8_t> decoded(image.rgba.size());
  if (!timeBest(options, decode_s, [&] { return whole.decode(w, decoded.data()); })) {
    error = whole.error;
    return false;
  }
  f.bytes = whole.size;
  f.bitsPerTexel = double(f.bytes) * 8.0 / double(texels);
  f.encodeMpxS = mega(texels, encode_s);
  f.decodeMpxS = mega(texels, decode_s);
  f.psnr = himg::psnrRgb(image.rgba.data(), decoded.data(), size_t(texels), false);

  // All cores: strips of whole MCU rows, one JPEG each.
  const int mcu_rows = (h + 15) / 16;
  const int strips = std::max(1, std::min(threads, mcu_rows));
  std::vector<std::unique_ptr<JpegJob>> jobs;
  for (int s = 0; s < strips; ++s) {
    const int y0 = std::min(h, s * mcu_rows / strips * 16);
    const int y1 = std::min(h, (s + 1) * mcu_rows / strips * 16);
    jobs.push_back(std::make_unique<JpegJob>(y0, y1 - y0, w));
    if (!jobs.back()->enc.get() || !jobs.back()->dec.get()) {
      error = "TurboJPEG: cannot create a handle";
      return false;
    }
  }
  auto all_ok = [&] {
    for (const auto& job : jobs)
      if (!job->ok) {
        error = job->error;
        return false;
      }
    return true;
  };
  if (!timeBest(options, encode_s, [&] {
        parallelFor(strips, [&](int s) { jobs[size_t(s)]->encode(image, options.quality); });
        return all_ok();
      }))
    return false;
  if (!timeBest(options, decode_s, [&] {
        parallelFor(strips, [&](int s) { jobs[size_t(s)]->decode(w, decoded.data()); });
        return all_ok();
      }))
    return false;
  f.strips = strips;
  f.stripBytes = 0;
  for (const auto& job : jobs) f.stripBytes += job->size;
  f.encodeMpxSAllCores = mega(texels, encode_s);
  f.decodeMpxSAllCores = mega(texels, decode_s);
  return true;
}

bool benchTiling(const RgbaImage& image, const ImageryBenchOptions& options, uint64_t whole_bytes,
                 const std::vector<uint8_t>& tiles, const std::vector<uint8_t>& tables,
                 std::vector<std::vector<uint8_t>>& streams, TilingFigures& f, std::string& error) {
  constexpr int kT = himg::kTileSize, kB = himg::kTileBorder, kC = himg::kTileContent;
  const int w = image.width, h = image.height;
  f.tiles = uint64_t(f.tilesX) * uint64_t(f.tilesY);
  f.tablesBytes = tables.size();

  streams.assign(size_t(f.tiles), {});
  std::vector<uint8_t> tile(size_t(kT) * kT * 4);
  const size_t tile_bytes = tile.size();
  double encode_s = 0;
  for (int ty = 0; ty < f.tilesY; ++ty)
    for (int tx = 0; tx < f.tilesX; ++tx) {
      const size_t index = size_t(ty) * size_t(f.tilesX) + size_t(tx);
      std::memcpy(tile.data(), tiles.data() + index * tile_bytes, tile_bytes);
      std::vector<uint8_t>& out = streams[index];
      Stopwatch watch;
      if (!himg::encodeJpegTile(tile.data(), kT, options.quality, out, error)) {
        error = "encodeJpegTile: " + error;
        return false;
      }
      encode_s += watch.seconds();
      f.tileBytes += out.size();
    }
  f.tileBytesTotal = f.tileBytes + f.tablesBytes;
  f.unpaddedImageBytes = whole_bytes;
  {
    RgbaImage level;
    level.width = f.tilesX * kC;
    level.height = f.tilesY * kC;
    level.rgba.resize(size_t(level.width) * size_t(level.height) * 4);
    for (int y = 0; y < level.height; ++y)
      for (int x = 0; x < level.width; ++x)
        std::memcpy(&level.rgba[(size_t(y) * size_t(level.width) + size_t(x)) * 4],
                    &image.rgba[(size_t(std::min(y, h - 1)) * size_t(w) + size_t(std::min(x, w - 1))) * 4], 4);
    JpegJob job(0, level.height, level.width);
    if (!job.encode(level, options.quality)) {
      error = job.error;
      return false;
    }
    f.wholeImageBytes = job.size;
  }
  f.ratio = f.wholeImageBytes ? double(f.tileBytesTotal) / double(f.wholeImageBytes) : 0.0;


  himg::JpegTileDecoder decoder;
  if (!decoder.setTables(tables.data(), tables.size(), error)) {
    error = "JpegTileDecoder::setTables: " + error;
    return false;
  }
  double decode_s = 0, se = 0;
  uint64_t compared = 0;
  for (int ty = 0; ty < f.tilesY; ++ty)
    for (int tx = 0; tx < f.tilesX; ++tx) {
      const std::vector<uint8_t>& in = streams[size_t(ty) * size_t(f.tilesX) + size_t(tx)];
      Stopwatch watch;
      if (!decoder.decode(in.data(), in.size(), kT, tile.data(), error)) {
        error = "JpegTileDecoder::decode: " + error;
        return false;
      }
      decode_s += watch.seconds();
      // The content texels that lie in the image.
      const int x0 = tx * kC, y0 = ty * kC;
      const int cw = std::min(kC, w - x0), ch = std::min(kC, h - y0);
      for (int j = 0; j < ch; ++j) {
        const uint8_t* a = image.rgba.data() + (size_t(y0 + j) * size_t(w) + size_t(x0)) * 4;
        const uint8_t* b = tile.data() + (size_t(kB + j) * kT + kB) * 4;
        for (int i = 0; i < cw; ++i)
          for (int k = 0; k < 3; ++k) {
            const double d = double(a[4 * i + k]) - double(b[4 * i + k]);
            se += d * d;
          }
      }
      compared += uint64_t(cw) * uint64_t(ch);
    }
  f.psnr = psnrOf(se, compared);
  const uint64_t stored = f.tiles * uint64_t(kT) * uint64_t(kT);
  f.encodeMtexelsS = mega(stored, encode_s);
  f.decodeMtexelsS = mega(stored, decode_s);
  return true;
}

// The tile batch of the throughput figures: tile i of the batch is tile i % count of the image.
size_t batchCount(const ImageryBenchOptions& options, size_t count) {
  return std::max(count, size_t(std::max(1, options.batchTiles)));
}

// cpu_all_cores: the tile batch decoded and encoded by `threads` threads.
bool benchCpuAllCores(const ImageryBenchOptions& options, int threads, const std::vector<uint8_t>& tiles,
                      const std::vector<std::vector<uint8_t>>& streams, const std::vector<uint8_t>& tables,
                      CpuAllCoresFigures& f, std::string& error) {
  constexpr int kT = himg::kTileSize;
  const size_t tile_bytes = size_t(kT) * kT * 4, count = streams.size();
  const size_t batch = batchCount(options, count);
  f.threads = threads;
  f.tiles = batch;
  std::mutex mutex;
  bool ok = true;
  auto fail = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (ok) error = message;
    ok = false;
  };
  // Thread i takes tiles [i * batch / threads, (i + 1) * batch / threads).
  auto run = [&](bool decode) {
    parallelFor(threads, [&](int i) {
      try {
        const size_t first = size_t(i) * batch / size_t(threads), last = size_t(i + 1) * batch / size_t(threads);
        std::vector<uint8_t> rgba(tile_bytes), out;
        himg::JpegTileDecoder decoder;
        std::string e;
        if (decode && !decoder.setTables(tables.data(), tables.size(), e)) return fail("setTables: " + e);
        for (size_t t = first; t < last; ++t) {
          const size_t k = t % count;
          const bool done = decode ? decoder.decode(streams[k].data(), streams[k].size(), kT, rgba.data(), e)
                                   : himg::encodeJpegTile(tiles.data() + k * tile_bytes, kT, options.quality, out, e);
          if (!done) return fail(e);
        }
      } catch (const std::exception& ex) {
        fail(ex.what());
      }
    });
    return ok;
  };
  double decode_s = 0, encode_s = 0;
  if (!timeBest(options, decode_s, [&] { return run(true); }) ||
      !timeBest(options, encode_s, [&] { return run(false); }))
    return false;
  const uint64_t texels = uint64_t(batch) * uint64_t(kT) * uint64_t(kT);
  f.jpegDecodeMpxS = mega(texels, decode_s);
  f.jpegEncodeMpxS = mega(texels, encode_s);
  return true;
}

// libsquish block by block on this thread (Debian's CompressImage runs OpenMP threads).
void squishEncode(const uint8_t* rgba, int width, int height, int flags, uint8_t* out) {
  float uniform[3] = {1.0f, 1.0f, 1.0f};
  uint8_t block[64];
  const int bw = width / 4, bh = height / 4;
  for (int by = 0; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) {
      for (int y = 0; y < 4; ++y)
        std::memcpy(block + 16 * y, rgba + (size_t(by * 4 + y) * size_t(width) + size_t(bx * 4)) * 4, 16);
      squish::CompressMasked(block, 0xffff, out + (size_t(by) * size_t(bw) + size_t(bx)) * himg::kBc1BlockBytes,
                             flags, uniform);
    }
}

void benchBc1(const RgbaImage& image, const ImageryBenchOptions& options, Bc1Figures& f,
              const ImageryLogFn& log) {
  const int side = options.bc1Window;
  f.windowWidth = (side > 0 ? std::min(image.width, side) : image.width) / 4 * 4;
  f.windowHeight = (side > 0 ? std::min(image.height, side) : image.height) / 4 * 4;
  f.windowX = (image.width - f.windowWidth) / 2;
  f.windowY = (image.height - f.windowHeight) / 2;
  const int ww = f.windowWidth, wh = f.windowHeight;
  const size_t texels = size_t(ww) * size_t(wh);

  std::vector<uint8_t> src(texels * 4);
  for (int j = 0; j < wh; ++j)
    std::memcpy(src.data() + size_t(j) * size_t(ww) * 4,
                image.rgba.data() + (size_t(f.windowY + j) * size_t(image.width) + size_t(f.windowX)) * 4,
                size_t(ww) * 4);
  std::vector<uint8_t> blocks(texels / 2), decoded(texels * 4), decoded_ours(texels * 4);

  auto finish = [&](Bc1Figure& figure, double seconds) {
    figure.seconds = seconds;
    figure.mtexelsS = mega(texels, seconds);
    figure.psnr = himg::psnrRgb(src.data(), decoded.data(), texels, true);
  };
  auto ours = [&](himg::Bc1Mode mode, Bc1Figure& figure) {
    say(log, std::string("bc1 ") + himg::bc1ModeName(mode));
    double s = 0;
    timeBest(options, s, [&] {
      himg::encodeBc1(src.data(), ww, wh, mode, blocks.data());
      return true;
    });
    himg::decodeBc1(blocks.data(), ww, wh, decoded.data());
    finish(figure, s);
  };
  f.squishDecodersAgree = true;
  auto theirs = [&](const char* name, int fit, Bc1Figure& figure) {
    say(log, std::string("bc1 squish ") + name);
    const int flags = squish::kDxt1 | fit;
    double s = 0;
    timeBest(options, s, [&] {
      squishEncode(src.data(), ww, wh, flags, blocks.data());
      return true;
    });
    squish::DecompressImage(decoded.data(), ww, wh, blocks.data(), squish::kDxt1);
    himg::decodeBc1(blocks.data(), ww, wh, decoded_ours.data());
    if (decoded != decoded_ours) f.squishDecodersAgree = false;
    finish(figure, s);
  };
  ours(himg::Bc1Mode::Fast, f.fast);
  ours(himg::Bc1Mode::Quality, f.quality);
  theirs("range", squish::kColourRangeFit, f.squishRange);
  theirs("cluster", squish::kColourClusterFit, f.squishCluster);
  theirs("iterative", squish::kColourIterativeClusterFit, f.squishIterative);
}

ImageryResult benchImpl(const std::string& name, const RgbaImage& image, const ImageryBenchOptions& options,
                        const ImageryLogFn& log) {
  ImageryResult r;
  r.input = name;
  r.width = image.width;
  r.height = image.height;
  r.bands = image.bands;
  r.texels = uint64_t(std::max(0, image.width)) * uint64_t(std::max(0, image.height));
  if (image.width < 4 || image.height < 4 || image.rgba.size() != r.texels * 4) {
    r.error = name + ": the image is " + std::to_string(image.width) + "x" + std::to_string(image.height) +
              (image.rgba.size() != r.texels * 4 ? " with a wrong buffer size" : "") +
              "; at least 4x4 texels needed";
    return r;
  }
  if (options.quality < 1 || options.quality > 100) {
    r.error = name + ": JPEG quality " + std::to_string(options.quality) + " is not in 1..100";
    return r;
  }
  const int threads =
      options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  std::string error;
  say(log, "jpeg");
  if (!benchJpeg(image, options, threads, r.jpeg, error)) {
    r.error = name + ": " + error;
    return r;
  }
  say(log, "tiling");
  const std::vector<uint8_t> tiles = cutTiles(image, r.tiling.tilesX, r.tiling.tilesY);
  const std::vector<uint8_t> tables = himg::makeJpegTables(options.quality);
  std::vector<std::vector<uint8_t>> streams;
  if (!benchTiling(image, options, r.jpeg.bytes, tiles, tables, streams, r.tiling, error)) {
    r.error = name + ": " + error;
    return r;
  }
  say(log, "tiles on all cores");
  if (!benchCpuAllCores(options, threads, tiles, streams, tables, r.cpuAllCores, error)) {
    r.error = name + ": tiles on all cores: " + error;
    return r;
  }
  benchBc1(image, options, r.bc1, log);
#if HF_BENCH_IMAGERY_GPU
  if (options.gpu) {
    say(log, "gpu");
    benchImageryGpu(image, options, tiles, streams, tables, batchCount(options, streams.size()), r, log);
  } else {
    r.gpu.note = "not asked for (--no-gpu)";
  }
#else
  r.gpu.note = "this hfbench was built without the GPU imagery codec (HF_CUDA=OFF)";
#endif
  r.ok = true;
  return r;
}

#if HF_BENCH_GDAL
std::string gdalMessage() {
  std::string s = CPLGetLastErrorMsg();
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return s.empty() ? s : ": " + s;
}
#endif

}  // namespace

std::vector<uint8_t> cutTiles(const RgbaImage& image, int& tilesX, int& tilesY) {
  constexpr int kT = himg::kTileSize, kB = himg::kTileBorder, kC = himg::kTileContent;
  const int w = image.width, h = image.height;
  tilesX = (w + kC - 1) / kC;
  tilesY = (h + kC - 1) / kC;
  const size_t tile_bytes = size_t(kT) * kT * 4;
  std::vector<uint8_t> tiles(size_t(tilesX) * size_t(tilesY) * tile_bytes);
  for (int ty = 0; ty < tilesY; ++ty)
    for (int tx = 0; tx < tilesX; ++tx) {
      uint8_t* tile = tiles.data() + (size_t(ty) * size_t(tilesX) + size_t(tx)) * tile_bytes;
      // Content plus border; texels outside the image repeat the nearest edge texel.
      for (int j = 0; j < kT; ++j) {
        const int sy = std::clamp(ty * kC - kB + j, 0, h - 1);
        const uint8_t* row = image.rgba.data() + size_t(sy) * size_t(w) * 4;
        uint8_t* dst = tile + size_t(j) * kT * 4;
        for (int i = 0; i < kT; ++i) {
          const int sx = std::clamp(tx * kC - kB + i, 0, w - 1);
          std::memcpy(dst + 4 * i, row + 4 * size_t(sx), 3);
          dst[4 * i + 3] = 255;
        }
      }
    }
  return tiles;
}

bool readImageryRgba(const std::string& path, RgbaImage& image, std::string& error) {
  image = RgbaImage();
#if HF_BENCH_GDAL
  static std::once_flag registered;
  std::call_once(registered, [] { GDALAllRegister(); });
  // Quiet: the failure becomes our one-line error.
  CPLPushErrorHandler(CPLQuietErrorHandler);
  CPLErrorReset();
  struct PopHandler {
    ~PopHandler() { CPLPopErrorHandler(); }
  } pop_handler;
  GDALDatasetH ds = GDALOpen(path.c_str(), GA_ReadOnly);
  if (!ds) {
    error = path + ": cannot open" + gdalMessage();
    return false;
  }
  struct Close {
    GDALDatasetH ds;
    ~Close() { GDALClose(ds); }
  } close{ds};
  const int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds), n = GDALGetRasterCount(ds);
  if (n != 1 && n != 3 && n != 4) {
    error = path + ": " + std::to_string(n) + " band" + (n == 1 ? "" : "s") +
            "; imagery needs 1 (grey), 3 (RGB) or 4 (RGBA) Byte bands";
    return false;
  }
  for (int b = 1; b <= n; ++b) {
    const GDALDataType type = GDALGetRasterDataType(GDALGetRasterBand(ds, b));
    if (type != GDT_Byte) {
      error = path + ": band " + std::to_string(b) + " is " + GDALGetDataTypeName(type) +
              ", not Byte; imagery needs 8-bit bands";
      return false;
    }
  }
  constexpr uint64_t kMaxTexels = uint64_t(1) << 28;  // 1 GiB of RGBA8
  if (w <= 0 || h <= 0 || uint64_t(w) * uint64_t(h) > kMaxTexels) {
    error = path + ": " + std::to_string(w) + "x" + std::to_string(h) +
            " texels; hfbench imagery takes up to 2^28 texels";
    return false;
  }
  image.width = w;
  image.height = h;
  image.bands = n;
  image.rgba.assign(size_t(w) * size_t(h) * 4, 255);
  int band_map[4] = {1, 2, 3, 4};
  if (GDALDatasetRasterIOEx(ds, GF_Read, 0, 0, w, h, image.rgba.data(), w, h, GDT_Byte, n, band_map, 4,
                            GSpacing(w) * 4, 1, nullptr) != CE_None) {
    error = path + ": cannot read" + gdalMessage();
    image = RgbaImage();
    return false;
  }
  if (n == 1)
    for (size_t i = 0; i < image.rgba.size(); i += 4) image.rgba[i + 1] = image.rgba[i + 2] = image.rgba[i];
  return true;
#else
  // Without GDAL (the GPU machine's build): PNG and JPEG through stb_image (Debian libstb-dev,
  // header-only), 1..4 channels as GDAL would give them (grey expands, alpha is kept).
  int w = 0, h = 0, channels = 0;
  stbi_uc* px = stbi_load(path.c_str(), &w, &h, &channels, 4);
  if (!px) {
    const char* why = stbi_failure_reason();
    error = path + ": cannot read (this hfbench has no GDAL: PNG or JPEG only" +
            (why ? std::string("; ") + why : std::string()) + ")";
    return false;
  }
  image.width = w;
  image.height = h;
  image.bands = channels;
  image.rgba.assign(px, px + size_t(w) * size_t(h) * 4);
  stbi_image_free(px);
  return true;
#endif
}

ImageryResult benchImageryRgba(const std::string& name, const RgbaImage& image,
                               const ImageryBenchOptions& options, const ImageryLogFn& log) {
  Stopwatch total;
  ImageryResult r;
  try {
    r = benchImpl(name, image, options, log);
  } catch (const std::bad_alloc&) {
    r = ImageryResult();
    r.input = name;
    r.error = name + ": out of memory";
  } catch (const std::exception& e) {
    r = ImageryResult();
    r.input = name;
    r.error = name + ": " + e.what();
  }
  r.totalSeconds = total.seconds();
  return r;
}

ImageryResult benchImageryInput(const std::string& path, const ImageryBenchOptions& options,
                                const ImageryLogFn& log) {
  Stopwatch total;
  ImageryResult r;
  try {
    say(log, "read");
    RgbaImage image;
    std::string error;
    Stopwatch read;
    if (!readImageryRgba(path, image, error)) {
      r.input = path;
      r.error = error;
      r.totalSeconds = total.seconds();
      return r;
    }
    const double read_s = read.seconds();
    r = benchImageryRgba(path, image, options, log);
    r.readSeconds = read_s;
  } catch (const std::bad_alloc&) {
    r = ImageryResult();
    r.input = path;
    r.error = path + ": out of memory";
  } catch (const std::exception& e) {
    r = ImageryResult();
    r.input = path;
    r.error = path + ": " + e.what();
  }
  r.totalSeconds = total.seconds();
  return r;
}

namespace {

void writeBc1Figure(JsonWriter& j, const char* name, const Bc1Figure& f) {
  j.key(name).beginObject();
  j.field("psnr", f.psnr).field("mtexels_s", f.mtexelsS).field("seconds", f.seconds);
  j.endObject();
}

void writeImage(JsonWriter& j, const ImageryResult& r) {
  j.beginObject();
  j.field("input", r.input).field("ok", r.ok);
  if (!r.ok) {
    j.field("error", r.error);
    j.endObject();
    return;
  }
  j.field("width", r.width).field("height", r.height).field("bands", r.bands).field("texels", r.texels);
  j.field("read_seconds", r.readSeconds).field("total_seconds", r.totalSeconds);

  const JpegFigures& g = r.jpeg;
  j.key("jpeg").beginObject();
  j.field("quality", g.quality).field("subsampling", "4:2:0");
  j.field("bytes", g.bytes).field("bits_per_texel", g.bitsPerTexel);
  j.field("encode_mpx_s", g.encodeMpxS).field("decode_mpx_s", g.decodeMpxS);
  j.field("encode_mpx_s_all_cores", g.encodeMpxSAllCores).field("decode_mpx_s_all_cores", g.decodeMpxSAllCores);
  j.field("threads", g.threads).field("strips", g.strips).field("strip_bytes", g.stripBytes);
  j.field("psnr", g.psnr);
  j.endObject();

  const TilingFigures& t = r.tiling;
  j.key("tiling").beginObject();
  j.field("tile_size", himg::kTileSize).field("tile_content", himg::kTileContent);
  j.field("tile_border", himg::kTileBorder);
  j.field("tiles_x", t.tilesX).field("tiles_y", t.tilesY).field("tiles", t.tiles);
  j.field("tables_bytes", t.tablesBytes).field("tile_bytes", t.tileBytes);
  j.field("tile_bytes_total", t.tileBytesTotal).field("whole_image_bytes", t.wholeImageBytes);
  j.field("unpadded_image_bytes", t.unpaddedImageBytes);
  j.field("ratio", t.ratio).field("psnr", t.psnr);
  j.field("encode_mtexels_s", t.encodeMtexelsS).field("decode_mtexels_s", t.decodeMtexelsS);
  j.endObject();

  const Bc1Figures& b = r.bc1;
  j.key("bc1_window").beginObject();
  j.field("x", b.windowX).field("y", b.windowY).field("width", b.windowWidth).field("height", b.windowHeight);
  j.field("texels", b.windowTexels());
  j.endObject();
  j.key("bc1").beginObject();
  writeBc1Figure(j, "fast", b.fast);
  writeBc1Figure(j, "quality", b.quality);
  writeBc1Figure(j, "squish_range", b.squishRange);
  writeBc1Figure(j, "squish_cluster", b.squishCluster);
  writeBc1Figure(j, "squish_iterative", b.squishIterative);
  j.field("quality_minus_squish_cluster_db", b.qualityMinusSquishClusterDb());
  j.field("fast_minus_squish_range_db", b.fastMinusSquishRangeDb());
  j.field("fast_speedup_vs_squish_range", b.fastSpeedupVsSquishRange());
  j.field("squish_decoders_agree", b.squishDecodersAgree);
  j.endObject();

  const CpuAllCoresFigures& c = r.cpuAllCores;
  j.key("cpu_all_cores").beginObject();
  j.field("threads", c.threads).field("tiles", c.tiles);
  j.field("jpeg_decode_mpx_s", c.jpegDecodeMpxS).field("jpeg_encode_mpx_s", c.jpegEncodeMpxS);
  j.endObject();

  const GpuImageryFigures& gp = r.gpu;
  if (!gp.measured) {
    j.key("gpu").null();
    j.field("gpu_note", gp.note);
    j.endObject();
    return;
  }
  auto gpuBc1 = [&j](const char* name, const GpuBc1Figure& f) {
    j.key(name).beginObject();
    j.field("psnr", f.psnr).field("gtexels_s", f.gtexelsS).field("texels", f.texels);
    j.field("identical_to_cpu", f.identicalToCpu);
    j.endObject();
  };
  j.key("gpu").beginObject();
  j.field("device", gp.device);
  gpuBc1("bc1_fast", gp.bc1Fast);
  gpuBc1("bc1_quality", gp.bc1Quality);
  j.field("batch_tiles", gp.batchTiles);
  j.field("jpeg_decode_mpx_s", gp.jpegDecodeMpxS).field("jpeg_decode_end_to_end_mpx_s", gp.jpegDecodeEndToEndMpxS);
  j.field("jpeg_decode_max_diff", gp.jpegDecodeMaxDiff).field("jpeg_decode_failed_tiles", gp.jpegDecodeFailed);
  j.field("jpeg_encode_mpx_s", gp.jpegEncodeMpxS).field("jpeg_encode_end_to_end_mpx_s", gp.jpegEncodeEndToEndMpxS);
  j.field("jpeg_encode_identical_tiles", gp.jpegEncodeIdenticalTiles).field("jpeg_encode_tiles_compared", r.tiling.tiles);
  j.field("jpeg_encode_size_ratio", gp.jpegEncodeSizeRatio).field("jpeg_encode_psnr_delta_db", gp.jpegEncodePsnrDelta);
  if (gp.nvjpegAvailable) j.field("nvjpeg_decode_mpx_s", gp.nvjpegDecodeMpxS).field("nvjpeg_backend", gp.nvjpegBackend);
  else j.key("nvjpeg_decode_mpx_s").null();
  j.field("note", gp.note);
  j.endObject();

  // The targets as ratios of figures measured in this run.
  auto ratio = [](double num, double den) { return den > 0 ? num / den : 0.0; };
  j.key("targets").beginObject();
  j.field("bc1_quality_psnr_minus_squish_cluster_db", gp.bc1Quality.psnr - b.squishCluster.psnr);
  j.field("bc1_quality_speedup_vs_squish_cluster_one_thread", ratio(gp.bc1Quality.gtexelsS * 1e3, b.squishCluster.mtexelsS));
  j.field("bc1_fast_gtexels_s", gp.bc1Fast.gtexelsS);
  j.field("jpeg_decode_speedup_vs_cpu_all_cores", ratio(gp.jpegDecodeMpxS, c.jpegDecodeMpxS));
  if (gp.nvjpegAvailable) j.field("jpeg_decode_speedup_vs_nvjpeg", ratio(gp.jpegDecodeMpxS, gp.nvjpegDecodeMpxS));
  else j.key("jpeg_decode_speedup_vs_nvjpeg").null();
  j.field("jpeg_encode_speedup_vs_cpu_all_cores", ratio(gp.jpegEncodeMpxS, c.jpegEncodeMpxS));
  j.endObject();
  j.endObject();
}

}  // namespace

std::string imageryJson(const HostInfo& host, const std::string& command,
                        const ImageryBenchOptions& options, int threads_used,
                        const std::vector<ImageryResult>& results) {
  std::string out;
  JsonWriter j(out);
  j.beginObject();
  j.field("benchmark", "imagery");
  j.key("host").beginObject();
  j.field("cpu", host.cpu).field("threads", host.threads).field("os", host.os);
  j.field("compiler", host.compiler).field("optimized_build", host.optimized);
  j.field("gdal", host.gdal);
#ifdef LIBJPEG_TURBO_VERSION_NUMBER
  {
    const int v = LIBJPEG_TURBO_VERSION_NUMBER;  // e.g. 2001005 = 2.1.5
    j.field("libjpeg_turbo", std::to_string(v / 1000000) + "." + std::to_string(v / 1000 % 1000) + "." +
                                 std::to_string(v % 1000));
  }
#endif
  j.endObject();
  j.field("command", command);
  j.key("options").beginObject();
  j.field("quality", options.quality).field("threads", options.threads).field("threads_used", threads_used);
  j.field("bc1_window", options.bc1Window);
  j.field("min_seconds", options.minSeconds).field("max_runs", options.maxRuns);
  j.field("timing", "steady_clock wall time; each step runs at least once and again while its runs took "
                    "less than min_seconds in all (at most max_runs); the best run counts. One thread "
                    "unless *_all_cores: threads_used horizontal strips of whole 16-row MCU rows, each "
                    "its own JPEG on its own thread");
  j.field("bc1", "central bc1_window (multiples of 4) for all five encoders; libsquish block by block "
                 "(CompressMasked) with the uniform metric {1,1,1}; psnr over texels with source alpha >= 128");
  j.field("tiling", "tiles of 256x256: 248x248 content + 4-texel border from the neighbours, clamped at "
                    "the image edges, alpha 255; himg::encodeJpegTile each + one makeJpegTables stream; "
                    "ratio = tile_bytes_total / whole_image_bytes: the level as one image (the tiles' content mosaic, "
                    "the image padded to whole tiles as the edge tiles are; tjCompress2, same quality, 4:2:0)");
  j.endObject();
  j.key("images").beginArray();
  for (const ImageryResult& r : results) writeImage(j, r);
  j.endArray();
  j.endObject();
  return out;
}

void printImagerySummary(std::FILE* out, const ImageryResult& r) {
  if (!r.ok) {
    std::fprintf(out, "%s: not measured (%s)\n", r.input.c_str(), r.error.c_str());
    return;
  }
  const JpegFigures& g = r.jpeg;
  const TilingFigures& t = r.tiling;
  const Bc1Figures& b = r.bc1;
  std::fprintf(out, "%s: %dx%d, %d band%s, %.2f Mtexels\n", r.input.c_str(), r.width, r.height, r.bands,
               r.bands == 1 ? "" : "s", double(r.texels) / 1e6);
  std::fprintf(out,
               "  jpeg q%d 4:2:0: %.3f bits/texel, %.2f dB; encode %.1f Mpx/s (1 thread), %.1f (%d threads); "
               "decode %.1f, %.1f\n",
               g.quality, g.bitsPerTexel, g.psnr, g.encodeMpxS, g.encodeMpxSAllCores, g.strips, g.decodeMpxS,
               g.decodeMpxSAllCores);
  std::fprintf(out,
               "  tiling: %llu tiles (%dx%d), %llu B + %llu B tables = %.3fx the level as one JPEG (%llu B); "
               "content %.2f dB\n",
               static_cast<unsigned long long>(t.tiles), t.tilesX, t.tilesY,
               static_cast<unsigned long long>(t.tileBytes), static_cast<unsigned long long>(t.tablesBytes), t.ratio,
               static_cast<unsigned long long>(t.wholeImageBytes), t.psnr);
  std::fprintf(out, "  bc1 (window %dx%d at %d,%d)   PSNR dB  Mtexel/s\n", b.windowWidth, b.windowHeight, b.windowX,
               b.windowY);
  const struct {
    const char* name;
    const Bc1Figure& f;
  } rows[] = {{"fast", b.fast},
              {"quality", b.quality},
              {"squish range", b.squishRange},
              {"squish cluster", b.squishCluster},
              {"squish iterative", b.squishIterative}};
  for (const auto& row : rows) std::fprintf(out, "    %-26s %7.2f %9.2f\n", row.name, row.f.psnr, row.f.mtexelsS);
  std::fprintf(out, "    quality - squish cluster %+.2f dB; fast - squish range %+.2f dB, %.2fx its speed%s\n",
               b.qualityMinusSquishClusterDb(), b.fastMinusSquishRangeDb(), b.fastSpeedupVsSquishRange(),
               b.squishDecodersAgree ? "" : "; himg::decodeBc1 and squish disagree on squish's blocks");
  const CpuAllCoresFigures& c = r.cpuAllCores;
  std::fprintf(out, "  tiles on %d threads (%llu tiles): jpeg decode %.1f Mpx/s, encode %.1f Mpx/s\n", c.threads,
               static_cast<unsigned long long>(c.tiles), c.jpegDecodeMpxS, c.jpegEncodeMpxS);
  const GpuImageryFigures& gp = r.gpu;
  if (!gp.measured) {
    std::fprintf(out, "  gpu: not measured (%s)\n", gp.note.c_str());
    return;
  }
  std::fprintf(out, "  gpu %s: bc1 fast %.1f Gtexel/s %.2f dB%s, quality %.2f Gtexel/s %.2f dB%s\n", gp.device.c_str(),
               gp.bc1Fast.gtexelsS, gp.bc1Fast.psnr, gp.bc1Fast.identicalToCpu ? " (= CPU)" : " (DIFFERS from CPU)",
               gp.bc1Quality.gtexelsS, gp.bc1Quality.psnr, gp.bc1Quality.identicalToCpu ? " (= CPU)" : " (DIFFERS from CPU)");
  std::fprintf(out, "    jpeg decode %.0f Mpx/s (%.0f end to end, max diff %d, %llu failed), encode %.0f Mpx/s (%.0f end to end, "
               "%llu/%llu tiles identical, size %.4fx, %+.3f dB)",
               gp.jpegDecodeMpxS, gp.jpegDecodeEndToEndMpxS, gp.jpegDecodeMaxDiff,
               static_cast<unsigned long long>(gp.jpegDecodeFailed), gp.jpegEncodeMpxS, gp.jpegEncodeEndToEndMpxS,
               static_cast<unsigned long long>(gp.jpegEncodeIdenticalTiles), static_cast<unsigned long long>(t.tiles),
               gp.jpegEncodeSizeRatio, gp.jpegEncodePsnrDelta);
  if (gp.nvjpegAvailable) std::fprintf(out, "; nvJPEG (%s) %.0f Mpx/s\n", gp.nvjpegBackend.c_str(), gp.nvjpegDecodeMpxS);
  else std::fprintf(out, "; nvJPEG absent\n");
  if (!gp.note.empty()) std::fprintf(out, "    note: %s\n", gp.note.c_str());
}

}  // namespace hfbench
