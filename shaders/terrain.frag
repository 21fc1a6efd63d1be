#version 450 core
// terrain.frag - normals from the height texture, hillshade, elevation ramp, distance fog, and
// the debug views (colour by level / ldr, wireframe).
#include "common.glsl"

// No discard anywhere (terrain.vert says why and how): the depth test runs before this shader,
// so hidden fragments are never shaded.
layout(early_fragment_tests) in;

in float vHeight;  // world z
in vec2 vLocal;
flat in uint vDraw;

uniform vec3 uEye;
uniform int uView;       // 0 shaded, 1 colour by level, 2 colour by ldr, 3 imagery, 4 imagery-lit
uniform int uWire;       // 1: wireframe line pass
uniform vec3 uFogColor;
uniform float uFogDistance;  // 0: no fog
uniform vec3 uLightDir;  // towards the light, normalised
uniform vec2 uWater;     // x = 1 when the ocean is drawn, y = its world height

// Imagery (render/stream/colour.h): the colour atlas (one tile per layer, mips inside) and
// per drawn tile an n x n grid of cells, each (layer or -1, scale, offset u, offset v).
uniform sampler2DArray uColour;
uniform vec4 uColourTile;  // tile size T, border B, content C, 1 = imagery present
layout(std430, binding = 1) readonly buffer ColourCells { vec4 cells[]; };

layout(location = 0) out vec4 oColor;

// World-space gradient (dh/dx, dh/dy, metres per world unit) at tile-local sample p:
// central differences inside the tile, one-sided on its border. p is clamped first: normalAt
// asks for p + 1 = n + 1 where a fragment lies exactly on the tile's far edge (weight 0 there,
// but 0 / 0 = NaN times 0 is still NaN: black pixels along tile edges).
// Height at q for a gradient around p: a nodata neighbour counts as level with p.
float gradientHeight(TileRecord r, ivec2 q, ivec2 p) {
  uint s = tileSample(r, q);
  return isNodata(s) ? tileHeight(r, p) : sampleToHeight(s);
}

vec2 gradientAt(TileRecord r, ivec2 p) {
  int n = int(r.atlas.w);
  p = clamp(p, ivec2(0), ivec2(n));
  ivec2 a = max(p - 1, ivec2(0)), b = min(p + 1, ivec2(n));
  float gx = (gradientHeight(r, ivec2(b.x, p.y), p) - gradientHeight(r, ivec2(a.x, p.y), p)) /
             (float(b.x - a.x) * r.world.z);
  float gy = (gradientHeight(r, ivec2(p.x, b.y), p) - gradientHeight(r, ivec2(p.x, a.y), p)) /
             (float(b.y - a.y) * r.world.w);
  return vec2(gx, gy);
}

// Samples as signed or unsigned integers (sampleToHeight without its scale and offset, which
// a difference of heights does not need).
vec4 sampleValues(uvec4 s) {
  return uHeight.w > 0.5 ? vec4(bitfieldExtract(ivec4(s), 0, 16)) : vec4(s);
}

vec3 normalAt(TileRecord r, vec2 local) {
  vec2 f = floor(local);
  vec2 t = local - f;
  ivec2 i = ivec2(f);
  int n = int(r.atlas.w);
  if (uNodata.x < 0.5 && all(greaterThanEqual(i, ivec2(1))) && all(lessThanEqual(i, ivec2(n - 2)))) {
    // Away from the tile's border (and without nodata) the four corner gradients are central
    // differences over the 12 samples of a 4 x 4 block without its corners: four gathers
    // instead of sixteen fetches, the same result (texture fetches bound this shader).
    vec2 inv = 1.0 / vec2(textureSize(uAtlas, 0).xy);
    vec2 c = (r.atlas.xy + vec2(i)) * inv;
    float layer = r.atlas.z;
    vec4 a = sampleValues(textureGather(uAtlas, vec3(c, layer)));                          // i-1..i, j-1..j
    vec4 b = sampleValues(textureGather(uAtlas, vec3(c + vec2(2.0, 0.0) * inv, layer)));   // i+1..i+2, j-1..j
    vec4 d = sampleValues(textureGather(uAtlas, vec3(c + vec2(0.0, 2.0) * inv, layer)));   // i-1..i, j+1..j+2
    vec4 e = sampleValues(textureGather(uAtlas, vec3(c + vec2(2.0, 2.0) * inv, layer)));   // i+1..i+2, j+1..j+2
    // gather order: x (i0, j1), y (i1, j1), z (i1, j0), w (i0, j0)
    vec2 g00 = vec2(b.x - a.x, d.z - a.z);
    vec2 g10 = vec2(b.y - a.y, e.w - b.w);
    vec2 g01 = vec2(e.w - d.w, d.y - a.y);
    vec2 g11 = vec2(e.z - d.z, e.x - b.x);
    vec2 g = mix(mix(g00, g10, t.x), mix(g01, g11, t.x), t.y) * (0.5 * uHeight.x) / r.world.zw;
    return normalize(vec3(-g * uHeight.z, 1.0));
  }
  vec2 g = mix(mix(gradientAt(r, i), gradientAt(r, i + ivec2(1, 0)), t.x),
               mix(gradientAt(r, i + ivec2(0, 1)), gradientAt(r, i + ivec2(1, 1)), t.x), t.y);
  return normalize(vec3(-g * uHeight.z, 1.0));
}

