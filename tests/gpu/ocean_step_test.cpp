// ocean_step_test.cpp - the ocean's per-frame fields on the GPU (gpu/ocean_step.h) against the
// CPU ocean (render/ocean/ocean.h, FFTW): the same spectrum evaluated at the same times gives the
// same fields up to float rounding; surfaces get exactly what arrays get; bad arguments are
// refused. OceanStepDevice.* need a device (run by scripts/device-check).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/ocean_step.h"
#include "gpu_test_util.h"
#include "render/ocean/ocean.h"

namespace {

hfgpu::OceanSpectrumHost view(const hfr::OceanSpectrum& s) {
  return {s.size, reinterpret_cast<const float2*>(s.h0.data()), s.omega.data(), s.kx.data(), s.ky.data()};
}

struct GpuFields {
  std::vector<float4> fields;
  std::vector<float> height;
};

GpuFields evaluate(hfgpu::OceanStep& step, double seconds) {
  const size_t count = size_t(step.size()) * size_t(step.size());
  hfgpu::DeviceBuffer<float4> fields(count);
  hfgpu::DeviceBuffer<float> height(count);
  hfgpu::Stream stream;
  step.writeArrays(seconds, fields.get(), height.get(), stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  GpuFields out{std::vector<float4>(count), std::vector<float>(count)};
  CUDA_CHECK(cudaMemcpy(out.fields.data(), fields.get(), fields.bytes(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(out.height.data(), height.get(), height.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

// RMS of (got - want) relative to the RMS of want.
template <class Get>
double relativeRms(const std::vector<float>& want, Get got) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got(i)) - double(want[i]);
    err += d * d;
    ref += double(want[i]) * double(want[i]);
  }
  return ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
}

TEST(OceanStep, BadArgumentsAreRefused) {
  hfr::OceanParams p;
  p.size = 32;
  const hfr::OceanSpectrum s = hfr::makeOceanSpectrum(p);
  hfgpu::OceanSpectrumHost v = view(s);
  v.size = 48;
  EXPECT_THROW(hfgpu::OceanStep(v, 1.0f), std::invalid_argument);
  v.size = 2048;
  EXPECT_THROW(hfgpu::OceanStep(v, 1.0f), std::invalid_argument);
  v = view(s);
  v.kx = nullptr;
  EXPECT_THROW(hfgpu::OceanStep(v, 1.0f), std::invalid_argument);
  EXPECT_THROW(hfgpu::OceanStep(view(s), -1.0f), std::invalid_argument);
  EXPECT_THROW(hfgpu::OceanStep(view(s), NAN), std::invalid_argument);
}

TEST(OceanStepDevice, MatchesTheCpuOceanAtAnyTime) {
  HF_REQUIRE_CUDA_DEVICE();
  for (int size : {16, 128, 512}) {
    hfr::OceanParams p;
    p.size = size;
    p.windSpeed = 12;
    p.windDirection = 30;
    p.choppiness = 1.5;
    const hfr::OceanSpectrum spectrum = hfr::makeOceanSpectrum(p);
    hfgpu::OceanStep step(view(spectrum), float(p.choppiness));
    hfr::OceanSimulation cpu(p);
    for (double t : {0.0, 2.5, 3600.75}) {
      SCOPED_TRACE("size " + std::to_string(size) + " t " + std::to_string(t));
      hfr::OceanFrame want;
      cpu.evaluate(t, want);
      const GpuFields got = evaluate(step, t);
      // Float FFTs of 2 x 10^5 points lose ~1e-7 in RMS; the phases agree to ~1e-6 rad after
      // an hour (both reduce w t in double). A wrong sign, packing or index is O(1).
      const double tol = 2e-5;
      EXPECT_LT(relativeRms(want.height, [&](size_t i) { return got.height[i]; }), tol);
      EXPECT_LT(relativeRms(want.slopeX, [&](size_t i) { return got.fields[i].x; }), tol);
      EXPECT_LT(relativeRms(want.slopeY, [&](size_t i) { return got.fields[i].y; }), tol);
      EXPECT_LT(relativeRms(want.dispX, [&](size_t i) { return got.fields[i].z; }), tol);
      EXPECT_LT(relativeRms(want.dispY, [&](size_t i) { return got.fields[i].w; }), tol);
      // The fields are not trivially zero (the comparison above would then be empty).
      double rms = 0;
      for (float h : want.height) rms += double(h) * double(h);
      EXPECT_GT(std::sqrt(rms / double(want.height.size())), 0.1 * cpu.rmsHeight());
    }
  }
}

TEST(OceanStepDevice, SurfacesGetWhatArraysGet) {
  HF_REQUIRE_CUDA_DEVICE();
  hfr::OceanParams p;
  p.size = 256;
  const hfr::OceanSpectrum spectrum = hfr::makeOceanSpectrum(p);
  hfgpu::OceanStep step(view(spectrum), 1.0f);
  const int n = p.size;
  cudaArray_t fieldsArray = nullptr, heightArray = nullptr;
  const cudaChannelFormatDesc f4 = cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
  const cudaChannelFormatDesc f1 = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  CUDA_CHECK(cudaMallocArray(&fieldsArray, &f4, size_t(n), size_t(n), cudaArraySurfaceLoadStore));
  CUDA_CHECK(cudaMallocArray(&heightArray, &f1, size_t(n), size_t(n), cudaArraySurfaceLoadStore));
  auto surface = [](cudaArray_t a) {
    cudaResourceDesc r{};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaSurfaceObject_t s = 0;
    CUDA_CHECK(cudaCreateSurfaceObject(&s, &r));
    return s;
  };
  const cudaSurfaceObject_t fs = surface(fieldsArray), hs = surface(heightArray);
  hfgpu::Stream stream;
  step.writeSurfaces(7.25, fs, hs, stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  std::vector<float4> fields(size_t(n) * size_t(n));
  std::vector<float> height(fields.size());
  CUDA_CHECK(cudaMemcpy2DFromArray(fields.data(), size_t(n) * sizeof(float4), fieldsArray, 0, 0,
                                   size_t(n) * sizeof(float4), size_t(n), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy2DFromArray(height.data(), size_t(n) * sizeof(float), heightArray, 0, 0,
                                   size_t(n) * sizeof(float), size_t(n), cudaMemcpyDeviceToHost));
  const GpuFields want = evaluate(step, 7.25);
  size_t differ = 0;
  for (size_t i = 0; i < fields.size(); ++i)
    differ += fields[i].x != want.fields[i].x || fields[i].y != want.fields[i].y || fields[i].z != want.fields[i].z ||
              fields[i].w != want.fields[i].w || height[i] != want.height[i];
  EXPECT_EQ(differ, 0u);
  CUDA_CHECK(cudaDestroySurfaceObject(fs));
  CUDA_CHECK(cudaDestroySurfaceObject(hs));
  CUDA_CHECK(cudaFreeArray(fieldsArray));
  CUDA_CHECK(cudaFreeArray(heightArray));
}

// writeSurfaceMips: level 0 is what arrays get, every level below the box-filtered level above
// (exactly: the same float operations in the same order), at every size (16 has no tile
// reduction across blocks; 1024 has the most), twice in a row (the block counter resets).
TEST(OceanStepDevice, MipChainIsTheBoxFilteredFields) {
  HF_REQUIRE_CUDA_DEVICE();
  for (int n : {16, 32, 64, 128, 256, 512, 1024}) {
    hfr::OceanParams p;
    p.size = n;
    const hfr::OceanSpectrum spectrum = hfr::makeOceanSpectrum(p);
    hfgpu::OceanStep step(view(spectrum), 1.0f);
    int levels = 1;
    while ((n >> levels) > 0) ++levels;
    const cudaChannelFormatDesc f4 = cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
    cudaMipmappedArray_t mip = nullptr;
    const cudaExtent extent{size_t(n), size_t(n), 0};
    CUDA_CHECK(cudaMallocMipmappedArray(&mip, &f4, extent, unsigned(levels), cudaArraySurfaceLoadStore));
    const size_t levelCount = static_cast<size_t>(levels);
    std::vector<cudaArray_t> arrays(levelCount);
    std::vector<cudaSurfaceObject_t> surfaces(levelCount);
    for (int l = 0; l < levels; ++l) {
      CUDA_CHECK(cudaGetMipmappedArrayLevel(&arrays[size_t(l)], mip, unsigned(l)));
      cudaResourceDesc r{};
      r.resType = cudaResourceTypeArray;
      r.res.array.array = arrays[size_t(l)];
      CUDA_CHECK(cudaCreateSurfaceObject(&surfaces[size_t(l)], &r));
    }
    EXPECT_THROW(step.writeSurfaceMips(1.0, surfaces.data(), levels - 1, 0, nullptr), std::invalid_argument);
    hfgpu::Stream stream;
    for (double seconds : {3.0, 11.5}) {
      step.writeSurfaceMips(seconds, surfaces.data(), levels, 0, stream.get());
      CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      std::vector<float4> want = evaluate(step, seconds).fields;
      for (int l = 0; l < levels; ++l) {
        const int side = n >> l;
        std::vector<float4> got(size_t(side) * size_t(side));
        CUDA_CHECK(cudaMemcpy2DFromArray(got.data(), size_t(side) * sizeof(float4), arrays[size_t(l)], 0, 0,
                                         size_t(side) * sizeof(float4), size_t(side), cudaMemcpyDeviceToHost));
        if (l > 0) {  // want: the box filter of the level above
          const int above = side * 2;
          std::vector<float4> next(got.size());
          auto m = [](float a, float b, float c, float d) { return ((a + b) + (c + d)) * 0.25f; };
          for (int y = 0; y < side; ++y)
            for (int x = 0; x < side; ++x) {
              const float4 a = want[size_t(2 * y) * size_t(above) + size_t(2 * x)];
              const float4 b = want[size_t(2 * y) * size_t(above) + size_t(2 * x + 1)];
              const float4 c = want[size_t(2 * y + 1) * size_t(above) + size_t(2 * x)];
              const float4 d = want[size_t(2 * y + 1) * size_t(above) + size_t(2 * x + 1)];
              next[size_t(y) * size_t(side) + size_t(x)] =
                  float4{m(a.x, b.x, c.x, d.x), m(a.y, b.y, c.y, d.y), m(a.z, b.z, c.z, d.z), m(a.w, b.w, c.w, d.w)};
            }
          want = std::move(next);
        }
        size_t differ = 0;
        for (size_t i = 0; i < got.size(); ++i)
          differ += got[i].x != want[i].x || got[i].y != want[i].y || got[i].z != want[i].z || got[i].w != want[i].w;
        EXPECT_EQ(differ, 0u) << "size " << n << " level " << l << " at " << seconds << " s";
      }
    }
    for (cudaSurfaceObject_t s : surfaces) CUDA_CHECK(cudaDestroySurfaceObject(s));
    CUDA_CHECK(cudaFreeMipmappedArray(mip));
  }
}

}  // namespace
