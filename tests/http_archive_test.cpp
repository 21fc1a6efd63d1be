// Archives read from a real web server (issue 18): Debian's nginx on a loopback port
// (nginx_server.h) serves the built-in sample archives, and ArchiveReader opens their URLs.
// - every tile and imagery tile reads as from the local file, with fewer range requests than
//   tiles (read-ahead coalesced), and a second process-like open uses the on-disk cache
//   (validated by ETag: one request);
// - a server without range support, a missing file (404): one clear error at open;
// - the server killed while the archive is open: tiles fail with the network error, and read
//   again once it is back;
// - the file replaced or truncated on the server: tiles fail naming the change; a fresh open
//   sees the new file;
// - a corrupt block in the on-disk cache is fetched again (the payload CRC catches it);
// - the cache stays within its budget (holes punched) and still reads right;
// - a throttled server (limit_rate) still delivers every tile;
// - with GL (EGL; llvmpipe in CI): a headless render from the URL equals the one from the
//   local file, and a view whose tiles failed while the server was down recovers to the same
//   image once it is back (failed tiles asked again after a back-off).
// Skips with a message when nginx is not installed (scripts/hf deps installs nginx-light).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "archive/archive.h"
#include "nginx_server.h"
#include "test_process.h"

#ifdef HF_HTTP_GL_TESTS
#include "render/gl/renderer.h"

// As in render_gl_test.cpp: Mesa unloads its driver in eglTerminate, and LeakSanitizer then
// sees the driver's one-time allocations from an "<unknown module>" that tests/lsan.supp cannot
// name. Keeping every library mapped until exit lets the suppressions match. Test binary only.
extern "C" int dlclose(void*) { return 0; }
#endif

namespace fs = std::filesystem;

namespace {

#define REQUIRE_NGINX()                                                                                 \
  do {                                                                                                  \
    if (!hfa::httpSupported()) GTEST_SKIP() << "this build reads no URLs (no libcurl)";                \
    if (!hf_test::NginxServer::available())                                                             \
      GTEST_SKIP() << "nginx is not installed (/usr/sbin/nginx; scripts/hf deps installs nginx-light)"; \
  } while (0)

// A private cache folder per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/hf_http_cache_XXXXXX";
    if (::mkdtemp(tmpl)) path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

hfa::HttpOptions options(const TempDir& cache) {
  hfa::HttpOptions o;
  o.cacheDir = cache.path.string();
  o.retries = 1;
  o.retryDelay = 0.05;
  o.connectTimeout = 2;
  return o;
}

// The served copy of a local archive.
void serve(const hf_test::NginxServer& server, const std::string& local, const std::string& name) {
  fs::copy_file(local, fs::path(server.www()) / name, fs::copy_options::overwrite_existing);
}

std::vector<size_t> allTiles(const hfa::ArchiveReader& a) {
  std::vector<size_t> t(a.tiles().size());
  for (size_t i = 0; i < t.size(); ++i) t[i] = i;
  return t;
}

// Every tile of `remote` decodes to `local`'s samples; imagery payloads equal.
void expectSameContent(const hfa::ArchiveReader& local, const hfa::ArchiveReader& remote) {
  ASSERT_EQ(local.tiles().size(), remote.tiles().size());
  EXPECT_EQ(local.header().width, remote.header().width);
  EXPECT_EQ(local.header().codec, remote.header().codec);
  const size_t p = size_t(local.header().tileSize());
  std::vector<uint16_t> a(p * p), b(p * p);
  for (size_t i = 0; i < local.tiles().size(); ++i) {
    std::string e1, e2;
    ASSERT_TRUE(local.decodeTile(i, a.data(), e1)) << e1;
    ASSERT_TRUE(remote.decodeTile(i, b.data(), e2)) << e2;
    ASSERT_EQ(a, b) << local.tileName(i);
  }
  ASSERT_EQ(local.imageryTiles().size(), remote.imageryTiles().size());
  for (size_t i = 0; i < local.imageryTiles().size(); ++i) {
    std::vector<uint8_t> x, y;
    std::string e1, e2;
    ASSERT_TRUE(local.copyImageryPayload(i, x, e1)) << e1;
    ASSERT_TRUE(remote.copyImageryPayload(i, y, e2)) << e2;
    ASSERT_EQ(x, y) << local.imageryTileName(i);
  }
}

// Every HttpArchive test: skipped where this build or machine cannot serve. serveSample() starts
// nginx (`extra`: directives of its server block) serving the sample archive as a.hfa, with a
// private cache folder (`options`) and the local archive to compare with (`local`).
class HttpArchive : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_NGINX(); }
  void serveSample(const std::string& extra = "") {
    server = std::make_unique<hf_test::NginxServer>(extra);
    ASSERT_TRUE(server->start(error)) << error;
    serve(*server, HF_SAMPLE_ARCHIVE, "a.hfa");
    ASSERT_TRUE(local.open(HF_SAMPLE_ARCHIVE, error)) << error;
  }
  std::string url(const std::string& name = "a.hfa") const { return server->url(name); }

  std::unique_ptr<hf_test::NginxServer> server;
  TempDir cache;
  hfa::HttpOptions o = options(cache);
  hfa::ArchiveReader local;
  std::string error;
};

