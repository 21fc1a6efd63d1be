// hfpack_shard_test.cpp - sharded packing (issue 18, docs/sharded-packing.md): `hfpack INPUT...
// -o PART --shard I/N` for every I and `hfpack merge` give the archive a single pack gives, byte
// for byte, for N = 1, 2, 4, 7 on small real DEMs (voids filled, voids kept, a float source
// quantised) and every codec; a synthetic raster whose void rows make the fill fall back to the
// last valid sample above a shard's rows; and bad input (a bad --shard, --imagery, parts missing,
// given twice, of other inputs or options, corrupt or truncated) gives one "Error:" line, exit
// status 1 and no output file (an existing one is left as it was).
#include <gdal.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "hfpack.h"
#include "test_files.h"

#ifndef HF_SHARED_DEM_DIR
#error "HF_SHARED_DEM_DIR must name the shared DEM folder"
#endif

namespace {

namespace fs = std::filesystem;
using hf_test::TempDir;

const std::string kDem = HF_SHARED_DEM_DIR;

std::vector<char> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

using Options = void (*)(hfpack::PackOptions&);

hfpack::PackOptions packOptions(const std::string& input, const std::string& out, Options set) {
  hfpack::PackOptions o;
  o.inputs = {input};
  o.output = out;
  o.out = nullptr;
  o.threads = 2;
  if (set) set(o);
  return o;
}

// Packs `input` into single.hfa, then in n parts merged into merged-n.hfa; the two must be equal.
void expectMergedEqualsSingle(const std::string& input, const std::vector<int>& counts, Options set = nullptr) {
  TempDir dir("hf_shard");
  std::string error;
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(packOptions(input, dir / "single.hfa", set), pr, error)) << error;
  const std::vector<char> single = readFile(dir / "single.hfa");
  ASSERT_GT(single.size(), 256u);
  for (int n : counts) {
    hfpack::MergeOptions mo;
    mo.output = dir / ("merged-" + std::to_string(n) + ".hfa");
    mo.out = nullptr;
    mo.threads = 2;
    for (int i = 1; i <= n; ++i) {
      hfpack::PackOptions o = packOptions(input, dir / ("part-" + std::to_string(i) + ".part"), set);
      o.shard = i;
      o.shards = n;
      ASSERT_TRUE(hfpack::pack(o, pr, error)) << "part " << i << "/" << n << ": " << error;
      mo.parts.push_back(o.output);
    }
    std::reverse(mo.parts.begin(), mo.parts.end());  // any order
    hfpack::MergeResult mr;
    ASSERT_TRUE(hfpack::merge(mo, mr, error)) << "N = " << n << ": " << error;
    const std::vector<char> merged = readFile(mo.output);
    EXPECT_EQ(merged.size(), single.size()) << input << ", N = " << n;
    EXPECT_TRUE(merged == single) << input << ", N = " << n << ": the merged archive differs from the single pack";
    hfa::ArchiveReader r;
    EXPECT_TRUE(r.open(mo.output, error)) << error;
    for (const std::string& p : mo.parts) fs::remove(p);
  }
}

bool have(const std::string& name) {
  if (fs::exists(kDem + "/" + name)) return true;
  return false;
}

#define NEED(name)                                                  \
  if (!have(name)) GTEST_SKIP() << kDem << "/" << name << " missing"

TEST(HfpackShard, VoidsFilledInt16) {  // mt_rainier: Int16 with 0.6 % voids, filled
  NEED("mt_rainier_90m.tif");
  expectMergedEqualsSingle(kDem + "/mt_rainier_90m.tif", {1, 2, 4, 7});
}

TEST(HfpackShard, FloatSourceQuantised) {  // greenriver: Float32, quantised (and its error bound)
  NEED("greenriver.tif");
  expectMergedEqualsSingle(kDem + "/greenriver.tif", {1, 2, 4, 7});
}

TEST(HfpackShard, VoidsKeptAuto) {  // Saint Helens: voids kept as nodata, codec auto, small tiles
  NEED("SainteHelens.dem");
  expectMergedEqualsSingle(kDem + "/SainteHelens.dem", {1, 2, 4, 7}, [](hfpack::PackOptions& o) {
    o.fillNodata = false;
    o.codec = hfa::Codec::Auto;
    o.patch = 65;
  });
}

TEST(HfpackShard, OtherCodecsAndOptions) {
  NEED("zion_srtm.tif");
  const std::string zion = kDem + "/zion_srtm.tif";  // UInt16 with a nodata value
  expectMergedEqualsSingle(zion, {2, 7}, [](hfpack::PackOptions& o) { o.codec = hfa::Codec::Raw; });
  expectMergedEqualsSingle(zion, {4}, [](hfpack::PackOptions& o) {
    o.codec = hfa::Codec::HfpacRbuc;
    o.segment = 17;
  });
  expectMergedEqualsSingle(zion, {4}, [](hfpack::PackOptions& o) {
    o.codec = hfa::Codec::Hfan;
    o.verticalScale = 0.5;
    o.levels = 2;
  });
  expectMergedEqualsSingle(zion, {7}, [](hfpack::PackOptions& o) {
    o.bits = 6;
    o.patch = 33;
  });
}

