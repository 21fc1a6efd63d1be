// jpeg_tile.cpp - imagery tiles as abbreviated baseline JPEG streams (libjpeg-turbo's libjpeg
// API: the TurboJPEG API cannot write or read abbreviated streams).
//
// Error handling: libjpeg reports errors through error_exit, which must not return; it longjmps
// back into the function that started the libjpeg call. No C++ object with a destructor is
// created between setjmp and the libjpeg calls it guards (buffers are allocated before), so the
// longjmp skips nothing. Corrupt-data warnings (premature end, bad Huffman code, ...) are
// counted and turn a decode into a failure: a tile is either exact or rejected.
#include <zlib.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include "imagery/imagery.h"

namespace himg {

namespace {

constexpr int kCoverageMarker = JPEG_APP0 + 9;
constexpr char kCoverageTag[] = "HFCOV";  // + its '\0': 6 bytes
constexpr size_t kCoverageTagBytes = sizeof kCoverageTag;

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void onError(j_common_ptr c) {
  ErrorManager* e = reinterpret_cast<ErrorManager*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings (level -1: corrupt data) are counted, as libjpeg's own emit_message does; trace
// messages are dropped. Nothing is printed.
void onMessage(j_common_ptr c, int level) {
  if (level < 0) ++c->err->num_warnings;
}

void initErrors(ErrorManager& e) {
  jpeg_std_error(&e.pub);
  e.pub.error_exit = onError;
  e.pub.emit_message = onMessage;
  e.message[0] = '\0';
}

// Sets up a compressor for size x size RGB at `quality` with the tile format's parameters:
// baseline, YCbCr 4:2:0 (the library default for 3 components), standard Huffman tables,
// integer DCT (deterministic), no JFIF header (the archive says what the stream is).
void configure(jpeg_compress_struct& c, int size, int quality) {
  c.image_width = JDIMENSION(size);
  c.image_height = JDIMENSION(size);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  c.write_JFIF_header = FALSE;
  c.optimize_coding = FALSE;
  c.dct_method = JDCT_ISLOW;
  c.restart_interval = static_cast<unsigned int>(size / 16);  // one MCU row (16 x 16 MCUs)
}

bool packCoverage(const uint8_t* rgba, int size, std::vector<uint8_t>& out) {
  const size_t texels = size_t(size) * size_t(size);
  std::vector<uint8_t> bits((texels + 7) / 8, 0);
  bool partial = false;
  for (size_t i = 0; i < texels; ++i) {
    if (rgba[4 * i + 3] >= 128) bits[i / 8] |= uint8_t(0x80u >> (i % 8));
    else partial = true;
  }
  out.clear();
  if (!partial) return true;
  uLongf len = compressBound(uLong(bits.size()));
  out.resize(kCoverageTagBytes + len);
  std::memcpy(out.data(), kCoverageTag, kCoverageTagBytes);
  if (compress2(out.data() + kCoverageTagBytes, &len, bits.data(), uLong(bits.size()), 9) != Z_OK)
    return false;
  out.resize(kCoverageTagBytes + len);
  return out.size() <= 65533;  // one marker segment
}

}  // namespace

std::vector<uint8_t> makeJpegTables(int quality) {
  quality = quality < 1 ? 1 : quality > 100 ? 100 : quality;
  jpeg_compress_struct c;
  ErrorManager err;
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  std::vector<uint8_t> out;
  c.err = &err.pub;
  initErrors(err);
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&c);
    std::free(buf);
    return out;  // cannot happen with valid parameters
  }
  jpeg_create_compress(&c);
  configure(c, kTileSize, quality);
  jpeg_mem_dest(&c, &buf, &len);
  jpeg_write_tables(&c);  // SOI, DQT, DHT, EOI
  jpeg_destroy_compress(&c);
  out.assign(buf, buf + len);
  std::free(buf);
  return out;
}

