#version 450 core
// ocean.vert - the water plane: one quad over the DEM's extent at the water level (the waves are
// in the fragment shader's normals, ocean.frag).
uniform mat4 uViewProj;
uniform vec4 uPlane;  // x1, y1 (the extent), z (world height of the water), unused

out vec3 vWorld;

void main() {
  vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
  vWorld = vec3(corner * uPlane.xy, uPlane.z);
  gl_Position = uViewProj * vec4(vWorld, 1.0);
}
