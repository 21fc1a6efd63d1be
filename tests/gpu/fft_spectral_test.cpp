// hfterrain's GPU fields (gpu/spectral_field.h) against FFTW's complex-to-real inverse in double
// of the same half spectrum (gpu/spectral_core.h), as tools/hfterrain/terrain.cpp computes it:
// grids that are powers of two and 2, 3 or 4 times one (the four-step split, forced at small
// sizes through maxLinePoints), crops smaller than the period. Device only (skips elsewhere);
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

// The GPU's float spectrum (binFloat) against the CPU's double one (bin), bin by bin, on the
// host (CI): the same draws, shaped the same, to float rounding (relative to the largest bin).
TEST(SpectralCore, FloatBinsEqualDoubleBins) {
  for (const double beta : {1.8, 2.4})
    for (const int m : {48, 1024}) {
      hfspectral::FieldSpec spec;
      spec.m = m;
      spec.perTile = 0.83;
      spec.beta = beta;
      spec.fLow = 1.5;
      spec.fHigh = m / 3.0;
      spec.state = 0x1234567890abcdefull + uint64_t(m);
      double worst = 0, largest = 0;
      for (int ky = 0; ky < m; ++ky)
        for (int kx = 0; kx <= m / 2; ++kx) {
          double re, im;
          float fr, fi;
          hfspectral::bin(spec, ky, kx, re, im);
          hfspectral::binFloat(spec, ky, kx, fr, fi);
          worst = std::max(worst, std::hypot(double(fr) - re, double(fi) - im));
          largest = std::max(largest, std::hypot(re, im));
        }
      ASSERT_GT(largest, 0);
      EXPECT_LT(worst / largest, 2e-6) << "m " << m << " beta " << beta;
    }
  // Draws at the ends of (0, 1): the first ones of some generator states are tiny or near 1; the
  // radius stays finite, and the DC bin is 0 whatever the draw.
  hfspectral::FieldSpec spec;
  spec.m = 64;
  for (uint64_t state = 0; state < 200000; ++state) {
    spec.state = state * 0x9E3779B97F4A7C15ull;
    for (int kx : {0, 1}) {
      float fr, fi;
      hfspectral::binFloat(spec, 0, kx, fr, fi);
      ASSERT_TRUE(std::isfinite(fr) && std::isfinite(fi)) << "state " << spec.state << " kx " << kx;
      if (kx == 0) {
        ASSERT_TRUE(fr == 0.0f && fi == 0.0f);
      }
    }
  }
}

TEST(SpectralFieldDevice, EqualsFftwC2rOfTheSameSpectrum) {
  HF_REQUIRE_CUDA_DEVICE();
  struct Case {
    int m, tile, maxLine;
  };
  const Case cases[] = {{48, 41, 16384},   {64, 64, 16384},    {256, 200, 128},   {384, 300, 128},
                        {512, 500, 128},   {3072, 3000, 16384}, {4096, 4000, 16384}, {12288, 11000, 16384},
                        {16384, 15000, 16384}};
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
    std::vector<float> got;
    std::string error;
    ASSERT_TRUE(hfgpu::spectralField(spec, c.tile, got, error, c.maxLine)) << error;
    const std::vector<double> want = reference(spec, c.tile);
    ASSERT_EQ(got.size(), want.size());
    double e2 = 0, w2 = 0, worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const double d = double(got[i]) - want[i];
      e2 += d * d;
      w2 += want[i] * want[i];
      worst = std::max(worst, std::fabs(d));
    }
    const double rms = std::sqrt(w2 / double(want.size()));
    const double rel = std::sqrt(e2 / std::max(w2, 1e-300));
    std::printf("m %5d tile %5d lines <= %5d: relative RMS error %.2e, worst %.2e of the RMS\n", c.m, c.tile,
                c.maxLine, rel, worst / rms);
    EXPECT_LT(rel, 2e-6);          // float FFTs: ~1e-7 per pass
    EXPECT_LT(worst / rms, 5e-5);  // and no sample far off (a wrong twiddle or order is O(1))
  }
}

TEST(SpectralFieldDevice, RefusesWhatItCannotDo) {
  EXPECT_FALSE(hfgpu::spectralGridSupported(80));     // 5 x 16
  EXPECT_FALSE(hfgpu::spectralGridSupported(24));     // 3 x 8: columns go in groups of 16
  EXPECT_FALSE(hfgpu::spectralGridSupported(163840));  // 10 x 16384
  EXPECT_TRUE(hfgpu::spectralGridSupported(49152));   // the 32769^2 terrain's grid
  EXPECT_TRUE(hfgpu::spectralGridSupported(24576));   // the 16385^2 terrain's
  EXPECT_FALSE(hfgpu::spectralGridSupported(65536));  // 4 x 16384: above the 2D grids' 65535
  hfspectral::FieldSpec spec;
  spec.m = 96;
  std::vector<float> out;
  std::string error;
  EXPECT_FALSE(hfgpu::spectralField(spec, 97, out, error));  // tile larger than the period
  EXPECT_NE(error.find("tile"), std::string::npos) << error;
  spec.m = 80;
  EXPECT_FALSE(hfgpu::spectralField(spec, 50, out, error));
  EXPECT_NE(error.find("80"), std::string::npos) << error;
}

}  // namespace
