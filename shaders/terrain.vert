#version 450 core
// terrain.vert - Domino pattern vertex (tile-local grid point) -> world, height from the atlas.
#include "common.glsl"

layout(location = 0) in uvec2 aLocal;  // DominoVertex: 0..N
layout(location = 1) in uint aDraw;    // per-instance: draw index (baseInstance of the command)

uniform mat4 uViewProj;
uniform vec3 uEye;

out vec3 vWorld;
out vec2 vLocal;
flat out uint vDraw;

void main() {
  TileRecord r = tiles[aDraw];
  float h = tileHeight(r, ivec2(aLocal));
  vec3 p = vec3(r.world.xy + vec2(aLocal) * r.world.zw, h * uHeight.z);
  vWorld = p;
  vLocal = vec2(aLocal);
  vDraw = aDraw;
  gl_Position = uViewProj * vec4(p, 1.0);
}
