// relief.h - a colour image made from a height field: hypsometric tint and hill shading, the
// imagery of the synthetic terrain (hfterrain --imagery) so that the built-in terrain can be
// flown with imagery like the real DEM + imagery pairs (issue 12's flythrough targets).
//
// Colour: sea (exactly 0 m, the terrain's sea) is a depth-less ocean blue; land runs through a
// classic hypsometric ramp (lowland green, upland yellow-brown, rock grey, snow white) by height
// as a fraction of the highest sample, multiplied by a Lambert hill shade (sun from the
// north-west, 45 degrees up) with a little ambient light, so the relief reads as it would on a
// topographic map. Deterministic; rows are split over threads (same output for any count).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hfterrain {

// `heights`: size * size samples, row-major (row 0 = north), metres; `cellMetres`: the sample
// spacing. Fills `rgb` with size * size * 3 bytes.
void shadedRelief(const std::vector<uint16_t>& heights, int size, double cellMetres, std::vector<uint8_t>& rgb);

// Writes `rgb` (width * height * 3) as a binary PPM (P6: read by GDAL's PNM driver and by
// stb_image, so by hfpack with and without GDAL), through "<path>.tmp" renamed into place.
bool writePpm(const std::string& path, const std::vector<uint8_t>& rgb, int width, int height, std::string& why);

}  // namespace hfterrain
