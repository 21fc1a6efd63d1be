// renderer.h - the OpenGL 4.5 core terrain renderer (issue 5; design: docs/rendering.md).
//
// Pieces, in the order of a frame:
// - GlContext: who owns the GL context. createHeadlessContext() makes one with EGL's device
//   platform (no window, no surface: Mesa llvmpipe in CI, the NVIDIA driver on the GPU machine);
//   a GLFW window context implements the same interface later.
// - Renderer: owns the Domino pattern vertex buffer (uploaded once), the atlas
//   (GL_TEXTURE_2D_ARRAY of GL_R16UI slots with an LRU PageTable), the shaders (shaders/, with
//   #include), an FBO target, and per frame: LOD selection on the full pyramid (what the camera
//   wants: those tiles, their ancestors and siblings are requested from the StreamStrategy),
//   upload of finished tiles, LOD selection restricted to resident tiles (what is drawn: a tile
//   that is not resident yet is drawn as its resident ancestor), and one
//   glMultiDrawArraysIndirect over all drawn tiles with a per-draw record in an SSBO.
// - writePng: the FBO's pixels as a PNG.
// Every GL call happens on the thread that made the context current; streaming workers never
// touch GL. Errors are one-line strings (no "Error:" prefix).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "render/camera/camera.h"
#include "render/lod/lod.h"
#include "render/ocean/ocean.h"
#include "render/stream/stream.h"

namespace hfa {
class ArchiveReader;
}