TEST_F(HttpArchive, ReadsEveryTileAsTheLocalFileAndReusesItsCache) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  for (const char* path : {HF_SAMPLE_ARCHIVE, HF_IMAGERY_ARCHIVE}) {
    SCOPED_TRACE(path);
    if (!fs::exists(path)) continue;  // the imagery archive needs GDAL at build time
    const std::string name = fs::path(path).filename().string();
    serve(*server, path, name);
    hfa::ArchiveReader l, r;
    ASSERT_TRUE(l.open(path, error)) << error;
    const size_t before = server->requests();
    ASSERT_TRUE(r.open(url(name), error, &o)) << error;
    EXPECT_TRUE(r.remote());
    EXPECT_EQ(r.fileSize(), l.fileSize());
    // The loaders' read-ahead: all tiles announced at once, fetched in a few coalesced ranges.
    const std::vector<size_t> tiles = allTiles(r);
    r.willNeed(tiles.data(), tiles.size());
    std::vector<size_t> imagery(r.imageryTiles().size());
    for (size_t i = 0; i < imagery.size(); ++i) imagery[i] = i;
    r.willNeedImagery(imagery.data(), imagery.size());
    expectSameContent(l, r);
    const size_t requests = server->requests() - before;
    EXPECT_EQ(requests, r.sourceStats().requests);
    EXPECT_LT(double(requests), 0.5 * double(tiles.size() + imagery.size())) << "coalescing";
    EXPECT_TRUE(r.sourceStats().persistent) << r.sourceStats().note;
    r.close();  // saves the cache's map

    // Again: the cache is valid (same ETag and size), so only the opening request is made.
    const size_t again = server->requests();
    hfa::ArchiveReader r2;
    ASSERT_TRUE(r2.open(url(name), error, &o)) << error;
    expectSameContent(l, r2);
    EXPECT_EQ(server->requests() - again, 1u);
  }
}

// A cache holding scattered tiles (its map: several runs of blocks with holes between) is reused
// as it is: the next process reads those tiles without a request, and fetches the others.
TEST_F(HttpArchive, PartialCacheIsReusedByTheNextProcess) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  const size_t p = size_t(local.header().tileSize());
  std::vector<uint16_t> a(p * p), b(p * p);
  // Every fourth tile past the opening request's bytes: far enough apart to leave holes.
  std::vector<size_t> cached;
  for (size_t i = 0; i < local.tiles().size(); ++i)
    if (local.tiles()[i].offset >= 2 * hfa::kHttpOpenBytes && i % 4 == 0) cached.push_back(i);
  ASSERT_GE(cached.size(), 3u);
  {
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(url(), error, &o)) << error;
    for (size_t t : cached) ASSERT_TRUE(r.decodeTile(t, b.data(), error)) << error;
    EXPECT_LT(r.sourceStats().bytesResident, r.fileSize() / 2)
        << "the test wants holes in the cache";
  }
  hfa::ArchiveReader r;
  const size_t before = server->requests();
  ASSERT_TRUE(r.open(url(), error, &o)) << error;
  for (size_t t : cached) {
    ASSERT_TRUE(local.decodeTile(t, a.data(), error)) << error;
    ASSERT_TRUE(r.decodeTile(t, b.data(), error)) << error;
    ASSERT_EQ(a, b) << local.tileName(t);
  }
  EXPECT_EQ(server->requests() - before, 1u)
      << "only the opening request: the cached tiles came from the map";
  expectSameContent(local, r);
  EXPECT_GT(server->requests() - before, 1u) << "the other tiles were fetched";
}

