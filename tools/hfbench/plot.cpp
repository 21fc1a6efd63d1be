// plot.cpp - line plots for benchmark reports (see plot.h): a tiny RGB canvas, stb_easy_font
// text and stb_image_write PNG output.
#include "plot.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

// stb_easy_font is header-only with static functions (it calls ceil from <math.h>).
#include <stb/stb_easy_font.h>
// stb_image_write's implementation is compiled here, static: src/render/gl/png.cpp compiles
// its own (non-static) copy into hf_render, and a program linking both libraries (hfview
// with a bench report) would otherwise see two definitions of stbi_write_png.
// (Static, its code is inlined here, and GCC's -Wnull-dereference then flags stb's own
// pointer arithmetic in the header: third-party code, silenced for the include only.)
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace hfbench {

namespace {

using Rgb = std::array<uint8_t, 3>;

constexpr Rgb kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrid{228, 228, 228}, kText{30, 30, 30},
    kLegendBorder{160, 160, 160};

// matplotlib's "tab10" without its grey (kept apart from the axes and grid): the colours
// readers of plots know, distinct from each other.
constexpr Rgb kPalette[8] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},
                             {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {188, 189, 34}};

// stb_easy_font glyph metrics in font units: capitals 0..7, descenders down to 9, 12 per line.
constexpr int kGlyphHeight = 10;

struct Canvas {
  int w = 0, h = 0;
  std::vector<uint8_t>& px;

  void set(int x, int y, const Rgb& c) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    uint8_t* p = &px[(size_t(y) * size_t(w) + size_t(x)) * 3];
    p[0] = c[0], p[1] = c[1], p[2] = c[2];
  }
  // Half-open [x0, x1) x [y0, y1), clipped.
  void fill(int x0, int y0, int x1, int y1, const Rgb& c) {
    x0 = std::max(x0, 0), y0 = std::max(y0, 0), x1 = std::min(x1, w), y1 = std::min(y1, h);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) set(x, y, c);
  }
};

// A 2-pixel-wide line (Bresenham, a 2 x 2 stamp per step), clipped to [cx0, cx1] x [cy0, cy1].
void line(Canvas& cv, int x0, int y0, int x1, int y1, const Rgb& c, int cx0, int cy0, int cx1,
          int cy1) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    for (int oy = 0; oy < 2; ++oy)
      for (int ox = 0; ox < 2; ++ox) {
        const int x = x0 + ox, y = y0 + oy;
        if (x >= cx0 && x <= cx1 && y >= cy0 && y <= cy1) cv.set(x, y, c);
      }
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

// Printable ASCII only (stb_easy_font indexes a table by char - 32), at most 200 characters.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < 200; ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    out += (ch >= 32 && ch < 127) ? char(ch) : '?';
  }
  return out;
}

int textWidth(const std::string& s, int scale) {
  std::string t = printable(s);
  if (t.empty()) return 0;
  return (stb_easy_font_width(t.data()) - 1) * scale;  // without the last glyph's gap
}
int textHeight(int scale) { return kGlyphHeight * scale; }

// The text's glyph rectangles, in font units relative to its top-left corner.
struct Quad {
  int x0, y0, x1, y1;
};
std::vector<Quad> glyphQuads(const std::string& s) {
  std::string t = printable(s);
  std::vector<Quad> quads;
  if (t.empty()) return quads;
  std::vector<char> buf(t.size() * 1024 + 64);  // ~350 bytes a glyph in practice
  const int n = stb_easy_font_print(0, 0, t.data(), nullptr, buf.data(), int(buf.size()));
  for (int q = 0; q < n; ++q) {
    float x0 = std::numeric_limits<float>::max(), y0 = x0, x1 = -x0, y1 = -x0;
    for (int v = 0; v < 4; ++v) {
      float xy[2];
      std::memcpy(xy, buf.data() + (size_t(q) * 4 + size_t(v)) * 16, sizeof xy);
      x0 = std::min(x0, xy[0]), x1 = std::max(x1, xy[0]);
      y0 = std::min(y0, xy[1]), y1 = std::max(y1, xy[1]);
    }
    quads.push_back({int(std::lround(x0)), int(std::lround(y0)), int(std::lround(x1)),
                     int(std::lround(y1))});
  }
  return quads;
}

