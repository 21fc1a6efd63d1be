// renderer.cpp - atlas, streaming glue, Domino multi-draw and the FBO target.
#include "render/gl/renderer.h"

#include <glad/gl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "archive/archive.h"
#include "render/gl/shader.h"
#ifdef HF_HAVE_OCEAN
#include "render/gl/ocean_gl.h"
#endif
#include "render/gl/stream_gl.h"
#include "render/stream/colour.h"
#include "render/stream/request.h"
#include "render/stream/retry.h"


namespace hfr {

const char* viewName(View v) {
  switch (v) {
    case View::Shaded: return "shaded";
    case View::Level: return "level";
    case View::Ldr: return "ldr";
    case View::Imagery: return "imagery";
    case View::ImageryLit: return "imagery-lit";
  }
  return "?";
}

bool parseView(const std::string& s, View& v) {
  for (View c : {View::Shaded, View::Level, View::Ldr, View::Imagery, View::ImageryLit})
    if (s == viewName(c)) {
      v = c;
      return true;
    }
  return false;
}

namespace {
// EXT_texture_compression_s3tc (not in glad's core-only loader): DXT1 with punch-through alpha.
constexpr GLenum kCompressedRgbaDxt1 = 0x83F1;

constexpr double kPi = 3.14159265358979323846;
double rad(double deg) { return deg * kPi / 180.0; }

// Adds the wall time of a scope to `ms` (per-frame figures of FrameStats).
class ScopedMs {
 public:
  explicit ScopedMs(double& ms) : ms_(ms), t0_(std::chrono::steady_clock::now()) {}
  ~ScopedMs() {
    ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }
  ScopedMs(const ScopedMs&) = delete;
  ScopedMs& operator=(const ScopedMs&) = delete;

 private:
  double& ms_;
  std::chrono::steady_clock::time_point t0_;
};
}  // namespace

// Camera::forward / viewProj: render/camera/camera.cpp.

// ---- Renderer::Impl ----

struct TileRecord {
  float world[4];
  float atlas[4];
  float info[4];
  float colour[4];  // first ColourCell, cells per side (0: no imagery), 0, 0
};
struct DrawCommand {
  GLuint count, instanceCount, first, baseInstance;
};

struct Renderer::Impl final : TileSink {
  const hfa::ArchiveReader& archive;
  StreamStrategy& strategy;
  RenderSettings settings;
  LodPyramid pyramid;
  std::unique_ptr<LodSelector> selector;
  std::unique_ptr<DominoPatterns> patterns;
  AtlasLayout layout;
  std::unique_ptr<PageTable> pages;
  std::vector<uint8_t> failedTiles;
  FailureRetry retry;  // a URL archive's failed tiles are asked for again (stream/retry.h)
  double monotonicSeconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - clockStart).count();
  }
  std::vector<long> parent;  // per tile, -1 for the top level
  std::vector<size_t> topTiles;
  uint64_t frameNo = 1;
  size_t uploadsThisFrame = 0;
  std::vector<size_t> wanted;  // last request (not resident)
  // Request priorities, hysteresis of the wanted and drawn selections, prefetch
  // (render/stream/request.h).
  RequestPlanner planner;
  RequestPlan plan;
  CameraMotion motion;
  const std::chrono::steady_clock::time_point clockStart = std::chrono::steady_clock::now();
  double extentX = 1, extentY = 1, minZ = 0, maxZ = 1;
  std::string shaderDirectory;  // resolved in init()
  double timeSeconds = -1;      // Renderer::setTime; < 0: the steady clock
#ifdef HF_HAVE_OCEAN
  std::unique_ptr<OceanLayer> ocean;
  Seabed seabed;  // made on the first use of the ocean
  bool oceanFor(double level, std::string& error);
  void drawOcean(const Camera& cam, const std::array<double, 16>& vp);
  // The ocean's clock: Renderer::setTime's, else the steady clock's.
  double oceanSeconds() const { return timeSeconds >= 0 ? timeSeconds : monotonicSeconds(); }
  // The water's world height (exaggerated like the terrain).
  double waterZ() const { return settings.waterLevel * settings.verticalExaggeration; }
  // A drawn tile's square in the world: its corner at local (0, 0) and its side (x, y).
  std::array<double, 4> tileSquare(const DrawTile& d) const {
    const double span = double(1 << pyramid.tileLog) * double(1u << d.level);
    return {pyramid.originX + double(d.x) * span * pyramid.spacingX,
            pyramid.originY + double(d.y) * span * pyramid.spacingY, span * pyramid.spacingX,
            span * pyramid.spacingY};
  }
