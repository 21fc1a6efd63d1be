// ocean_test.cpp - the ocean surface (render/ocean/ocean.h): its fields against the properties
// of the model (heights with the RMS asked for, slopes that are the heights' derivatives,
// displacements linear in the choppiness, waves along the wind), determinism, and the worker.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <stdexcept>
#include <string>

#include "render/ocean/ocean.h"

namespace {

using hfr::OceanFrame;
using hfr::OceanParams;
using hfr::OceanSimulation;

double rms(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * double(x);
  return std::sqrt(s / double(v.size()));
}
double mean(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x);
  return s / double(v.size());
}

OceanFrame evaluate(const OceanParams& p, double t) {
  OceanSimulation sim(p);
  OceanFrame f;
  sim.evaluate(t, f);
  return f;
}

TEST(Ocean, HeightsHaveTheRmsOfTheSeaStateAndNoMean) {
  OceanParams p;
  p.size = 128;
  p.patchMetres = 400;
  for (double wind : {5.0, 10.0, 20.0}) {
    p.windSpeed = wind;
    OceanSimulation sim(p);
    // Pierson-Moskowitz: Hs = 0.21 V^2 / g, RMS = Hs / 4.
    EXPECT_NEAR(sim.rmsHeight(), 0.21 * wind * wind / 9.81 / 4, 1e-9);
    for (double t : {0.0, 3.7, 1000.5}) {
      OceanFrame f;
      sim.evaluate(t, f);
      ASSERT_EQ(f.height.size(), size_t(128 * 128));
      EXPECT_EQ(f.time, t);
      // One realisation: its RMS scatters around the expected one.
      EXPECT_NEAR(rms(f.height), sim.rmsHeight(), 0.35 * sim.rmsHeight()) << "wind " << wind << " t " << t;
      EXPECT_NEAR(mean(f.height), 0.0, 1e-4 * (1 + sim.rmsHeight()));
    }
  }
}

// One Fourier coefficient of a field (direct sum): F(kx, ky) = sum f(x) e^{-i k.x} / n^2.
std::complex<double> mode(const std::vector<float>& f, int n, int mx, int my) {
  std::complex<double> s = 0;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double a = -2 * 3.14159265358979323846 * double(mx * x + my * y) / n;
      s += double(f[size_t(y) * size_t(n) + size_t(x)]) * std::complex<double>(std::cos(a), std::sin(a));
    }
  return s / double(n * n);
}

// The slopes are the heights' derivatives and the displacements -i k / |k| times them, mode by
// mode (the strongest modes of this realisation, and a weak one).
TEST(Ocean, SlopesAndDisplacementsAreTheSpectralDerivativesOfTheHeights) {
  OceanParams p;
  p.size = 32;
  p.patchMetres = 100;
  p.windSpeed = 8;
  p.windDirection = 30;
  p.choppiness = 1.5;
  const OceanFrame f = evaluate(p, 2.5);
  const int n = f.size;
  const std::complex<double> i1(0, 1);
  int checked = 0;
  for (int my = -3; my <= 3; ++my)
    for (int mx = -3; mx <= 3; ++mx) {
      if (mx == 0 && my == 0) continue;
      const std::complex<double> h = mode(f.height, n, mx, my);
      if (std::abs(h) < 1e-4) continue;
      const double kx = 2 * 3.14159265358979323846 * mx / p.patchMetres, ky = 2 * 3.14159265358979323846 * my / p.patchMetres;
      const double k = std::hypot(kx, ky);
      const double tol = 1e-3 * std::abs(h) * (1 + k);
      EXPECT_LT(std::abs(mode(f.slopeX, n, mx, my) - i1 * kx * h), tol) << mx << "," << my;
      EXPECT_LT(std::abs(mode(f.slopeY, n, mx, my) - i1 * ky * h), tol) << mx << "," << my;
      EXPECT_LT(std::abs(mode(f.dispX, n, mx, my) + i1 * (kx / k) * p.choppiness * h), 10 * tol) << mx << "," << my;
      EXPECT_LT(std::abs(mode(f.dispY, n, mx, my) + i1 * (ky / k) * p.choppiness * h), 10 * tol) << mx << "," << my;
      ++checked;
    }
  EXPECT_GT(checked, 10);
}

