// common.glsl - shared by terrain.vert and terrain.frag: the per-draw tile record, the atlas and
// the height mapping (src/render/gl/renderer.cpp fills them).

// One record per drawn tile (std430, 4 x vec4), indexed by the draw index.
struct TileRecord {
  vec4 world;   // x0, y0 of local (0, 0); world units per local grid step in x and y
  vec4 atlas;   // texel origin x, y of the tile's slot, layer, tile size N (= p - 1)
  vec4 info;    // pyramid level, centre ldr, min corner ldr, pattern index
  vec4 colour;  // imagery: first cell in ColourCells, cells per side n (0: none), -, -
};
layout(std430, binding = 0) readonly buffer TileRecords { TileRecord tiles[]; };

uniform usampler2DArray uAtlas;  // GL_R16UI, one p x p slot per tile
uniform vec4 uHeight;            // scale, offset, vertical exaggeration, 1 = signed samples

float sampleToHeight(uint s) {
  float v = (uHeight.w > 0.5 && s >= 32768u) ? float(int(s) - 65536) : float(s);
  return uHeight.y + uHeight.x * v;  // metres, before exaggeration
}

uniform vec4 uNodata;  // x: 1 when the archive keeps nodata samples (--nodata keep), y: their value

bool isNodata(uint s) { return uNodata.x > 0.5 && s == uint(uNodata.y); }

// The stored sample at tile-local p, clamped to the tile.
uint tileSample(TileRecord r, ivec2 p) {
  int n = int(r.atlas.w);
  p = clamp(p, ivec2(0), ivec2(n));
  return texelFetch(uAtlas, ivec3(ivec2(r.atlas.xy) + p, int(r.atlas.z)), 0).r;
}

// Height (metres, before exaggeration) of tile-local sample p, clamped to the tile. A nodata
// sample has no height: callers check isNodata(tileSample(...)) where it matters.
float tileHeight(TileRecord r, ivec2 p) { return sampleToHeight(tileSample(r, p)); }
