// Benchmark report plots (tools/hfbench/plot.h): the PNG read back with stb_image (size,
// series colours in the lines and the legend, not a blank image), the automatic y cap, and
// every error. Set HF_PLOT_OUT=DIR to keep the pictures for a look.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <vector>

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include "plot.h"

namespace {

using hfbench::PlotOptions;
using hfbench::PlotSeries;

std::string outPath(const std::string& name) {
  if (const char* keep = std::getenv("HF_PLOT_OUT"))
    return (std::filesystem::path(keep) / name).string();
  return (std::filesystem::path(::testing::TempDir()) /
          ("hf_plot_" + std::to_string(::getpid()) + "_" + name))
      .string();
}
bool keeping() { return std::getenv("HF_PLOT_OUT") != nullptr; }

// Two frame-time series (ms): ~16.7 and ~8 with some wobble, one 400 ms stall in the first.
std::vector<PlotSeries> frameTimes(size_t n) {
  PlotSeries a{"cpu (decode on workers)", {}}, b{"cuda (GPU decode)", {}};
  for (size_t i = 0; i < n; ++i) {
    a.y.push_back(16.7 + 3 * std::sin(double(i) / 25) + (i % 7 == 0 ? 2 : 0));
    b.y.push_back(8 + 1.5 * std::sin(double(i) / 40 + 1));
  }
  a.y[n / 2] = 400;
  return {a, b};
}

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> px;
  size_t count(const std::array<uint8_t, 3>& c) const {
    size_t k = 0;
    for (size_t i = 0; i + 2 < px.size(); i += 3)
      if (px[i] == c[0] && px[i + 1] == c[1] && px[i + 2] == c[2]) ++k;
    return k;
  }
  // Rows holding colour c: [top, bottom]; false when absent.
  bool rows(const std::array<uint8_t, 3>& c, int& top, int& bottom) const {
    top = h, bottom = -1;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const uint8_t* p = &px[(size_t(y) * size_t(w) + size_t(x)) * 3];
        if (p[0] == c[0] && p[1] == c[1] && p[2] == c[2]) top = std::min(top, y), bottom = std::max(bottom, y);
      }
    return bottom >= 0;
  }
};

Image readPng(const std::string& path) {
  Image im;
  int comp = 0;
  unsigned char* data = stbi_load(path.c_str(), &im.w, &im.h, &comp, 3);
  EXPECT_NE(data, nullptr) << path << ": " << stbi_failure_reason();
  if (!data) return im;
  im.px.assign(data, data + size_t(im.w) * size_t(im.h) * 3);
  stbi_image_free(data);
  return im;
}

TEST(Plot, WritesAReadablePngWithLegendColours) {
  PlotOptions o;
  o.title = "Flythrough frame time (sample terrain, diagonal)";
  o.xLabel = "frame";
  o.yLabel = "frame time (ms)";
  const std::string file = outPath("frame_times.png");
  std::string error;
  ASSERT_TRUE(hfbench::writeLinePlot(file, frameTimes(1000), o, error)) << error;
  const Image im = readPng(file);
  ASSERT_EQ(im.w, 1200);
  ASSERT_EQ(im.h, 600);
  // Both series' colours are there (lines + legend swatches), and they differ.
  const auto c0 = hfbench::plotSeriesColor(0), c1 = hfbench::plotSeriesColor(1);
  EXPECT_NE(c0, c1);
  EXPECT_GT(im.count(c0), 1000u);
  EXPECT_GT(im.count(c1), 1000u);
  // Not a blank picture: white background, black axes and text, grid grey, both colours.
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 2 < im.px.size(); i += 3)
    colours.insert(uint32_t(im.px[i]) << 16 | uint32_t(im.px[i + 1]) << 8 | im.px[i + 2]);
  EXPECT_GE(colours.size(), 5u);
  const size_t white = im.count({255, 255, 255});
  EXPECT_GT(white, size_t(im.w) * size_t(im.h) / 2);  // mostly background
  EXPECT_LT(white, size_t(im.w) * size_t(im.h) * 97 / 100);
  EXPECT_GT(im.count({0, 0, 0}), 2000u);  // axes (2 px) and the title
  EXPECT_EQ(im.px[0], 255);                // corner: background
  if (!keeping()) std::remove(file.c_str());
}

TEST(Plot, AutomaticTopIgnoresOneSpikeAndManualTopIsKept) {
  const auto series = frameTimes(1000);
  std::vector<uint8_t> autoPx, manualPx;
  PlotOptions o;
  std::string error;
  ASSERT_TRUE(hfbench::renderLinePlot(series, o, autoPx, error)) << error;
  o.yMax = 500;  // everything fits, the wobble is flattened
  ASSERT_TRUE(hfbench::renderLinePlot(series, o, manualPx, error)) << error;
  Image a{1200, 600, autoPx}, m{1200, 600, manualPx};
  // The cuda series (no spike) fills a good part of the height with the automatic top, a
  // sliver with yMax = 500.
  int at = 0, ab = 0, mt = 0, mb = 0;
  ASSERT_TRUE(a.rows(hfbench::plotSeriesColor(1), at, ab));
  ASSERT_TRUE(m.rows(hfbench::plotSeriesColor(1), mt, mb));
  // (rows() also sees the legend swatch; compare below the legend: the data's spread.)
  EXPECT_GT(ab - at, 50);
  // Under the legend, count distinct rows of series 1 in the lower half of the plot.
  auto spread = [](const Image& im, const std::array<uint8_t, 3>& c) {
    int top = im.h, bottom = -1;
    for (int y = im.h / 3; y < im.h; ++y)
      for (int x = 0; x < im.w; ++x) {
        const uint8_t* p = &im.px[(size_t(y) * size_t(im.w) + size_t(x)) * 3];
        if (p[0] == c[0] && p[1] == c[1] && p[2] == c[2]) top = std::min(top, y), bottom = std::max(bottom, y);
      }
    return bottom - top;
  };
  const int autoSpread = spread(a, hfbench::plotSeriesColor(1));
  const int manualSpread = spread(m, hfbench::plotSeriesColor(1));
  EXPECT_GT(autoSpread, 40);
  EXPECT_LT(manualSpread, 12);
  EXPECT_GT(autoSpread, 4 * manualSpread);
  if (keeping()) {
    o.title = "yMax = 500";
    ASSERT_TRUE(hfbench::writeLinePlot(outPath("manual_ymax.png"), series, o, error)) << error;
  }
}