// Text with its top-left corner at (x, y), `scale` pixels per font unit.
void drawText(Canvas& cv, int x, int y, const std::string& s, int scale, const Rgb& c) {
  for (const Quad& q : glyphQuads(s))
    cv.fill(x + q.x0 * scale, y + q.y0 * scale, x + q.x1 * scale, y + q.y1 * scale, c);
}

// Text turned 90 degrees counter-clockwise (reads bottom to top), its bounding box's top-left
// corner at (x, y): the box is textHeight wide and textWidth tall.
void drawTextUp(Canvas& cv, int x, int y, const std::string& s, int scale, const Rgb& c) {
  const int len = textWidth(s, scale);
  for (const Quad& q : glyphQuads(s))
    for (int v = q.y0 * scale; v < q.y1 * scale; ++v)
      for (int u = q.x0 * scale; u < q.x1 * scale; ++u) cv.set(x + v, y + len - 1 - u, c);
}

// 1, 2 or 5 times a power of ten, at least raw.
double niceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw * (1 - 1e-12)) return m * p;
  return 10 * p;
}

// A tick label: as many decimals as the step needs, %g for huge or tiny magnitudes.
std::string tickLabel(double v, double step) {
  char buf[64];
  if (std::fabs(v) < step * 1e-9) v = 0;  // no "-0" or "1e-17"
  const double mag = std::max(std::fabs(v), step);
  if (mag >= 1e7 || step < 1e-6) {
    std::snprintf(buf, sizeof buf, "%g", v);
  } else {
    const int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step) - 1e-9));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

// Nearest-rank percentile of the finite values (q in (0, 1]); NaN when there are none.
double percentile(const std::vector<double>& y, double q) {
  std::vector<double> v;
  v.reserve(y.size());
  for (double d : y)
    if (std::isfinite(d)) v.push_back(d);
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t rank = std::max<size_t>(1, size_t(std::ceil(q * double(v.size()))));
  const size_t k = std::min(rank, v.size()) - 1;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
  return v[k];
}

}  // namespace

std::array<uint8_t, 3> plotSeriesColor(size_t index) { return kPalette[index % 8]; }