namespace hfr {

// World frame (also LodPyramid's): x east, y north, z up, metres (sample units when the archive
// does not know its spacing); (0, 0) is the south-west corner of the level-0 grid (sample
// column 0, last row). Camera lives in render/camera/camera.h (GL-free).

class GlContext {
 public:
  virtual ~GlContext() = default;
  virtual bool makeCurrent() = 0;
  virtual std::string description() const = 0;  // "4.5 (Core Profile) Mesa ... | llvmpipe ..."
};

// EGL device platform, core 4.5, surfaceless (render into an FBO). nullptr and a one-line
// error when no EGL device gives such a context. Loads the GL entry points (glad).
std::unique_ptr<GlContext> createHeadlessContext(std::string& error);

// Shaded: hillshade x elevation ramp; Level / Ldr: debug colours; Imagery: the archive's
// colour imagery as it is; ImageryLit: imagery x hillshade (the default when there is imagery).
// Without imagery (or where it does not cover the terrain) the imagery views shade as Shaded.
enum class View { Shaded = 0, Level = 1, Ldr = 2, Imagery = 3, ImageryLit = 4 };
const char* viewName(View v);                   // "shaded", "level", "ldr", "imagery", "imagery-lit"
bool parseView(const std::string& s, View& v);  // accepts the names above

struct RenderSettings {
  int width = 1280, height = 720;
  double tau = 1.0;                  // screen-space error bound, pixels
  View view = View::Shaded;
  bool wireframe = false;            // line pass over the terrain
  bool fog = true;
  double verticalExaggeration = 1.0;
  std::array<float, 3> background{0.72f, 0.80f, 0.88f};  // clear colour (tests: magenta)
  double atlasBudgetMiB = 256;
  // Tiles uploaded per frame at most, counted as tiles of samples; a strategy that sends tiles
  // compressed gets StreamStrategy::deliveryScale() (its compression ratio, <= 8) times as many.
  size_t uploadsPerFrame = 64;
  // LOD hysteresis h: a refined tile (or finer centre ldr) is kept until its projected error
  // drops below h * tau; never coarser than tau allows (docs/rendering.md section 2). 1 = off.
  double hysteresis = 0.8;
  // Prefetch: also request (after the current view's tiles) the tiles of the camera predicted
  // prefetchSeconds ahead along its recent motion. prefetchFrameSeconds: the time between two
  // stream()/frame() calls for the motion estimate; 0 = the steady clock (tests and fixed-step
  // benchmarks set it, which makes the prefetch deterministic).
  bool prefetch = true;
  double prefetchSeconds = 0.75;
  double prefetchFrameSeconds = 0;
  // Imagery (archives with an imagery section; docs/rendering.md section 4). The colour atlas
  // takes imageryBudgetFraction of atlasBudgetMiB (one budget for both, reported separately).
  bool imagery = true;               // false: no colour atlas, imagery views shade as Shaded
  std::string imageryStream;         // "cpu" (BC1 atlas, CPU decode + BC1) | "cuda" (JPEG
                                     // decode + BC1 on the GPU, falls back to cpu) | "raw"
                                     // (RGBA8); "" = the height strategy's name (cpu for others)
  bool bc1Quality = false;           // cpu, cuda: cluster-fit BC1 instead of the fast one-pass mode
  double imageryBudgetFraction = 0.5;
  double imageryTexelPixels = 1.0;   // refine imagery while a texel covers more pixels
  size_t colourUploadsPerFrame = 32;  // imagery tiles uploaded per frame at most
  // cuda imagery only (hfview --cache vram[:MiB]): keep every decoded tile's BC1 chain in a
  // video-memory pool of imageryCacheMiB (0 = the whole imagery when it fits in a quarter of
  // the free device memory) and fill the atlas from there (makeCudaColourStream).
  bool imageryVramCache = false;
  double imageryCacheMiB = 0;
  // The animated ocean on water (issue 14; docs/rendering.md section 6): samples at or below
  // waterLevel metres (and nodata) are water. Needs the ocean part (FFTW); without it, or
  // without water at the level, a note says so and the terrain is drawn as before.
  bool ocean = false;
  double waterLevel = 0;
  OceanParams oceanParams;
  bool oceanSynchronous = false;     // each frame waits for the fields of its time (tests)
  std::string oceanDevice;           // where the fields are computed: "gl" (compute shaders
                                     // in the drawing context) | "cpu" (FFTW worker) | "cuda"
                                     // (CUDA-GL interop); gl and cuda fall back to cpu with a
                                     // note; "" = gl
  std::string shaderDir;             // empty: $HF_SHADER_DIR, else hfrt::runtimeDir("shaders")
  // Tests: an atlas allocation of more bytes than this fails as if the GPU were out of memory
  // (GL_OUT_OF_MEMORY), to exercise the shrinking in create() on any driver. 0 = no limit.
  size_t debugMaxAtlasBytes = 0;
};

struct FrameStats {
  size_t tilesDrawn = 0, tilesWanted = 0, tilesMissing = 0;  // wanted but not resident
  size_t lossyDrawn = 0;  // drawn tiles holding lossy heights (progressive, not refined yet)
  size_t uploads = 0, pending = 0, resident = 0, atlasSlots = 0, failedTiles = 0;
  uint64_t vertices = 0;             // strip vertices submitted
  std::vector<size_t> tilesPerLevel;
  std::vector<size_t> tilesPerLdr;   // drawn tiles by centre ldr
  std::vector<uint64_t> trianglesPerLevel;  // strip triangles (vertices - 2 per tile, with the
  uint64_t triangles = 0;                   // strip's degenerates) drawn, by level and in all
  uint64_t bytesStreamed = 0;        // archive payload bytes read by the strategy this frame
  LodStats lod;                      // of the drawn (resident) selection
  // GPU time per pass (GL_TIME_ELAPSED), milliseconds, from the frame before last (queries are
  // double-buffered so reading them never stalls); -1 until a result is available. After
  // Renderer::finishFrame(): this frame's own figures.
  std::array<double, 3> gpuMs{-1, -1, -1};
  // Render-thread wall time of the parts of this frame, milliseconds (steady clock):
  double selectMs = 0;      // LOD selections (what the camera wants, prefetch, what is drawn)
  double updateCpuMs = 0;   // atlas update: requests to the strategy + deliver (uploads/launches)
  double drawCpuMs = 0;     // draw records, buffer updates and GL draw submission
  size_t tilesRequested = 0;        // tiles asked of the strategy this frame (not resident)
  double tauWanted = 0;   // tau of what the camera wants: settings().tau, or more when the atlas
                          // cannot hold the view (the budget is too small for it)
  size_t tilesPrefetch = 0;         // of those, for the predicted camera only (prefetch)
  uint64_t compressedToDevice = 0;  // host->device bytes this frame (StreamStats differences)
  uint64_t samplesToDevice = 0;
  // The strategy's VRAM-resident compressed cache (cuda --cache vram; 0 elsewhere): tiles
  // decoded from it this frame, and the bytes resident in it now.
  uint64_t cacheHits = 0, cacheBytes = 0;
  // The strategy's host cache of compressed payloads (cuda --cache host; 0 elsewhere): requests
  // answered from it this frame, tiles read into it ahead of being wanted this frame (staged),
  // and its bytes now (StreamStats::hostHits, hostStaged, hostBytes).
  uint64_t hostHits = 0, hostStaged = 0, hostBytes = 0;
  uint64_t payloadToDevice = 0;  // StreamStats::payloadToDevice this frame
  // The same for imagery (cuda --cache vram): tiles copied from the pool of BC1 chains this
  // frame, bytes kept in it now.
  uint64_t colourCacheHits = 0, colourCacheBytes = 0;
  // Imagery (0 without it): tiles uploaded this frame, queued/decoding, resident, atlas layers,
  // wanted by this view (incl. ancestors), missing, corrupt so far; archive bytes read and
  // texture bytes uploaded this frame. colourMissing: after a drawn frame, the imagery tiles the
  // drawn tiles' cells want that are not resident (drawn tiles of the wanted selection; tiles
  // beyond what the atlas holds do not count) (shown coarser, from an ancestor; corrupt
  // ones excluded); after stream() alone, the wanted tiles (of what the atlas holds) not resident.
  size_t colourUploads = 0, colourPending = 0, colourResident = 0, colourLayers = 0;
  size_t colourWanted = 0, colourMissing = 0, colourFailed = 0;
  // Render-thread wall time of the imagery work in this frame (planning the wanted tiles and
  // the drawn cells, requests, atlas uploads), ms; part of selectMs / updateCpuMs / drawCpuMs.
  double colourCpuMs = 0;
  uint64_t colourBytesStreamed = 0, colourBytesToDevice = 0;
  // Set by finishFrame(): GPU time of the atlas update that completed (GL upload pass plus,
  // for cuda, the CUDA copy + decode batches finished since the last finishFrame), ms.
  double updateGpuMs = -1;
};

enum class GpuPass { Upload = 0, Terrain = 1, Wireframe = 2 };
const char* gpuPassName(GpuPass p);

class Renderer {
 public:
  // Needs a current context. Builds the patterns for the archive's tile size (tileLog 2..8),
  // the atlas within the budget, loads the top level synchronously. The archive and the
  // strategy must outlive the renderer.
  static std::unique_ptr<Renderer> create(const hfa::ArchiveReader& archive,
                                          StreamStrategy& strategy,
                                          const RenderSettings& settings, std::string& error);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  RenderSettings& settings();
  const LodPyramid& pyramid() const;
  Camera defaultCamera() const;  // oblique view of the whole archive