TEST_F(HttpArchive, ServerWithoutRangeRequestsAndMissingFilesAreClearErrors) {
  ASSERT_NO_FATAL_FAILURE(serveSample("max_ranges 0;"));
  hfa::ArchiveReader r;
  EXPECT_FALSE(r.open(url(), error, &o));
  EXPECT_NE(error.find("ignores Range requests"), std::string::npos) << error;
  EXPECT_FALSE(r.open(url("missing.hfa"), error, &o));
  EXPECT_NE(error.find("HTTP 404"), std::string::npos) << error;
  // Not an archive at all.
  { std::ofstream(fs::path(server->www()) / "page.html") << "<html>hello</html>"; }
  EXPECT_FALSE(r.open(url("page.html"), error, &o));
  EXPECT_NE(error.find("not an hfpack archive"), std::string::npos) << error;
  // Nobody listening.
  server->stop();
  EXPECT_FALSE(r.open(url(), error, &o));
  EXPECT_NE(error.find("tries"), std::string::npos) << error;
}

TEST_F(HttpArchive, ServerStoppedAndRestartedWhileOpen) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(url(), error, &o)) << error;
  // Tiles past the first request's blocks (those came with the header): not cached yet.
  size_t victim = 0;
  while (victim < r.tiles().size() && r.tiles()[victim].offset < 2 * hfa::kHttpOpenBytes) ++victim;
  ASSERT_LT(victim, r.tiles().size());
  const size_t last = r.tiles().size() - 1;
  const size_t p = size_t(r.header().tileSize());
  std::vector<uint16_t> a(p * p), b(p * p);
  server->stop();
  EXPECT_FALSE(r.decodeTile(victim, b.data(), error));
  EXPECT_NE(error.find(url()), std::string::npos) << error;
  EXPECT_NE(error.find(r.tileName(victim)), std::string::npos) << error;
  EXPECT_GE(r.sourceStats().failures, 1u);
  {  // the failure is final for that read: nothing is queued again behind the reader's back
    const uint64_t requests = r.sourceStats().requests;
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    EXPECT_EQ(r.sourceStats().requests, requests);
  }
  ASSERT_TRUE(server->start(error)) << error;
  for (size_t t : {victim, last}) {
    ASSERT_TRUE(local.decodeTile(t, a.data(), error)) << error;
    ASSERT_TRUE(r.decodeTile(t, b.data(), error)) << error;
    EXPECT_EQ(a, b);
  }
}

