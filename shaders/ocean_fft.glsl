// ocean_fft.glsl - the inverse FFT of the ocean's GL compute step (ocean_rows.comp,
// ocean_columns.comp; host: src/render/gl/ocean_compute.cpp): three lines of N complex points
// (the packed fields h + i dh/dx, dh/dy + i Dx, Dy) transformed together in shared memory by one
// work group, radix 2, decimation in time, in place: the caller stores point i at reversed(i),
// inverseFft3() leaves the transforms in natural order. Inverse = FFTW_BACKWARD, e^{+2 pi i jk/N},
// unnormalised, as the CPU reference (render/ocean/ocean.cpp) and the CUDA step.
// The host defines N and LOG2N (the size, a power of two) and FFT_THREADS (the work group size).

// e^{+2 pi i k / N} for k < N / 2, made in double precision on the host.
layout(std430, binding = 2) readonly buffer Twiddles { vec2 twiddle[]; };

shared vec2 line[3][N];

vec2 cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
vec2 conjugate(vec2 a) { return vec2(a.x, -a.y); }
uint reversed(uint i) { return bitfieldReverse(i) >> (32u - LOG2N); }

void inverseFft3() {
  for (uint span = 1u; span < N; span <<= 1) {
    memoryBarrierShared();
    barrier();
    const uint stride = N / (2u * span);  // twiddle index step of this stage
    for (uint t = gl_LocalInvocationID.x; t < N / 2u; t += FFT_THREADS) {
      const uint pos = t & (span - 1u);
      const uint i0 = ((t - pos) << 1) + pos, i1 = i0 + span;
      const vec2 w = twiddle[pos * stride];
      for (int f = 0; f < 3; ++f) {
        const vec2 a = line[f][i0], b = cmul(line[f][i1], w);
        line[f][i0] = a + b;
        line[f][i1] = a - b;
      }
    }
  }
  memoryBarrierShared();
  barrier();
}