  // Streaming only: select, request, upload what is finished. Never waits.
  void stream(const Camera& camera, FrameStats* stats = nullptr);
  // stream() + draw into the FBO.
  void frame(const Camera& camera, FrameStats* stats = nullptr);
  // True when every tile the camera wants is resident (or failed) and nothing is pending
  // (heights and imagery); false before the first stream() / frame(): nothing was asked yet.
  bool settled() const;
  // True when every height tile the camera wants is resident (or failed), lossy or exact;
  // progressive loading reaches this first view before settled() (its exact view).
  bool viewComplete() const;
  // The tiles the last frame() drew (the selection restricted to resident tiles), in draw
  // order; empty before the first frame(). Tests check them (LOD bound, failed tiles).
  const std::vector<DrawTile>& lastDrawn() const;
  // One-line notes from create() for the caller to print (no "Note:" prefix), e.g. "atlas
  // shrunk from 256.0 MiB to 128.0 MiB (GPU out of memory)": the atlas texture could not be
  // allocated at the budget's size, so its layers were halved until it could (down to the
  // layers the top level needs; below that create() fails).
  const std::vector<std::string>& notes() const;
  // Imagery: whether a colour atlas is in use, and its strategy ("cpu", "raw") and format
  // ("bc1", "rgba8"); empty strings without.
  bool hasImagery() const;
  std::string imageryStrategy() const;
  std::string imageryFormat() const;
  // Benchmarks: waits until the GPU has finished everything submitted so far (glFinish) and
  // puts this frame's exact GPU pass times into `stats` (gpuMs, updateGpuMs). A synchronous
  // frame: call after frame(); never needed for viewing.
  void finishFrame(FrameStats* stats);
  // Benchmarks and tests: returns once the VRAM caches that hold a whole archive (heights and
  // imagery, --cache vram) are loaded; the time it took for the imagery goes to
  // `colourPreloadMs`, the bytes the imagery's cache then holds to `colourCacheBytes` (both
  // optional). Without such caches it returns at once.
  void finishPrefetch(double* colourPreloadMs = nullptr, uint64_t* colourCacheBytes = nullptr);