// Void rows across whole row bands (and their halos): the fill has no valid sample near and
// takes the last valid one above, which a shard starting below must read back.
TEST(HfpackShard, VoidBandsTakeTheLastValidSampleAbove) {
  TempDir dir("hf_shard_void");
  const std::string tif = dir / "voids.tif";
  GDALAllRegister();
  GDALDriverH drv = GDALGetDriverByName("GTiff");
  ASSERT_NE(drv, nullptr);
  const int w = 300, h = 1500;
  GDALDatasetH ds = GDALCreate(drv, tif.c_str(), w, h, 1, GDT_Int16, nullptr);
  ASSERT_NE(ds, nullptr);
  GDALRasterBandH band = GDALGetRasterBand(ds, 1);
  GDALSetRasterNoDataValue(band, -32768);
  std::vector<int16_t> v(size_t(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      v[size_t(y) * w + x] = (y >= 100 && y < 1200) || (y >= 1300 && y < 1320 && x > 200)
                                 ? int16_t(-32768)
                                 : int16_t(1000 + (x * 7 + y * 3) % 400 + (x == w - 1 && y == 99 ? 555 : 0));
  ASSERT_EQ(GDALRasterIO(band, GF_Write, 0, 0, w, h, v.data(), w, h, GDT_Int16, 0, 0), CE_None);
  GDALClose(ds);
  expectMergedEqualsSingle(tif, {1, 2, 3, 4, 7});
  expectMergedEqualsSingle(tif, {3}, [](hfpack::PackOptions& o) { o.fillNodata = false; });
}

// ---- bad input: the command line ----

struct CmdResult {
  int status = -1;
  std::string err;
};

CmdResult run(const std::string& args, const TempDir& dir) {
  const std::string err = dir / "stderr.txt";
  const std::string cmd = std::string("GDAL_PAM_ENABLED=NO ") + HFPACK_BINARY + " " + args + " >/dev/null 2>" + err;
  const int rc = std::system(("/bin/sh -c '" + cmd + "'").c_str());
  CmdResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::ifstream e(err);
  std::stringstream es;
  es << e.rdbuf();
  r.err = es.str();
  return r;
}

// Exit 1, one "Error:" line containing `needle`, and no file in the folder but `allowed`.
void expectError(const CmdResult& r, const std::string& needle, const TempDir& dir,
                 const std::vector<std::string>& allowed) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("Error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string name = e.path().filename().string();
    if (name == "stderr.txt") continue;
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), name), allowed.end()) << "unexpected file " << name;
  }
}

TEST(HfpackShard, BadShardOption) {
  NEED("zion_srtm.tif");
  TempDir dir("hf_shard_bad");
  const std::string in = kDem + "/zion_srtm.tif", out = dir / "p.part";
  expectError(run(in + " -o " + out + " --shard 0/4 -q", dir), "I must be 1..4", dir, {});
  expectError(run(in + " -o " + out + " --shard 5/4 -q", dir), "I must be 1..4", dir, {});
  expectError(run(in + " -o " + out + " --shard 1/0 -q", dir), "N must be 1..65536", dir, {});
  expectError(run(in + " -o " + out + " --shard 3 -q", dir), "must be I/N", dir, {});
  expectError(run(in + " -o " + out + " --shard a/b -q", dir), "must be I/N", dir, {});
  expectError(run(in + " -o " + out + " --shard 1/2 --imagery " + in + " -q", dir), "--imagery cannot be packed sharded",
              dir, {});
  expectError(run("info " + in + " --shard 1/2", dir), "--shard is an option of packing", dir, {});
}

