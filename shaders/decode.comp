#version 450 core
// decode.comp - HFPaC decode as a GL compute shader: the "gl" streaming strategy
// (src/render/gl/stream_compute.cpp), so that a fill decodes inside the GL context that draws
// (no CUDA-GL hand-over) on any GPU with OpenGL 4.5 and 64-bit integers in shaders.
//
// The same arithmetic as cuda/decode.cu's area kernel, bit for bit (docs/format.md): one
// workgroup of 64 invocations per 16 x 16 area; invocation t owns column t % 16 and the four
// rows 4 (t / 16) .. + 3 of the area. Per workgroup: the control nets of the (at most 4 x 4)
// segments the area touches into shared memory, the area's prominent entries scattered into a
// 16 x 16 correction table, its layer-3 fields and mask bitmap as runs of words; then every
// invocation walks its column down its rows with exact 64-bit forward differences
// (gpu/decode_math.h) and stores 16 bits per point into the atlas.
//
// Inputs (render/stream/decode_entry.h): the pool holds entries [PatchDesc: 16 words]
// [AreaDesc: 8 words each][stream words], the descriptors built on the CPU from a stream the CPU
// decoder's checks validated, so every field read here lies inside its entry. A job is one tile
// of a dispatch: (first word of its entry, its areas, its atlas layer, its slot's texel x | y << 16);
// workgroup (x, y) decodes area x of job y. Values outside 0..65535 (only a corrupt stream
// that passed validation gives them) are clamped and flagged in flags[job].
#extension GL_ARB_gpu_shader_int64 : require

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Pool { uint words[]; };
layout(std430, binding = 1) readonly buffer Jobs { uvec4 jobs[]; };
layout(std430, binding = 2) buffer Flags { uint flags[]; };
layout(r16ui, binding = 0) uniform writeonly uimage2DArray uAtlas;

const int kArea = 16;
const int kPatchWords = 16;
const int kAreaWords = 8;
const uint kKindFlat = 1u, kKindStored = 2u;
const uint kMaskAll = 1u, kMaskBitmap = 2u;
const int kMaxLowWords = 129;  // 256 fields of at most 16 bits, + 1
const int kMaxMaskWords = 9;

shared int sNet[16 * 9];  // 3 x 3 control points of up to 16 segments, row-major
shared int sCorr[kArea * kArea];
shared uint sLows[kMaxLowWords + 1];
shared uint sMask[kMaxMaskWords + 1];

// A field of `bits` (0..20) bits at bit `bit` of the stream that starts at word `s`.
uint fieldAt(uint s, uint bit, int bits) {
  if (bits == 0) return 0u;
  const uint i = s + (bit >> 5);
  const int sh = int(bit & 31u);
  uint v = words[i] >> sh;
  if (sh + bits > 32) v |= words[i + 1u] << (32 - sh);
  return v & ((1u << bits) - 1u);
}

// The same from a shared run (the word after the last field exists).
uint lowField(uint bit, uint mask) {
  const uint i = bit >> 5, sh = bit & 31u;
  uint v = sLows[i] >> sh;
  if (sh != 0u) v |= sLows[i + 1u] << (32u - sh);
  return v & mask;
}
uint maskBitAt(uint bit) { return (sMask[bit >> 5] >> (bit & 31u)) & 1u; }

int unzigzag(uint z) { return int(z >> 1) ^ -int(z & 1u); }

// layout.h's loadSegment: the 3 x 3 control net of segment (sx, sy) into sNet[slot * 9 ..].
struct Patch {
  uint width, height, base, maskOut, flip, kind, segLog;
  int cornerBits, edgeBits, centreBits, highBits;
  uint segX, segY, hedgeBit, vedgeBit, centreBit;
};