TEST_F(HttpArchive, FileReplacedOrTruncatedOnTheServer) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  const size_t p = 129;
  std::vector<uint16_t> b(p * p);
  {
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(url(), error, &o)) << error;
    ASSERT_EQ(size_t(r.header().tileSize()), p);
    // Replaced by another archive (its raw twin: another size and ETag).
    serve(*server, HF_SAMPLE_RAW_ARCHIVE, "a.hfa");
    EXPECT_FALSE(r.decodeTile(r.tiles().size() - 1, b.data(), error));
    EXPECT_NE(error.find("changed on the server"), std::string::npos) << error;
  }
  {
    // A fresh open sees the new file (the old cache does not match it and is dropped).
    hfa::ArchiveReader l, r;
    ASSERT_TRUE(l.open(HF_SAMPLE_RAW_ARCHIVE, error)) << error;
    ASSERT_TRUE(r.open(url(), error, &o)) << error;
    EXPECT_EQ(r.header().codec, hfa::Codec::Raw);
    expectSameContent(l, r);
    // Truncated to half while open: the tiles beyond fail, naming the change.
    const uintmax_t half = fs::file_size(fs::path(server->www()) / "a.hfa") / 2;
    hfa::ArchiveReader r2;
    ASSERT_TRUE(r2.open(url(), error, &o)) << error;
    r2.dropPageCache(error);  // nothing cached: every tile goes to the server
    fs::resize_file(fs::path(server->www()) / "a.hfa", half);
    EXPECT_FALSE(r2.decodeTile(r2.tiles().size() - 1, b.data(), error));
    EXPECT_TRUE(error.find("changed on the server") != std::string::npos ||
                error.find("shorter than when it was opened") != std::string::npos)
        << error;
  }
  // And opened truncated: the reader's own check names the cut.
  hfa::ArchiveReader r3;
  EXPECT_FALSE(r3.open(url(), error, &o));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(HttpArchive, CorruptCacheBlockIsFetchedAgain) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  std::string mirror;
  const size_t victim = local.tiles().size() / 2;
  {
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(url(), error, &o)) << error;
    const std::vector<size_t> tiles = allTiles(r);
    r.willNeed(tiles.data(), tiles.size());
    expectSameContent(local, r);
    mirror = r.sourceStats().cachePath;
  }
  ASSERT_FALSE(mirror.empty());
  {  // one byte of the victim's payload flipped in the mirror (a disk error, a crash)
    std::fstream f(mirror, std::ios::in | std::ios::out | std::ios::binary);
    const std::streamoff at =
        std::streamoff(local.tiles()[victim].offset + local.tiles()[victim].size / 2);
    f.seekg(at);
    char c = 0;
    f.read(&c, 1);
    c = char(c ^ 0x5a);
    f.seekp(at);
    f.write(&c, 1);
  }
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(url(), error, &o)) << error;
  const size_t before = server->requests();
  const size_t p = size_t(local.header().tileSize());
  std::vector<uint16_t> a(p * p), b(p * p);
  ASSERT_TRUE(local.decodeTile(victim, a.data(), error)) << error;
  ASSERT_TRUE(r.decodeTile(victim, b.data(), error)) << error;
  EXPECT_EQ(a, b);
  EXPECT_EQ(server->requests() - before, 1u) << "the corrupt block, fetched again";
}

// A process that reused the cache, dropped blocks and died without closing (a crash, kill -9)
// must not leave a map that claims the dropped blocks: the next one fetches them again.
TEST_F(HttpArchive, CrashAfterEvictionLeavesNoFalseMap) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  {
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(url(), error, &o)) << error;
    expectSameContent(local, r);
  }  // closed: the map says every block is present
  const pid_t child = ::fork();
  if (child == 0) {
    hfa::ArchiveReader r;
    std::string e;
    if (!r.open(url(), e, &o)) ::_exit(2);
    r.dropPageCache(e);  // every block dropped (holes punched)
    ::_exit(0);          // no destructor: as a crash
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(url(), error, &o)) << error;
  EXPECT_LE(r.sourceStats().bytesResident, hfa::kHttpOpenBytes)
      << "a map claiming the punched blocks";
  expectSameContent(local, r);
  EXPECT_GT(r.sourceStats().requests, 1u) << "the blocks were fetched again, not read as holes";
}