TEST(Ocean, DisplacementsScaleWithChoppinessAndWavesFollowTheWind) {
  OceanParams p;
  p.size = 64;
  p.windDirection = 0;  // towards +x
  p.choppiness = 0;
  const OceanFrame flat = evaluate(p, 1);
  EXPECT_EQ(rms(flat.dispX), 0.0);
  EXPECT_EQ(rms(flat.dispY), 0.0);
  p.choppiness = 1;
  const OceanFrame one = evaluate(p, 1);
  p.choppiness = 2;
  const OceanFrame two = evaluate(p, 1);
  EXPECT_GT(rms(one.dispX), 0.0);
  for (size_t i = 0; i < one.dispX.size(); ++i) {
    ASSERT_NEAR(double(two.dispX[i]), 2 * double(one.dispX[i]), 1e-5 + 1e-5 * std::fabs(double(one.dispX[i])));
    ASSERT_EQ(two.height[i], one.height[i]);  // heights do not depend on the choppiness
  }
  // Crests run across the wind: with the cos^2 spreading of the Phillips spectrum the slope
  // variance along the wind is 3x that across it (RMS sqrt(3) = 1.73x; one realisation scatters).
  EXPECT_GT(rms(one.slopeX), 1.4 * rms(one.slopeY));
  EXPECT_GT(rms(one.dispX), 1.4 * rms(one.dispY));
  p.windDirection = 90;
  const OceanFrame north = evaluate(p, 1);
  EXPECT_GT(rms(north.slopeY), 1.4 * rms(north.slopeX));
}

TEST(Ocean, DeterministicPerSeedAndMovingInTime) {
  OceanParams p;
  p.size = 32;
  const OceanFrame a = evaluate(p, 4), b = evaluate(p, 4), later = evaluate(p, 4.5);
  EXPECT_EQ(a.height, b.height);
  EXPECT_NE(a.height, later.height);
  p.seed = 2;
  EXPECT_NE(evaluate(p, 4).height, a.height);
  p.amplitude = 0;
  EXPECT_EQ(rms(evaluate(p, 4).height), 0.0);
}

TEST(Ocean, BadParametersAreRefusedWithTheirName) {
  auto message = [](OceanParams p) {
    try {
      OceanSimulation sim(p);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  OceanParams p;
  p.size = 100;
  EXPECT_NE(message(p).find("size"), std::string::npos);
  p = OceanParams{};
  p.windSpeed = 0;
  EXPECT_NE(message(p).find("wind speed"), std::string::npos);
  p = OceanParams{};
  p.windSpeed = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(message(p).find("wind speed"), std::string::npos);
  p = OceanParams{};
  p.choppiness = -1;
  EXPECT_NE(message(p).find("choppiness"), std::string::npos);
  p = OceanParams{};
  p.patchMetres = 0;
  EXPECT_NE(message(p).find("patch"), std::string::npos);
}

TEST(OceanWorker, GivesTheFrameAskedForAndKeepsGoingAfterABadChange) {
  OceanParams p;
  p.size = 32;
  hfr::OceanWorker worker(p);
  OceanFrame f;
  EXPECT_FALSE(worker.take(f));
  worker.request(1.25);
  worker.wait();
  ASSERT_TRUE(worker.take(f));
  EXPECT_EQ(f.time, 1.25);
  EXPECT_EQ(f.height, evaluate(p, 1.25).height);
  EXPECT_FALSE(worker.take(f));  // nothing newer
  OceanParams bad = p;
  bad.windSpeed = 100;
  worker.setParams(bad);
  worker.request(2);
  worker.wait();
  EXPECT_NE(worker.error().find("wind speed"), std::string::npos);
  ASSERT_TRUE(worker.take(f));
  EXPECT_EQ(f.height, evaluate(p, 2).height);  // the previous spectrum
  p.windSpeed = 12;
  worker.setParams(p);
  worker.request(3);
  worker.wait();
  EXPECT_EQ(worker.error(), "");
  ASSERT_TRUE(worker.take(f));
  EXPECT_EQ(f.height, evaluate(p, 3).height);
}

}  // namespace
