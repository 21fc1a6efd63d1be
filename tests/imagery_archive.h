// imagery_archive.h - test scaffolding: a copy of a heights archive with imagery added from an
// RGBA image stretched over the archive's sample-centre extent (what hfpack does for a pair of
// unreferenced rasters, docs/archive.md section 6), sampled bilinearly. Independent of hfpack's
// GDAL warp, so the renderer's texel mapping is checked against a second implementation of
// the archive's rule "texel i centre at X = x (p-1) 2^L + (i + 0.5 - B) (p-1) 2^L / C".
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "imagery/imagery.h"

namespace hftest {

struct RgbaImage {
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;
};

// Texel (i, j) of imagery tile (k, X, Y): bilinear colour of `img` at that texel's centre;
// alpha 0 outside the archive's extent.
inline void imageryTile(const hfa::Header& h, const hfa::ImageryHeader& im, int k, uint32_t X, uint32_t Y,
                        const RgbaImage& img, std::vector<uint8_t>& out) {
  const int T = im.tileSize, B = im.border, C = im.content();
  const double span = double(1 << h.tileLog) * std::ldexp(1.0, k - im.finerLevels);
  out.assign(size_t(T) * size_t(T) * 4, 0);
  const double W1 = double(h.width - 1), H1 = double(h.height - 1);
  for (int j = 0; j < T; ++j)
    for (int i = 0; i < T; ++i) {
      const double sx = double(X) * span + (i + 0.5 - B) * span / C;
      const double sy = double(Y) * span + (j + 0.5 - B) * span / C;
      uint8_t* o = &out[(size_t(j) * size_t(T) + size_t(i)) * 4];
      const bool inside = sx >= 0 && sy >= 0 && sx <= W1 && sy <= H1;
      const double u = std::clamp(sx, 0.0, W1) / W1 * img.w - 0.5, v = std::clamp(sy, 0.0, H1) / H1 * img.h - 0.5;
      const int u0 = std::clamp(int(std::floor(u)), 0, img.w - 1), v0 = std::clamp(int(std::floor(v)), 0, img.h - 1);
      const int u1 = std::min(u0 + 1, img.w - 1), v1 = std::min(v0 + 1, img.h - 1);
      const double fu = std::clamp(u - u0, 0.0, 1.0), fv = std::clamp(v - v0, 0.0, 1.0);
      for (int c = 0; c < 3; ++c) {
        auto px = [&](int x, int y) { return double(img.rgba[(size_t(y) * size_t(img.w) + size_t(x)) * 4 + size_t(c)]); };
        const double val = (px(u0, v0) * (1 - fu) + px(u1, v0) * fu) * (1 - fv) + (px(u0, v1) * (1 - fu) + px(u1, v1) * fu) * fv;
        o[c] = uint8_t(std::lround(std::clamp(val, 0.0, 255.0)));
      }
      o[3] = inside ? 255 : 0;
    }
}

// A bc1 payload (docs/archive.md section 6) written out here from the himg primitives, not with
// hfpack's encodeImageryTile: the tile's mip chain, each level BC1-encoded, level 0 first.
inline std::vector<uint8_t> bc1Chain(const uint8_t* rgba, int T, himg::Bc1Mode mode) {
  std::vector<std::vector<uint8_t>> mips;
  const int levels = hfa::imageryBc1Levels(T);
  himg::buildMipChain(rgba, T, levels, mips);
  std::vector<uint8_t> out;
  for (int m = 0; m < levels; ++m) {
    std::vector<uint8_t> blocks(size_t(T >> m) * size_t(T >> m) / 2);
    himg::encodeBc1(mips[size_t(m)].data(), T >> m, T >> m, mode, blocks.data());
    out.insert(out.end(), blocks.begin(), blocks.end());
  }
  return out;
}

// Copies `in` to `out` (heights unchanged) with an imagery section: codec, quality,
// `finer` imagery-only levels (bc1 tiles: `bc1Mode`). False with an error.
inline bool addImagery(const std::string& in, const std::string& out, const RgbaImage& img,
                       hfa::ImageryCodec codec, int quality, int finer, std::string& error,
                       himg::Bc1Mode bc1Mode = himg::Bc1Mode::Fast) {
  hfa::ArchiveReader r;
  if (!r.open(in, error)) return false;
  const hfa::Header& h = r.header();
  hfa::ImageryHeader im;
  im.codec = codec;
  im.finerLevels = finer;
  im.quality = codec == hfa::ImageryCodec::Jpeg ? quality : 0;
  im.flags = hfa::kImageryUnreferenced;
  im.texelsPerSample = double(img.w) / double(h.width - 1);
  if (codec == hfa::ImageryCodec::Jpeg) im.jpegTables = himg::makeJpegTables(quality);
  size_t perLevel0 = 1;  // a level-0 tile's imagery tile and its sub-tiles on every finer level
  for (int d = 1; d <= finer; ++d) perLevel0 += size_t(1) << (2 * d);
  size_t maxImagery = 0;
  for (const auto& e : r.tiles()) maxImagery += e.level == 0 ? perLevel0 : 1;
  hfa::ArchiveWriter w;
  if (!w.open(out, h, r.tiles().size(), error, &im, maxImagery)) return false;
  std::vector<uint8_t> tile, payload;
  auto add = [&](int k, uint32_t X, uint32_t Y) -> bool {
    imageryTile(h, im, k, X, Y, img, tile);
    hfa::ImageryEntry e;
    e.level = uint8_t(k);
    e.x = X;
    e.y = Y;
    e.codec = codec;
    bool partial = false;
    for (size_t i = 3; i < tile.size(); i += 4) partial |= tile[i] == 0;
    e.flags = partial ? hfa::kImageryPartial : 0;
    if (codec == hfa::ImageryCodec::Raw) payload = tile;
    else if (codec == hfa::ImageryCodec::Bc1) payload = bc1Chain(tile.data(), im.tileSize, bc1Mode);
    else if (!himg::encodeJpegTile(tile.data(), im.tileSize, quality, payload, error)) return false;
    return w.addImageryTile(e, payload.data(), payload.size(), error);
  };
  for (size_t i = 0; i < r.tiles().size(); ++i) {
    hfa::TileEntry e = r.tiles()[i];
    const uint8_t* data;
    size_t size;
    if (!r.payload(i, data, size, error) || !w.addTile(e, data, size, error)) return false;
    if (!add(e.level + finer, e.x, e.y)) return false;
    if (e.level == 0)
      for (int k = finer - 1; k >= 0; --k) {
        const uint32_t n = 1u << (finer - k);
        for (uint32_t y = 0; y < n; ++y)
          for (uint32_t x = 0; x < n; ++x)
            if (!add(k, e.x * n + x, e.y * n + y)) return false;
      }
  }
  return w.finish(error);
}

}  // namespace hftest
