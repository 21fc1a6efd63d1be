// plot.h - a small line-plot PNG writer for benchmark reports (frame times of a flythrough, per
// strategy). No dependencies beyond Debian's libstb-dev headers: text is stb_easy_font's
// quads filled into the RGB buffer, the file is written by stb_image_write. Library hf_plot
// (tools/hfbench/CMakeLists.txt), tested by tests/hfbench_plot_test.cpp (label "hfbench").
//
// The picture: white background, title on top, y axis on the left with ticks, numeric labels
// and light grid lines, x axis below (x = the sample index: frame 0, 1, ...), axis labels,
// one 2-pixel line per series in a distinct colour (plotSeriesColor: 8 colours, then they
// repeat), a legend box in the plot's top-right corner. Non-finite values leave a gap.
//
// y range: from min(0, smallest value) to yMax. yMax = 0 means automatic: the largest of the
// series' 99.9th percentiles rounded up to a tick, so one stall of 500 ms does not squash a
// thousand 16 ms frames into the bottom row. Values above yMax are drawn on the top edge
// and counted in a note under the title ("3 values above 40 drawn at the top").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hfbench {

struct PlotSeries {
  std::string name;
  std::vector<double> y;  // x = index
};

struct PlotOptions {
  std::string title;
  std::string xLabel;
  std::string yLabel;
  int width = 1200;   // pixels, 200..8192
  int height = 600;   // pixels, 150..8192
  double yMax = 0;    // top of the y axis; 0 = automatic (see above)
};

// Renders the plot into `rgb` (width * height * 3 bytes, rows top to bottom). False with a
// one-line error when there is nothing to draw (no series, no finite value), the size is out
// of range, or yMax is negative or non-finite.
bool renderLinePlot(const std::vector<PlotSeries>& series, const PlotOptions& options,
                    std::vector<uint8_t>& rgb, std::string& error);

// renderLinePlot, then the PNG file `png` (RGB, 8 bits). False with a one-line error
// ("cannot write P: reason") when the file cannot be written.
bool writeLinePlot(const std::string& png, const std::vector<PlotSeries>& series,
                   const PlotOptions& options, std::string& error);

// The colour of series `index` (RGB), as drawn in the lines and the legend.
std::array<uint8_t, 3> plotSeriesColor(size_t index);

}  // namespace hfbench