// Hypsometric tint (metres): sea, lowland green, upland, rock, snow.
vec3 elevationColor(float h) {
  if (h <= 0.5) return vec3(0.13, 0.30, 0.52);
  const int K = 7;
  const float hs[K] = float[K](0.5, 60.0, 400.0, 1000.0, 1800.0, 2800.0, 3600.0);
  const vec3 cs[K] = vec3[K](vec3(0.76, 0.72, 0.52), vec3(0.30, 0.52, 0.24),
                             vec3(0.42, 0.58, 0.28), vec3(0.66, 0.62, 0.38),
                             vec3(0.56, 0.45, 0.34), vec3(0.55, 0.53, 0.51),
                             vec3(0.96, 0.96, 0.98));
  for (int k = 1; k < K; ++k)
    if (h < hs[k]) return mix(cs[k - 1], cs[k], (h - hs[k - 1]) / (hs[k] - hs[k - 1]));
  return cs[K - 1];
}

// Debug palette: distinct chromaticities (none is the tests' magenta background).
vec3 debugColor(int i) {
  const vec3 p[9] = vec3[9](vec3(0.95, 0.20, 0.15), vec3(0.20, 0.80, 0.20), vec3(0.20, 0.35, 0.95),
                            vec3(0.95, 0.85, 0.10), vec3(0.10, 0.85, 0.85), vec3(0.95, 0.55, 0.10),
                            vec3(0.55, 0.30, 0.95), vec3(0.90, 0.90, 0.90), vec3(0.45, 0.25, 0.10));
  return p[clamp(i, 0, 8)];
}

// The imagery at tile-local position `local` (premultiplied: BC1's transparent texels are
// black with alpha 0, so filtering near uncovered areas darkens rgb and alpha alike); alpha 0
// where there is none. Gradients come from the continuous tile uv, so mip selection does not
// jump where neighbouring cells use different layers.
vec4 imageryAt(TileRecord r, vec2 u, vec2 dudx, vec2 dudy) {
  float n = r.colour.y;
  if (uColourTile.w < 0.5 || n < 1.0) return vec4(0.0);
  vec2 g = min(floor(u * n), vec2(n - 1.0));
  vec4 c = cells[int(r.colour.x) + int(g.y * n + g.x)];
  if (c.x < 0.0) return vec4(0.0);
  vec2 ru = c.zw + (u * n - g) * c.y;                       // uv in that tile's region
  vec2 t = (uColourTile.y + ru * uColourTile.z) / uColourTile.x;  // uv in the stored tile
  float k = n * c.y * uColourTile.z / uColourTile.x;
  return textureGrad(uColour, vec3(t, c.x), dudx * k, dudy * k);
}

void main() {
  if (uWire == 1) {
    // Blended over the shading, and faded where the mesh is denser than the pixels (a grid
    // step under ~2 px, fading in up to 8 px): there the lines would cover every pixel and hide
    // the shading. Alpha 0 leaves the pixel as it was (the pass writes no depth).
    float px = 1.0 / max(max(fwidth(vLocal.x), fwidth(vLocal.y)), 1e-6);  // pixels per grid step
    float a = 0.45 * clamp((px - 2.0) / 6.0, 0.0, 1.0);
    oColor = vec4(0.04, 0.04, 0.05, a);
    return;
  }
  TileRecord r = tiles[vDraw];
  vec3 world = vec3(r.world.xy + vLocal * r.world.zw, vHeight);
  vec2 u = clamp(vLocal / r.atlas.w, 0.0, 1.0);
  vec2 dudx = dFdx(u), dudy = dFdy(u);
  vec3 n = normalAt(r, vLocal);
  float lambert = max(dot(n, uLightDir), 0.0);
  vec3 c;
  if (uView == 1 || uView == 2) {
    int idx = uView == 1 ? int(r.info.x) : int(r.info.y);
    c = debugColor(idx) * (0.55 + 0.45 * lambert);
  } else {
    float h = world.z / max(uHeight.z, 1e-6);
    vec3 base = elevationColor(h);
    float shade = 0.30 + 0.85 * lambert;
    vec3 sky = vec3(0.10, 0.12, 0.16) * (0.5 + 0.5 * n.z);  // soft ambient from above
    c = base * shade + base * sky;
    if (uView == 3 || uView == 4) {
      vec4 img = imageryAt(r, u, dudx, dudy);
      if (img.a > 0.004) {
        vec3 rgb = img.rgb / img.a;
        // imagery-lit: the photo times a softer hillshade (photos carry their own shadows).
        if (uView == 4) rgb *= 0.55 + 0.60 * lambert;
        c = mix(c, rgb, clamp(img.a, 0.0, 1.0));
      }
    }
    if (uFogDistance > 0.0) {
      float d = length(world - uEye) / uFogDistance;
      float f = clamp(1.0 - exp(-d * d), 0.0, 0.85);
      c = mix(c, uFogColor, f);
    }
  }
  // Alpha: 1 where the ocean shows instead (terrain at or below the water: the ray crossed the
  // water plane before it reached this point), 0 where the terrain stays; the ocean pass blends
  // by it and then sets alpha back to 1 (Renderer::drawOcean). A flat sea at the water's height
  // so never z-fights with the water plane, and the coastline is where the terrain crosses it.
  float water = uWater.x > 0.5 && world.z <= uWater.y ? 1.0 : 0.0;
  oColor = vec4(clamp(c, 0.0, 1.0), uWater.x > 0.5 ? water : 1.0);
}
