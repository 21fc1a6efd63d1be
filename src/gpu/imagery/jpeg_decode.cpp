// jpeg_decode.cpp - host side of hfgpu::GpuJpegDecoder: the marker-segment parser (tables-only
// stream and tiles), coverage inflation, staging, and the calls into cuda/imagery/jpeg_decode.cu.
//
// Why the checks are what they are: a tile is decoded on the device only if libjpeg would decode
// it with the same meaning (JpegTileDecoder is the reference), so the parser accepts exactly the
// tile format (imagery.h) and rejects anything that would make the kernels' fixed layout wrong:
// other dimensions or sampling, progressive or arithmetic coding, 12-bit data, a restart interval
// other than one MCU row, a scan that is not the three components in frame order, tables a tile
// carries itself (libjpeg would use them; the kernels use the shared ones). Colour space follows
// libjpeg's default_decompress_parms: component ids 'R','G','B' (without JFIF) or an Adobe marker
// with transform 0 mean RGB, which the reference rejects, so do we.
//
// Synchronisation: prepare() overwrites the pinned staging, so it waits for the previous upload
// (an event); it grows device buffers only after the previous decode finished (another event), so
// a decode in flight never sees its memory freed. Nothing else waits.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "gpu/cuda_util.h"
#include "gpu/imagery/jpeg_decoder.h"
#include "imagery/jpeg_decode_core.cuh"

namespace hfjdec {

namespace {

constexpr uint8_t kZigzagToNatural[64] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | p[1]; }

// jpeg_make_d_derived_tbl (jdhuff.c): canonical codes, checked, plus the lookahead table.
bool buildHuffTable(const uint8_t counts[17], const uint8_t* vals, int nvals, bool dc, HuffTable& h) {
  std::memset(&h, 0, sizeof h);
  for (int i = 0; i < nvals; ++i) {
    if (dc && vals[i] > 15) return false;
    h.huffval[i] = vals[i];
  }
  uint32_t code = 0;
  int k = 0;
  for (int l = 1; l <= 16; ++l) {
    const int n = counts[l];
    // libjpeg: the codes of a length must fit it without the all-ones code (code < 2^l after
    // the last one); checked before the lookahead entries are written.
    if ((n || k < nvals) && code + uint32_t(n) >= (1u << l)) return false;
    if (n) {
      h.valoffset[l] = k - int32_t(code);
      for (int i = 0; i < n; ++i, ++k, ++code) {
        if (l <= kLookBits) {
          const uint32_t first = code << (kLookBits - l), span = 1u << (kLookBits - l);
          for (uint32_t j = 0; j < span; ++j) h.look[first + j] = uint16_t(l << 8 | vals[k]);
        }
      }
      h.maxcode[l] = int32_t(code - 1);
    } else {
      h.maxcode[l] = -1;
    }
    code <<= 1;
  }
  h.maxcode[17] = 0x7FFFFFFF;
  if (!dc) {  // stb_image's fast AC table: code + magnitude bits within the lookahead
    for (uint32_t i = 0; i < (1u << kLookBits); ++i) {
      const uint32_t e = h.look[i];
      if (!e) continue;
      const int len = int(e >> 8), run = int(e >> 4) & 15, mag = int(e & 15);
      if (!mag || len + mag > kLookBits) continue;
      const uint32_t r = (i >> (kLookBits - len - mag)) & ((1u << mag) - 1u);
      const int v = huffExtend(r, mag);
      if (v >= -128 && v <= 127) h.fastac[i] = int16_t(v * 256 + run * 16 + len + mag);
    }
  }
  return true;
}

}  // namespace