#endif

  GLuint atlas = 0, vao = 0, patternVbo = 0, patternTable = 0, drawIndexVbo = 0;
  GLuint indirect = 0, records = 0, program = 0, fbo = 0, colorRb = 0, depthRb = 0;
  size_t maxDraws = 0;
  bool nodataHoles = false;  // the terrain program clips triangles at nodata samples
  GLint uViewProj = -1, uEye = -1, uHeight = -1, uAtlas = -1, uView = -1, uWire = -1,
        uFogColor = -1, uFogDistance = -1, uLightDir = -1, uExtent = -1, uNodata = -1, uWater = -1;
  std::string fboError;
  std::vector<std::string> notes;  // create()'s notes (Renderer::notes)
  std::vector<DrawTile> drawn;     // the last frame's drawn tiles (Renderer::lastDrawn)
  // GPU timer queries: two sets (frame parity) of one GL_TIME_ELAPSED query per pass; a set is
  // read back (if available, never waiting) just before it is reused two frames later.
  static constexpr int kPasses = 3;
  GLuint queries[2][kPasses] = {};
  bool queryIssued[2][kPasses] = {};
  std::array<double, 3> gpuMs{-1, -1, -1};
  int querySet = -1;  // the set of the frame being drawn; -1: stream() only, no timing
  int lastQuerySet = -1;  // the set of the last frame() (finishFrame reads it)
  StreamStats lastStream;  // the strategy's counters at the previous frame (per-frame differences)
  double lastDeviceMs = 0;                        // StreamStats::deviceMs at the last finishFrame
  double selectMs = 0, updateMs = 0;              // this frame's timing (FrameStats)
  double colourMs = 0;                            // of which imagery work (FrameStats::colourCpuMs)
  std::array<double, 16> lastViewProj{};
  bool haveLastFrame = false;

  // ---- imagery: colour atlas (one layer per imagery tile, mips inside), its page table and
  // strategy, the cell grids of the drawn tiles (render/stream/colour.h) ----
  struct ColourAtlasSink final : ColourSink {
    Impl& m;
    explicit ColourAtlasSink(Impl& impl) : m(impl) {}
    bool reserveColour(size_t tile, uint32_t& layer) override {
      long evicted = -1;
      return m.colourPages->allocate(tile, m.frameNo, layer, evicted);
    }
    void uploadColour(const ColourTile& t, uint32_t layer) override { m.uploadColour(t, layer); }
    void colourFailed(size_t tile, const std::string& error) override {
      if (m.colourPages->resident(tile)) m.colourPages->release(tile);
      if (!m.colourFailedTiles[tile] && m.colourRetry.failures(tile) == 0)
        std::fprintf(stderr, "Warning: %s; drawn from an ancestor%s\n", error.c_str(),
                     m.archive.remote() ? " (asked again after a back-off)" : "");
      m.colourFailedTiles[tile] = 1;
      m.colourRetry.failed(tile, m.monotonicSeconds());
    }
    bool supportsChainUpload() const override { return m.colour && m.colour->format() == ColourFormat::Bc1; }
    void uploadColourChainFromBuffer(uint32_t layer, unsigned buffer, size_t offset) override {
      m.uploadColourChain(layer, buffer, offset);
    }
  };
  ColourAtlasSink colourSink{*this};
  std::unique_ptr<ColourPlanner> colourPlanner;
  std::unique_ptr<ColourStream> colour;
  std::unique_ptr<PageTable> colourPages;
  std::vector<uint8_t> colourFailedTiles;
  FailureRetry colourRetry;  // a URL archive's failed imagery tiles are asked for again
  std::vector<uint64_t> colourWantedFrame;  // per imagery tile: the last frame it was wanted within the atlas
  std::vector<uint64_t> selectedStamp;  // per height tile: the last frame it was in plan.selected
  std::vector<size_t> predictedOnly;    // this frame's predicted selection minus the current one
  std::vector<size_t> predictedRefine;  // imagery the predicted view adds, planned every 4th frame
  double colourTexelPixels = 0;         // the drape's texel size in pixels last frame (>= settings')
  std::vector<size_t> colourWanted;  // this frame's wanted imagery tiles (current view first)
  size_t colourWantedCurrent = 0;    // of which the current view's (the rest: prefetch)
  size_t colourUploadsThisFrame = 0;
  int colourMips = 1, colourTileSize = 256;
  GLuint colourAtlas = 0, cellsBuffer = 0;
  size_t cellsCapacity = 0;  // ColourCells the buffer holds
  GLint uColour = -1, uColourTile = -1;
  uint64_t lastColourRead = 0, lastColourToDevice = 0, lastColourCacheHits = 0;
  std::vector<ColourCell> cells;
  std::vector<size_t> shownCoarser;  // this frame's drawn cells whose imagery is not resident

  bool initColour(std::string& error);
  void planColour(const LodCamera& lc, const LodCamera* ahead, std::vector<size_t>& request);
  size_t colourMissingCount() const;
  void uploadColour(const ColourTile& t, uint32_t layer) {
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    for (size_t m = 0; m < t.mips.size() && int(m) < colourMips; ++m) {
      const int s = colourTileSize >> m;
      if (colour->format() == ColourFormat::Bc1)
        glCompressedTextureSubImage3D(colourAtlas, GLint(m), 0, 0, GLint(layer), s, s, 1,
                                      kCompressedRgbaDxt1, GLsizei(t.mips[m].size()), t.mips[m].data());
      else
        glTextureSubImage3D(colourAtlas, GLint(m), 0, 0, GLint(layer), s, s, 1, GL_RGBA,
                            GL_UNSIGNED_BYTE, t.mips[m].data());
    }
    ++colourUploadsThisFrame;
  }
  // A BC1 mip chain made on the GPU: copied from the pixel-unpack buffer into the layer,
  // level by level, without leaving video memory.
  void uploadColourChain(uint32_t layer, GLuint buffer, size_t offset) {
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, buffer);
    for (int m = 0; m < colourMips; ++m) {
      const int s = colourTileSize >> m;
      const size_t bytes = size_t(s) * size_t(s) / 2;
      glCompressedTextureSubImage3D(colourAtlas, GLint(m), 0, 0, GLint(layer), s, s, 1, kCompressedRgbaDxt1,
                                    GLsizei(bytes), reinterpret_cast<const void*>(offset));
      offset += bytes;
    }
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    ++colourUploadsThisFrame;
  }

  Impl(const hfa::ArchiveReader& a, StreamStrategy& s, const RenderSettings& rs)
      : archive(a), strategy(s), settings(rs) {}

  ~Impl() override {
    strategy.releaseGl();  // its PBOs / CUDA registration of the atlas, while GL is current
    // Reverse order of creation.
    if (queries[0][0]) glDeleteQueries(2 * kPasses, &queries[0][0]);
    if (fbo) glDeleteFramebuffers(1, &fbo);
    if (depthRb) glDeleteRenderbuffers(1, &depthRb);
    if (colorRb) glDeleteRenderbuffers(1, &colorRb);
    if (program) glDeleteProgram(program);
    colour.reset();  // workers stop before the archive or the atlas go
    if (cellsBuffer) glDeleteBuffers(1, &cellsBuffer);
    if (colourAtlas) glDeleteTextures(1, &colourAtlas);
    GLuint bufs[] = {records, indirect, drawIndexVbo, patternTable, patternVbo};
    glDeleteBuffers(5, bufs);
    if (vao) glDeleteVertexArrays(1, &vao);
    if (atlas) glDeleteTextures(1, &atlas);
  }

  // ---- TileSink ----
  bool reserve(size_t tile, AtlasSlot& slot) override {
    uint32_t s = 0;
    long evicted = -1;
    if (!pages->allocate(tile, frameNo, s, evicted)) return false;
    slot = layout.slot(s);
    return true;
  }
  void uploadSamples(size_t, const AtlasSlot& slot, const uint16_t* samples) override {
    glPixelStorei(GL_UNPACK_ALIGNMENT, 2);
    glTextureSubImage3D(atlas, 0, GLint(slot.x), GLint(slot.y), GLint(slot.layer),
                        layout.tileSize, layout.tileSize, 1, GL_RED_INTEGER, GL_UNSIGNED_SHORT,
                        samples);
    ++uploadsThisFrame;
  }
  void commit(size_t, const AtlasSlot&) override { ++uploadsThisFrame; }
  bool residentSlot(size_t tile, AtlasSlot& slot) override {
    const long s = pages->slot(tile);
    if (s < 0) return false;
    slot = layout.slot(uint32_t(s));
    return true;
  }
  uint32_t atlasTexture() const override { return atlas; }
  void failed(size_t tile, const std::string& error) override {
    // A strategy that validates after reserve (cuda) hands back the slot here.
    if (pages->resident(tile)) pages->release(tile);
    if (!failedTiles[tile] && retry.failures(tile) == 0)
      std::fprintf(stderr, "Warning: %s; drawn from an ancestor%s\n", error.c_str(),
                   archive.remote() ? " (asked again after a back-off)" : "");
    failedTiles[tile] = 1;
    retry.failed(tile, monotonicSeconds());
  }

  bool init(std::string& error);
  bool makeTarget(std::string& error);
  void streamStep(const Camera& cam, FrameStats* st);
  LodCamera lodCamera(const Camera& cam) const;
  bool predictCamera(const Camera& cam, LodCamera& ahead);
  void clipPlanes(const Camera& cam, double& zNear, double& zFar) const;
  void draw(const Camera& cam, FrameStats* st);
  void applyExaggeration();
  void beginPass(GpuPass p) {
    if (querySet < 0) return;
    glBeginQuery(GL_TIME_ELAPSED, queries[querySet][int(p)]);
    queryIssued[querySet][int(p)] = true;
  }
  void endPass() {
    if (querySet >= 0) glEndQuery(GL_TIME_ELAPSED);
  }
  // Reads what set `set` measured two frames ago, if the GPU has it; never waits.
  void collectQueries(int set) {
    for (int p = 0; p < kPasses; ++p) {
      if (!queryIssued[set][p]) continue;
      GLint available = 0;
      glGetQueryObjectiv(queries[set][p], GL_QUERY_RESULT_AVAILABLE, &available);
      if (!available) continue;  // keep the older figure rather than stall
      GLuint64 ns = 0;
      glGetQueryObjectui64v(queries[set][p], GL_QUERY_RESULT, &ns);
      gpuMs[size_t(p)] = double(ns) * 1e-6;
      queryIssued[set][p] = false;
    }
  }
};

const char* gpuPassName(GpuPass p) {
  switch (p) {
    case GpuPass::Upload: return "upload";
    case GpuPass::Terrain: return "terrain";
    case GpuPass::Wireframe: return "wireframe";
  }
  return "?";
}

void Renderer::Impl::applyExaggeration() {
  // Tile boxes and errors in world z (exaggeration applied); the selector caches per-tile
  // deviations, so it is rebuilt.
  const hfa::Header& h = archive.header();
  const double exag = settings.verticalExaggeration;
  const auto& entries = archive.tiles();
  minZ = 1e300;
  maxZ = -1e300;
  for (size_t i = 0; i < entries.size(); ++i) {
    const hfa::TileEntry& e = entries[i];
    LodTile& t = pyramid.tiles[i];
    // minSample/maxSample are already signed for Int16.
    const double a = (h.verticalOffset + h.verticalScale * e.minSample) * exag;
    const double b = (h.verticalOffset + h.verticalScale * e.maxSample) * exag;
    t.minZ = float(std::min(a, b));
    t.maxZ = float(std::max(a, b));
    minZ = std::min(minZ, double(t.minZ));
    maxZ = std::max(maxZ, double(t.maxZ));
    t.lodError.resize(e.lodError.size());
    for (size_t k = 0; k < e.lodError.size(); ++k)
      t.lodError[k] = float(double(e.lodError[k]) * std::fabs(h.verticalScale) * exag);
  }
  selector = std::make_unique<LodSelector>(pyramid);
  if (colourPlanner) {  // it refers to the selector (tile boxes)
    colourPlanner = std::make_unique<ColourPlanner>(archive, *selector);
    colourPlanner->texelPixels = settings.imageryTexelPixels;
  }
}