bool encodeJpegTile(const uint8_t* rgba, int size, int quality, std::vector<uint8_t>& out,
                    std::string& error) {
  if (!rgba || size < 16 || size > 4096 || size % 16 || quality < 1 || quality > 100) {
    error = "encodeJpegTile: bad arguments (size " + std::to_string(size) + ", quality " +
            std::to_string(quality) + ")";
    return false;
  }
  std::vector<uint8_t> coverage;
  if (!packCoverage(rgba, size, coverage)) {
    error = "encodeJpegTile: the coverage bitmap does not fit one JPEG marker";
    return false;
  }
  std::vector<uint8_t> row(size_t(size) * 3);
  jpeg_compress_struct c;
  ErrorManager err;
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  c.err = &err.pub;
  initErrors(err);
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&c);
    std::free(buf);
    error = std::string("encodeJpegTile: ") + err.message;
    return false;
  }
  jpeg_create_compress(&c);
  configure(c, size, quality);
  jpeg_mem_dest(&c, &buf, &len);
  jpeg_suppress_tables(&c, TRUE);  // the archive holds them: an abbreviated stream
  jpeg_start_compress(&c, FALSE);
  if (!coverage.empty())
    jpeg_write_marker(&c, kCoverageMarker, coverage.data(), static_cast<unsigned int>(coverage.size()));
  while (c.next_scanline < c.image_height) {
    const uint8_t* src = rgba + size_t(c.next_scanline) * size_t(size) * 4;
    for (int x = 0; x < size; ++x) {
      // Uncovered texels take a neutral grey: cheaper to code than whatever the warper left.
      const bool covered = src[4 * x + 3] >= 128;
      for (int k = 0; k < 3; ++k) row[size_t(3 * x + k)] = covered ? src[4 * x + k] : 128;
    }
    JSAMPROW rows[1] = {row.data()};
    jpeg_write_scanlines(&c, rows, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  out.assign(buf, buf + len);
  std::free(buf);
  return true;
}

bool completeJpegStream(const uint8_t* tables, size_t tablesSize, const uint8_t* tile,
                        size_t tileSize, std::vector<uint8_t>& out, std::string& error) {
  auto isSoi = [](const uint8_t* p, size_t n) { return n >= 4 && p[0] == 0xff && p[1] == 0xd8; };
  // A tables-only stream starts with a table after SOI (DQT or DHT); a tile never does.
  auto tableNext = [](const uint8_t* p) { return p[2] == 0xff && (p[3] == 0xdb || p[3] == 0xc4); };
  if (!tables || !tile || !isSoi(tables, tablesSize) || !isSoi(tile, tileSize) ||
      !tableNext(tables) || tableNext(tile) || tables[tablesSize - 2] != 0xff ||
      tables[tablesSize - 1] != 0xd9) {
    error = "not a JPEG tables stream and tile";
    return false;
  }
  // SOI + tables (without the tables stream's EOI) + the tile after its SOI.
  out.assign(tables, tables + tablesSize - 2);
  out.insert(out.end(), tile + 2, tile + tileSize);
  return true;
}

struct JpegTileDecoder::Impl {
  jpeg_decompress_struct d;
  ErrorManager err;
  std::vector<uint8_t> tables;
  bool created = false;
};

JpegTileDecoder::JpegTileDecoder() : impl_(new Impl) {
  Impl& m = *impl_;
  m.d.err = &m.err.pub;
  initErrors(m.err);
  if (setjmp(m.err.jump)) return;  // out of memory at creation: decode() reports it
  jpeg_create_decompress(&m.d);
  jpeg_save_markers(&m.d, kCoverageMarker, 0xffff);
  m.created = true;
}

JpegTileDecoder::~JpegTileDecoder() {
  if (impl_->created) jpeg_destroy_decompress(&impl_->d);
}

bool JpegTileDecoder::setTables(const uint8_t* tables, size_t size, std::string& error) {
  Impl& m = *impl_;
  if (!m.created) {
    error = "JPEG decoder could not be created";
    return false;
  }
  if (!tables || size < 4 || size > (1u << 20)) {
    error = "no JPEG tables";
    return false;
  }
  m.tables.assign(tables, tables + size);
  if (setjmp(m.err.jump)) {
    jpeg_abort_decompress(&m.d);
    m.tables.clear();
    error = std::string("bad JPEG tables: ") + m.err.message;
    return false;
  }
  jpeg_mem_src(&m.d, m.tables.data(), static_cast<unsigned long>(m.tables.size()));
  if (jpeg_read_header(&m.d, FALSE) != JPEG_HEADER_TABLES_ONLY) {
    jpeg_abort_decompress(&m.d);
    m.tables.clear();
    error = "bad JPEG tables: not a tables-only stream";
    return false;
  }
  return true;
}

bool JpegTileDecoder::decode(const uint8_t* tile, size_t tileSize, int size, uint8_t* rgba,
                             std::string& error) {
  Impl& m = *impl_;
  if (!m.created || m.tables.empty()) {
    error = "JPEG decoder has no tables";
    return false;
  }
  if (!tile || !rgba || tileSize < 4 || size < 16 || size > 4096) {
    error = "bad JPEG tile arguments";
    return false;
  }
  std::vector<uint8_t> row(size_t(size) * 3);
  std::vector<uint8_t> bits((size_t(size) * size_t(size) + 7) / 8);
  bool dims_ok = true, tables_ok = true;
  if (setjmp(m.err.jump)) {
    jpeg_abort_decompress(&m.d);
    error = std::string("corrupt JPEG tile: ") + m.err.message;
    return false;
  }
  // The shared tables are loaded again for every tile: a hostile tile that carries its own
  // DQT/DHT can then spoil only itself, never the tiles decoded after it.
  jpeg_mem_src(&m.d, m.tables.data(), static_cast<unsigned long>(m.tables.size()));
  tables_ok = jpeg_read_header(&m.d, FALSE) == JPEG_HEADER_TABLES_ONLY;
  if (!tables_ok) {
    jpeg_abort_decompress(&m.d);
    error = "bad JPEG tables";
    return false;
  }
  m.d.err->num_warnings = 0;
  jpeg_mem_src(&m.d, tile, static_cast<unsigned long>(tileSize));
  if (jpeg_read_header(&m.d, TRUE) != JPEG_HEADER_OK) dims_ok = false;
  if (dims_ok)
    dims_ok = m.d.image_width == JDIMENSION(size) && m.d.image_height == JDIMENSION(size) &&
              m.d.num_components == 3 && m.d.jpeg_color_space == JCS_YCbCr && !m.d.progressive_mode;
  if (!dims_ok) {
    jpeg_abort_decompress(&m.d);
    error = "JPEG tile is not a " + std::to_string(size) + " x " + std::to_string(size) +
            " baseline YCbCr image";
    return false;
  }
  m.d.out_color_space = JCS_RGB;
  m.d.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&m.d);
  while (m.d.output_scanline < m.d.output_height) {
    uint8_t* dst = rgba + size_t(m.d.output_scanline) * size_t(size) * 4;
    JSAMPROW rows[1] = {row.data()};
    if (jpeg_read_scanlines(&m.d, rows, 1) != 1) break;
    for (int x = 0; x < size; ++x) {
      dst[4 * x] = row[size_t(3 * x)];
      dst[4 * x + 1] = row[size_t(3 * x + 1)];
      dst[4 * x + 2] = row[size_t(3 * x + 2)];
      dst[4 * x + 3] = 255;
    }
  }
  // Coverage: the APP9 segment saved while reading the header.
  bool coverage_ok = true, have_coverage = false;
  for (jpeg_saved_marker_ptr mk = m.d.marker_list; mk; mk = mk->next) {
    if (mk->marker != kCoverageMarker || mk->data_length < kCoverageTagBytes ||
        std::memcmp(mk->data, kCoverageTag, kCoverageTagBytes) != 0)
      continue;
    uLongf len = uLongf(bits.size());
    coverage_ok = !have_coverage &&
                  uncompress(bits.data(), &len, mk->data + kCoverageTagBytes,
                             uLong(mk->data_length - kCoverageTagBytes)) == Z_OK &&
                  len == bits.size();
    have_coverage = true;
  }
  const bool complete = m.d.output_scanline == m.d.output_height;
  if (complete) jpeg_finish_decompress(&m.d);
  else jpeg_abort_decompress(&m.d);
  if (!complete || m.d.err->num_warnings > 0) {
    error = "corrupt JPEG tile data";
    return false;
  }
  if (!coverage_ok) {
    error = "corrupt JPEG tile coverage";
    return false;
  }
  if (have_coverage) {
    const size_t texels = size_t(size) * size_t(size);
    for (size_t i = 0; i < texels; ++i)
      if (!(bits[i / 8] & (0x80u >> (i % 8)))) rgba[4 * i + 3] = 0;
  }
  return true;
}

}  // namespace himg