bool parseTables(const uint8_t* p, size_t n, Tables& t, std::string& error) {
  std::memset(&t, 0, sizeof t);
  std::memcpy(t.natural, kZigzagToNatural, 64);
  if (!p || n < 4 || p[0] != 0xFF || p[1] != 0xD8) {
    error = "bad JPEG tables: no SOI";
    return false;
  }
  size_t i = 2;
  for (;;) {
    if (i + 2 > n || p[i] != 0xFF) {
      error = "bad JPEG tables: marker expected";
      return false;
    }
    const uint8_t m = p[i + 1];
    i += 2;
    if (m == 0xD9) break;  // EOI
    if (i + 2 > n) {
      error = "bad JPEG tables: truncated segment";
      return false;
    }
    const size_t len = be16(p + i);
    if (len < 2 || i + len > n) {
      error = "bad JPEG tables: bad segment length";
      return false;
    }
    const uint8_t* s = p + i + 2;
    const size_t sn = len - 2;
    i += len;
    if (m == 0xDB) {  // DQT
      for (size_t o = 0; o < sn;) {
        const int pq = s[o] >> 4, tq = s[o] & 15;
        if (pq != 0) {
          error = "unsupported JPEG tables: 16-bit quantisation table";
          return false;
        }
        if (tq > 1) {
          error = "unsupported JPEG tables: quantisation table " + std::to_string(tq);
          return false;
        }
        if (o + 65 > sn) {
          error = "bad JPEG tables: truncated DQT";
          return false;
        }
        for (int k = 0; k < 64; ++k) t.quant[tq][kZigzagToNatural[k]] = s[o + 1 + size_t(k)];
        t.have_quant[tq] = 1;
        o += 65;
      }
    } else if (m == 0xC4) {  // DHT
      for (size_t o = 0; o < sn;) {
        if (o + 17 > sn) {
          error = "bad JPEG tables: truncated DHT";
          return false;
        }
        const int tc = s[o] >> 4, th = s[o] & 15;
        uint8_t counts[17] = {};
        int total = 0;
        for (int l = 1; l <= 16; ++l) total += counts[l] = s[o + size_t(l)];
        if (tc > 1 || th > 1) {
          error = "unsupported JPEG tables: Huffman table class " + std::to_string(tc) + " id " +
                  std::to_string(th);
          return false;
        }
        if (total > 256 || o + 17 + size_t(total) > sn) {
          error = "bad JPEG tables: bad DHT";
          return false;
        }
        HuffTable& h = tc == 0 ? t.dc[th] : t.ac[th];
        if (!buildHuffTable(counts, s + o + 17, total, tc == 0, h)) {
          error = "bad JPEG tables: bad Huffman table";
          return false;
        }
        (tc == 0 ? t.have_dc : t.have_ac)[th] = 1;
        o += 17 + size_t(total);
      }
    } else if ((m >= 0xE0 && m <= 0xEF) || m == 0xFE) {
      // APPn / COM: skipped
    } else {
      error = "bad JPEG tables: unexpected marker";
      return false;
    }
  }
  return true;
}