  // A resident tile's p x p samples as they are in the atlas (tests: strategy parity). False
  // when the tile is not resident.
  bool readAtlasTile(size_t tile, std::vector<uint16_t>& samples) const;

  // The FBO's colour as RGBA8, top row first (width * height * 4 bytes).
  std::vector<uint8_t> readPixels() const;

  // ---- window path (tools/hfview viewer) ----
  // New FBO size (settings().width/height follow); false and a one-line error when the FBO
  // cannot be made.
  bool resize(int width, int height, std::string& error);
  // Blits the FBO's colour to the default framebuffer (the window), scaled to w x h.
  void present(int width, int height) const;
  // The world point under FBO pixel (px, py) (origin top-left, as a cursor), from the depth of
  // the last frame(); false over the background. Reads one depth texel (a small sync).
  bool pick(double px, double py, std::array<double, 3>& world) const;
  // World point (z with the exaggeration applied, as pick() returns it) -> framebuffer pixel
  // (x right, y down) through the last frame's view-projection. False before the first frame
  // or behind the camera.
  bool project(const std::array<double, 3>& world, double& px, double& py) const;
  // Bounds of the terrain height at (x, y) from the finest archive tile covering it (tile
  // min/max in world z, exaggeration applied); false outside the archive.
  bool heightBounds(double x, double y, double& minZ, double& maxZ) const;
  // The whole archive's world-z range and x/y extent.
  void terrainBox(double& minZ, double& maxZ, double& extentX, double& extentY) const;
  // Vertical exaggeration is baked into the tile boxes: call after changing it in settings().
  void updateExaggeration();
  // The ocean's clock in seconds (the viewer: wall time; tests and benchmarks: fixed steps).
  // Until it is called, the steady clock since create().
  void setTime(double seconds);
  // Applies settings().ocean, waterLevel and oceanParams (the panel). False and a one-line
  // error when they cannot be used (the previous ocean, if any, stays).
  bool updateOcean(std::string& error);
  bool hasOcean() const;  // water is being drawn
  std::string oceanDevice()
      const;  // where its fields are computed: "gl" | "cpu" | "cuda" ("" = no ocean)

 private:
  struct Impl;
  explicit Renderer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes RGBA8 pixels (top row first) as PNG.
bool writePng(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba,
              std::string& error);

}  // namespace hfr
