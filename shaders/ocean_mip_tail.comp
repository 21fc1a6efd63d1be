#version 450 core
// ocean_mip_tail.comp - the ocean's GL compute step, pass 4 of 4 (N >= 32): one work group makes
// the fields' mip levels 5 .. log2(N) from level 4 (box filter, as ocean_mips.comp). The host
// defines N and TAIL_LEVELS (= log2(N) - 4, the levels made here).
layout(local_size_x = 256) in;

layout(rgba32f, binding = 0) readonly uniform image2D uLevel4;
layout(rgba32f, binding = 1) writeonly uniform image2D uLevels[TAIL_LEVELS];  // levels 5..

const uint kSide5 = N / 32u;  // level 5's side
shared vec4 level[kSide5 * kSide5];

vec4 mean4(vec4 a, vec4 b, vec4 c, vec4 d) { return ((a + b) + (c + d)) * 0.25; }

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint k = t; k < kSide5 * kSide5; k += 256u) {
    const ivec2 p = 2 * ivec2(k % kSide5, k / kSide5);
    const vec4 m = mean4(imageLoad(uLevel4, p), imageLoad(uLevel4, p + ivec2(1, 0)), imageLoad(uLevel4, p + ivec2(0, 1)),
                         imageLoad(uLevel4, p + ivec2(1, 1)));
    imageStore(uLevels[0], p / 2, m);
    level[k] = m;
  }
  // Below level 5 a level has at most 16 x 16 texels: one per invocation.
  uint side = kSide5;
  for (int l = 1; l < TAIL_LEVELS; ++l) {
    memoryBarrierShared();
    barrier();
    side >>= 1;
    const bool inside = t < side * side;
    vec4 m = vec4(0.0);
    if (inside) {
      const uint x = t % side, y = t / side, w = 2u * side;
      m = mean4(level[2u * y * w + 2u * x], level[2u * y * w + 2u * x + 1u], level[(2u * y + 1u) * w + 2u * x],
                level[(2u * y + 1u) * w + 2u * x + 1u]);
      imageStore(uLevels[l], ivec2(x, y), m);
    }
    memoryBarrierShared();
    barrier();
    if (inside) level[t] = m;
  }
}
