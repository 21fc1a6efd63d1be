#version 450 core
// terrain.vert - Domino pattern vertex (tile-local grid point) -> world, height from the atlas.
#include "common.glsl"

layout(location = 0) in uvec2 aLocal;  // DominoVertex: 0..N
layout(location = 1) in uint aDraw;    // per-instance: draw index (baseInstance of the command)

uniform mat4 uViewProj;
uniform vec3 uEye;

uniform vec4 uExtent;  // the DEM's world extent: x0, y0, x1, y1 (beyond it: pyramid padding)

out float vHeight;  // world z
out vec2 vLocal;    // tile-local grid position (world x, y follow from it and the tile record)
flat out uint vDraw;

// Nothing is discarded in terrain.frag: a fragment shader that may discard loses early depth
// testing (measured on an H100 at 1080p: a quarter of the frame), and clip distances cost as
// much again in the geometry pipeline of a GPU whose graphics part is small. So:
// - the pyramid's padding beyond the DEM (tiles at the east and south edges extend past it,
//   with repeated edge samples) is folded onto the edge: those vertices move to the extent's
//   border, where their height (an edge sample's) belongs, and the triangles beyond it
//   collapse to nothing;
// - the water (with the ocean on) is a flag in the colour's alpha that the ocean pass
//   blends by (terrain.frag, Renderer::drawOcean);
// - only nodata holes (--nodata keep) need a clip distance, in the programs of archives that
//   keep nodata: every triangle touching a nodata vertex goes, except within 1/1000 of its
//   valid edge - a hole where the background shows through, never a pit.
#ifdef HF_NODATA_HOLES
out float gl_ClipDistance[1];
#endif

void main() {
  TileRecord r = tiles[aDraw];
  ivec2 q = ivec2(aLocal);
  float h;
  float valid = 1.0;
  if (isNodata(tileSample(r, q))) {
    // No height here. The triangles around are clipped; a nearby valid height keeps them
    // from reaching to the nodata value (-32768 m: needles across the screen).
    valid = 0.0;
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
  vec2 unclamped = r.world.xy + vec2(aLocal) * r.world.zw;
  vec2 xy = clamp(unclamped, uExtent.xy, uExtent.zw);
  vec3 p = vec3(xy, h * uHeight.z);
  vHeight = p.z;
  // Exactly the grid position unless folded onto the extent.
  vLocal = mix(vec2(aLocal), (xy - r.world.xy) / r.world.zw, notEqual(xy, unclamped));
  vDraw = aDraw;
  gl_Position = uViewProj * vec4(p, 1.0);
#ifdef HF_NODATA_HOLES
  gl_ClipDistance[0] = valid - 0.999;
#endif
}