// A damaged cache map (the `.meta` file: cut short, an absurd run count, a run past the end) is
// not trusted: the next process starts the cache afresh and reads every tile correctly.
TEST_F(HttpArchive, DamagedCacheMapStartsAfresh) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  auto fillCache = [&] {
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(url(), error, &o)) << error;
    expectSameContent(local, r);
  };  // closed: the map says every block is present (one run)
  auto metaPath = [&] {
    for (const auto& e : fs::directory_iterator(cache.path))
      if (e.path().extension() == ".meta") return e.path();
    return fs::path();
  };
  // The map's tail: the run count, then (first block, blocks) per run.
  auto patchTail = [&](uint64_t count, uint64_t first, uint64_t blocks) {
    const fs::path meta = metaPath();
    ASSERT_FALSE(meta.empty());
    std::fstream f(meta, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-24, std::ios::end);
    const uint64_t tail[3] = {count, first, blocks};
    f.write(reinterpret_cast<const char*>(tail), sizeof tail);
  };
  const std::vector<std::pair<const char*, std::function<void()>>> damages{
      {"cut short", [&] { fs::resize_file(metaPath(), fs::file_size(metaPath()) - 8); }},
      {"absurd run count", [&] { patchTail(uint64_t(1) << 40, 0, 1); }},
      {"a run past the end", [&] { patchTail(1, uint64_t(1) << 40, 1); }},
  };
  for (const auto& [what, damage] : damages) {
    SCOPED_TRACE(what);
    ASSERT_NO_FATAL_FAILURE(fillCache());
    ASSERT_NO_FATAL_FAILURE(damage());
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(url(), error, &o)) << error;
    EXPECT_LE(r.sourceStats().bytesResident, hfa::kHttpOpenBytes) << "a damaged map was trusted";
    const size_t before = server->requests();
    expectSameContent(local, r);
    EXPECT_GT(server->requests(), before) << "the tiles were fetched again";
  }
}

TEST_F(HttpArchive, CacheStaysWithinItsBudget) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  o.cacheBytes = 1 << 20;  // a quarter of the archive
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(url(), error, &o)) << error;
  ASSERT_GT(r.fileSize(), 3u * o.cacheBytes);
  expectSameContent(local, r);
  const hfa::SourceStats s = r.sourceStats();
  EXPECT_LE(s.bytesResident, o.cacheBytes);
  EXPECT_GE(s.bytesFetched, r.fileSize() / 2);
  struct stat st;
  ASSERT_EQ(::stat(s.cachePath.c_str(), &st), 0);
  EXPECT_LE(uint64_t(st.st_blocks) * 512, o.cacheBytes + (256u << 10)) << "holes punched";
}

TEST_F(HttpArchive, ThrottledServerDeliversEveryTile) {
  ASSERT_NO_FATAL_FAILURE(serveSample("limit_rate 8m;"));
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(url(), error, &o)) << error;
  const std::vector<size_t> tiles = allTiles(r);
  r.willNeed(tiles.data(), tiles.size());
  expectSameContent(local, r);
  EXPECT_EQ(r.sourceStats().failures, 0u);
}

// The tools themselves, as a user runs them: `hfpack info|verify URL` succeed, and `hfview URL
// --headless --screenshot` writes the same PNG as from the local file.
std::string fileBytes(const fs::path& path) {
  std::string bytes;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
    std::fclose(f);
  }
  return bytes;
}
bool sameFile(const fs::path& a, const fs::path& b) {
  const std::string x = fileBytes(a);
  return !x.empty() && x == fileBytes(b);
}

TEST_F(HttpArchive, ToolsTakeTheUrl) {
  ASSERT_NO_FATAL_FAILURE(serveSample());
  const std::vector<std::pair<std::string, std::string>> env{{"HF_HTTP_CACHE_DIR", cache.path.string()}};
#ifdef HFPACK_BINARY
  for (const char* cmd : {"info", "verify"}) {
    SCOPED_TRACE(cmd);
    const int status = hf_test::runMaybeKilled({HFPACK_BINARY, cmd, url()}, -1, env);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "hfpack " << cmd << " URL: status " << status;
  }
  const int missing = hf_test::runMaybeKilled({HFPACK_BINARY, "info", url("nope.hfa")}, -1, env);
  EXPECT_TRUE(WIFEXITED(missing) && WEXITSTATUS(missing) == 1) << "a 404 exits 1, status " << missing;
#endif
#ifdef HFVIEW_BINARY
  const fs::path localPng = cache.path / "local.png", remotePng = cache.path / "remote.png";
  const int a = hf_test::runMaybeKilled({HFVIEW_BINARY, HF_SAMPLE_ARCHIVE, "--headless",
                                         "--screenshot", localPng.string(), "--size", "320x240"},
                                        -1, env);
  const int b = hf_test::runMaybeKilled(
      {HFVIEW_BINARY, url(), "--headless", "--screenshot", remotePng.string(), "--size", "320x240"},
      -1, env);
  if (WIFEXITED(a) && WEXITSTATUS(a) == 0) {  // else no headless GL here (the GL test says so)
    ASSERT_TRUE(WIFEXITED(b) && WEXITSTATUS(b) == 0) << "hfview URL: status " << b;
    EXPECT_TRUE(sameFile(localPng, remotePng))
        << "the screenshot from the URL differs from the local file's";
  }
#endif
}

