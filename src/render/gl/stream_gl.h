// stream_gl.h - the streaming strategies that write the GL atlas themselves (issue 5,
// docs/rendering.md section 3), and the factory hfview and the tests use for every strategy.
//
// - "raw": tiles of a raw archive (uncompressed little-endian 16-bit payloads). A loader thread
//   reads each payload (archive mmap, CRC checked) straight into a slot of one persistently
//   mapped, coherent pixel-unpack buffer (glNamedBufferStorage + glMapNamedBufferRange, made on
//   the render thread at the first deliver/loadNow); the render thread uploads from the PBO with
//   glTextureSubImage3D and fences each batch: a PBO slot is reused only after its fence has
//   signalled. A non-raw archive is refused (one-line error): "raw" means "no decode at all".
// - "gl": HFPaC tiles decoded into the atlas by a GL compute shader in the drawing context (any
//   GPU with OpenGL 4.5 and GL_ARB_gpu_shader_int64; see stream_compute.cpp), with the same
//   --cache host|vram[:MiB] as cuda (the pool is a GL buffer). HFAN and 2DRBUC tiles are
//   decoded on its loader threads and reach the atlas as stored entries through the same
//   shader. Without 64-bit shader integers or the shader: falls back to
//   "cpu" with a Note. A raw archive is refused.
// - "cuda" (only when built with the GPU codec, HF_HAVE_CUDA_STREAM): see stream_cuda.cpp. No
//   CUDA device, no CUDA-GL interop with the current context, or --cache vram with an archive
//   of codec hfan or auto (the pool holds HFPaC entries only): falls back to "cpu" and says so
//   once on stderr (a "Note:" line). HFAN tiles are decoded on the GPU otherwise.
#pragma once

#include <memory>
#include <string>

#include "render/stream/colour.h"
#include "render/stream/stream.h"

namespace hfr {

struct StreamOptions {
  int threads = 0;  // cpu: decode threads (0 = hardware concurrency - 1)
  int streams = 2;  // cuda: CUDA streams used round-robin (--streams K)
  // cuda: where compressed tiles wait between decodes (--cache host|vram[:MiB]). "host": in the
  // archive's mapping, so every decode sends its tile over PCIe. "vram": in a device pool of
  // cacheMiB MiB (0 = the whole archive when it fits in half the free device memory, else that
  // half), least recently used out; tiles enter when first decoded, and the whole archive is
  // loaded in the background when it fits, after which nothing but 48-byte records crosses PCIe.
  bool vramCache = false;
  double cacheMiB = 0;
  // cuda and gl with --cache host[:MiB]: MiB of host memory for compressed payloads kept outside
  // the atlas (render/stream/staged_payloads.h): the tiles it read and those the planner stages
  // ahead of the camera (StreamStrategy::stage), so that a tile wanted again or as predicted is
  // batched in the frame it is requested. 0 = none (every request waits for a loader).
  double hostCacheMiB = 256;
  // cpu, cuda: progressive loading (--progressive): tiles arrive lossy from layers 1 + 2 and
  // are refined in place to exact (CpuStreamStrategy; stream_cuda.cpp). raw has no layers, and
  // cuda with vramCache loads tiles whole (a note says so).
  bool progressive = false;
  // gl: where shaders/decode.comp is (empty: $HF_SHADER_DIR, else the shaders/ folder the
  // renderer finds; RenderSettings::shaderDir).
  std::string shaderDir;
  // gl with --cache host: MiB of the staging ring and the pool it mirrors (0 = 64). Tests make
  // it small so that batches wrap around the ring and wait for the GPU.
  double stagingMiB = 0;
};

// Parses "host", "host:MiB" (MiB >= 0), "vram" or "vram:MiB" (MiB > 0) into `options`; false and
// a one-line error else.
bool parseCacheOption(const std::string& text, StreamOptions& options, std::string& error);

// "cpu", "raw", "gl" or "cuda". nullptr and a one-line error for an unknown name or an archive the
// strategy cannot read (raw on a compressed archive, cuda on a raw one). When "cuda" cannot run
// here (no device or interop, or --cache vram on an archive with HFAN tiles), returns the cpu
// strategy and sets `note` (one line) instead; the VRAM cache then does not apply to the heights. Create it before or after
// the GL context; its GL/CUDA resources are made on the render thread when first needed.
std::unique_ptr<StreamStrategy> makeRenderStreamStrategy(const std::string& name,
                                                         const hfa::ArchiveReader& archive,
                                                         std::string& error, std::string& note,
                                                         const StreamOptions& options = {});

// True when this build has the cuda strategy (the GPU codec was built).
bool cudaStreamBuilt();

// The "cuda" imagery strategy (colour_cuda.cpp): JPEG tiles decoded, mip-mapped and BC1-coded
// on the GPU in batches of up to batchTiles on `pairs` CUDA streams, copied into the colour
// atlas inside video memory. nullptr with `note` (one line) when this build or machine cannot
// (no GPU imagery codec, no CUDA device): the caller uses the CPU strategy. Interop failures
// later (a GL context on another device) fall back to the CPU strategy inside, with a Note.
// `cache.vramCache`: the tiles' BC1 chains are kept in a GL buffer in video memory (cacheMiB,
// 0 = the whole imagery when it fits in a quarter of the free device memory, else that quarter;
// least recently used out), so that a tile decoded once is copied into the atlas inside video
// memory ever after; when the whole imagery fits it is loaded in the background (coarse levels
// first), and finishPrefetch() waits for that.
std::unique_ptr<ColourStream> makeCudaColourStream(const hfa::ArchiveReader& archive, himg::Bc1Mode mode,
                                                   std::string& note, int pairs = 2, size_t batchTiles = 32,
                                                   const StreamOptions& cache = {});

}  // namespace hfr
