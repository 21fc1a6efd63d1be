#version 450 core
// ocean_mips.comp - the ocean's GL compute step, pass 3 of 4: the fields' mip levels 1..4, one
// work group per 16 x 16 texels of level 0 (box filter: each texel the mean of the 2 x 2 below
// it, as glGenerateMipmap; cuda/ocean.cu's oceanWriteMips does the same). ocean_mip_tail.comp
// makes the levels below 4 when N > 16.
layout(local_size_x = 16, local_size_y = 16) in;

layout(rgba32f, binding = 0) readonly uniform image2D uLevel0;
layout(rgba32f, binding = 1) writeonly uniform image2D uLevels[4];  // levels 1..4

shared vec4 tile[16][16];

vec4 mean4(vec4 a, vec4 b, vec4 c, vec4 d) { return ((a + b) + (c + d)) * 0.25; }

void main() {
  const uvec2 t = gl_LocalInvocationID.xy;
  tile[t.y][t.x] = imageLoad(uLevel0, ivec2(gl_GlobalInvocationID.xy));
  uint side = 8u;
  for (int level = 0; level < 4; ++level, side >>= 1) {
    memoryBarrierShared();
    barrier();
    const bool inside = t.x < side && t.y < side;
    vec4 m = vec4(0.0);
    if (inside) {
      m = mean4(tile[2u * t.y][2u * t.x], tile[2u * t.y][2u * t.x + 1u], tile[2u * t.y + 1u][2u * t.x],
                tile[2u * t.y + 1u][2u * t.x + 1u]);
      imageStore(uLevels[level], ivec2(gl_WorkGroupID.xy * side + t), m);
    }
    memoryBarrierShared();
    barrier();
    if (inside) tile[t.y][t.x] = m;
  }
}