bool parseTile(const uint8_t* p, size_t n, int size, const Tables& t, TileInfo& info, std::string& error) {
  info = TileInfo{};
  if (!p || n < 4 || p[0] != 0xFF || p[1] != 0xD8) {
    error = "corrupt JPEG tile: no SOI";
    return false;
  }
  if (p[n - 2] != 0xFF || p[n - 1] != 0xD9) {
    error = "corrupt JPEG tile: does not end with EOI";
    return false;
  }
  bool sof = false, dri = false, jfif = false, adobe = false;
  int adobe_transform = 1;
  uint8_t ids[3] = {};
  const std::string dims = "JPEG tile is not a " + std::to_string(size) + " x " + std::to_string(size) +
                           " baseline YCbCr 4:2:0 image";
  size_t i = 2;
  for (;;) {
    if (i + 4 > n - 2 || p[i] != 0xFF) {
      error = "corrupt JPEG tile: bad marker segment";
      return false;
    }
    const uint8_t m = p[i + 1];
    const size_t len = be16(p + i + 2);
    if (len < 2 || i + 2 + len > n - 2) {
      error = "corrupt JPEG tile: bad segment length";
      return false;
    }
    const uint8_t* s = p + i + 4;
    const size_t sn = len - 2;
    i += 2 + len;
    if (m == 0xE0 + 9 && sn >= 6 && std::memcmp(s, "HFCOV", 6) == 0) {
      if (info.coverage) {
        error = "corrupt JPEG tile coverage";
        return false;
      }
      info.coverage = s + 6;
      info.coverage_bytes = sn - 6;
    } else if (m == 0xE0) {
      if (sn >= 14 && std::memcmp(s, "JFIF", 5) == 0) jfif = true;  // examine_app0
    } else if (m == 0xEE) {
      if (sn >= 12 && std::memcmp(s, "Adobe", 5) == 0) {  // examine_app14
        adobe = true;
        adobe_transform = s[11];
      }
    } else if ((m >= 0xE0 && m <= 0xEF) || m == 0xFE) {
      // other APPn, COM: skipped
    } else if (m == 0xC0 || m == 0xC1) {  // SOF0 / SOF1: Huffman, sequential
      if (sof || sn != 6 + 9 || s[0] != 8 || int(be16(s + 1)) != size || int(be16(s + 3)) != size ||
          s[5] != 3) {
        error = dims;
        return false;
      }
      for (int c = 0; c < 3; ++c) {
        const uint8_t* cs = s + 6 + 3 * c;
        const int hv = c == 0 ? 0x22 : 0x11;
        if (cs[1] != hv) {
          error = dims;
          return false;
        }
        if (cs[2] > 1 || !t.have_quant[cs[2]]) {
          error = "JPEG tile uses a quantisation table the tables stream does not define";
          return false;
        }
        ids[c] = cs[0];
        info.sel.quant[c] = cs[2];
      }
      if (ids[0] == ids[1] || ids[0] == ids[2] || ids[1] == ids[2]) {
        error = "corrupt JPEG tile: duplicate component ids";
        return false;
      }
      sof = true;
    } else if (m == 0xDD) {  // DRI
      if (sn != 2 || int(be16(s)) != size / 16) {
        error = "JPEG tile's restart interval is not one MCU row";
        return false;
      }
      dri = true;
    } else if (m == 0xDA) {  // SOS: the entropy-coded data follows
      if (!sof || !dri) {
        error = sof ? "JPEG tile's restart interval is not one MCU row" : dims;
        return false;
      }
      if (sn != 1 + 3 * 2 + 3 || s[0] != 3) {
        error = "JPEG tile's scan is not one interleaved scan of its three components";
        return false;
      }
      for (int c = 0; c < 3; ++c) {
        const uint8_t* cs = s + 1 + 2 * c;
        const int td = cs[1] >> 4, ta = cs[1] & 15;
        if (cs[0] != ids[c]) {
          error = "JPEG tile's scan is not one interleaved scan of its three components";
          return false;
        }
        if (td > 1 || ta > 1 || !t.have_dc[td] || !t.have_ac[ta]) {
          error = "JPEG tile uses a Huffman table the tables stream does not define";
          return false;
        }
        info.sel.dc[c] = uint8_t(td);
        info.sel.ac[c] = uint8_t(ta);
      }
      if (s[7] != 0 || s[8] != 63 || s[9] != 0) {
        error = dims;
        return false;
      }
      break;
    } else if (m == 0xDB || m == 0xC4) {
      error = "JPEG tile carries its own tables (unsupported: the archive's tables are shared)";
      return false;
    } else {
      error = dims;  // other SOFn (progressive, arithmetic, lossless...), DNL, DAC, ...
      return false;
    }
  }
  const bool rgb = jfif ? false : adobe ? adobe_transform == 0 : (ids[0] == 'R' && ids[1] == 'G' && ids[2] == 'B');
  if (rgb) {
    error = dims;
    return false;
  }
  info.data = i;
  info.bytes = n - 2 - i;
  if (info.bytes > 0xFFFFFFF0u) {
    error = "JPEG tile too large";
    return false;
  }
  return true;
}

bool inflateCoverage(const uint8_t* z, size_t n, uint8_t* bits, size_t bytes) {
  uLongf len = uLongf(bytes);
  return uncompress(bits, &len, z, uLong(n)) == Z_OK && len == bytes;
}

size_t coverageBands(const uint8_t* bits, int size, uint8_t* out) {
  const size_t capacity = size_t(size) * size_t(size) / 8;
  std::vector<uint16_t> b(1, 0);
  auto bit = [&](int x, int y) {
    const size_t i = size_t(y) * size_t(size) + size_t(x);
    return (bits[i >> 3] >> (7 - (i & 7))) & 1;
  };
  for (int y = 0; y < size; ++y) {
    int x0 = 0;
    while (x0 < size && !bit(x0, y)) ++x0;
    int x1 = x0;
    while (x1 < size && bit(x1, y)) ++x1;
    for (int x = x1; x < size; ++x)
      if (bit(x, y)) return 0;  // a second run
    if (x1 == x0) x0 = x1 = 0;  // empty rows all look alike
    const size_t n = b[0];
    if (n && b[3 * n - 1] == x0 && b[3 * n] == x1) {
      b[3 * n - 2] = uint16_t(y + 1);  // the row extends the last band
    } else {
      b.insert(b.end(), {uint16_t(y + 1), uint16_t(x0), uint16_t(x1)});
      ++b[0];
    }
    if (b.size() * 2 >= capacity) return 0;
  }
  std::memcpy(out, b.data(), b.size() * 2);
  return b.size() * 2;
}

}  // namespace hfjdec

