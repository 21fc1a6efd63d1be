// hfterrain's GPU fields (gpu/spectral_field.h) against FFTW's complex-to-real inverse in double
// of the same half spectrum (gpu/spectral_core.h), as tools/hfterrain/terrain.cpp computes it:
// grids that are powers of two and 2..6 times one (the four-step split, forced at small sizes
// through maxLinePoints), crops smaller than the period. Device only (skips elsewhere);
// the spectrum's formulas run on the CPU in every build through the reference.
#include <fftw3.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/spectral_core.h"
#include "gpu/spectral_field.h"
#include "gpu_test_util.h"

namespace {

// FFTW's c2r of the half spectrum, cropped to tile x tile (terrain.cpp's field() before its
// normalisation).
std::vector<double> reference(const hfspectral::FieldSpec& spec, int tile) {
  const int m = spec.m, half = m / 2 + 1;
  std::vector<fftw_complex> spectrum(size_t(m) * size_t(half));
  std::vector<double> grid(size_t(m) * size_t(m));
  fftw_plan plan = fftw_plan_dft_c2r_2d(m, m, spectrum.data(), grid.data(), FFTW_ESTIMATE);
  for (int ky = 0; ky < m; ++ky)
    for (int kx = 0; kx < half; ++kx) {
      fftw_complex& c = spectrum[size_t(ky) * size_t(half) + size_t(kx)];
      hfspectral::bin(spec, ky, kx, c[0], c[1]);
    }
  fftw_execute(plan);
  fftw_destroy_plan(plan);
  std::vector<double> out(size_t(tile) * size_t(tile));
  for (int y = 0; y < tile; ++y)
    for (int x = 0; x < tile; ++x) out[size_t(y) * size_t(tile) + size_t(x)] = grid[size_t(y) * size_t(m) + size_t(x)];
  return out;
}

TEST(SpectralFieldDevice, EqualsFftwC2rOfTheSameSpectrum) {
  HF_REQUIRE_CUDA_DEVICE();
  struct Case {
    int m, tile, maxLine;
  };
  const Case cases[] = {{48, 41, 8192},    {64, 64, 8192},     {256, 200, 128},     {384, 300, 128},
                        {512, 500, 128},    {320, 300, 64},     {3072, 3000, 8192},  {4096, 4000, 8192},
                        {12288, 11000, 8192}, {16384, 15000, 8192}, {6144, 6000, 1024}};
  for (const Case& c : cases) {
    SCOPED_TRACE("m " + std::to_string(c.m) + ", tile " + std::to_string(c.tile) + ", lines <= " +
                 std::to_string(c.maxLine));
    hfspectral::FieldSpec spec;
    spec.m = c.m;
    spec.perTile = double(c.tile) / c.m;
    spec.beta = 2.2;
    spec.fLow = c.m > 1000 ? 3.0 : 0.0;
    spec.state = 0x1234567890abcdefull + uint64_t(c.m);
    ASSERT_TRUE(hfgpu::spectralGridSupported(c.m));
    std::vector<double> got;
    std::string error;
    ASSERT_TRUE(hfgpu::spectralField(spec, c.tile, got, error, c.maxLine)) << error;
    const std::vector<double> want = reference(spec, c.tile);
    ASSERT_EQ(got.size(), want.size());
    double e2 = 0, w2 = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const double d = got[i] - want[i];
      e2 += d * d;
      w2 += want[i] * want[i];
      worst = std::max(worst, std::fabs(d));
    }
    const double rms = std::sqrt(w2 / double(want.size()));
    const double rel = std::sqrt(e2 / std::max(w2, 1e-300));
    std::printf("m %5d tile %5d lines <= %5d: relative RMS error %.2e, worst %.2e of the RMS\n", c.m, c.tile,
                c.maxLine, rel, worst / rms);
    // Double all the way, like FFTW's: ~1e-16 per pass. A float stage anywhere would show as
    // 1e-7, which put a few coast samples of the 16385^2 terrain on the other side of the sea level.
    EXPECT_LT(rel, 1e-13);
    EXPECT_LT(worst / rms, 1e-11);  // and no sample far off (a wrong twiddle or order is O(1))
  }
}

TEST(SpectralFieldDevice, RefusesWhatItCannotDo) {
  EXPECT_FALSE(hfgpu::spectralGridSupported(112));    // 7 x 16
  EXPECT_FALSE(hfgpu::spectralGridSupported(24));     // 3 x 8: columns go in groups of 16
  EXPECT_FALSE(hfgpu::spectralGridSupported(57344));  // 7 x 8192
  EXPECT_TRUE(hfgpu::spectralGridSupported(40960));   // 5 x 8192
  EXPECT_TRUE(hfgpu::spectralGridSupported(49152));   // the 32769^2 terrain's grid
  EXPECT_TRUE(hfgpu::spectralGridSupported(24576));   // the 16385^2 terrain's
  EXPECT_TRUE(hfgpu::spectralGridSupported(49152));   // 6 x 8192: lines of doubles stop at 8192
  EXPECT_FALSE(hfgpu::spectralGridSupported(65536));  // 8 x 8192, and above the 2D grids' 65535
  hfspectral::FieldSpec spec;
  spec.m = 96;
  std::vector<double> out;
  std::string error;
  EXPECT_FALSE(hfgpu::spectralField(spec, 97, out, error));  // tile larger than the period
  EXPECT_NE(error.find("tile"), std::string::npos) << error;
  spec.m = 112;
  EXPECT_FALSE(hfgpu::spectralField(spec, 50, out, error));
  EXPECT_NE(error.find("112"), std::string::npos) << error;
}

}  // namespace
