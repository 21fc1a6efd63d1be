#version 450 core
// ocean_columns.comp - the ocean's GL compute step, pass 2 of 4: one work group per column x
// inverse-transforms the three packed columns that ocean_rows.comp left, and writes the fields
// texel (dh/dx, dh/dy, Dx, Dy) = (Im a, Re b, Im b, Re c) into level 0 of the fields texture.
layout(local_size_x = FFT_THREADS) in;

#include "ocean_fft.glsl"

layout(std430, binding = 3) readonly buffer Packed { vec2 transformed[]; };  // 3 N^2
layout(rgba32f, binding = 0) writeonly uniform image2D uFields;        // level 0

void main() {
  const uint x = gl_WorkGroupID.x;
  for (uint y = gl_LocalInvocationID.x; y < N; y += FFT_THREADS) {
    const uint r = reversed(y);
    for (uint f = 0u; f < 3u; ++f) line[f][r] = transformed[f * N * N + y * N + x];
  }
  inverseFft3();
  for (uint y = gl_LocalInvocationID.x; y < N; y += FFT_THREADS) {
    const vec2 a = line[0][y], b = line[1][y], c = line[2][y];
    imageStore(uFields, ivec2(x, y), vec4(a.y, b.x, b.y, c.x));
  }
}