TEST(HfpackShard, BadParts) {
  NEED("zion_srtm.tif");
  NEED("SainteHelens.dem");
  TempDir dir("hf_shard_parts");
  const std::string zion = kDem + "/zion_srtm.tif", helens = kDem + "/SainteHelens.dem";
  for (int i = 1; i <= 3; ++i)
    ASSERT_EQ(run(zion + " -o " + (dir / ("z" + std::to_string(i) + ".part")) + " --shard " + std::to_string(i) + "/3 -q", dir)
                  .status,
              0);
  ASSERT_EQ(run(helens + " -o " + (dir / "h2.part") + " --shard 2/3 -q", dir).status, 0);
  ASSERT_EQ(run(zion + " -o " + (dir / "raw2.part") + " --shard 2/3 --codec raw -q", dir).status, 0);
  ASSERT_EQ(run(zion + " -o " + (dir / "n2.part") + " --shard 2/2 -q", dir).status, 0);
  ASSERT_EQ(run(zion + " -o " + (dir / "single.hfa") + " -q", dir).status, 0);
  const std::string z1 = dir / "z1.part", z2 = dir / "z2.part", z3 = dir / "z3.part", out = dir / "out.hfa";
  std::vector<std::string> files = {"z1.part", "z2.part", "z3.part", "h2.part", "raw2.part", "n2.part", "single.hfa"};

  // The good merge first: the parts are right.
  ASSERT_EQ(run("merge " + z1 + " " + z2 + " " + z3 + " -o " + out + " -q", dir).status, 0);
  EXPECT_TRUE(readFile(out) == readFile(dir / "single.hfa"));
  fs::remove(out);

  expectError(run("merge " + z1 + " " + z3 + " -o " + out + " -q", dir), "part 2 of 3 is missing", dir, files);
  expectError(run("merge " + z1 + " " + z2 + " " + z2 + " " + z3 + " -o " + out + " -q", dir), "part 2 of 3 given twice",
              dir, files);
  fs::copy_file(z2, dir / "z2copy.part");
  files.push_back("z2copy.part");
  expectError(run("merge " + z1 + " " + z2 + " " + (dir / "z2copy.part") + " " + z3 + " -o " + out + " -q", dir),
              "given twice", dir, files);
  expectError(run("merge " + z1 + " " + (dir / "h2.part") + " " + z3 + " -o " + out + " -q", dir),
              "not a part of the same pack", dir, files);
  expectError(run("merge " + z1 + " " + (dir / "raw2.part") + " " + z3 + " -o " + out + " -q", dir),
              "not a part of the same pack", dir, files);
  expectError(run("merge " + z1 + " " + (dir / "n2.part") + " " + z3 + " -o " + out + " -q", dir),
              "not a part of the same pack", dir, files);
  expectError(run("merge " + z1 + " " + (dir / "single.hfa") + " -o " + out + " -q", dir), "not an hfpack part", dir,
              files);
  expectError(run("merge " + z1 + " " + (dir / "nothere.part") + " -o " + out + " -q", dir), "cannot open", dir, files);
  expectError(run("merge " + z1 + " " + z2 + " " + z3 + " -o " + out + " --codec raw -q", dir),
              "not an option of hfpack merge", dir, files);
  expectError(run("merge -o " + out + " -q", dir), "takes the parts", dir, files);

  // Corrupt parts: a payload byte (found when copied: an existing output stays as it was), a
  // header byte, the tile table, a truncated file.
  const std::vector<char> good = readFile(z2);
  const std::string bad = dir / "bad.part";
  files.push_back("bad.part");
  files.push_back("out.hfa");
  writeFile(out, {'o', 'l', 'd'});
  const std::vector<size_t> offsets = {300, 20, good.size() - 8};
  for (size_t at : offsets) {
    std::vector<char> b = good;
    b[at] = char(b[at] ^ 0x5a);
    writeFile(bad, b);
    expectError(run("merge " + z1 + " " + bad + " " + z3 + " -o " + out + " -q", dir), "corrupt part", dir, files);
    EXPECT_TRUE(readFile(out) == std::vector<char>({'o', 'l', 'd'})) << "corruption at " << at;
  }
  writeFile(bad, std::vector<char>(good.begin(), good.begin() + long(good.size() / 2)));
  expectError(run("merge " + z1 + " " + bad + " " + z3 + " -o " + out + " -q", dir), "truncated", dir, files);
  EXPECT_TRUE(readFile(out) == std::vector<char>({'o', 'l', 'd'}));
}


// A part writer killed before its rename (kill -9 of an array task) leaves PART.tmp.*; the next
// pack of that part removes the ones no live writer holds once they are 2 s old (the archive
// writer's rule, archive/temp_file.h), and a part being written by another process stays.
TEST(HfpackShard, StaleTemporaryPartsAreRemovedByTheNextPack) {
  NEED("zion_srtm.tif");
  TempDir dir("hf_shard_stale");
  auto make = [&](const std::string& name) {
    const fs::path f = dir / name;
    std::ofstream(f) << "partial part";
    fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::minutes(5));
    return f;
  };
  const fs::path stale = make("p.part.tmp.AAAAAA"), held = make("p.part.tmp.BBBBBB");
  const int heldFd = ::open(held.c_str(), O_RDONLY);
  ASSERT_GE(heldFd, 0);
  ASSERT_EQ(::flock(heldFd, LOCK_EX | LOCK_NB), 0);  // a writer that is still running
  hfpack::PackOptions o = packOptions(kDem + "/zion_srtm.tif", dir / "p.part", {});
  o.shard = 1;
  o.shards = 2;
  hfpack::PackResult pr;
  std::string error;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(held));
  EXPECT_TRUE(fs::exists(dir / "p.part"));
  ::close(heldFd);
}

}  // namespace
