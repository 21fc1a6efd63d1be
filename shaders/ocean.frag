#version 450 core
// ocean.frag - animated water (issue 14): normals from the ocean fields (render/ocean/ocean.h:
// slopes and choppy displacements of a periodic patch, repeated), a Fresnel mix of a sky
// gradient and the deep-water colour, the sun's glint, the terrain's fog, and a lighter shallow
// tint that fades in towards the shore (distance to land, from the DEM's coarse seabed grid).
// Opaque: the coastline is where the terrain rises through the water plane (terrain.frag flags
// the pixels below it), a smooth line; a transparent fringe would show the flat sea cells underneath.
in vec3 vWorld;

uniform vec3 uEye;
uniform sampler2D uFields;   // (slope x, slope y, displacement x, displacement y), metres
uniform sampler2D uShore;    // distance to the nearest land texel, in texels (0 on land)
uniform vec4 uShoreXform;    // world -> shore uv: u = x * s.x + s.y, v = y * s.z + s.w
uniform float uShoreFade;    // texels of the shallow tint
uniform float uPatch;        // metres per repetition of the fields
uniform float uChop;         // 1: displacements as computed
uniform vec3 uFogColor;
uniform float uFogDistance;  // 0: no fog
uniform vec3 uLightDir;      // towards the sun

layout(location = 0) out vec4 oColor;

vec2 slopesAt(vec2 p) {
  // The choppy surface point over p came from about p - D(p): its slopes are those there.
  vec4 f = texture(uFields, p / uPatch);
  return texture(uFields, (p - uChop * f.zw) / uPatch).xy;
}

void main() {
  float shore = texture(uShore, vec2(vWorld.x * uShoreXform.x + uShoreXform.y,
                                     vWorld.y * uShoreXform.z + uShoreXform.w)).r;
  float open = smoothstep(0.0, uShoreFade, shore);  // 0 at the shore, 1 in open water
  // Two scales (the second rotated and finer) so that the repetition does not show.
  vec2 s = slopesAt(vWorld.xy);
  mat2 rot = mat2(0.8, 0.6, -0.6, 0.8);
  s += 0.5 * (transpose(rot) * slopesAt(rot * vWorld.xy * 2.7));
  vec3 n = normalize(vec3(-s, 1.0));
  vec3 v = normalize(uEye - vWorld);
  float cosv = max(dot(n, v), 0.0);
  float fresnel = 0.02 + 0.98 * pow(1.0 - cosv, 5.0);
  vec3 r = reflect(-v, n);
  vec3 sky = mix(uFogColor, vec3(0.30, 0.48, 0.76), clamp(r.z * 1.5, 0.0, 1.0));
  vec3 deep = vec3(0.015, 0.085, 0.13) + vec3(0.0, 0.05, 0.045) * max(dot(n, uLightDir), 0.0);
  float glint = pow(max(dot(r, uLightDir), 0.0), 240.0) * 2.5;
  vec3 shallow = vec3(0.07, 0.26, 0.27);
  vec3 c = mix(mix(shallow, deep, open), sky, fresnel) + vec3(glint);
  if (uFogDistance > 0.0) {
    float d = length(vWorld - uEye) / uFogDistance;
    c = mix(c, uFogColor, clamp(1.0 - exp(-d * d), 0.0, 0.85));
  }
  oColor = vec4(clamp(c, 0.0, 1.0), 1.0);
}
