#version 450 core
// terrain.vert - Domino pattern vertex (tile-local grid point) -> world, height from the atlas.
#include "common.glsl"

layout(location = 0) in uvec2 aLocal;  // DominoVertex: 0..N
layout(location = 1) in uint aDraw;    // per-instance: draw index (baseInstance of the command)

uniform mat4 uViewProj;
uniform vec3 uEye;

out vec3 vWorld;
out vec2 vLocal;
out float vValid;  // 0 at nodata vertices: the fragment shader drops every triangle touching one
flat out uint vDraw;

void main() {
  TileRecord r = tiles[aDraw];
  ivec2 q = ivec2(aLocal);
  float h;
  vValid = 1.0;
  if (isNodata(tileSample(r, q))) {
    // No height here. The triangles around are discarded; a nearby valid height keeps them
    // from reaching to the nodata value (-32768 m: needles across the screen).
    vValid = 0.0;
    h = 0.0;
    float sum = 0.0, count = 0.0;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        uint s = tileSample(r, q + ivec2(dx, dy));
        if (!isNodata(s)) sum += sampleToHeight(s), count += 1.0;
      }
    if (count > 0.0) h = sum / count;
  } else {
    h = tileHeight(r, q);
  }
  vec3 p = vec3(r.world.xy + vec2(aLocal) * r.world.zw, h * uHeight.z);
  vWorld = p;
  vLocal = vec2(aLocal);
  vDraw = aDraw;
  gl_Position = uViewProj * vec4(p, 1.0);
}