namespace hfgpu {

namespace {
size_t align16(size_t v) { return (v + 15) & ~size_t(15); }

std::string failureMessage(uint32_t f) {
  using namespace hfjdec;
  std::string s = "corrupt JPEG tile data (GPU):";
  if (f & kFailMarker) s += " unexpected marker;";
  if (f & kFailRstOrder) s += " RST out of sequence;";
  if (f & kFailRstCount) s += " wrong number of RST markers;";
  if (f & kFailHuffman) s += " bad Huffman code;";
  if (f & kFailCoefIndex) s += " coefficient index past 63;";
  if (f & kFailOverrun) s += " interval data overrun;";
  if (f & kFailTrailing) s += " extraneous bytes in an interval;";
  s.pop_back();
  return s;
}
}  // namespace

struct GpuJpegDecoder::Impl {
  hfjdec::Tables tables{};
  std::vector<uint8_t> bits;  // one tile's inflated coverage (prepare)
  bool have_tables = false;
  // Last prepare().
  size_t count = 0;
  int size = 0;
  size_t staged_bytes = 0;
  size_t valid = 0;  // tiles that passed the host checks
  uint64_t descs_offset = 0;
  std::vector<std::string> host_errors;
  bool fetched = false;
  PinnedBuffer<uint8_t> staging;
  PinnedBuffer<uint32_t> statuses;
  DeviceBuffer<uint8_t> staged, unstuffed;
  DeviceBuffer<hfjdec::Tables> device_tables;  // setTables' copy (one per archive, not per batch)
  DeviceBuffer<uint32_t> starts, flags;
  DeviceBuffer<int16_t> coef;
  Event upload_done{false}, decode_done{false};
  bool upload_pending = false, decode_pending = false;
  std::vector<hfjdec::TileInfo> infos;

  template <typename T, typename M>
  void grow(CudaBuffer<T, M>& b, size_t n) {
    if (n <= b.size()) return;
    if (decode_pending) decode_done.synchronize();  // the old memory may be in use
    decode_pending = false;
    b.allocate(n);
  }
};

GpuJpegDecoder::GpuJpegDecoder() : impl_(new Impl) {}
GpuJpegDecoder::~GpuJpegDecoder() {
  // Buffers in use by queued work must outlive it.
  if (impl_->upload_pending) CUDA_LOG(cudaEventSynchronize(impl_->upload_done));
  if (impl_->decode_pending) CUDA_LOG(cudaEventSynchronize(impl_->decode_done));
}

bool GpuJpegDecoder::setTables(const uint8_t* tables, size_t size, std::string& error) {
  hfjdec::Tables t;
  if (!hfjdec::parseTables(tables, size, t, error)) return false;
  Impl& m = *impl_;
  // The device copy may be read by a queued decode: wait for it before overwriting.
  if (m.decode_pending) m.decode_done.synchronize();
  m.decode_pending = false;
  if (m.device_tables.size() < 1) m.device_tables.allocate(1);
  CUDA_CHECK(cudaMemcpy(m.device_tables.get(), &t, sizeof t, cudaMemcpyHostToDevice));
  m.tables = t;
  m.have_tables = true;
  return true;
}

size_t GpuJpegDecoder::prepare(const JpegTileInput* tiles, size_t count, int size) {
  Impl& m = *impl_;
  if (m.upload_pending) m.upload_done.synchronize();
  m.upload_pending = false;
  m.valid = 0;
  m.fetched = false;
  m.count = count;
  m.size = size;
  m.host_errors.assign(count, std::string());
  m.infos.assign(count, hfjdec::TileInfo{});
  const bool size_ok = size >= 16 && size <= 4096 && size % 16 == 0;
  const size_t mask_bytes = size_ok ? size_t(size) * size_t(size) / 8 : 0;
  // Pass 1: parse, size the staging.
  size_t total = 0;
  m.descs_offset = total;
  total += align16(count * sizeof(hfjdec::TileDesc));
  size_t ok = 0;
  for (size_t i = 0; i < count; ++i) {
    std::string& e = m.host_errors[i];
    if (!m.have_tables) e = "JPEG decoder has no tables";
    else if (!size_ok) e = "bad JPEG tile size " + std::to_string(size);
    else if (!tiles || !tiles[i].data) e = "bad JPEG tile arguments";
    else hfjdec::parseTile(tiles[i].data, tiles[i].size, size, m.tables, m.infos[i], e);
    if (!e.empty()) continue;
    if (m.infos[i].coverage) total += align16(mask_bytes);
    total += align16(m.infos[i].bytes);
    ++ok;
  }
  // Pass 2: fill.
  m.staging.reserve(total);
  uint8_t* st = m.staging.get();
  size_t at = m.descs_offset + align16(count * sizeof(hfjdec::TileDesc));
  for (size_t i = 0; i < count; ++i) {
    hfjdec::TileDesc d{};
    d.mask = hfjdec::kNoMask;
    const hfjdec::TileInfo& info = m.infos[i];
    if (m.host_errors[i].empty() && info.coverage) {
      m.bits.resize(mask_bytes);
      if (hfjdec::inflateCoverage(info.coverage, info.coverage_bytes, m.bits.data(), mask_bytes)) {
        // The compact bands where they apply (nearly every partial tile), else the bitmap.
        size_t n = hfjdec::coverageBands(m.bits.data(), size, st + at);
        d.mask_kind = n ? hfjdec::kMaskBands : hfjdec::kMaskBits;
        if (!n) std::memcpy(st + at, m.bits.data(), n = mask_bytes);
        std::memset(st + at + n, 0, align16(n) - n);
        d.mask = at;
        at += align16(n);
      } else {
        m.host_errors[i] = "corrupt JPEG tile coverage";
        --ok;
      }
    }
    if (m.host_errors[i].empty()) {
      d.data = at;
      d.bytes = uint32_t(info.bytes);
      std::memcpy(st + at, tiles[i].data + info.data, info.bytes);
      std::memset(st + at + info.bytes, 0, align16(info.bytes) - info.bytes);
      at += align16(info.bytes);
      for (int c = 0; c < 3; ++c) {
        d.quant[c] = info.sel.quant[c];
        d.dc[c] = info.sel.dc[c];
        d.ac[c] = info.sel.ac[c];
      }
      d.valid = 1;
    }
    std::memcpy(st + m.descs_offset + i * sizeof d, &d, sizeof d);
  }
  m.staged_bytes = at;
  m.valid = ok;
  // Device memory for this batch (grown only; waits for the previous decode when it grows).
  if (size_ok && count) {
    const size_t rows = size_t(size) / 16;
    m.grow(m.staged, at);
    m.grow(m.unstuffed, at);
    m.grow(m.starts, count * (rows + 1));
    m.grow(m.flags, count);
    m.grow(m.coef, count * rows * rows * 6 * 64);
    m.grow(m.statuses, count);
  }
  return ok;
}

size_t GpuJpegDecoder::stagedBytes() const { return impl_->staged_bytes; }

void GpuJpegDecoder::uploadAsync(cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.valid == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(m.staged.get(), m.staging.get(), m.staged_bytes, cudaMemcpyHostToDevice, stream));
  m.upload_done.record(stream);
  m.upload_pending = true;
}