void loadNet(Patch p, uint s, uint sx, uint sy, int slot) {
  const uint cw = p.segX + 1u;
  const uint a0 = 256u;  // section A starts after the 32-byte header
  const int c00 = int(p.base) + int(fieldAt(s, a0 + (sy * cw + sx) * uint(p.cornerBits), p.cornerBits));
  const int c02 = int(p.base) + int(fieldAt(s, a0 + (sy * cw + sx + 1u) * uint(p.cornerBits), p.cornerBits));
  const int c20 = int(p.base) + int(fieldAt(s, a0 + ((sy + 1u) * cw + sx) * uint(p.cornerBits), p.cornerBits));
  const int c22 = int(p.base) + int(fieldAt(s, a0 + ((sy + 1u) * cw + sx + 1u) * uint(p.cornerBits), p.cornerBits));
  const int eb = p.edgeBits;
  // edgeFromOffset: floor((c0 + c2) / 2) + offset (an arithmetic shift floors).
  const int c01 = ((c00 + c02) >> 1) + unzigzag(fieldAt(s, p.hedgeBit + (sy * p.segX + sx) * uint(eb), eb));
  const int c21 = ((c20 + c22) >> 1) + unzigzag(fieldAt(s, p.hedgeBit + ((sy + 1u) * p.segX + sx) * uint(eb), eb));
  const int c10 = ((c00 + c20) >> 1) + unzigzag(fieldAt(s, p.vedgeBit + (sy * cw + sx) * uint(eb), eb));
  const int c12 = ((c02 + c22) >> 1) + unzigzag(fieldAt(s, p.vedgeBit + (sy * cw + sx + 1u) * uint(eb), eb));
  // centreBase: floor((2 * edges - corners) / 4).
  const int centre = ((2 * (c01 + c21 + c10 + c12) - (c00 + c02 + c20 + c22)) >> 2) +
                     unzigzag(fieldAt(s, p.centreBit + (sy * p.segX + sx) * uint(p.centreBits), p.centreBits));
  const int o = slot * 9;
  sNet[o + 0] = c00; sNet[o + 1] = c01; sNet[o + 2] = c02;
  sNet[o + 3] = c10; sNet[o + 4] = centre; sNet[o + 5] = c12;
  sNet[o + 6] = c20; sNet[o + 7] = c21; sNet[o + 8] = c22;
}