TEST(Plot, ManySeriesGapsAndTinyInputsDoNotBreakIt) {
  std::vector<PlotSeries> many;
  for (int k = 0; k < 8; ++k) {
    PlotSeries s{"series " + std::to_string(k) + " \xc3\xa9", {}};  // non-ASCII: drawn as '?'
    for (int i = 0; i < 300; ++i)
      s.y.push_back(i % 50 == 10 ? std::numeric_limits<double>::quiet_NaN() : k * 10 + std::sin(i / 10.0) * 4);
    many.push_back(s);
  }
  PlotOptions o;
  o.title = "eight series, NaN gaps, negative values";
  o.xLabel = "x";
  o.yLabel = "y";
  many[0].y[5] = -30;
  const std::string file = outPath("many.png");
  std::string error;
  ASSERT_TRUE(hfbench::writeLinePlot(file, many, o, error)) << error;
  const Image im = readPng(file);
  for (size_t k = 0; k < 8; ++k) EXPECT_GT(im.count(hfbench::plotSeriesColor(k)), 100u) << k;
  if (!keeping()) std::remove(file.c_str());

  // One point, one series of all-equal values, a small picture, a huge range, inf values.
  std::vector<uint8_t> px;
  EXPECT_TRUE(hfbench::renderLinePlot({{"one", {3}}}, o, px, error)) << error;
  EXPECT_TRUE(hfbench::renderLinePlot({{"zeros", std::vector<double>(10, 0)}}, o, px, error)) << error;
  PlotOptions small;
  small.width = 200, small.height = 150;
  EXPECT_TRUE(hfbench::renderLinePlot(frameTimes(50), small, px, error)) << error;
  EXPECT_EQ(px.size(), 200u * 150 * 3);
  EXPECT_TRUE(hfbench::renderLinePlot({{"big", {1e300, -1e300, 1e-300}}}, o, px, error)) << error;
  EXPECT_TRUE(hfbench::renderLinePlot({{"max", {1.7e308, -1.7e308, 0}}}, o, px, error)) << error;
  EXPECT_TRUE(hfbench::renderLinePlot(
      {{"inf", {1, std::numeric_limits<double>::infinity(), 2}}, {"empty", {}}}, o, px, error))
      << error;
  PlotOptions large;
  large.width = 2400, large.height = 1200;
  large.title = "2400 x 1200";
  EXPECT_TRUE(hfbench::writeLinePlot(outPath("large.png"), frameTimes(100000), large, error)) << error;
  if (!keeping()) std::remove(outPath("large.png").c_str());
}

TEST(Plot, Errors) {
  PlotOptions o;
  std::string error;
  EXPECT_FALSE(hfbench::writeLinePlot(outPath("none.png"), {}, o, error));
  EXPECT_EQ(error, "nothing to plot (no series)");
  EXPECT_FALSE(hfbench::writeLinePlot(outPath("none.png"), {{"a", {}}, {"b", {}}}, o, error));
  EXPECT_EQ(error, "nothing to plot (no finite value in any series)");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(hfbench::writeLinePlot(outPath("none.png"), {{"a", {nan, nan}}}, o, error));
  EXPECT_EQ(error, "nothing to plot (no finite value in any series)");
  EXPECT_FALSE(std::filesystem::exists(outPath("none.png")));

  const std::string bad = "/nonexistent-hf-dir/sub/plot.png";
  EXPECT_FALSE(hfbench::writeLinePlot(bad, frameTimes(10), o, error));
  EXPECT_EQ(error, "cannot write " + bad + ": No such file or directory");
  EXPECT_FALSE(hfbench::writeLinePlot(::testing::TempDir(), frameTimes(10), o, error));
  EXPECT_EQ(error.rfind("cannot write ", 0), 0u) << error;

  std::vector<uint8_t> px;
  PlotOptions sz;
  sz.width = 100;
  EXPECT_FALSE(hfbench::renderLinePlot(frameTimes(10), sz, px, error));
  EXPECT_EQ(error, "plot size 100x600 is outside 200..8192 x 150..8192");
  sz.width = 1200, sz.height = 100000;
  EXPECT_FALSE(hfbench::renderLinePlot(frameTimes(10), sz, px, error));
  PlotOptions y;
  y.yMax = -1;
  EXPECT_FALSE(hfbench::renderLinePlot(frameTimes(10), y, px, error));
  EXPECT_EQ(error, "plot yMax must be finite and >= 0 (0 = automatic)");
  y.yMax = nan;
  EXPECT_FALSE(hfbench::renderLinePlot(frameTimes(10), y, px, error));
  y.yMax = 5;  // the axis starts at min(0, data): negative data is fine
  EXPECT_TRUE(hfbench::renderLinePlot({{"neg", {-10, -20}}}, y, px, error)) << error;
  y.yMax = 1;
  EXPECT_TRUE(hfbench::renderLinePlot({{"pos", {3, 4}}}, y, px, error)) << error;  // all clipped
}

}  // namespace
