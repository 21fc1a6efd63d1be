// make_seeds.cpp - writes the seed corpora of fuzz_decode and fuzz_roundtrip into DIR/fuzz_decode
// and DIR/fuzz_roundtrip (DIR default: the current folder): small valid streams of every kind
// (flat, stored, uniform b, per-area b, masked, signed, thin) for the decoders, and a few patch
// descriptions for the encode-then-decode target. The checked-in tests/fuzz/seeds/ were made with
// it; rerun after a format change:
//   ./tests/fuzz/hf_fuzz_make_seeds ../tests/fuzz/seeds
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "codec/ans.h"
#include "codec/hfpac.h"
#include "test_util.h"

namespace {

bool write(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : ".";
  const std::string dir = root + "/fuzz_decode", patchDir = root + "/fuzz_roundtrip";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::create_directories(patchDir, ec);
  using hfpac::SampleType;
  struct Seed {
    const char* name;
    hftest::Patch patch;
    int segment, bits;
  };
  const Seed seeds[] = {
      {"stream_flat", hftest::constant(9, 7, 123), 9, -1},
      {"stream_stored", hftest::noise(6, 5, SampleType::UInt16, 1), 9, -1},
      {"stream_smooth_perarea", hftest::smooth(33, 33, SampleType::UInt16, 2), 9, -1},
      {"stream_ramp_b0", hftest::rampBumps(17, 17, SampleType::Int16, 3), 17, 0},
      {"stream_ramp_b16", hftest::rampBumps(9, 9, SampleType::Int16, 4), 5, 16},
      {"stream_sea_masked", hftest::seaMountain(40, 24, SampleType::Int16, 5), 0, -1},
      {"stream_holes_b3", hftest::withHoles(20, 20, SampleType::Int16, 6), 5, 3},
      {"stream_thin_row", hftest::smooth(60, 1, SampleType::UInt16, 7), 9, -1},
      {"stream_thin_col", hftest::rampBumps(1, 40, SampleType::Int16, 8), 33, 2},
      {"stream_negative", hftest::negative(24, 18, 9), 9, 4},
  };
  int failures = 0;
  for (const Seed& s : seeds) {
    hfpac::EncodeOptions o;
    o.segment = s.segment;
    o.bits = s.bits;
    hfpac::Status st;
    const std::vector<uint8_t> bytes = hftest::encodeOrDie(s.patch, o, &st);
    if (st != hfpac::Status::Ok || !write(dir, s.name, bytes)) {
      std::fprintf(stderr, "Error: cannot make seed %s\n", s.name);
      ++failures;
    }
  }
  // Entropy-coded patches (codec/ans.h): smooth, sea, wide residuals, voids under a mask; 1-8 lanes.
  struct AnsSeed {
    const char* name;
    hftest::Patch patch;
    int lanes;
    bool mask;
  };
  const AnsSeed ansSeeds[] = {
      {"ans_smooth", hftest::smooth(33, 17, SampleType::UInt16, 12), 8, false},
      {"ans_sea", hftest::seaMountain(24, 24, SampleType::Int16, 13), 1, false},
      {"ans_noise", hftest::noise(9, 7, SampleType::Int16, 14), 5, false},
      {"ans_holes_masked", hftest::withHoles(20, 20, SampleType::Int16, 15), 3, true},
  };
  for (const AnsSeed& a : ansSeeds) {
    std::vector<uint8_t> bytes;
    hfpac::AnsOptions o;
    o.lanes = a.lanes;
    o.hasMask = a.mask;
    o.maskValue = 0x8000;  // withHoles' voids
    if (hfpac::ansEncode(a.patch.samples.data(), a.patch.stride, a.patch.width, a.patch.height, a.patch.type, bytes,
                         o) != hfpac::Status::Ok ||
        !write(dir, a.name, bytes)) {
      std::fprintf(stderr, "Error: cannot make seed %s\n", a.name);
      ++failures;
    }
  }
  // Encode mode: width-1, height-1, config, bits+1, nodata lo, nodata hi, then sample bytes.
  hftest::Rng rng(42);
  struct Desc {
    const char* name;
    uint8_t w, h, cfg, bits;
    size_t bytes;
  };
  const Desc descs[] = {
      {"patch_raw16_auto", 15, 11, 0x00, 0, 2 * 16 * 12},
      {"patch_deltas_signed", 32, 32, 0x41 | 0x10, 0, 33 * 33},
      {"patch_8bit_seg5_b4", 20, 7, 0x80 | (1 << 1), 5, 21 * 8},
      {"patch_fewvalues_nodata", 40, 30, 0xC0 | 0x20 | 0x10, 0, 41 * 31},
  };
  for (const Desc& d : descs) {
    std::vector<uint8_t> b = {d.w, d.h, d.cfg, d.bits, 0xFF, 0xFF};
    int32_t walk = 0;
    for (size_t i = 0; i < d.bytes; ++i) {
      walk = (walk * 3 + int32_t(rng.below(9)) - 4) / 4;
      b.push_back((d.cfg >> 6) == 1 ? uint8_t(int8_t(walk)) : uint8_t(rng.u32()));
    }
    if (!write(patchDir, d.name, b)) ++failures;
  }
  std::printf("wrote %zu seeds to %s and %zu to %s\n", std::size(seeds) + std::size(ansSeeds), dir.c_str(), std::size(descs),
              patchDir.c_str());
  return failures ? 1 : 0;
}