void main() {
  const uvec4 job = jobs[gl_WorkGroupID.y];
  const uint area = gl_WorkGroupID.x;
  if (area >= job.y) return;  // the whole workgroup
  const uint e = job.x;       // the entry's first word

  Patch p;
  const uint pw8 = words[e + 8u], pw9 = words[e + 9u], pw10 = words[e + 10u], pw11 = words[e + 11u];
  const uint pw12 = words[e + 12u];
  p.width = pw8 & 0xffffu;
  p.height = pw8 >> 16;
  p.base = pw9 & 0xffffu;
  p.maskOut = pw9 >> 16;
  p.flip = pw10 & 0xffffu;
  p.kind = (pw10 >> 16) & 0xffu;
  p.segLog = pw10 >> 24;
  p.cornerBits = int(pw11 & 0xffu);
  p.edgeBits = int((pw11 >> 8) & 0xffu);
  p.centreBits = int((pw11 >> 16) & 0xffu);
  p.highBits = int(pw11 >> 24);
  p.segX = pw12 & 0xffffu;
  p.segY = pw12 >> 16;
  p.hedgeBit = words[e + 13u];
  p.vedgeBit = words[e + 14u];
  p.centreBit = words[e + 15u];
  const uint s = e + words[e];  // PatchDesc::streamWord: relative to the entry

  const uint ad = e + uint(kPatchWords) + area * uint(kAreaWords);
  const uint axy = words[ad + 1u];
  const uint lowBit = words[ad + 2u], maskBit = words[ad + 3u], highBit = words[ad + 4u];
  const uint posByte = words[ad + 5u], aw6 = words[ad + 6u];
  const uint count = aw6 & 0xffffu;
  const int b = int((aw6 >> 16) & 0xffu);
  const uint maskCode = aw6 >> 24;

  const int t = int(gl_LocalInvocationID.x);
  const int lx = t & (kArea - 1), ly0 = (t >> 4) * 4;
  const int x0 = int(axy & 0xffffu) * kArea, y0 = int(axy >> 16) * kArea;
  const int aw = min(kArea, int(p.width) - x0), ah = min(kArea, int(p.height) - y0);
  const int x = x0 + lx, yb = y0 + ly0;
  const int rows = lx < aw ? min(4, ah - ly0) : 0;  // this invocation's points
  const ivec2 slot = ivec2(int(job.w & 0xffffu), int(job.w >> 16));
  const int layer = int(job.z);

  if (p.kind == kKindFlat || maskCode == kMaskAll) {
    const uint v = p.kind == kKindFlat ? ((p.base ^ p.flip) & 0xffffu) : p.maskOut;
    for (int k = 0; k < rows; ++k) imageStore(uAtlas, ivec3(slot + ivec2(x, yb + k), layer), uvec4(v));
    return;
  }
  if (p.kind == kKindStored) {
    for (int k = 0; k < rows; ++k) {
      const uint bit = lowBit + (uint(yb + k) * p.width + uint(x)) * 16u;
      imageStore(uAtlas, ivec3(slot + ivec2(x, yb + k), layer), uvec4(fieldAt(s, bit, 16) ^ p.flip));
    }
    return;
  }

  const int segLog = int(p.segLog);
  const int sx0 = min(x0 >> segLog, int(p.segX) - 1), sx1 = min((x0 + aw - 1) >> segLog, int(p.segX) - 1);
  const int sy0 = min(y0 >> segLog, int(p.segY) - 1), sy1 = min((y0 + ah - 1) >> segLog, int(p.segY) - 1);
  const int nsx = sx1 - sx0 + 1;
  const int points = aw * ah;

  // 1. control nets.
  if (t < nsx * (sy1 - sy0 + 1)) loadNet(p, s, uint(sx0 + t % nsx), uint(sy0 + t / nsx), t);
  // 2. prominent corrections, saturated to +-2^18 (as decode.cu: the clamped result is the same).
  const bool hasCorr = count > 0u;
  if (hasCorr) {
    for (int k = 0; k < 4; ++k) sCorr[t + k * 64] = 0;
    memoryBarrierShared();
    barrier();
    for (uint i = uint(t); i < count; i += 64u) {
      const uint pb = posByte + i;
      const uint pos = (words[s + (pb >> 2)] >> ((pb & 3u) * 8u)) & 0xffu;
      const int high = unzigzag(fieldAt(s, highBit + i * uint(p.highBits), p.highBits) + 1u);
      int64_t c = int64_t(high) << b;
      const int64_t kSat = int64_t(1) << 18;
      c = c < -kSat ? -kSat : (c > kSat ? kSat : c);
      sCorr[pos] = int(c);
    }
  }
  // 3. the area's low fields, one run of words (and the word after it: 0).
  if (b > 0) {
    const uint firstWord = lowBit >> 5;
    const uint n = ((lowBit + uint(points * b) - 1u) >> 5) - firstWord + 1u;
    for (uint w = uint(t); w < n; w += 64u) sLows[w] = words[s + firstWord + w];
    if (t == 0) sLows[n] = 0u;
  }
  // 3b. the mask bitmap of a mixed area (aw * ah bits).
  const bool bitmap = maskCode == kMaskBitmap;
  if (bitmap) {
    const uint firstWord = maskBit >> 5;
    const uint n = ((maskBit + uint(points) - 1u) >> 5) - firstWord + 1u;
    if (uint(t) < n) sMask[t] = words[s + firstWord + uint(t)];
    if (t == 0) sMask[n] = 0u;
  }
  memoryBarrierShared();
  barrier();
  if (rows <= 0) return;

  // Layer 1 along this column (decode_math.h's columnPoly, polyAt, polyStep).
  const int i = min(x >> segLog, int(p.segX) - 1), j = min(yb >> segLog, int(p.segY) - 1);
  const int net = ((j - sy0) * nsx + (i - sx0)) * 9;
  const int a = x - (i << segLog);
  const int n = 1 << segLog;
  const int w0 = (n - a) * (n - a), w1 = 2 * a * (n - a), w2 = a * a;
  int64_t r[3];
  for (int k = 0; k < 3; ++k)
    r[k] = int64_t(w0) * sNet[net + 3 * k] + int64_t(w1) * sNet[net + 3 * k + 1] + int64_t(w2) * sNet[net + 3 * k + 2];
  const int64_t q = r[0] - 2 * r[1] + r[2];
  const int64_t l = (r[1] - r[0]) * (int64_t(2) << segLog);
  const int64_t c0 = r[0] * (int64_t(1) << (2 * segLog)) + (int64_t(1) << (4 * segLog - 1));
  const int64_t cr = int64_t(yb - (j << segLog));
  int64_t sum = c0 + cr * (l + cr * q);
  int64_t step = l + q * (2 * cr + 1);
  const int64_t step2 = 2 * q;

  const uint lowMask = (1u << b) - 1u;
  const int halfStep = b > 0 ? (1 << (b - 1)) : 0;
  const uint lowShift = lowBit & 31u, maskShift = maskBit & 31u;
  uint outOfRange = 0u;
  for (int k = 0; k < 4; ++k) {
    if (k < rows) {
      const int y = yb + k;
      const int index = (ly0 + k) * aw + lx;  // raster order inside the area
      uint v16;
      if (bitmap && maskBitAt(maskShift + uint(index)) != 0u) {
        v16 = p.maskOut;
      } else {
        int v = int(sum >> (4 * segLog));
        v = clamp(v, 0, 65535);
        if (hasCorr) v += sCorr[(ly0 + k) * kArea + lx];
        if (b > 0) v += int(lowField(lowShift + uint(index * b), lowMask)) - halfStep;
        if (v < 0 || v > 65535) {
          outOfRange = 1u;
          v = clamp(v, 0, 65535);
        }
        v16 = (uint(v) ^ p.flip) & 0xffffu;
      }
      imageStore(uAtlas, ivec3(slot + ivec2(x, y), layer), uvec4(v16));
    }
    sum += step;
    step += step2;
  }
  if (outOfRange != 0u) atomicOr(flags[gl_WorkGroupID.y], 1u);
}