bool Renderer::Impl::init(std::string& error) {
  const hfa::Header& h = archive.header();
  if (h.tileLog < kDominoMinTileLog || h.tileLog > kDominoMaxTileLog) {
    error = "archive tiles of " + std::to_string(h.tileSize()) +
            " samples are not supported by the renderer (5 .. 257)";
    return false;
  }
  // Pyramid in the world frame of Camera (x east, y north, origin at the south-west corner).
  const double sx = h.spacingX > 0 ? h.spacingX : 1, sy = h.spacingY > 0 ? h.spacingY : 1;
  pyramid.tileLog = h.tileLog;
  pyramid.levels = h.levels;
  pyramid.width = h.width;
  pyramid.height = h.height;
  pyramid.originX = 0;
  pyramid.originY = double(h.height > 0 ? h.height - 1 : 0) * sy;
  pyramid.spacingX = sx;
  pyramid.spacingY = -sy;
  extentX = double(h.width > 0 ? h.width - 1 : 0) * sx;
  extentY = pyramid.originY;
  const auto& entries = archive.tiles();
  pyramid.tiles.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    pyramid.tiles[i].level = entries[i].level;
    pyramid.tiles[i].x = entries[i].x;
    pyramid.tiles[i].y = entries[i].y;
  }
  if (entries.empty()) {
    error = "archive has no tiles";
    return false;
  }
  applyExaggeration();
  parent.assign(entries.size(), -1);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].level + 1 < h.levels)
      parent[i] = archive.find(entries[i].level + 1, entries[i].x / 2, entries[i].y / 2);
    if (entries[i].level == h.levels - 1) topTiles.push_back(i);
  }
  patterns = std::make_unique<DominoPatterns>(h.tileLog);

  // Atlas.
  GLint maxLayers = 256, maxSize = 2048;
  glGetIntegerv(GL_MAX_ARRAY_TEXTURE_LAYERS, &maxLayers);
  glGetIntegerv(GL_MAX_TEXTURE_SIZE, &maxSize);
  // A huge budget is clamped by the archive's tile count; the cap (1 TiB) only keeps the
  // budget -> tiles conversion in range.
  const bool useImagery = settings.imagery && archive.hasImagery() && !archive.imageryTiles().empty();
  const double fraction = useImagery ? std::clamp(settings.imageryBudgetFraction, 0.05, 0.95) : 0.0;
  layout = AtlasLayout::fromBudget(h.tileSize(), std::min(settings.atlasBudgetMiB * (1 - fraction), 1048576.0),
                                   entries.size(), topTiles.size(), maxLayers, maxSize);
  // The GPU may not have the budget's memory: on GL_OUT_OF_MEMORY (or storage that did not
  // take) halve the layers and try again, down to the layers the pinned top level needs; the
  // caller prints the note. A driver that commits memory lazily does not fail here; then the
  // atlas keeps its size.
  const uint32_t minLayers = uint32_t(std::max<size_t>(
      1, (topTiles.size() + layout.slotsPerLayer() - 1) / layout.slotsPerLayer()));
  const size_t budgetBytes = layout.bytes();
  auto mib = [](size_t bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / 1048576.0);
    return std::string(b);
  };
  // Errors of earlier calls are not the atlas's (bounded: a lost context keeps reporting).
  for (int i = 0; i < 16 && glGetError() != GL_NO_ERROR; ++i) continue;
  for (;;) {
    glCreateTextures(GL_TEXTURE_2D_ARRAY, 1, &atlas);
    GLenum err = GL_OUT_OF_MEMORY;  // debugMaxAtlasBytes: simulated
    if (settings.debugMaxAtlasBytes == 0 || layout.bytes() <= settings.debugMaxAtlasBytes) {
      glTextureStorage3D(atlas, 1, GL_R16UI, layout.layerSize(), layout.layerSize(),
                         GLsizei(layout.layers));
      // Clearing makes a driver that commits texture memory lazily (NVIDIA) commit it now: an
      // out-of-memory shows here, and the first frame does not pay for the allocation.
      if (glGetError() == GL_NO_ERROR)
        glClearTexImage(atlas, 0, GL_RED_INTEGER, GL_UNSIGNED_SHORT, nullptr);
      err = glGetError();
      GLint immutable = GL_FALSE;
      glGetTextureParameteriv(atlas, GL_TEXTURE_IMMUTABLE_FORMAT, &immutable);
      if (err == GL_NO_ERROR && immutable != GL_TRUE) err = GL_OUT_OF_MEMORY;
    }
    if (err == GL_NO_ERROR) break;
    glDeleteTextures(1, &atlas);
    atlas = 0;
    if (err != GL_OUT_OF_MEMORY) {
      char code[16];
      std::snprintf(code, sizeof code, "0x%04x", unsigned(err));
      error = "cannot allocate the atlas (" + mib(layout.bytes()) + "): OpenGL error " + code;
      return false;
    }
    if (layout.layers <= minLayers) {
      error = "cannot allocate the atlas: GPU out of memory even at " + mib(layout.bytes()) +
              ", which the top level (" + std::to_string(topTiles.size()) + " tiles) needs";
      return false;
    }
    layout.layers = std::max(minLayers, layout.layers / 2);
  }
  if (layout.bytes() < budgetBytes)
    notes.push_back("atlas shrunk from " + mib(budgetBytes) + " to " + mib(layout.bytes()) +
                    " (GPU out of memory)");
  pages = std::make_unique<PageTable>(entries.size(), layout.capacity());
  failedTiles.assign(entries.size(), 0);
  retry.reset(entries.size());
  glTextureParameteri(atlas, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTextureParameteri(atlas, GL_TEXTURE_MAG_FILTER, GL_NEAREST);

  // Pattern vertices and table: uploaded once. The table also lives on the GPU for a later
  // GPU-side command builder; the CPU copy fills the indirect commands now.
  const auto& verts = patterns->vertices();
  const auto& table = patterns->table();
  glCreateBuffers(1, &patternVbo);
  glNamedBufferStorage(patternVbo, GLsizeiptr(patterns->vertexBytes()), verts.data(), 0);
  glCreateBuffers(1, &patternTable);
  glNamedBufferStorage(patternTable, GLsizeiptr(patterns->tableBytes()), table.data(), 0);
  maxDraws = entries.size();
  std::vector<GLuint> ids(maxDraws);
  for (size_t i = 0; i < maxDraws; ++i) ids[i] = GLuint(i);
  glCreateBuffers(1, &drawIndexVbo);
  glNamedBufferStorage(drawIndexVbo, GLsizeiptr(ids.size() * sizeof(GLuint)), ids.data(), 0);
  glCreateBuffers(1, &indirect);
  glNamedBufferStorage(indirect, GLsizeiptr(maxDraws * sizeof(DrawCommand)), nullptr,
                       GL_DYNAMIC_STORAGE_BIT);
  glCreateBuffers(1, &records);
  glNamedBufferStorage(records, GLsizeiptr(maxDraws * sizeof(TileRecord)), nullptr,
                       GL_DYNAMIC_STORAGE_BIT);
  // VAO: binding 0 = pattern vertices (2 x u16), binding 1 = draw index, one per instance;
  // each indirect command's baseInstance selects its draw index (core since 4.2, no
  // gl_DrawID needed).
  glCreateVertexArrays(1, &vao);
  glVertexArrayVertexBuffer(vao, 0, patternVbo, 0, sizeof(DominoVertex));
  glEnableVertexArrayAttrib(vao, 0);
  glVertexArrayAttribIFormat(vao, 0, 2, GL_UNSIGNED_SHORT, 0);
  glVertexArrayAttribBinding(vao, 0, 0);
  glVertexArrayVertexBuffer(vao, 1, drawIndexVbo, 0, sizeof(GLuint));
  glVertexArrayBindingDivisor(vao, 1, 1);
  glEnableVertexArrayAttrib(vao, 1);
  glVertexArrayAttribIFormat(vao, 1, 1, GL_UNSIGNED_INT, 0);
  glVertexArrayAttribBinding(vao, 1, 1);

  // Shaders.
  const std::string dir = resolveShaderDir(settings.shaderDir, error);
  if (dir.empty()) return false;
  shaderDirectory = dir;
  // Holes at nodata samples cost a clip distance (terrain.vert): only archives that keep
  // nodata pay it.
  nodataHoles = (archive.header().flags & hfa::kFlagNodataKept) != 0;
  program = compileProgram(dir, "terrain.vert", "terrain.frag", error,
                           nodataHoles ? "#define HF_NODATA_HOLES 1\n" : "");
  if (!program) return false;
  uViewProj = glGetUniformLocation(program, "uViewProj");
  uEye = glGetUniformLocation(program, "uEye");
  uHeight = glGetUniformLocation(program, "uHeight");
  uAtlas = glGetUniformLocation(program, "uAtlas");
  uView = glGetUniformLocation(program, "uView");
  uWire = glGetUniformLocation(program, "uWire");
  uFogColor = glGetUniformLocation(program, "uFogColor");
  uFogDistance = glGetUniformLocation(program, "uFogDistance");
  uLightDir = glGetUniformLocation(program, "uLightDir");
  uExtent = glGetUniformLocation(program, "uExtent");
  uNodata = glGetUniformLocation(program, "uNodata");
  uWater = glGetUniformLocation(program, "uWater");
  uColour = glGetUniformLocation(program, "uColour");
  uColourTile = glGetUniformLocation(program, "uColourTile");

  if (!makeTarget(error)) return false;
  glCreateQueries(GL_TIME_ELAPSED, 2 * kPasses, &queries[0][0]);

  // The top level, synchronously: the first frame always has data.
  for (size_t t : topTiles) {
    std::string e;
    if (strategy.loadNow(t, *this, e)) pages->pin(t);
    else std::fprintf(stderr, "Warning: %s\n", e.c_str());
  }
  if (useImagery && !initColour(error)) return false;
  if (settings.ocean) {
#ifdef HF_HAVE_OCEAN
    std::string why;
    if (!oceanFor(settings.waterLevel, why)) {
      error = why;
      return false;
    }
    if (!ocean) {
      char b[96];
      std::snprintf(b, sizeof b, "ocean: no water at or below %g m in this DEM", settings.waterLevel);
      notes.push_back(b);
    }
#else
    notes.push_back("ocean: this build has no ocean (FFTW was missing)");
#endif
  }
  if (glGetError() != GL_NO_ERROR) {
    error = "OpenGL error while setting up the renderer";
    return false;
  }
  glFinish();  // set-up work (atlas clear, top-level uploads) is not part of the first frame
  return true;
}

