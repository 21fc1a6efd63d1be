#version 450 core
// ocean_rows.comp - the ocean's GL compute step, pass 1 of 4 (host: src/render/gl/ocean_compute.cpp):
// one work group per row j of the N x N spectrum makes h(k, t) and the three packed spectra of
// hfr::OceanSimulation::evaluate (render/ocean/ocean.cpp, the same arithmetic as cuda/ocean.cu),
// and inverse-transforms the row; ocean_columns.comp transforms the columns.
layout(local_size_x = FFT_THREADS) in;

#include "ocean_fft.glsl"

layout(std430, binding = 0) readonly buffer Amplitudes { vec2 h0[]; };   // N^2, FFT order
layout(std430, binding = 1) readonly buffer Waves { vec4 waves[]; };     // (omega, kx, ky, 0)
layout(std430, binding = 3) writeonly buffer Packed { vec2 transformed[]; };  // 3 N^2

uniform double uSeconds;
uniform float uChoppiness;

void main() {
  const uint j = gl_WorkGroupID.x;
  for (uint i = gl_LocalInvocationID.x; i < N; i += FFT_THREADS) {
    const uint at = j * N + i;
    const uint neg = ((N - j) % N) * N + (N - i) % N;
    const vec4 wave = waves[at];
    // w t in double, reduced to whole turns before the float sine (t grows without bound).
    double turns = double(wave.x) * uSeconds * 0.15915494309189533577LF;
    turns -= floor(turns);
    const float phase = 6.2831853071795865 * float(turns);
    const vec2 e = vec2(cos(phase), sin(phase));
    const vec2 h = cmul(h0[at], e) + cmul(conjugate(h0[neg]), conjugate(e));
    const float kx = wave.y, ky = wave.z;
    const float k = sqrt(kx * kx + ky * ky);
    // i kx h = (-kx h.y, kx h.x); -i u h = (u h.y, -u h.x).
    const vec2 sx = vec2(-kx * h.y, kx * h.x), sy = vec2(-ky * h.y, ky * h.x);
    vec2 dx = vec2(0.0), dy = vec2(0.0);
    if (k > 0.0) {
      const float ux = kx / k * uChoppiness, uy = ky / k * uChoppiness;
      dx = vec2(ux * h.y, -ux * h.x);
      dy = vec2(uy * h.y, -uy * h.x);
    }
    const uint r = reversed(i);
    line[0][r] = vec2(h.x - sx.y, h.y + sx.x);    // h + i sx
    line[1][r] = vec2(sy.x - dx.y, sy.y + dx.x);  // sy + i dx
    line[2][r] = dy;
  }
  inverseFft3();
  for (uint i = gl_LocalInvocationID.x; i < N; i += FFT_THREADS)
    for (uint f = 0u; f < 3u; ++f) transformed[f * N * N + j * N + i] = line[f][i];
}