#ifdef HF_HTTP_GL_TESTS
// A headless render of `archive` from the sample's default-like camera, until settled with no
// failed tile or the deadline; returns the pixels.
struct View {
  std::vector<uint8_t> px;
  hfr::FrameStats stats;
  bool settled = false;
};

View renderUntil(hfr::Renderer& r, const hfr::Camera& cam, double seconds, bool wantNoFailures) {
  View v;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    r.stream(cam);
    r.frame(cam, &v.stats);
    v.settled = r.settled();
    if (v.settled && (!wantNoFailures || v.stats.failedTiles == 0)) break;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  v.px = r.readPixels();
  return v;
}

struct Scene {
  hfa::ArchiveReader archive;
  std::unique_ptr<hfr::StreamStrategy> strategy;
  std::unique_ptr<hfr::Renderer> renderer;
};

std::string openScene(Scene& s, const std::string& path, const hfa::HttpOptions* o) {
  std::string error;
  if (!s.archive.open(path, error, o)) return error;
  s.strategy = hfr::makeStreamStrategy("cpu", s.archive, error);
  if (!s.strategy) return error;
  hfr::RenderSettings rs;
  rs.width = 320;
  rs.height = 240;
  s.renderer = hfr::Renderer::create(s.archive, *s.strategy, rs, error);
  return s.renderer ? "" : error;
}

TEST(HttpArchiveGl, RenderFromTheUrlEqualsTheLocalFileAndRecoversFromAnOutage) {
  REQUIRE_NGINX();
  std::string error;
  auto context = hfr::createHeadlessContext(error);
  if (!context) GTEST_SKIP() << "no headless GL: " << error;
  hf_test::NginxServer server;
  ASSERT_TRUE(server.start(error)) << error;
  serve(server, HF_SAMPLE_ARCHIVE, "a.hfa");
  TempDir cache;
  const hfa::HttpOptions o = options(cache);
  Scene local;
  ASSERT_EQ(openScene(local, HF_SAMPLE_ARCHIVE, nullptr), "");
  const hfr::Camera cam = local.renderer->defaultCamera();
  const View want = renderUntil(*local.renderer, cam, 60, true);
  ASSERT_TRUE(want.settled);
  {
    Scene remote;
    ASSERT_EQ(openScene(remote, server.url("a.hfa"), &o), "");
    const View got = renderUntil(*remote.renderer, cam, 60, true);
    EXPECT_TRUE(got.settled);
    EXPECT_EQ(got.stats.failedTiles, 0u);
    EXPECT_TRUE(got.px == want.px) << "the URL's render differs from the local file's";
  }
  // An outage: the server goes away right after the open, so every tile fails at first; the
  // viewer keeps drawing (what it has: nothing here) and, once the server is back, asks for the
  // failed tiles again and ends with the same image.
  TempDir cold;
  const hfa::HttpOptions o2 = options(cold);
  Scene remote;
  ASSERT_EQ(openScene(remote, server.url("a.hfa"), &o2), "");
  server.stop();
  const View down = renderUntil(*remote.renderer, cam, 20, false);
  EXPECT_TRUE(down.settled);
  EXPECT_GT(down.stats.failedTiles, 0u);
  ASSERT_TRUE(server.start(error)) << error;
  const View back = renderUntil(*remote.renderer, cam, 60, true);
  EXPECT_TRUE(back.settled);
  EXPECT_EQ(back.stats.failedTiles, 0u);
  EXPECT_TRUE(back.px == want.px) << "not recovered to the local file's render";
}
#endif

}  // namespace