void GpuJpegDecoder::decodeAsync(uint8_t* rgba, cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.valid == 0) return;
  CUDA_CHECK(cudaMemsetAsync(m.flags.get(), 0, m.count * sizeof(uint32_t), stream));
  hfjdec::LaunchArgs a;
  a.staged = m.staged.get();
  a.tables = m.device_tables.get();
  a.descs = m.descs_offset;
  a.count = m.count;
  a.size = m.size;
  a.unstuffed = m.unstuffed.get();
  a.starts = m.starts.get();
  a.coef = m.coef.get();
  a.flags = m.flags.get();
  a.rgba = rgba;
  hfjdec::launchDecodeKernels(a, stream);
  m.decode_done.record(stream);
  m.decode_pending = true;
}

void GpuJpegDecoder::fetchStatusesAsync(cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.valid == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(m.statuses.get(), m.flags.get(), m.count * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream));
  m.decode_done.record(stream);  // prepare() must not free `statuses` under this copy
  m.decode_pending = true;
  m.fetched = true;
}

const std::vector<std::string>& GpuJpegDecoder::hostErrors() const { return impl_->host_errors; }

std::vector<std::string> GpuJpegDecoder::errors() const {
  const Impl& m = *impl_;
  std::vector<std::string> out = m.host_errors;
  for (size_t i = 0; i < m.count; ++i) {
    if (!out[i].empty()) continue;
    if (!m.fetched) out[i] = "JPEG tile status not fetched (fetchStatusesAsync)";
    else if (m.statuses[i]) out[i] = failureMessage(m.statuses[i]);
  }
  return out;
}

std::vector<std::string> GpuJpegDecoder::decode(const JpegTileInput* tiles, size_t count, int size,
                                                uint8_t* rgba, cudaStream_t stream) {
  prepare(tiles, count, size);
  uploadAsync(stream);
  decodeAsync(rgba, stream);
  fetchStatusesAsync(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return errors();
}

}  // namespace hfgpu