bool renderLinePlot(const std::vector<PlotSeries>& series, const PlotOptions& o,
                    std::vector<uint8_t>& rgb, std::string& error) {
  if (o.width < 200 || o.width > 8192 || o.height < 150 || o.height > 8192) {
    error = "plot size " + std::to_string(o.width) + "x" + std::to_string(o.height) +
            " is outside 200..8192 x 150..8192";
    return false;
  }
  if (series.empty()) {
    error = "nothing to plot (no series)";
    return false;
  }
  // Data range.
  size_t n = 0;
  double dataMin = std::numeric_limits<double>::infinity();
  double autoTop = -std::numeric_limits<double>::infinity();
  for (const PlotSeries& s : series) {
    n = std::max(n, s.y.size());
    for (double v : s.y)
      if (std::isfinite(v)) dataMin = std::min(dataMin, v);
    const double p = percentile(s.y, 0.999);
    if (std::isfinite(p)) autoTop = std::max(autoTop, p);
  }
  if (!std::isfinite(dataMin)) {
    error = "nothing to plot (no finite value in any series)";
    return false;
  }
  if (!std::isfinite(o.yMax) || o.yMax < 0) {
    error = "plot yMax must be finite and >= 0 (0 = automatic)";
    return false;
  }
  double yMin = std::min(0.0, dataMin);
  const bool autoY = o.yMax == 0;  // else yMax > 0 >= yMin

  // Text sizes: 2 pixels a font unit at the default 1200 x 600, the title one step larger.
  const int s = std::max(1, std::min(o.width / 600, o.height / 300));
  const int ts = s + 1;
  const int gap = 4 * s, tick = 3 * s;

  // Layout top to bottom: title, note line, plot area, x tick labels, x label.
  const int titleY = 3 * gap;
  const int noteY = titleY + textHeight(ts) + gap;
  const int py0 = noteY + textHeight(s) + 2 * gap;
  const int py1 = o.height - 1 - (tick + gap + textHeight(s) + 2 * gap + textHeight(s) + 2 * gap);
  if (py1 - py0 < 40) {
    error = "plot height " + std::to_string(o.height) + " leaves no room for the plot";
    return false;
  }

  // y ticks (the number depends on the plot's height).
  const int yTickCount = std::max(2, (py1 - py0) / (textHeight(s) * 4));
  double yTop = autoY ? autoTop : o.yMax;
  if (!(yTop > yMin)) yTop = yMin + 1;  // all values equal (e.g. all 0)
  const double yStep = niceStep((yTop - yMin) / yTickCount);
  if (autoY) yTop = std::ceil(yTop / yStep - 1e-9) * yStep;
  if (!(yTop > yMin)) yTop = yMin + yStep;
  if (yMin < 0) yMin = std::floor(yMin / yStep + 1e-9) * yStep;  // the bottom gets a label too
  std::vector<double> yTicks;
  for (double k = std::ceil(yMin / yStep - 1e-9); k * yStep <= yTop * (1 + 1e-12) + 1e-300 && yTicks.size() < 100; k += 1)
    yTicks.push_back(k * yStep);
  int yLabelW = 0;
  for (double v : yTicks) yLabelW = std::max(yLabelW, textWidth(tickLabel(v, yStep), s));

  const int px0 = 2 * gap + (o.yLabel.empty() ? 0 : textHeight(s) + 2 * gap) + yLabelW + gap + tick;
  const int px1 = o.width - 1 - 6 * gap;
  if (px1 - px0 < 40) {
    error = "plot width " + std::to_string(o.width) + " leaves no room for the plot";
    return false;
  }

  // x ticks: integers, spaced for the widest label.
  const double xMax = n > 1 ? double(n - 1) : 1;
  const int xLabelW = textWidth(tickLabel(xMax, 1), s) + 6 * gap;
  const int xTickCount = std::max(1, (px1 - px0) / std::max(1, xLabelW));
  const double xStep = std::max(1.0, niceStep(xMax / xTickCount));

  auto X = [&](double i) { return px0 + int(std::lround(i / xMax * (px1 - px0))); };
  auto Y = [&](double v) {
    return py1 - int(std::lround((std::min(v, yTop) - yMin) / (yTop - yMin) * (py1 - py0)));
  };

  rgb.assign(size_t(o.width) * size_t(o.height) * 3, 255);
  Canvas cv{o.width, o.height, rgb};

  // Grid, then the series, then axes and labels on top.
  for (double v : yTicks) cv.fill(px0, Y(v), px1 + 1, Y(v) + 1, kGrid);
  size_t clipped = 0;
  for (size_t si = 0; si < series.size(); ++si) {
    const Rgb c = plotSeriesColor(si);
    const std::vector<double>& y = series[si].y;
    bool havePrev = false;
    int lx = 0, ly = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      if (!std::isfinite(y[i])) {
        havePrev = false;
        continue;
      }
      if (y[i] > yTop) ++clipped;
      const int x = X(double(i)), yy = Y(y[i]);
      // The 2 x 2 stamp goes right and down: clip to the plot area plus that pixel.
      line(cv, havePrev ? lx : x, havePrev ? ly : yy, x, yy, c, px0, py0 - 1, px1 + 1, py1);
      lx = x, ly = yy, havePrev = true;
    }
  }
  cv.fill(px0 - 1, py0, px0 + 1, py1 + 1, kBlack);        // y axis, 2 px
  cv.fill(px0 - 1, py1, px1 + 1, py1 + 2, kBlack);        // x axis, 2 px
  for (double v : yTicks) {
    const int y = Y(v);
    cv.fill(px0 - 1 - tick, y, px0 - 1, y + 1, kBlack);
    const std::string l = tickLabel(v, yStep);
    drawText(cv, px0 - 1 - tick - gap - textWidth(l, s), y - 7 * s / 2, l, s, kText);
  }
  for (double k = 0; k * xStep <= xMax * (1 + 1e-12) && k < 1000; k += 1) {
    const double i = k * xStep;
    const int x = X(i);
    cv.fill(x, py1 + 2, x + 1, py1 + 2 + tick, kBlack);
    const std::string l = tickLabel(i, 1);
    drawText(cv, x - textWidth(l, s) / 2, py1 + 2 + tick + gap, l, s, kText);
  }
  if (!o.xLabel.empty())
    drawText(cv, (px0 + px1) / 2 - textWidth(o.xLabel, s) / 2,
             py1 + 2 + tick + gap + textHeight(s) + 2 * gap, o.xLabel, s, kText);
  if (!o.yLabel.empty())
    drawTextUp(cv, 2 * gap, (py0 + py1) / 2 - textWidth(o.yLabel, s) / 2, o.yLabel, s, kText);
  if (!o.title.empty())
    drawText(cv, o.width / 2 - textWidth(o.title, ts) / 2, titleY, o.title, ts, kBlack);
  if (clipped) {
    const std::string note = std::to_string(clipped) + (clipped == 1 ? " value" : " values") +
                             " above " + tickLabel(yTop, yStep) + " drawn at the top edge";
    drawText(cv, o.width / 2 - textWidth(note, s) / 2, noteY, note, s, kText);
  }

  // Legend: a swatch and the name per series, in the corner of the plot that hides the
  // fewest drawn data pixels (top-right on a tie).
  int nameW = 0;
  for (const PlotSeries& ps : series) nameW = std::max(nameW, textWidth(ps.name, s));
  const int swatch = 8 * gap, row = textHeight(s) + gap;
  const int boxW = gap + swatch + gap + nameW + 2 * gap;
  const int boxH = gap + int(series.size()) * row + gap;
  int bx0 = px1 - 2 * gap - boxW, by0 = py0 + 2 * gap;
  {
    const int left = px0 + 3 * gap, right = px1 - 2 * gap - boxW;
    const int top = py0 + 2 * gap, bottom = py1 - 2 * gap - boxH;
    const int corners[4][2] = {{right, top}, {left, top}, {right, bottom}, {left, bottom}};
    size_t best = std::numeric_limits<size_t>::max();
    for (const auto& c : corners) {
      size_t hidden = 0;
      for (int y = std::max(c[1], 0); y < std::min(c[1] + boxH, o.height); ++y)
        for (int x = std::max(c[0], 0); x < std::min(c[0] + boxW, o.width); ++x) {
          const uint8_t* p = &rgb[(size_t(y) * size_t(o.width) + size_t(x)) * 3];
          const Rgb v{p[0], p[1], p[2]};
          if (v != kWhite && v != kGrid) ++hidden;
        }
      if (hidden < best) best = hidden, bx0 = c[0], by0 = c[1];
    }
  }
  const int bx1 = bx0 + boxW;
  cv.fill(bx0, by0, bx1, by0 + boxH, kWhite);
  cv.fill(bx0, by0, bx1, by0 + 1, kLegendBorder);
  cv.fill(bx0, by0 + boxH - 1, bx1, by0 + boxH, kLegendBorder);
  cv.fill(bx0, by0, bx0 + 1, by0 + boxH, kLegendBorder);
  cv.fill(bx1 - 1, by0, bx1, by0 + boxH, kLegendBorder);
  for (size_t si = 0; si < series.size(); ++si) {
    const int ry = by0 + gap + int(si) * row;
    const int mid = ry + 7 * s / 2;
    cv.fill(bx0 + gap, mid - s - 1, bx0 + gap + swatch, mid + s + 1, plotSeriesColor(si));
    drawText(cv, bx0 + gap + swatch + gap, ry, series[si].name, s, kText);
  }
  return true;
}

