// make_io_seeds.cpp - writes the seed corpora of fuzz_archive, fuzz_hfr, fuzz_camera_path and
// fuzz_gpu_desc into DIR/<target> (DIR default: the current folder): small valid archives
// (hfpac with per-area b and masked nodata, 2DRBUC, raw, auto with hfan tiles and nodata, one
// with an imagery section), .hfr
// rasters with and without georeferencing, camera paths, and tile streams of every kind behind
// a mode byte (whole stream / layers 1 + 2 only). The
// checked-in tests/fuzz/seeds/ were made with it; rerun after a format change:
//   ./tests/fuzz/hf_fuzz_make_io_seeds ../tests/fuzz/seeds
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "codec/ans.h"
#include "codec/hfpac.h"
#include "demio/hfr.h"

namespace {

constexpr int kLog = 4;  // tiles of 17 x 17: seeds stay small
constexpr int kP = (1 << kLog) + 1;

// A terrain-like tile: a slope, a ridge, small noise, a nodata corner in level 0's (0, 0).
std::vector<uint16_t> tileSamples(int level, uint32_t x, uint32_t y, bool nodata) {
  std::vector<uint16_t> s(size_t(kP) * kP);
  uint32_t state = 0x9e3779b9u * (uint32_t(level) * 131 + x * 31 + y + 1);
  for (int j = 0; j < kP; ++j)
    for (int i = 0; i < kP; ++i) {
      state = state * 1664525u + 1013904223u;
      const int ridge = 40 - 5 * (i > j ? i - j : j - i);
      int v = 1000 + 37 * level + 9 * i - 4 * j + (ridge > 0 ? ridge : 0) + int(state >> 29);
      if (nodata && level == 0 && x == 0 && y == 0 && i < 4 && j < 4) v = 0;
      s[size_t(j) * kP + size_t(i)] = uint16_t(v);
    }
  return s;
}

bool writeArchive(const std::string& path, hfa::Codec codec, bool imagery, bool nodata) {
  hfa::Header h;
  h.tileLog = kLog;
  h.levels = 2;
  h.codec = codec;
  h.sampleType = hfpac::SampleType::UInt16;
  h.width = 30;
  h.height = 20;
  h.spacingX = h.spacingY = 30;
  h.flags |= hfa::kFlagSpacingKnown;
  h.verticalUnits = "m";
  if (nodata) {
    h.flags |= hfa::kFlagNodataKept;
    h.nodata = 0;
  }
  hfa::ImageryHeader im;
  im.tileSize = 16;
  im.border = 2;
  im.finerLevels = 0;
  im.quality = 80;
  hfa::ArchiveWriter w;
  std::string error;
  if (!w.open(path, h, 8, error, imagery ? &im : nullptr, 8)) {
    std::fprintf(stderr, "Error: %s\n", error.c_str());
    return false;
  }
  for (int level = 0; level < 2; ++level)
    for (uint32_t y = 0; y < h.tilesY(level); ++y)
      for (uint32_t x = 0; x < h.tilesX(level); ++x) {
        const std::vector<uint16_t> s = tileSamples(level, x, y, nodata);
        hfa::TileStats st;
        hfa::computeTileStats(s.data(), kLog, h.sampleType, nodata, 0, st);
        hfa::TileEntry e;
        e.level = uint8_t(level);
        // auto: hfan and hfpac tiles alternate (what hfpack --codec auto writes).
        e.codec = codec == hfa::Codec::Auto ? ((x + y) % 2 ? hfa::Codec::Hfan : hfa::Codec::Hfpac) : codec;
        e.x = x;
        e.y = y;
        e.minSample = st.minSample;
        e.maxSample = st.maxSample;
        e.lodError = st.lodError;
        std::vector<uint8_t> payload;
        if (codec == hfa::Codec::Raw) {
          for (uint16_t v : s) {
            payload.push_back(uint8_t(v));
            payload.push_back(uint8_t(v >> 8));
          }
        } else if (e.codec == hfa::Codec::Hfan) {
          hfpac::AnsOptions ao;
          ao.hasMask = nodata;
          if (hfpac::ansEncode(s.data(), kP, kP, kP, h.sampleType, payload, ao) != hfpac::Status::Ok) return false;
        } else {
          hfpac::EncodeOptions eo;
          eo.rbuc = codec == hfa::Codec::HfpacRbuc;
          if (nodata) {
            eo.hasNodata = true;
            eo.nodata = 0;
          }
          if (hfpac::encode(s.data(), kP, kP, kP, h.sampleType, eo, payload) != hfpac::Status::Ok) return false;
        }
        if (!w.addTile(e, payload.data(), payload.size(), error)) {
          std::fprintf(stderr, "Error: %s\n", error.c_str());
          return false;
        }
        if (imagery) {
          hfa::ImageryEntry ie;
          ie.level = uint8_t(level);
          ie.x = x;
          ie.y = y;
          ie.codec = hfa::ImageryCodec::Raw;
          std::vector<uint8_t> rgba(16 * 16 * 4);
          for (size_t i = 0; i < rgba.size(); ++i) rgba[i] = uint8_t(i * 7 + x + 3 * y);
          if (!w.addImageryTile(ie, rgba.data(), rgba.size(), error)) {
            std::fprintf(stderr, "Error: %s\n", error.c_str());
            return false;
          }
        }
      }
  if (!w.finish(error)) {
    std::fprintf(stderr, "Error: %s\n", error.c_str());
    return false;
  }
  return true;
}

bool writeText(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  int failures = 0;
  for (const char* sub : {"fuzz_archive", "fuzz_hfr", "fuzz_camera_path", "fuzz_gpu_desc"})
    ::mkdir((dir + "/" + sub).c_str(), 0777);
  const std::string a = dir + "/fuzz_archive/";
  failures += !writeArchive(a + "hfpac.hfa", hfa::Codec::Hfpac, false, false);
  failures += !writeArchive(a + "hfpac_nodata.hfa", hfa::Codec::Hfpac, false, true);
  failures += !writeArchive(a + "rbuc.hfa", hfa::Codec::HfpacRbuc, false, false);
  failures += !writeArchive(a + "auto_nodata.hfa", hfa::Codec::Auto, false, true);
  failures += !writeArchive(a + "raw_imagery.hfa", hfa::Codec::Raw, true, false);

  const std::string r = dir + "/fuzz_hfr/";
  demio::Dem d;
  d.width = 7;
  d.height = 5;
  d.samples.assign(35, 0);
  for (size_t i = 0; i < d.samples.size(); ++i) d.samples[i] = uint16_t(100 + 13 * i);
  std::string error;
  failures += !demio::writeHfr(r + "plain.hfr", d, error);
  d.hasGeoTransform = true;
  const double gt[6] = {-122.5, 0.001, 0, 47.5, 0, -0.001};
  for (int i = 0; i < 6; ++i) d.geoTransform[i] = gt[i];
  d.projectionWkt = "GEOGCS[\"WGS 84\"]";
  d.verticalUnits = "m";
  d.hasNodata = true;
  d.nodata = -32768;
  failures += !demio::writeHfr(r + "georeferenced.hfr", d, error);

  const std::string c = dir + "/fuzz_camera_path/";
  failures += !writeText(c + "two_keys.txt", "# t x y z yaw pitch fovY\n0 100 100 2500 45 -20 45\n12.5 900 900 2500 45 -20\n");
  failures += !writeText(c + "turns.txt", "0 0 0 10 350 -90\n1 1 2 3 10 0 30\r\n2.5e0 -4 5 6 -170 90 179 # end\n");
  failures += !writeText(c + "one_key.txt", "\n  7\t1 2 3 4 5\n");
  // fuzz_gpu_desc: byte 0 the mode (0 whole, 1 layers 1 + 2 only), then one tile stream.
  const std::string g = dir + "/fuzz_gpu_desc/";
  struct Stream {
    const char* name;
    bool nodata, rbuc;
    int bits;
    uint16_t flat;  // != 0: every sample this value
  };
  for (const Stream& st : {Stream{"perarea", false, false, -1, 0}, Stream{"masked", true, false, -1, 0},
                           Stream{"b3", false, false, 3, 0}, Stream{"rbuc", false, true, -1, 0},
                           Stream{"flat", false, false, -1, 77}}) {
    std::vector<uint16_t> samples = tileSamples(0, 0, 0, st.nodata);
    if (st.flat) samples.assign(samples.size(), st.flat);
    hfpac::EncodeOptions eo;
    eo.bits = st.bits;
    eo.rbuc = st.rbuc;
    eo.hasNodata = st.nodata;
    std::vector<uint8_t> stream;
    if (hfpac::encode(samples.data(), kP, kP, kP, hfpac::SampleType::UInt16, eo, stream) != hfpac::Status::Ok) {
      ++failures;
      continue;
    }
    for (uint8_t mode : {0, 1}) {
      std::string bytes(1, char(mode));
      bytes.append(stream.begin(), stream.end());
      failures += !writeText(g + st.name + (mode ? "_prefix" : "_whole"), bytes);
    }
  }
  if (failures) std::fprintf(stderr, "Error: %d seeds could not be made\n", failures);
  else std::printf("wrote the archive, hfr, camera path and stream seeds to %s\n", dir.c_str());
  return failures ? 1 : 0;
}