bool Renderer::Impl::initColour(std::string& error) {
  const hfa::ImageryHeader& im = archive.imagery();
  std::string name = settings.imageryStream;
  // Default: the height strategy's counterpart (raw -> raw, cuda -> cuda, else cpu).
  if (name.empty())
    name = std::strcmp(strategy.name(), "raw") == 0 ? "raw" : std::strcmp(strategy.name(), "cuda") == 0 ? "cuda" : "cpu";
  if (name != "cpu" && name != "raw" && name != "cuda") {
    error = "imagery stream " + name + ": must be cpu, raw or cuda";
    return false;
  }
  ColourFormat format = name == "raw" ? ColourFormat::Rgba8 : ColourFormat::Bc1;
  if (format == ColourFormat::Bc1 && !hasGlExtension("GL_EXT_texture_compression_s3tc")) {
    notes.push_back("no S3TC (GL_EXT_texture_compression_s3tc): imagery uses an RGBA8 atlas");
    format = ColourFormat::Rgba8;
    name = "raw";
  }
  colourTileSize = im.tileSize;
  colourMips = 1;
  while (colourMips < himg::kTileMipLevels && (colourTileSize >> colourMips) >= 16) ++colourMips;
  size_t layerBytes = 0;
  for (int m = 0; m < colourMips; ++m) {
    const size_t side = size_t(colourTileSize >> m);
    layerBytes += format == ColourFormat::Bc1 ? side * side / 2 : side * side * 4;
  }
  const auto& tiles = archive.imageryTiles();
  std::vector<size_t> top;
  for (size_t i = 0; i < tiles.size(); ++i)
    if (tiles[i].level == im.levels - 1) top.push_back(i);
  GLint maxLayers = 256;
  glGetIntegerv(GL_MAX_ARRAY_TEXTURE_LAYERS, &maxLayers);
  const double fraction = std::clamp(settings.imageryBudgetFraction, 0.05, 0.95);
  const double budget = std::min(settings.atlasBudgetMiB, 1048576.0) * fraction * 1048576.0;
  size_t layers = size_t(budget / double(layerBytes));
  layers = std::min({layers, tiles.size(), size_t(maxLayers)});
  layers = std::max({layers, top.size(), size_t(1)});
  if (top.size() > size_t(maxLayers)) {
    error = "the imagery's top level has " + std::to_string(top.size()) +
            " tiles, more than the GPU's texture-array layers (" + std::to_string(maxLayers) + ")";
    return false;
  }
  const GLenum internal = format == ColourFormat::Bc1 ? kCompressedRgbaDxt1 : GL_RGBA8;
  for (int i = 0; i < 16 && glGetError() != GL_NO_ERROR; ++i) continue;
  for (;;) {
    glCreateTextures(GL_TEXTURE_2D_ARRAY, 1, &colourAtlas);
    GLenum err = GL_OUT_OF_MEMORY;
    if (settings.debugMaxAtlasBytes == 0 || layers * layerBytes <= settings.debugMaxAtlasBytes) {
      glTextureStorage3D(colourAtlas, colourMips, internal, colourTileSize, colourTileSize, GLsizei(layers));
      err = glGetError();
    }
    if (err == GL_NO_ERROR) break;
    glDeleteTextures(1, &colourAtlas);
    colourAtlas = 0;
    if (err != GL_OUT_OF_MEMORY || layers <= std::max<size_t>(1, top.size())) {
      error = "cannot allocate the imagery atlas (" + std::to_string(layers) + " layers)";
      return false;
    }
    notes.push_back("imagery atlas shrunk to " + std::to_string(std::max<size_t>(top.size(), layers / 2)) +
                    " layers (GPU out of memory)");
    layers = std::max<size_t>(top.size(), layers / 2);
  }
  glTextureParameteri(colourAtlas, GL_TEXTURE_MIN_FILTER, GL_LINEAR_MIPMAP_LINEAR);
  glTextureParameteri(colourAtlas, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTextureParameteri(colourAtlas, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTextureParameteri(colourAtlas, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glTextureParameteri(colourAtlas, GL_TEXTURE_MAX_LEVEL, colourMips - 1);
  colourPages = std::make_unique<PageTable>(tiles.size(), layers);
  colourFailedTiles.assign(tiles.size(), 0);
  colourRetry.reset(tiles.size());
  colourWantedFrame.assign(tiles.size(), 0);
  colourPlanner = std::make_unique<ColourPlanner>(archive, *selector);
  colourPlanner->texelPixels = settings.imageryTexelPixels;
  const himg::Bc1Mode mode = settings.bc1Quality ? himg::Bc1Mode::Quality : himg::Bc1Mode::Fast;
  if (name == "cuda") {
    std::string note;
    StreamOptions cache;
    cache.vramCache = settings.imageryVramCache;
    cache.cacheMiB = settings.imageryCacheMiB;
    colour = makeCudaColourStream(archive, mode, note, 2, std::max<size_t>(1, settings.colourUploadsPerFrame), cache);
    if (!colour) notes.push_back("imagery stream cuda: " + note);
  }
  if (!colour) colour = std::make_unique<ColourStrategy>(archive, format, mode);
  for (size_t t : top) {
    std::string e;
    if (colour->loadNow(t, colourSink, e)) colourPages->pin(t);
    else std::fprintf(stderr, "Warning: %s\n", e.c_str());
  }
  const ColourStats cs = colour->stats();
  lastColourRead = cs.bytesRead;
  lastColourToDevice = cs.bytesToDevice;
  lastColourCacheHits = cs.cacheHits;
  return true;
}

bool Renderer::Impl::makeTarget(std::string& error) {
  glCreateRenderbuffers(1, &colorRb);
  glNamedRenderbufferStorage(colorRb, GL_RGBA8, settings.width, settings.height);
  glCreateRenderbuffers(1, &depthRb);
  glNamedRenderbufferStorage(depthRb, GL_DEPTH_COMPONENT32F, settings.width, settings.height);
  glCreateFramebuffers(1, &fbo);
  glNamedFramebufferRenderbuffer(fbo, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, colorRb);
  glNamedFramebufferRenderbuffer(fbo, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, depthRb);
  if (glCheckNamedFramebufferStatus(fbo, GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) {
    error = "framebuffer " + std::to_string(settings.width) + "x" +
            std::to_string(settings.height) + " is incomplete";
    return false;
  }
  return true;
}

void Renderer::Impl::clipPlanes(const Camera& cam, double& zNear, double& zFar) const {
  // Far: the farthest corner of the terrain's box; near: a fraction of the height above it.
  double far2 = 0;
  for (int i = 0; i < 8; ++i) {
    const double px = (i & 1) ? extentX : 0, py = (i & 2) ? extentY : 0, pz = (i & 4) ? maxZ : minZ;
    far2 = std::max(far2, (px - cam.x) * (px - cam.x) + (py - cam.y) * (py - cam.y) +
                              (pz - cam.z) * (pz - cam.z));
  }
  zFar = std::sqrt(far2) * 1.05 + 10;
  const double above = cam.z - maxZ;
  zNear = std::clamp(above > 0 ? above * 0.5 : 1.0, std::max(0.5, zFar * 1e-5), zFar * 0.01);
}

LodCamera Renderer::Impl::lodCamera(const Camera& cam) const {
  double zn, zf;
  clipPlanes(cam, zn, zf);
  LodCamera lc;
  lc.eye = {cam.x, cam.y, cam.z};
  lc.viewProj = cam.viewProj(double(settings.width) / settings.height, zn, zf);
  lc.viewportHeight = settings.height;
  lc.tau = settings.tau;
  return lc;
}

bool Renderer::Impl::predictCamera(const Camera& cam, LodCamera& ahead) {
  // Motion is observed every frame (prefetch can be switched on at any time); bounds scale
  // with the terrain: a step over a quarter of its diagonal is a jump to a new view.
  const double now = settings.prefetchFrameSeconds > 0
                         ? double(frameNo) * settings.prefetchFrameSeconds
                         : std::chrono::duration<double>(std::chrono::steady_clock::now() - clockStart).count();
  const double diag = std::sqrt(extentX * extentX + extentY * extentY);
  motion.limits.maxStep = 0.25 * diag;
  motion.limits.maxDistance = 0.25 * diag;
  motion.limits.minMove = 1e-4 * diag;
  motion.observe(cam, now);
  Camera predicted;
  if (!motion.predict(settings.prefetchSeconds, predicted)) return false;
  ahead = lodCamera(predicted);
  return true;
}

void Renderer::Impl::streamStep(const Camera& cam, FrameStats* st) {
  ++frameNo;
  uploadsThisFrame = 0;
  const LodCamera lc = lodCamera(cam);
  // What the camera wants (full pyramid, with hysteresis), then everything needed to draw it:
  // each wanted tile, its ancestors and, for every refined ancestor, all of its children (the
  // selector refines all-or-nothing), and last the same for the camera predicted along its
  // motion (prefetch). Resident ones are touched (LRU); the request puts first the missing
  // tiles that made the last drawn selection coarsen, then coarse levels first, so the view
  // refines progressively and ancestors arrive before their children (render/stream/request.h).
  LodCamera ahead;
  bool moving = false;
  std::vector<size_t> colourRequest;
  if (archive.remote()) {  // the server may be back: failed tiles are wanted again when due
    const double now = monotonicSeconds();
    retry.releaseDue(failedTiles, now);
    colourRetry.releaseDue(colourFailedTiles, now);
  }
  {
    ScopedMs timer(selectMs);
    moving = predictCamera(cam, ahead);
    planner.setHysteresis(settings.hysteresis);
    planner.plan(*selector, *patterns, lc, settings.prefetch && moving ? &ahead : nullptr, *pages,
                 frameNo, failedTiles, plan);
    if (colour) {
      ScopedMs colourTimer(colourMs);
      planColour(lc, settings.prefetch && moving ? &ahead : nullptr, colourRequest);
    }
  }
  wanted = plan.missing;
  colourUploadsThisFrame = 0;
  {
    ScopedMs timer(updateMs);
    strategy.request(plan.request);
    strategy.stage(plan.stage);
    if (colour) {
      ScopedMs colourTimer(colourMs);
      colour->request(colourRequest);
    }
    beginPass(GpuPass::Upload);
    strategy.deliver(*this, deliveryBudget(settings.uploadsPerFrame, strategy.deliveryScale()));
    if (colour) {
      ScopedMs colourTimer(colourMs);
      colour->deliver(colourSink, settings.colourUploadsPerFrame);
    }
    endPass();
  }
  const StreamStats ss = strategy.stats();  // one lock of the strategy per frame
  // A counter's growth since the previous frame (0 if it went back).
  auto since = [](uint64_t now, uint64_t before) { return now - std::min(now, before); };
  const uint64_t bytesThisFrame = since(ss.bytesRead, lastStream.bytesRead);
  if (st) {
    st->selectMs = selectMs;
    st->updateCpuMs = updateMs;
    st->tilesRequested = plan.request.size();
    st->tilesPrefetch = plan.prefetch;
    st->compressedToDevice = since(ss.compressedToDevice, lastStream.compressedToDevice);
    st->samplesToDevice = since(ss.samplesToDevice, lastStream.samplesToDevice);
    st->bytesStreamed = bytesThisFrame;
    st->cacheHits = since(ss.cacheHits, lastStream.cacheHits);
    st->hostHits = since(ss.hostHits, lastStream.hostHits);
    st->hostStaged = since(ss.hostStaged, lastStream.hostStaged);
    st->hostBytes = ss.hostBytes;
    st->payloadToDevice = since(ss.payloadToDevice, lastStream.payloadToDevice);
    st->cacheBytes = ss.cacheBytes;
    st->tilesWanted = plan.wanted;
    st->tauWanted = plan.tau;
    st->uploads = uploadsThisFrame;
    st->pending = strategy.pending();
    st->resident = pages->residentCount();
    st->atlasSlots = layout.capacity();
    st->tilesMissing = 0;
    for (size_t t : wanted)
      if (!pages->resident(t)) ++st->tilesMissing;
    st->failedTiles = size_t(std::count(failedTiles.begin(), failedTiles.end(), 1));
  }
  lastStream = ss;
  if (colour) {
    const ColourStats cs = colour->stats();
    if (st) {
      st->colourUploads = colourUploadsThisFrame;
      st->colourCpuMs = colourMs;
      st->colourPending = colour->pending();
      st->colourResident = colourPages->residentCount();
      st->colourLayers = colourPages->capacity();
      st->colourWanted = colourWantedCurrent;
      st->colourMissing = colourMissingCount();
      st->colourFailed = size_t(std::count(colourFailedTiles.begin(), colourFailedTiles.end(), 1));
      st->colourBytesStreamed = cs.bytesRead - std::min(cs.bytesRead, lastColourRead);
      st->colourBytesToDevice = cs.bytesToDevice - std::min(cs.bytesToDevice, lastColourToDevice);
      st->colourCacheHits = cs.cacheHits - std::min(cs.cacheHits, lastColourCacheHits);
      st->colourCacheBytes = cs.cacheBytes;
    }
    lastColourRead = cs.bytesRead;
    lastColourToDevice = cs.bytesToDevice;
    lastColourCacheHits = cs.cacheHits;
  }
}

void Renderer::Impl::planColour(const LodCamera& lc, const LodCamera* ahead, std::vector<size_t>& request) {
  // The imagery of what the camera wants (the full height selection), then of the predicted
  // camera's selection; resident tiles are touched like heights (prefetch ones as used in the
  // previous frame: kept ahead of stale tiles, evictable for what this frame needs).
  // When the current view wants more imagery tiles than the colour atlas holds, texels may
  // project larger (2x per step) until it fits: a coarser drape, never a view that cannot settle.
  // With hysteresis: the drape starts from the last frame's texel size and refines (halves it)
  // only when the finer plan fits in 3/4 of the atlas, so a view near the limit does not flip
  // between two drapes (each flip to the finer one would want a burst of tiles at once).
  const size_t cap = colourPages->capacity();
  const double base = std::max(1e-3, settings.imageryTexelPixels);
  double texelPixels = std::max(base, colourTexelPixels);
  auto planAt = [&](double tp) {
    colourPlanner->texelPixels = tp;
    colourWanted.clear();
    colourPlanner->clearWanted();
    colourPlanner->want(plan.selected, lc, colourWanted, /*keepLeaves=*/true);
  };
  if (texelPixels > base) {
    planAt(std::max(base, texelPixels / 2));
    if (colourWanted.size() * 4 <= cap * 3) texelPixels = std::max(base, texelPixels / 2);
    else planAt(texelPixels);
  } else {
    planAt(texelPixels);
  }
  for (int attempt = 0; colourWanted.size() > cap && attempt < 10; ++attempt) {
    texelPixels *= 2;
    planAt(texelPixels);
  }
  colourTexelPixels = texelPixels;
  colourWantedCurrent = colourWanted.size();
  if (ahead && !plan.predictedSelected.empty()) {
    // Prefetch: every frame the imagery of the height tiles the predicted view adds (entering
    // the view or refined); every 4th frame also the finer imagery the predicted camera wants on
    // the tiles both views select, reused in between (render-thread time: a full plan of the
    // predicted view each frame would double the planning).
    if (selectedStamp.size() != pyramid.tiles.size()) selectedStamp.assign(pyramid.tiles.size(), 0);
    for (size_t t : plan.selected) selectedStamp[t] = frameNo;
    predictedOnly.clear();
    for (size_t t : plan.predictedSelected)
      if (selectedStamp[t] != frameNo) predictedOnly.push_back(t);
    colourPlanner->want(predictedOnly, *ahead, colourWanted);
    if (frameNo % 4 == 0) {
      predictedRefine.clear();
      colourPlanner->want(plan.predictedSelected, *ahead, predictedRefine);
      colourWanted.insert(colourWanted.end(), predictedRefine.begin(), predictedRefine.end());
    } else {
      colourPlanner->wantAgain(predictedRefine, colourWanted);
    }
  } else {
    predictedRefine.clear();
  }
  const size_t current = std::min(colourWantedCurrent, cap);
  const size_t prefetchCap = cap - current;
  for (size_t i = colourWantedCurrent, n = 0; i < colourWanted.size() && n < prefetchCap; ++i, ++n) {
    const size_t t = colourWanted[i];
    if (colourPages->resident(t)) colourPages->touch(t, frameNo > 0 ? frameNo - 1 : 0);
  }
  for (size_t i = 0; i < current; ++i) {
    const size_t t = colourWanted[i];
    colourWantedFrame[t] = frameNo;
    if (colourPages->resident(t)) colourPages->touch(t, frameNo);
    else if (!colourFailedTiles[t]) request.push_back(t);
  }
  for (size_t i = colourWantedCurrent, n = 0; i < colourWanted.size() && n < prefetchCap; ++i, ++n) {
    const size_t t = colourWanted[i];
    if (!colourPages->resident(t) && !colourFailedTiles[t]) request.push_back(t);
  }
}

size_t Renderer::Impl::colourMissingCount() const {
  // Only what the atlas can hold counts (planColour requests no more, coarse levels first): a
  // view that wants more is drawn from resident ancestors, coarser, and still settles.
  size_t n = 0;
  for (size_t i = 0; i < std::min(colourWantedCurrent, colourPages->capacity()); ++i) {
    const size_t t = colourWanted[i];
    if (!colourPages->resident(t) && !colourFailedTiles[t]) ++n;
  }
  return n;
}

void Renderer::Impl::draw(const Camera& cam, FrameStats* st) {
  const LodCamera lc = lodCamera(cam);
  // Failed tiles count as absent too: drawn from their ancestor.
  LodStats ls;
  std::vector<DrawTile> tiles;
  {
    ScopedMs timer(selectMs);
    tiles = planner.selectDrawn(*selector, *patterns, lc, pages->residency(), &ls, &plan);
  }
  drawn = tiles;
  const auto& table = patterns->table();
  const int N = 1 << pyramid.tileLog;
  {
    // Front to back by each tile's nearest point to the eye in plan: the early depth test then
    // rejects most hidden fragments before terrain.frag shades them.
    std::vector<std::pair<double, DrawTile>> byDistance;
    byDistance.reserve(tiles.size());
    for (const DrawTile& d : tiles) {
      const auto [x0, y0, w, h] = tileSquare(d);
      const double dx = cam.x - std::clamp(cam.x, std::min(x0, x0 + w), std::max(x0, x0 + w));
      const double dy = cam.y - std::clamp(cam.y, std::min(y0, y0 + h), std::max(y0, y0 + h));
      byDistance.emplace_back(dx * dx + dy * dy, d);
    }
    std::stable_sort(byDistance.begin(), byDistance.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < tiles.size(); ++i) tiles[i] = byDistance[i].second;
  }
  std::vector<DrawCommand> cmds;
  std::vector<TileRecord> recs;
  cmds.reserve(tiles.size());
  recs.reserve(tiles.size());
  cells.clear();
  shownCoarser.clear();
  uint64_t vertices = 0;
  if (st) {
    st->tilesPerLevel.assign(size_t(pyramid.levels), 0);
    st->lossyDrawn = 0;
    st->tilesPerLdr.assign(size_t(pyramid.tileLog) + 1, 0);
    st->trianglesPerLevel.assign(size_t(pyramid.levels), 0);
    st->triangles = 0;
  }
  for (const DrawTile& d : tiles) {
    const long s = pages->slot(d.tile);
    if (s < 0) continue;  // cannot happen: the selection only uses resident tiles
    pages->touch(d.tile, frameNo);
    const PatternRange r = table[d.pattern];
    const AtlasSlot a = layout.slot(uint32_t(s));
    const std::array<double, 4> square = tileSquare(d);
    TileRecord rec{};
    rec.world[0] = float(square[0]);
    rec.world[1] = float(square[1]);
    rec.world[2] = float(double(1u << d.level) * pyramid.spacingX);
    rec.world[3] = float(double(1u << d.level) * pyramid.spacingY);
    rec.atlas[0] = float(a.x);
    rec.atlas[1] = float(a.y);
    rec.atlas[2] = float(a.layer);
    rec.atlas[3] = float(N);
    rec.info[0] = float(d.level);
    rec.info[1] = float(d.centre);
    rec.info[2] = float(*std::min_element(d.corner.begin(), d.corner.end()));
    rec.info[3] = float(d.pattern);
    if (colourPlanner) {
      rec.colour[0] = float(cells.size());
      const auto c0 = std::chrono::steady_clock::now();
      rec.colour[1] = float(colourPlanner->cells(d, lc, colourPages->slots(), cells, &shownCoarser));
      colourMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
    }
    cmds.push_back(DrawCommand{r.count, 1, r.first, GLuint(recs.size())});
    recs.push_back(rec);
    vertices += r.count;
    if (st) {
      ++st->tilesPerLevel[size_t(d.level)];
      ++st->tilesPerLdr[size_t(d.centre)];
      if (strategy.lossy(d.tile)) ++st->lossyDrawn;
      const uint64_t tris = r.count >= 2 ? r.count - 2 : 0;
      st->trianglesPerLevel[size_t(d.level)] += tris;
      st->triangles += tris;
    }
  }
  if (st) {
    st->tilesDrawn = cmds.size();
    st->vertices = vertices;
    st->lod = ls;
    if (colourPlanner) {  // what this frame shows coarser than it wants (distinct, not corrupt)
      std::sort(shownCoarser.begin(), shownCoarser.end());
      shownCoarser.erase(std::unique(shownCoarser.begin(), shownCoarser.end()), shownCoarser.end());
      st->colourMissing = size_t(std::count_if(shownCoarser.begin(), shownCoarser.end(), [&](size_t t) {
        return !colourFailedTiles[t] && colourWantedFrame[t] == frameNo;  // corrupt / beyond the atlas: not missing
      }));
    }
  }
  if (!cmds.empty()) {
    glNamedBufferSubData(indirect, 0, GLsizeiptr(cmds.size() * sizeof(DrawCommand)), cmds.data());
    glNamedBufferSubData(records, 0, GLsizeiptr(recs.size() * sizeof(TileRecord)), recs.data());
  }
  if (!cells.empty()) {
    if (cells.size() > cellsCapacity) {  // grows by doubling; a frame's cells fit in one buffer
      if (cellsBuffer) glDeleteBuffers(1, &cellsBuffer);
      cellsCapacity = std::max(cells.size(), 2 * cellsCapacity);
      glCreateBuffers(1, &cellsBuffer);
      glNamedBufferStorage(cellsBuffer, GLsizeiptr(cellsCapacity * sizeof(ColourCell)), nullptr,
                           GL_DYNAMIC_STORAGE_BIT);
    }
    glNamedBufferSubData(cellsBuffer, 0, GLsizeiptr(cells.size() * sizeof(ColourCell)), cells.data());
  }

  glBindFramebuffer(GL_FRAMEBUFFER, fbo);
  glViewport(0, 0, settings.width, settings.height);
  glClearColor(settings.background[0], settings.background[1], settings.background[2], 1.0f);
  glClearDepth(1.0);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
  glEnable(GL_DEPTH_TEST);
  glDepthFunc(GL_LESS);
  glDisable(GL_CULL_FACE);  // seen from below at the borders; the mesh is a height field
  if (cmds.empty()) return;

  glUseProgram(program);
  double zn, zf;
  clipPlanes(cam, zn, zf);
  const auto vp = cam.viewProj(double(settings.width) / settings.height, zn, zf);
  lastViewProj = vp;
  haveLastFrame = true;
  float vpf[16];
  for (int i = 0; i < 16; ++i) vpf[i] = float(vp[size_t(i)]);
  glUniformMatrix4fv(uViewProj, 1, GL_FALSE, vpf);
  glUniform3f(uEye, float(cam.x), float(cam.y), float(cam.z));
  const hfa::Header& h = archive.header();
  glUniform4f(uHeight, float(h.verticalScale), float(h.verticalOffset),
              float(settings.verticalExaggeration),
              h.sampleType == hfpac::SampleType::Int16 ? 1.0f : 0.0f);
  glUniform1i(uAtlas, 0);
  // The DEM's own extent (sample centres 0 .. W-1, 0 .. H-1): the pyramid's padding beyond it
  // (edge samples repeated to whole tiles) is not drawn.
  const double tol = 1e-4 * std::max(std::fabs(pyramid.spacingX), std::fabs(pyramid.spacingY));
  glUniform4f(uExtent, float(-tol), float(-tol), float(extentX + tol), float(extentY + tol));
  // Kept nodata samples are holes (terrain.vert / .frag); filled ones are ordinary heights.
  glUniform4f(uNodata, (h.flags & hfa::kFlagNodataKept) ? 1.0f : 0.0f, float(h.nodata), 0.0f, 0.0f);
  glUniform1i(uView, int(settings.view));
#ifdef HF_HAVE_OCEAN
  glUniform2f(uWater, ocean ? 1.0f : 0.0f, float(waterZ()));
#else
  glUniform2f(uWater, 0.0f, 0.0f);
#endif
  glUniform3f(uFogColor, 0.72f, 0.80f, 0.88f);
  glUniform1f(uFogDistance,
              settings.fog ? float(1.6 * std::sqrt(extentX * extentX + extentY * extentY)) : 0.0f);
  // Classic hillshade light: azimuth 315 degrees (from the north-west), altitude 45 degrees.
  const double az = rad(315), alt = rad(45);
  glUniform3f(uLightDir, float(std::sin(az) * std::cos(alt)), float(std::cos(az) * std::cos(alt)),
              float(std::sin(alt)));
  glBindTextureUnit(0, atlas);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, records);
  glUniform1i(uColour, 1);
  if (colourAtlas && cellsBuffer) {
    glBindTextureUnit(1, colourAtlas);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 1, cellsBuffer);
    const hfa::ImageryHeader& im = archive.imagery();
    glUniform4f(uColourTile, float(im.tileSize), float(im.border), float(im.content()), 1.0f);
  } else {
    glUniform4f(uColourTile, 1.0f, 0.0f, 1.0f, 0.0f);  // no imagery: the views shade as Shaded
  }
  glBindBuffer(GL_DRAW_INDIRECT_BUFFER, indirect);
  glBindVertexArray(vao);

  glUniform1i(uWire, 0);
  if (settings.wireframe) {
    glEnable(GL_POLYGON_OFFSET_FILL);
    glPolygonOffset(1.0f, 1.0f);
  }
  glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
  if (nodataHoles) glEnable(GL_CLIP_DISTANCE0);
  beginPass(GpuPass::Terrain);
  glMultiDrawArraysIndirect(GL_TRIANGLE_STRIP, nullptr, GLsizei(cmds.size()), 0);
  endPass();
  if (settings.wireframe) {
    beginPass(GpuPass::Wireframe);
    glDisable(GL_POLYGON_OFFSET_FILL);
    glUniform1i(uWire, 1);
    glPolygonMode(GL_FRONT_AND_BACK, GL_LINE);
    glDepthFunc(GL_LEQUAL);
    glDepthMask(GL_FALSE);  // lines faded out leave colour and depth as they were
    // An overlay: translucent lines over whatever shading is on, which stays readable.
    // The destination alpha stays 1: screenshots (readPixels -> PNG) are opaque.
    glEnable(GL_BLEND);
    glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ZERO, GL_ONE);
    glMultiDrawArraysIndirect(GL_TRIANGLE_STRIP, nullptr, GLsizei(cmds.size()), 0);
    glDisable(GL_BLEND);
    glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
    glDepthMask(GL_TRUE);
    glDepthFunc(GL_LESS);
    endPass();
  } else if (querySet >= 0) {
    gpuMs[size_t(GpuPass::Wireframe)] = -1;
  }
  glDisable(GL_CLIP_DISTANCE0);
  glBindVertexArray(0);
#ifdef HF_HAVE_OCEAN
  drawOcean(cam, vp);
#endif
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
}

#ifdef HF_HAVE_OCEAN
// The seabed: the finest level whose grid is at most ~1024 samples a side, decoded once.
bool Renderer::Impl::oceanFor(double level, std::string& error) {
  const hfa::Header& h = archive.header();
  if (seabed.metres.empty()) {
    const int n = 1 << h.tileLog;
    int L = 0;
    while (L + 1 < h.levels && uint64_t(std::max(h.tilesX(L), h.tilesY(L))) * uint64_t(n) > 1024) ++L;
    const uint32_t tx = h.tilesX(L), ty = h.tilesY(L);
    seabed.width = int(tx) * n + 1;
    seabed.height = int(ty) * n + 1;
    seabed.stepX = double(1u << L) * pyramid.spacingX;
    seabed.stepY = double(1u << L) * -pyramid.spacingY;
    seabed.originY = pyramid.originY;
    // Land until decoded (a tile the archive lacks has no water); NaN marks nodata (water).
    seabed.metres.assign(size_t(seabed.width) * size_t(seabed.height), std::numeric_limits<float>::infinity());
    const int p = n + 1;
    std::vector<uint16_t> samples(size_t(p) * size_t(p));
    const bool kept = (h.flags & hfa::kFlagNodataKept) != 0;
    {  // one batch of reads for the whole level (a URL archive: a few coalesced range requests)
      size_t first = 0, count = 0;
      archive.levelRange(L, first, count);
      std::vector<size_t> levelTiles(count);
      for (size_t i = 0; i < count; ++i) levelTiles[i] = first + i;
      archive.willNeed(levelTiles.data(), levelTiles.size());
    }
    for (uint32_t y = 0; y < ty; ++y)
      for (uint32_t x = 0; x < tx; ++x) {
        const long t = archive.find(L, x, y);
        std::string e;
        if (t < 0 || !archive.decodeTile(size_t(t), samples.data(), e)) continue;
        for (int j = 0; j < p; ++j)
          for (int i = 0; i < p; ++i) {
            const uint16_t v = samples[size_t(j) * size_t(p) + size_t(i)];
            const size_t at = (size_t(y) * size_t(n) + size_t(j)) * size_t(seabed.width) + size_t(x) * size_t(n) + size_t(i);
            if (kept && v == h.nodata) {
              seabed.metres[at] = std::numeric_limits<float>::quiet_NaN();
              continue;
            }
            const double sample = h.sampleType == hfpac::SampleType::Int16 ? double(int16_t(v)) : double(v);
            seabed.metres[at] = float(h.verticalOffset + h.verticalScale * sample);
          }
      }
  }
  ocean.reset();
  // GL compute by default, whatever streams the heights: CUDA work in a frame costs a switch of
  // GPU contexts (~0.2 ms a frame on the H100), the CPU worker an upload (docs/rendering.md 5).
  const std::string device = settings.oceanDevice.empty() ? "gl" : settings.oceanDevice;
  std::string note;
  ocean = OceanLayer::create(shaderDirectory, seabed, settings.oceanParams, level, device, error, note);
  if (!note.empty()) notes.push_back("ocean: " + note + "; the fields come from the CPU");
  return error.empty();
}

void Renderer::Impl::drawOcean(const Camera& cam, const std::array<double, 16>& vp) {
  if (!ocean) return;
  OceanDraw d;
  for (int i = 0; i < 16; ++i) d.viewProj[size_t(i)] = float(vp[size_t(i)]);
  d.eye = {float(cam.x), float(cam.y), float(cam.z)};
  d.fogColor = {0.72f, 0.80f, 0.88f};
  d.fogDistance = settings.fog ? float(1.6 * std::sqrt(extentX * extentX + extentY * extentY)) : 0.0f;
  const double az = rad(315), alt = rad(45);
  d.lightDir = {float(std::sin(az) * std::cos(alt)), float(std::cos(az) * std::cos(alt)), float(std::sin(alt))};
  d.extentX = extentX;
  d.extentY = extentY;
  d.exaggeration = settings.verticalExaggeration;
  d.seconds = oceanSeconds();
  d.synchronous = settings.oceanSynchronous;
  // Seen from above, the water shows exactly where terrain.frag left alpha = 1 (terrain at or
  // below it, and holes): the ocean blends by the destination alpha, not by a depth test
  // against a seabed that may lie at its very height, and writes no depth (pick() meets the
  // water plane itself). The depth test stays, pulled towards the eye, only to skip shading
  // the water behind land well above it. From below, the water is an opaque plane.
  const bool fromAbove = cam.z > waterZ();
  if (fromAbove) {
    glDepthFunc(GL_LEQUAL);
    glDepthMask(GL_FALSE);
    glEnable(GL_POLYGON_OFFSET_FILL);
    glPolygonOffset(-2.0f, -64.0f);
    glEnable(GL_BLEND);
    glBlendFuncSeparate(GL_DST_ALPHA, GL_ONE_MINUS_DST_ALPHA, GL_ZERO, GL_ONE);
  }
  ocean->draw(d);
  if (fromAbove) {
    glDisable(GL_BLEND);
    glDisable(GL_POLYGON_OFFSET_FILL);
    glPolygonOffset(0.0f, 0.0f);
    glDepthMask(GL_TRUE);
    glDepthFunc(GL_LESS);
  }
  // Alpha back to 1: the flag is not transparency (windows and screenshots are opaque).
  glColorMask(GL_FALSE, GL_FALSE, GL_FALSE, GL_TRUE);
  glClearColor(0.0f, 0.0f, 0.0f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
}
#endif

// ---- Renderer ----

Renderer::Renderer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Renderer::~Renderer() = default;

std::unique_ptr<Renderer> Renderer::create(const hfa::ArchiveReader& archive,
                                           StreamStrategy& strategy,
                                           const RenderSettings& settings, std::string& error) {
  if (settings.width < 1 || settings.height < 1 || settings.width > 16384 ||
      settings.height > 16384) {
    error = "bad image size " + std::to_string(settings.width) + "x" +
            std::to_string(settings.height);
    return nullptr;
  }
  auto impl = std::make_unique<Impl>(archive, strategy, settings);
  if (!impl->init(error)) return nullptr;
  // Per-frame byte counts start after the synchronous load of the top level.
  impl->lastStream = strategy.stats();
  return std::unique_ptr<Renderer>(new Renderer(std::move(impl)));
}

RenderSettings& Renderer::settings() { return impl_->settings; }
const LodPyramid& Renderer::pyramid() const { return impl_->pyramid; }

Camera Renderer::defaultCamera() const {
  const Impl& m = *impl_;
  const double cx = m.extentX / 2, cy = m.extentY / 2;
  const double diag = std::sqrt(m.extentX * m.extentX + m.extentY * m.extentY);
  Camera c;
  c.yaw = 60;     // from the south-south-west, looking north-north-east
  c.pitch = -32;
  const auto f = c.forward();
  const double d = 0.85 * diag;
  const double tz = 0.5 * (m.minZ + m.maxZ);
  c.x = cx - f[0] * d;
  c.y = cy - f[1] * d;
  c.z = tz - f[2] * d;
  return c;
}

void Renderer::stream(const Camera& camera, FrameStats* stats) {
  impl_->selectMs = impl_->updateMs = impl_->colourMs = 0;
  impl_->streamStep(camera, stats);
}

void Renderer::frame(const Camera& camera, FrameStats* stats) {
  // Timer queries only here (stream() alone is not a frame): this frame uses the set of the
  // frame before last, whose results are read first.
  Impl& m = *impl_;
  m.querySet = int(m.frameNo & 1);
  m.collectQueries(m.querySet);
  m.selectMs = m.updateMs = m.colourMs = 0;
#ifdef HF_HAVE_OCEAN
  // The ocean's GPU step first, while GL has none of this frame's work queued yet.
  if (m.ocean && !m.settings.oceanSynchronous) m.ocean->prepare(m.oceanSeconds());
#endif
  m.streamStep(camera, stats);
  const double streamSelectMs = m.selectMs;
  double drawMs = 0;
  {
    ScopedMs timer(drawMs);
    m.draw(camera, stats);
  }
  if (stats) {
    stats->gpuMs = m.gpuMs;
    stats->selectMs = m.selectMs;  // + draw()'s selection of resident tiles
    stats->drawCpuMs = std::max(0.0, drawMs - (m.selectMs - streamSelectMs));
    stats->colourCpuMs = m.colourMs;
  }
  m.lastQuerySet = m.querySet;
  m.querySet = -1;
}

void Renderer::finishFrame(FrameStats* stats) {
  Impl& m = *impl_;
  glFinish();
  if (m.lastQuerySet >= 0) m.collectQueries(m.lastQuerySet);
  m.strategy.pollCompleted();
  const double deviceMs = m.strategy.stats().deviceMs;
  if (stats) {
    stats->gpuMs = m.gpuMs;
    const double upload = m.gpuMs[size_t(GpuPass::Upload)];
    stats->updateGpuMs = std::max(0.0, upload) + (deviceMs - m.lastDeviceMs);
  }
  m.lastDeviceMs = deviceMs;
}

void Renderer::finishPrefetch(double* colourPreloadMs, uint64_t* colourCacheBytes) {
  Impl& m = *impl_;
  m.strategy.finishPrefetch();
  m.lastStream = m.strategy.stats();
  if (m.colour) {
    m.colour->finishPrefetch(m.colourSink);
    const ColourStats cs = m.colour->stats();
    // Preload batches are not uploads of a frame: the next frame's differences start here.
    m.lastColourRead = cs.bytesRead;
    m.lastColourToDevice = cs.bytesToDevice;
    m.lastColourCacheHits = cs.cacheHits;
    if (colourPreloadMs) *colourPreloadMs = cs.preloadMs;
    if (colourCacheBytes) *colourCacheBytes = cs.cacheBytes;
  } else {
    if (colourPreloadMs) *colourPreloadMs = 0;
    if (colourCacheBytes) *colourCacheBytes = 0;
  }
}

bool Renderer::resize(int width, int height, std::string& error) {
  Impl& m = *impl_;
  if (width < 1 || height < 1 || width > 16384 || height > 16384) {
    error = "bad image size " + std::to_string(width) + "x" + std::to_string(height);
    return false;
  }
  if (width == m.settings.width && height == m.settings.height) return true;
  if (m.fbo) glDeleteFramebuffers(1, &m.fbo);
  if (m.depthRb) glDeleteRenderbuffers(1, &m.depthRb);
  if (m.colorRb) glDeleteRenderbuffers(1, &m.colorRb);
  m.fbo = m.depthRb = m.colorRb = 0;
  m.settings.width = width;
  m.settings.height = height;
  m.haveLastFrame = false;
  return m.makeTarget(error);
}

void Renderer::present(int width, int height) const {
  glBlitNamedFramebuffer(impl_->fbo, 0, 0, 0, impl_->settings.width, impl_->settings.height, 0,
                         0, width, height, GL_COLOR_BUFFER_BIT, GL_LINEAR);
}

bool Renderer::pick(double px, double py, std::array<double, 3>& world) const {
  const Impl& m = *impl_;
  const int w = m.settings.width, h = m.settings.height;
  if (!m.haveLastFrame || !(px >= 0 && py >= 0 && px < w && py < h)) return false;
  const int ix = int(px), iy = h - 1 - int(py);
  float depth = 1.0f;
  glBindFramebuffer(GL_READ_FRAMEBUFFER, m.fbo);
  glReadPixels(ix, iy, 1, 1, GL_DEPTH_COMPONENT, GL_FLOAT, &depth);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  const double ndcX = 2.0 * (ix + 0.5) / w - 1.0, ndcY = 2.0 * (iy + 0.5) / h - 1.0;
  const bool terrain =
      depth < 1.0f && unproject(m.lastViewProj, ndcX, ndcY, 2.0 * double(depth) - 1.0, world);
#ifdef HF_HAVE_OCEAN
  // The ocean writes no depth (drawOcean): where it shows - over terrain at or below the water,
  // or over a hole - the point is where the pixel's ray meets the water plane.
  const double water = m.waterZ();
  std::array<double, 3> a{}, b{};
  if (m.ocean && (!terrain || world[2] <= water) &&
      unproject(m.lastViewProj, ndcX, ndcY, -1.0, a) &&
      unproject(m.lastViewProj, ndcX, ndcY, 1.0, b) && a[2] > water && b[2] < water) {
    const double t = (a[2] - water) / (a[2] - b[2]);
    const std::array<double, 3> p{a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), water};
    if (p[0] >= 0 && p[1] >= 0 && p[0] <= m.extentX && p[1] <= m.extentY) {
      world = p;
      return true;
    }
  }
#endif
  return terrain;
}

bool Renderer::project(const std::array<double, 3>& world, double& px, double& py) const {
  const Impl& m = *impl_;
  if (!m.haveLastFrame) return false;
  const std::array<double, 16>& v = m.lastViewProj;  // column-major
  const double cx = v[0] * world[0] + v[4] * world[1] + v[8] * world[2] + v[12];
  const double cy = v[1] * world[0] + v[5] * world[1] + v[9] * world[2] + v[13];
  const double cw = v[3] * world[0] + v[7] * world[1] + v[11] * world[2] + v[15];
  if (!(cw > 1e-9)) return false;
  px = (cx / cw + 1.0) * 0.5 * m.settings.width;
  py = (1.0 - (cy / cw + 1.0) * 0.5) * m.settings.height;
  return std::isfinite(px) && std::isfinite(py);
}

bool Renderer::heightBounds(double x, double y, double& minZ, double& maxZ) const {
  const Impl& m = *impl_;
  const LodPyramid& p = m.pyramid;
  if (!(x >= 0 && y >= 0 && x <= m.extentX && y <= m.extentY)) return false;
  const double col = (x - p.originX) / p.spacingX, row = (y - p.originY) / p.spacingY;
  const double N = double(1 << p.tileLog);
  for (int level = 0; level < p.levels; ++level) {
    const double span = N * double(1u << level);
    const long t = m.archive.find(level, uint32_t(std::max(0.0, col / span)),
                                  uint32_t(std::max(0.0, row / span)));
    if (t < 0) continue;
    minZ = double(p.tiles[size_t(t)].minZ);
    maxZ = double(p.tiles[size_t(t)].maxZ);
    return true;
  }
  return false;
}

void Renderer::terrainBox(double& minZ, double& maxZ, double& extentX, double& extentY) const {
  minZ = impl_->minZ;
  maxZ = impl_->maxZ;
  extentX = impl_->extentX;
  extentY = impl_->extentY;
}

void Renderer::updateExaggeration() { impl_->applyExaggeration(); }

void Renderer::setTime(double seconds) { impl_->timeSeconds = seconds; }

bool Renderer::hasOcean() const {
#ifdef HF_HAVE_OCEAN
  return impl_->ocean != nullptr;
#else
  return false;
#endif
}

std::string Renderer::oceanDevice() const {
#ifdef HF_HAVE_OCEAN
  return impl_->ocean ? impl_->ocean->device() : "";
#else
  return "";
#endif
}

bool Renderer::updateOcean(std::string& error) {
  error.clear();
  Impl& m = *impl_;
#ifdef HF_HAVE_OCEAN
  if (!m.settings.ocean) {
    m.ocean.reset();
    return true;
  }
  if (m.ocean && m.ocean->level() == m.settings.waterLevel) {
    // Checked here so that the panel hears of a bad value at once (the worker keeps the old
    // spectrum and reports it too).
    if (!checkOceanParams(m.settings.oceanParams, error)) {
      error = "ocean: " + error;
      return false;
    }
    m.ocean->setParams(m.settings.oceanParams);
    return true;
  }
  return m.oceanFor(m.settings.waterLevel, error);
#else
  if (m.settings.ocean) error = "this build has no ocean (FFTW was missing)";
  return error.empty();
#endif
}

const std::vector<DrawTile>& Renderer::lastDrawn() const { return impl_->drawn; }
const std::vector<std::string>& Renderer::notes() const { return impl_->notes; }
bool Renderer::hasImagery() const { return impl_->colour != nullptr; }
std::string Renderer::imageryStrategy() const { return impl_->colour ? impl_->colour->name() : ""; }
std::string Renderer::imageryFormat() const {
  return impl_->colour ? colourFormatName(impl_->colour->format()) : "";
}

bool Renderer::viewComplete() const {
  if (impl_->frameNo <= 1) return false;
  for (size_t t : impl_->wanted)
    if (!impl_->pages->resident(t) && !impl_->failedTiles[t]) return false;
  return true;
}

bool Renderer::settled() const {
  if (impl_->frameNo <= 1) return false;  // no stream step yet: `wanted` is still empty
  if (impl_->strategy.pending() > 0) return false;
  if (impl_->colour && (impl_->colour->pending() > 0 || impl_->colourMissingCount() > 0)) return false;
  for (size_t t : impl_->wanted)
    if (!impl_->pages->resident(t) && !impl_->failedTiles[t]) return false;
  return true;
}

bool Renderer::readAtlasTile(size_t tile, std::vector<uint16_t>& samples) const {
  const Impl& m = *impl_;
  if (tile >= m.failedTiles.size() || !m.pages->resident(tile)) return false;
  const AtlasSlot a = m.layout.slot(uint32_t(m.pages->slot(tile)));
  const int p = m.layout.tileSize;
  samples.assign(size_t(p) * size_t(p), 0);
  glPixelStorei(GL_PACK_ALIGNMENT, 2);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  glGetTextureSubImage(m.atlas, 0, GLint(a.x), GLint(a.y), GLint(a.layer), p, p, 1,
                       GL_RED_INTEGER, GL_UNSIGNED_SHORT, GLsizei(samples.size() * 2),
                       samples.data());
  return glGetError() == GL_NO_ERROR;
}

std::vector<uint8_t> Renderer::readPixels() const {
  const int w = impl_->settings.width, h = impl_->settings.height;
  std::vector<uint8_t> px(size_t(w) * size_t(h) * 4), out(px.size());
  glBindFramebuffer(GL_READ_FRAMEBUFFER, impl_->fbo);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  const size_t row = size_t(w) * 4;
  for (int y = 0; y < h; ++y)
    std::copy_n(px.data() + size_t(h - 1 - y) * row, row, out.data() + size_t(y) * row);
  return out;
}

}  // namespace hfr