namespace {
struct PngSink {
  std::FILE* f = nullptr;
  bool ok = true;
};
void pngWrite(void* context, void* data, int size) {
  auto* sink = static_cast<PngSink*>(context);
  if (size > 0 && std::fwrite(data, 1, size_t(size), sink->f) != size_t(size)) sink->ok = false;
}
}  // namespace

bool writeLinePlot(const std::string& png, const std::vector<PlotSeries>& series,
                   const PlotOptions& options, std::string& error) {
  std::vector<uint8_t> rgb;
  if (!renderLinePlot(series, options, rgb, error)) return false;
  PngSink sink;
  sink.f = std::fopen(png.c_str(), "wb");
  if (!sink.f) {
    error = "cannot write " + png + ": " + std::strerror(errno);
    return false;
  }
  const int encoded = stbi_write_png_to_func(pngWrite, &sink, options.width, options.height, 3,
                                             rgb.data(), options.width * 3);
  const int writeErrno = errno;
  const bool closed = std::fclose(sink.f) == 0;  // flushes: a full disk shows up here
  if (!encoded || !sink.ok || !closed) {
    error = "cannot write " + png + ": " +
            (!encoded ? std::string("PNG encoding failed")
                      : std::strerror(sink.ok ? errno : writeErrno));
    std::remove(png.c_str());
    return false;
  }
  return true;
}

}  // namespace hfbench
