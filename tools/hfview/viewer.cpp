// viewer.cpp - hfview's window mode (see viewer.h). Keys are documented in README.md.
#include "viewer.h"

#include <glad/gl.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <limits>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "archive/archive.h"
#include "measure_tool.h"
#include "render/camera/bookmarks.h"
#include "render/camera/camera.h"
#include "render/camera/camera_path.h"

namespace hfview {
namespace {

// KHR_debug (--gl-debug): errors counted, the first few printed.
struct GlDebugLog {
  int errors = 0, messages = 0;
};
void GLAPIENTRY onGlDebug(GLenum /*source*/, GLenum type, GLuint /*id*/, GLenum severity, GLsizei /*length*/,
                          const GLchar* message, const void* user) {
  auto* log = static_cast<GlDebugLog*>(const_cast<void*>(user));
  ++log->messages;
  if (type == GL_DEBUG_TYPE_ERROR || severity == GL_DEBUG_SEVERITY_HIGH) {
    if (++log->errors <= 5) std::fprintf(stderr, "Warning: GL debug: %s\n", message);
  }
}

// What the panel edits. The frame compares it with the renderer's settings and applies the
// changes (dirty flags: cheap ones at once, the exaggeration by rebuilding the tile boxes).
struct UiSettings {
  float tau = 1;
  int view = 0;  // hfr::View
  bool wireframe = false;
  bool fog = true;
  float exaggeration = 1;
  bool showPanel = true;
  bool exaggerationDirty = false;
};

// The panel's ocean controls (issue 14), applied when one changes (Renderer::updateOcean); the
// error of the last change is shown under them.
struct OceanUi {
  bool on = false;
  float level = 0, wind = 10, direction = 45, choppiness = 1, waves = 1;
  bool dirty = false;
  std::string error;
};

// The panel's stream controls: edited freely, applied by the Apply button (rebuilds the
// strategy and the renderer at the end of the frame). `message` is the last Apply's error or
// note, shown in the panel.
constexpr const char* kStrategyNames[] = {"cpu", "raw", "gl", "cuda"};
constexpr int kStrategyCount = 4;
constexpr int kCudaStrategy = 3;
struct StreamUi {
  int strategy = 0;  // index into kStrategyNames
  int streams = 2;   // cuda only, 1..64
  double budgetMiB = 256;
  bool applyRequested = false;
  std::string message;
  bool messageIsError = false;
};

int strategyIndex(const char* name) {
  for (int i = 0; i < kStrategyCount; ++i)
    if (std::string(name) == kStrategyNames[i]) return i;
  return 0;
}

// Discrete key presses, collected by the GLFW key callback and consumed once per frame.
struct KeyEvents {
  bool toggleMode = false, screenshot = false, togglePanel = false, resetCamera = false;
  bool quit = false;
  bool toggleRecord = false;  // F9
  bool toggleMeasure = false;  // M
  int recallSlot = 0, saveSlot = 0;  // 1..9: fly to bookmark; Ctrl+1..9: save the view there
  std::vector<std::string> dropped;  // files dropped on the window (an archive, or DEMs to pack)
  double wheel = 0;
  // Left clicks (press and release within a few pixels: not a drag), window coordinates.
  struct Click {
    double x, y;
    bool isDouble;
  };
  std::vector<Click> clicks;
  double pressX = 0, pressY = 0, lastClickTime = -1e9, lastClickX = 0, lastClickY = 0;
};
KeyEvents* g_keys = nullptr;

void onMouseButton(GLFWwindow* win, int button, int action, int) {
  if (!g_keys || button != GLFW_MOUSE_BUTTON_LEFT || ImGui::GetIO().WantCaptureMouse) return;
  double x = 0, y = 0;
  glfwGetCursorPos(win, &x, &y);
  if (action == GLFW_PRESS) {
    g_keys->pressX = x;
    g_keys->pressY = y;
    return;
  }
  if (action != GLFW_RELEASE || std::hypot(x - g_keys->pressX, y - g_keys->pressY) > 4) return;
  const double now = glfwGetTime();
  const bool isDouble =
      now - g_keys->lastClickTime < 0.4 && std::hypot(x - g_keys->lastClickX, y - g_keys->lastClickY) < 6;
  g_keys->clicks.push_back({x, y, isDouble});
  g_keys->lastClickTime = isDouble ? -1e9 : now;  // a third click starts a new pair
  g_keys->lastClickX = x;
  g_keys->lastClickY = y;
}

void onKey(GLFWwindow*, int key, int, int action, int mods) {
  // ImGui's callback runs after this one (it chains to the user callback installed before it);
  // typing into a widget must not move the camera.
  if (!g_keys || action != GLFW_PRESS || ImGui::GetIO().WantCaptureKeyboard) return;
  if (key >= GLFW_KEY_1 && key <= GLFW_KEY_9) {
    ((mods & GLFW_MOD_CONTROL) ? g_keys->saveSlot : g_keys->recallSlot) = key - GLFW_KEY_0;
    return;
  }
  switch (key) {
    case GLFW_KEY_C: g_keys->toggleMode = true; break;
    case GLFW_KEY_F12:
    case GLFW_KEY_P: g_keys->screenshot = true; break;
    case GLFW_KEY_F1: g_keys->togglePanel = true; break;
    case GLFW_KEY_R: g_keys->resetCamera = true; break;
    case GLFW_KEY_ESCAPE: g_keys->quit = true; break;
    case GLFW_KEY_F9: g_keys->toggleRecord = true; break;
    case GLFW_KEY_M: g_keys->toggleMeasure = true; break;
    default: break;
  }
}

void onScroll(GLFWwindow*, double, double dy) {
  if (g_keys) g_keys->wheel += dy;
}

void onDrop(GLFWwindow*, int count, const char** paths) {
  if (!g_keys) return;
  g_keys->dropped.clear();
  for (int i = 0; i < count; ++i) g_keys->dropped.emplace_back(paths[i]);
}

// F9: records the camera into a path file (render/camera/camera_path.h) for
// `hfview --bench --path FILE` and `hfbench flythrough`. The file is written when recording
// stops and on exit; each start overwrites it. One line on the console and in a small overlay.
struct PathRecording {
  std::string file;
  bool quiet = false;
  bool on = false;
  hfr::CameraPathRecorder recorder;
  std::string message;  // the last status line, shown for a few seconds
  double messageTime = -1e9;

  void say(const std::string& m, double now, bool isError = false) {
    message = m;
    messageTime = now;
    if (isError) std::fprintf(stderr, "%s\n", m.c_str());
    else if (!quiet) std::printf("hfview: %s\n", m.c_str());
  }
  void toggle(double now) {
    if (on) {
      stop(now);
      return;
    }
    recorder.clear();
    on = true;
    say("recording the camera to " + file + " (F9 stops)", now);
  }
  void frame(double now, const hfr::Camera& camera) {
    if (on) recorder.add(now, camera);
  }
  bool stop(double now) {
    if (!on) return true;
    on = false;
    const hfr::CameraPath path = recorder.path();
    std::string error;
    if (!path.save(file, error)) {
      say("Error: " + error, now, true);
      return false;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, " (%zu keys, %.1f s)", path.size(), path.duration());
    say("wrote camera path " + file + buf, now);
    return true;
  }
  // A small box in the bottom-left corner while recording and for 5 s after a message.
  void drawOverlay(double now) const {
    if (!on && now - messageTime > 5) return;
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(10, io.DisplaySize.y - 10), ImGuiCond_Always, ImVec2(0, 1));
    ImGui::SetNextWindowBgAlpha(0.6f);
    ImGui::Begin("##record", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                     ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                     ImGuiWindowFlags_NoInputs);
    if (on)
      ImGui::TextColored(ImVec4(1.0f, 0.3f, 0.3f, 1.0f), "REC %s  %.1f s, %zu keys (F9 stops)",
                         file.c_str(), recorder.duration(), recorder.keptKeys() + 1);
    else
      ImGui::TextUnformatted(message.c_str());
    ImGui::End();
  }
};

// Double click: a short flight that ends looking at the clicked point from a quarter of the
// distance (at least 150 m), eased in and out; any camera input takes over at once.
struct Flight {
  bool on = false;
  hfr::Camera from, to;
  double t0 = 0;
  static constexpr double kSeconds = 0.8;

  void start(const hfr::Camera& c, const std::array<double, 3>& target, double now) {
    const double dx = target[0] - c.x, dy = target[1] - c.y, dz = target[2] - c.z;
    const double dist = std::sqrt(dx * dx + dy * dy + dz * dz);
    if (!(dist > 1e-6)) return;
    const double keep = std::max(150.0, 0.25 * dist);
    from = to = c;
    to.x = target[0] - dx / dist * keep;
    to.y = target[1] - dy / dist * keep;
    to.z = target[2] - dz / dist * keep;
    to.yaw = std::atan2(dy, dx) * 180.0 / 3.14159265358979323846;
    to.pitch = std::atan2(dz, std::hypot(dx, dy)) * 180.0 / 3.14159265358979323846;
    double turn = std::fmod(to.yaw - from.yaw + 540.0, 360.0) - 180.0;  // the short way round
    to.yaw = from.yaw + turn;
    t0 = now;
    on = true;
  }
  void startTo(const hfr::Camera& c, const hfr::Camera& target, double now) {
    from = c;
    to = target;
    to.yaw = from.yaw + std::fmod(to.yaw - from.yaw + 540.0, 360.0) - 180.0;
    t0 = now;
    on = true;
  }
  void step(double now, hfr::CameraController& controller) {
    const double t = std::clamp((now - t0) / kSeconds, 0.0, 1.0), s = t * t * (3 - 2 * t);
    hfr::Camera c = to;
    c.x = from.x + s * (to.x - from.x);
    c.y = from.y + s * (to.y - from.y);
    c.z = from.z + s * (to.z - from.z);
    c.yaw = from.yaw + s * (to.yaw - from.yaw);
    c.pitch = from.pitch + s * (to.pitch - from.pitch);
    controller.setCamera(c);
    on = t < 1;
  }
};

std::string timestampedName() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(
                           now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "hfview-%Y%m%d-%H%M%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%s-%03ld.png", buf, ms);
  return out;
}

std::string humanBytes(double b) {
  char buf[32];
  if (b >= 1 << 20) std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(1 << 20));
  else if (b >= 1 << 10) std::snprintf(buf, sizeof buf, "%.1f KiB", b / double(1 << 10));
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

}  // namespace

int runViewer(hfr::WindowContext& window, std::unique_ptr<hfa::ArchiveReader> archive,
              std::unique_ptr<hfr::StreamStrategy> strategy, std::unique_ptr<PackJob> job,
              const hfr::StreamOptions& streamOptions, const hfr::RenderSettings& settings,
              const ViewerOptions& options) {
  // ---- init ----
  GLFWwindow* win = static_cast<GLFWwindow*>(window.nativeWindow());
  GlDebugLog glLog;
  if (options.glDebug) {
    glEnable(GL_DEBUG_OUTPUT);
    glEnable(GL_DEBUG_OUTPUT_SYNCHRONOUS);
    glDebugMessageCallback(onGlDebug, &glLog);
  }
  hfr::RenderSettings rs = settings;
  glfwGetFramebufferSize(win, &rs.width, &rs.height);
  rs.width = std::max(rs.width, 1);
  rs.height = std::max(rs.height, 1);
  std::string error;
  // Without an archive (a pack still running) the window shows the panel and the pack's progress
  // until one opens.
  std::unique_ptr<hfr::Renderer> renderer;
  if (archive) {
    renderer = hfr::Renderer::create(*archive, *strategy, rs, error);
    if (!renderer) {
      std::fprintf(stderr, "Error: %s\n", error.c_str());
      return 1;
    }
    for (const std::string& n : renderer->notes()) std::fprintf(stderr, "Note: %s\n", n.c_str());
  }
  double terrainMinZ = 0, terrainMaxZ = 0, extentX = 0, extentY = 0;
  if (renderer) renderer->terrainBox(terrainMinZ, terrainMaxZ, extentX, extentY);
  hfr::CameraController controller(options.haveCamera || !renderer ? options.camera : renderer->defaultCamera());
  std::unique_ptr<MeasureTool> measure = archive ? std::make_unique<MeasureTool>(*archive) : nullptr;
  std::string archivePath = archive ? options.archivePath : std::string();
  // The stream configuration that opens archives (what Apply restores when a new one fails).
  std::string appliedName = strategy ? strategy->name() : options.stream;
  hfr::StreamOptions appliedOptions = streamOptions;

  KeyEvents keys;
  g_keys = &keys;
  PathRecording recording;
  Flight flight;
  // Bookmarks belong to what the user opened: the archive, or the DEM it was packed from (the
  // preview and the full archive share them).
  hfr::CameraBookmarks bookmarks;
  std::string bookmarkMessage;
  auto loadBookmarks = [&](const std::string& opened) {
    std::error_code ec;
    const std::filesystem::path key = std::filesystem::absolute(opened, ec);
    if (!bookmarks.load(hfr::CameraBookmarks::defaultFile(), ec ? opened : key.lexically_normal().string()))
      std::fprintf(stderr, "Note: bookmarks: %s\n", bookmarks.error().c_str());
  };
  if (archive) loadBookmarks(options.archivePath);
  else if (job) loadBookmarks(job->request().inputs[0]);
  recording.file = options.recordPath;
  recording.quiet = options.quiet;
  // Our callbacks first: ImGui's backend (install_callbacks = true) chains to them.
  glfwSetKeyCallback(win, onKey);
  glfwSetScrollCallback(win, onScroll);
  glfwSetMouseButtonCallback(win, onMouseButton);
  glfwSetDropCallback(win, onDrop);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini next to the user's files
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(win, true);
  ImGui_ImplOpenGL3_Init("#version 450 core");

  UiSettings ui;
  ui.tau = float(rs.tau);
  ui.view = int(rs.view);
  ui.wireframe = rs.wireframe;
  ui.fog = rs.fog;
  ui.exaggeration = float(rs.verticalExaggeration);
  OceanUi oui;
  oui.on = rs.ocean;
  oui.level = float(rs.waterLevel);
  oui.wind = float(rs.oceanParams.windSpeed);
  oui.direction = float(rs.oceanParams.windDirection);
  oui.choppiness = float(rs.oceanParams.choppiness);
  oui.waves = float(rs.oceanParams.amplitude);
  StreamUi sui;
  sui.strategy = strategyIndex(appliedName.c_str());
  sui.streams = std::clamp(streamOptions.streams, 1, 64);
  sui.budgetMiB = rs.atlasBudgetMiB;

  if (!options.quiet)
    std::printf("hfview: %s | %s\n", archive ? options.archivePath.c_str() : "(packing)", window.description().c_str());

  // Opens `path` in place of the current archive with the running stream configuration: the new
  // strategy and renderer are made first (a failure keeps the current ones and is shown), then
  // the old ones released (renderer before strategy before archive). The camera stays when
  // `keepCamera` and the extents agree within 2 % (a preview replaced by its full archive), else
  // the archive's default view. The view follows the imagery (imagery-lit when it arrives,
  // shaded when the new archive has none).
  std::string fileMessage;  // the last open / pack message, shown in the panel
  bool fileMessageIsError = false;
  auto openArchive = [&](const std::string& path, bool keepCamera) -> bool {
    auto next = std::make_unique<hfa::ArchiveReader>();
    std::string err, note;
    fileMessageIsError = true;
    if (!next->open(path, err)) {
      fileMessage = path + ": " + err;
      std::fprintf(stderr, "Error: %s\n", fileMessage.c_str());
      return false;
    }
    const bool firstOpen = !renderer;
    hfr::RenderSettings s = renderer ? renderer->settings() : rs;
    const bool hadImagery = renderer && renderer->hasImagery();
    const bool imageryView = s.view == hfr::View::Imagery || s.view == hfr::View::ImageryLit;
    if (!next->hasImagery() && imageryView) s.view = hfr::View::Shaded;
    else if (next->hasImagery() && !hadImagery && s.view == hfr::View::Shaded && s.imagery) s.view = hfr::View::ImageryLit;
    auto nextStrategy = hfr::makeRenderStreamStrategy(appliedName, *next, err, note, appliedOptions);
    std::unique_ptr<hfr::Renderer> nextRenderer =
        nextStrategy ? hfr::Renderer::create(*next, *nextStrategy, s, err) : nullptr;
    if (!nextRenderer) {
      fileMessage = path + ": " + err;
      std::fprintf(stderr, "Error: %s\n", fileMessage.c_str());
      return false;
    }
    if (!note.empty()) std::fprintf(stderr, "Note: %s\n", note.c_str());
    for (const std::string& n : nextRenderer->notes()) std::fprintf(stderr, "Note: %s\n", n.c_str());
    const double oldX = extentX, oldY = extentY;
    renderer = std::move(nextRenderer);
    strategy = std::move(nextStrategy);
    archive = std::move(next);
    const bool wasMeasuring = measure && measure->active;
    measure = std::make_unique<MeasureTool>(*archive);
    measure->active = wasMeasuring;
    renderer->terrainBox(terrainMinZ, terrainMaxZ, extentX, extentY);
    const bool sameExtent = std::abs(extentX - oldX) <= 0.02 * extentX && std::abs(extentY - oldY) <= 0.02 * extentY;
    if (firstOpen && options.haveCamera) controller.setCamera(options.camera);
    else if (!(keepCamera && sameExtent)) controller.setCamera(renderer->defaultCamera());
    flight.on = false;
    ui.view = int(renderer->settings().view);
    archivePath = path;
    fileMessage = "opened " + path;
    fileMessageIsError = false;
    glfwSetWindowTitle(win, ("hfview - " + std::filesystem::path(path).filename().string()).c_str());
    if (!options.quiet) std::printf("hfview: opened %s\n", path.c_str());
    return true;
  };
  // Files dropped on the window: one archive opens; anything else is DEMs, packed in the
  // background like `hfview DEM...` (a pack in progress is cancelled).
  auto openDropped = [&](const std::vector<std::string>& files) {
    if (files.size() == 1 && isArchiveFile(files[0])) {
      job.reset();
      if (openArchive(files[0], false)) loadBookmarks(files[0]);
      return;
    }
    for (const std::string& f : files)
      if (isArchiveFile(f)) {
        fileMessage = f + " is an archive: drop one archive, or DEMs to pack";
        fileMessageIsError = true;
        return;
      }
    DemCacheRequest req;
    req.inputs = files;
    req.quiet = options.quiet;
    job = std::make_unique<PackJob>(req);
    loadBookmarks(files[0]);
    fileMessage.clear();
  };
  std::string shownPreview;  // the preview archive open now (replaced by the full one)

  double lastTime = glfwGetTime(), lastCursorX = 0, lastCursorY = 0;
  glfwGetCursorPos(win, &lastCursorX, &lastCursorY);
  hfr::FrameStats st;
  double frameMs = 0, frameMsSmooth = 0;
  uint64_t bytesStreamedTotal = 0;
  int frames = 0, rc = 0;
  std::string lastShot;

  // ---- frame loop ----
  while (!glfwWindowShouldClose(win) && !keys.quit) {
    glfwPollEvents();
    const double now = glfwGetTime();
    const double dt = now - lastTime;
    lastTime = now;
    frameMs = dt * 1000;
    frameMsSmooth = frames == 0 ? frameMs : 0.95 * frameMsSmooth + 0.05 * frameMs;

    int fbw = 0, fbh = 0, ww = 0, wh = 0;
    glfwGetFramebufferSize(win, &fbw, &fbh);
    glfwGetWindowSize(win, &ww, &wh);
    if (fbw < 1 || fbh < 1) {  // minimised: nothing to draw
      glfwWaitEvents();
      continue;
    }
    // Dropped files, and the background pack: its preview opens as soon as it exists, the
    // full archive replaces it when complete.
    if (!keys.dropped.empty()) {
      openDropped(keys.dropped);
      keys.dropped.clear();
    }
    if (job) {
      const PackJob::Status js = job->status();
      if (js.stage == PackJob::Stage::Full && js.preview != shownPreview) {
        shownPreview = js.preview;
        openArchive(js.preview, false);
      } else if (js.stage == PackJob::Stage::Done) {
        if (openArchive(js.archive, !shownPreview.empty()) && !options.quiet)
          std::printf("hfview: %s %s in %.1f s\n", js.fromCache ? "found" : "packed", js.archive.c_str(), js.seconds);
        shownPreview.clear();
        job.reset();
      } else if (js.stage == PackJob::Stage::Failed) {
        fileMessage = "cannot pack: " + js.error;
        fileMessageIsError = true;
        std::fprintf(stderr, "Error: %s\n", fileMessage.c_str());
        job.reset();
      }
    }
    if (renderer && !renderer->resize(fbw, fbh, error)) {
      std::fprintf(stderr, "Error: %s\n", error.c_str());
      rc = 1;
      break;
    }

    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();

    // What is being opened: the pack's stage and progress, the last open's message.
    auto filePanel = [&] {
      if (job) {
        const PackJob::Status js = job->status();
        const std::string name = std::filesystem::path(job->request().inputs[0]).filename().string();
        if (js.stage == PackJob::Stage::Full)
          ImGui::TextWrapped("packing %s in full (%.0f s); showing a preview", name.c_str(), js.seconds);
        else
          ImGui::TextWrapped("packing %s: a preview first (%.0f s)", name.c_str(), js.seconds);
        char label[32];
        std::snprintf(label, sizeof label, "%.0f %%", 100.0 * js.fraction);
        ImGui::ProgressBar(float(js.fraction), ImVec2(-1, 0), label);
      } else if (!renderer) {
        ImGui::TextWrapped("Drop a DEM (anything GDAL reads) or an .hfa archive on this window.");
      }
      if (!fileMessage.empty())
        ImGui::TextColored(fileMessageIsError ? ImVec4(1.0f, 0.35f, 0.35f, 1.0f) : ImVec4(0.7f, 0.7f, 0.7f, 1.0f),
                           "%s", fileMessage.c_str());
    };
    if (!renderer) {  // nothing open yet: a small window of its own (the panel sizes itself later)
      ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_FirstUseEver);
      ImGui::SetNextWindowSize(ImVec2(360, 0), ImGuiCond_FirstUseEver);
      ImGui::Begin("hfview##opening");
      filePanel();
      ImGui::End();
      ImGui::Render();
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      glViewport(0, 0, fbw, fbh);
      glClearColor(rs.background[0], rs.background[1], rs.background[2], 1.0f);
      glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      window.swapBuffers();
      ++frames;
      keys.clicks.clear();
      continue;
    }

    // Camera input (ignored while ImGui wants the mouse / keyboard).
    double cx = 0, cy = 0;
    glfwGetCursorPos(win, &cx, &cy);
    hfr::CameraInput in;
    in.uiWantsMouse = io.WantCaptureMouse;
    in.uiWantsKeyboard = io.WantCaptureKeyboard;
    in.forward = glfwGetKey(win, GLFW_KEY_W) == GLFW_PRESS;
    in.back = glfwGetKey(win, GLFW_KEY_S) == GLFW_PRESS;
    in.left = glfwGetKey(win, GLFW_KEY_A) == GLFW_PRESS;
    in.right = glfwGetKey(win, GLFW_KEY_D) == GLFW_PRESS;
    in.down = glfwGetKey(win, GLFW_KEY_Q) == GLFW_PRESS;
    in.up = glfwGetKey(win, GLFW_KEY_E) == GLFW_PRESS;
    in.fast = glfwGetKey(win, GLFW_KEY_LEFT_SHIFT) == GLFW_PRESS ||
              glfwGetKey(win, GLFW_KEY_RIGHT_SHIFT) == GLFW_PRESS;
    in.lookButton = glfwGetMouseButton(win, GLFW_MOUSE_BUTTON_RIGHT) == GLFW_PRESS;
    in.dragButton = glfwGetMouseButton(win, GLFW_MOUSE_BUTTON_LEFT) == GLFW_PRESS;
    in.mouseDx = cx - lastCursorX;
    in.mouseDy = cy - lastCursorY;
    in.wheel = keys.wheel;
    lastCursorX = cx;
    lastCursorY = cy;
    keys.wheel = 0;
    if (keys.toggleMode)
      controller.toggleMode(0.5 * (terrainMinZ + terrainMaxZ), 0.5 * std::hypot(extentX, extentY));
    if (keys.resetCamera)
      controller.setCamera(options.haveCamera ? options.camera : renderer->defaultCamera());
    if (keys.togglePanel) ui.showPanel = !ui.showPanel;
    keys.toggleMode = keys.resetCamera = keys.togglePanel = false;
    double gmin = 0, gmax = 0;
    const hfr::Camera& c0 = controller.camera();
    const double ground = renderer->heightBounds(c0.x, c0.y, gmin, gmax) ? gmax : std::numeric_limits<double>::quiet_NaN();
    controller.update(dt, in, ground);
    if (flight.on) {
      const bool userMoves = in.forward || in.back || in.left || in.right || in.up || in.down ||
                             (!in.uiWantsMouse && (in.lookButton || in.dragButton || in.wheel != 0));
      if (userMoves) flight.on = false;
      else flight.step(now, controller);
    }
    if (keys.toggleRecord) recording.toggle(now);
    keys.toggleRecord = false;
    recording.frame(now, controller.camera());

    // Apply the UI's dirty settings.
    hfr::RenderSettings& cur = renderer->settings();
    cur.tau = double(ui.tau);
    cur.view = hfr::View(ui.view);
    cur.wireframe = ui.wireframe;
    cur.fog = ui.fog;
    if (ui.exaggerationDirty) {
      cur.verticalExaggeration = double(ui.exaggeration);
      renderer->updateExaggeration();
      renderer->terrainBox(terrainMinZ, terrainMaxZ, extentX, extentY);
      ui.exaggerationDirty = false;
    }

    if (oui.dirty) {
      cur.ocean = oui.on;
      cur.waterLevel = double(oui.level);
      cur.oceanParams.windSpeed = double(oui.wind);
      cur.oceanParams.windDirection = double(oui.direction);
      cur.oceanParams.choppiness = double(oui.choppiness);
      cur.oceanParams.amplitude = double(oui.waves);
      std::string oerr;
      oui.error = renderer->updateOcean(oerr) ? std::string() : oerr;
      if (oui.error.empty() && oui.on && !renderer->hasOcean())
        oui.error = "no water at or below this level";
      oui.dirty = false;
    }

    renderer->frame(controller.camera(), &st);
    bytesStreamedTotal += st.bytesStreamed;
    ++frames;

    // Height and coordinates under the cursor: the depth of this frame at the cursor,
    // unprojected (window coordinates scaled to framebuffer pixels for HiDPI).
    const double sx = ww > 0 ? double(fbw) / ww : 1, sy = wh > 0 ? double(fbh) / wh : 1;
    std::array<double, 3> hit{};
    const bool haveHit = !io.WantCaptureMouse && renderer->pick(cx * sx, cy * sy, hit);
    // Clicks on the terrain: the measure tool's ends, or (double click) a flight to the point.
    const double exagNow = renderer->settings().verticalExaggeration;
    if (keys.toggleMeasure) measure->active = !measure->active;
    keys.toggleMeasure = false;
    for (const KeyEvents::Click& k : keys.clicks) {
      std::array<double, 3> p{};
      if (!renderer->pick(k.x * sx, k.y * sy, p)) continue;
      if (measure->active) {
        if (measure->click(p, exagNow) && !options.quiet) std::printf("hfview: %s\n", measure->summary().c_str());
      }
      else if (k.isDouble) flight.start(controller.camera(), p, now);
    }
    keys.clicks.clear();
    // Bookmarks: Ctrl+1..9 keeps the view, 1..9 flies back to it.
    if (keys.saveSlot) {
      const bool saved = bookmarks.set(keys.saveSlot, controller.camera());
      bookmarkMessage = "view saved as bookmark " + std::to_string(keys.saveSlot) +
                        (saved ? "" : " (this session only: " + bookmarks.error() + ")");
      if (!options.quiet) std::printf("hfview: %s\n", bookmarkMessage.c_str());
    }
    if (keys.recallSlot) {
      if (const std::optional<hfr::Camera> c = bookmarks.get(keys.recallSlot)) flight.startTo(controller.camera(), *c, now);
      else bookmarkMessage = "no bookmark " + std::to_string(keys.recallSlot) + " yet (Ctrl+" +
                             std::to_string(keys.recallSlot) + " saves the view)";
    }
    keys.saveSlot = keys.recallSlot = 0;

    if (ui.showPanel) {
      ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_FirstUseEver);
      ImGui::SetNextWindowSize(ImVec2(360, 0), ImGuiCond_FirstUseEver);
      ImGui::Begin("hfview (F1 hides)");
      filePanel();
      ImGui::Text("frame %.2f ms (%.1f fps)", frameMsSmooth, frameMsSmooth > 0 ? 1000.0 / frameMsSmooth : 0.0);
      for (int p = 0; p < 3; ++p) {
        const double ms = st.gpuMs[size_t(p)];
        if (ms >= 0) ImGui::Text("GPU %-9s %.3f ms", hfr::gpuPassName(hfr::GpuPass(p)), ms);
        else ImGui::Text("GPU %-9s -", hfr::gpuPassName(hfr::GpuPass(p)));
      }
      ImGui::Separator();
      ImGui::SliderFloat("tau (px)", &ui.tau, 0.25f, 16.0f, "%.2f", ImGuiSliderFlags_Logarithmic);
      const std::string cudaStreams = std::string(strategy->name()) == "cuda"
          ? ", " + std::to_string(appliedOptions.streams) + " CUDA streams" : std::string();
      ImGui::Text("running: stream %s%s, atlas budget %.0f MiB", strategy->name(),
                  cudaStreams.c_str(), renderer->settings().atlasBudgetMiB);
      ImGui::Combo("stream", &sui.strategy, kStrategyNames, kStrategyCount);
      ImGui::BeginDisabled(sui.strategy != kCudaStrategy);
      if (ImGui::InputInt("CUDA streams", &sui.streams)) sui.streams = std::clamp(sui.streams, 1, 64);
      ImGui::EndDisabled();
      if (ImGui::InputDouble("atlas budget (MiB)", &sui.budgetMiB, 16.0, 256.0, "%.0f") &&
          !(sui.budgetMiB > 0))
        sui.budgetMiB = 1;
      if (ImGui::Button("Apply")) sui.applyRequested = true;
      if (!sui.message.empty())
        ImGui::TextColored(sui.messageIsError ? ImVec4(1.0f, 0.35f, 0.35f, 1.0f)
                                              : ImVec4(1.0f, 0.6f, 0.2f, 1.0f),
                           "%s", sui.message.c_str());
      ImGui::Text("view:");
      ImGui::SameLine();
      ImGui::RadioButton("shaded", &ui.view, int(hfr::View::Shaded));
      ImGui::SameLine();
      ImGui::RadioButton("level", &ui.view, int(hfr::View::Level));
      ImGui::SameLine();
      ImGui::RadioButton("ldr", &ui.view, int(hfr::View::Ldr));
      if (renderer->hasImagery()) {
        ImGui::RadioButton("imagery", &ui.view, int(hfr::View::Imagery));
        ImGui::SameLine();
        ImGui::RadioButton("imagery-lit", &ui.view, int(hfr::View::ImageryLit));
      }
      ImGui::Checkbox("wireframe", &ui.wireframe);
      ImGui::SameLine();
      ImGui::Checkbox("fog", &ui.fog);
      // Applied on release: every change rebuilds the tile boxes and the LOD selector.
      ImGui::SliderFloat("vertical x", &ui.exaggeration, 0.1f, 10.0f, "%.2f",
                         ImGuiSliderFlags_Logarithmic);
      if (ImGui::IsItemDeactivatedAfterEdit()) ui.exaggerationDirty = true;
      ImGui::Separator();
      // The ocean: the level on release (it rebuilds the water mask), the rest while dragging.
      if (ImGui::Checkbox("ocean", &oui.on)) oui.dirty = true;
      ImGui::BeginDisabled(!oui.on);
      ImGui::SameLine();
      ImGui::SetNextItemWidth(120);
      const bool stepped = ImGui::InputFloat("water level (m)", &oui.level, 1.0f, 10.0f, "%.1f");
      if ((stepped && !ImGui::IsItemActive()) || ImGui::IsItemDeactivatedAfterEdit()) oui.dirty = true;
      oui.dirty |= ImGui::SliderFloat("wind (m/s)", &oui.wind, 0.5f, 40.0f, "%.1f", ImGuiSliderFlags_Logarithmic);
      oui.dirty |= ImGui::SliderFloat("wind towards (deg)", &oui.direction, 0.0f, 360.0f, "%.0f");
      oui.dirty |= ImGui::SliderFloat("choppiness", &oui.choppiness, 0.0f, 4.0f, "%.2f");
      oui.dirty |= ImGui::SliderFloat("waves", &oui.waves, 0.0f, 3.0f, "%.2f");
      ImGui::EndDisabled();
      if (!oui.error.empty()) ImGui::TextColored(ImVec4(1.0f, 0.35f, 0.35f, 1.0f), "%s", oui.error.c_str());
      ImGui::Separator();
      const hfr::Camera& cam = controller.camera();
      ImGui::Text("camera: %s (C toggles)  speed %.0f m/s",
                  controller.mode() == hfr::CameraController::Mode::FreeFly ? "free-fly" : "orbit",
                  controller.lastSpeed());
      ImGui::Text("eye %.0f, %.0f, %.0f  yaw %.1f pitch %.1f", cam.x, cam.y, cam.z, cam.yaw,
                  cam.pitch);
      if (haveHit) {
        const hfa::Header& header = archive->header();
        const double exag = cur.verticalExaggeration > 0 ? cur.verticalExaggeration : 1;
        // World -> level-0 sample (column, row) -> georeferenced (GDAL geotransform,
        // pixel-is-area: the sample centre is at +0.5).
        const double spx = header.spacingX > 0 ? header.spacingX : 1;
        const double spy = header.spacingY > 0 ? header.spacingY : 1;
        const double col = hit[0] / spx;
        const double row = double(header.height > 0 ? header.height - 1 : 0) - hit[1] / spy;
        const double* gt = header.geoTransform;
        const double gx = gt[0] + (col + 0.5) * gt[1] + (row + 0.5) * gt[2];
        const double gy = gt[3] + (col + 0.5) * gt[4] + (row + 0.5) * gt[5];
        ImGui::Text("cursor: height %.1f m", hit[2] / exag);
        ImGui::Text("  world %.1f, %.1f  sample %.1f, %.1f", hit[0], hit[1], col, row);
        ImGui::Text("  geo %.6f, %.6f%s", gx, gy, header.crsWkt.empty() ? " (no CRS)" : "");
        // The drawn tile under the cursor: level-0 samples span N 2^level per tile.
        const double n = double(header.tileSize() - 1);
        for (const hfr::DrawTile& d : renderer->lastDrawn()) {
          const double span = n * double(1u << d.level);
          if (col >= d.x * span && col <= (d.x + 1) * span && row >= d.y * span && row <= (d.y + 1) * span) {
            ImGui::Text("  tile level %d (%u, %u), drawn at ldr %d", d.level, d.x, d.y, d.centre);
            break;
          }
        }
      } else {
        ImGui::Text("cursor: -");
      }
      measure->panel();
      {
        std::string have;
        for (int k = 1; k <= hfr::CameraBookmarks::kSlots; ++k)
          if (bookmarks.get(k)) have += (have.empty() ? "" : " ") + std::to_string(k);
        ImGui::Text("bookmarks: %s (1..9 flies, Ctrl+1..9 saves)", have.empty() ? "none" : have.c_str());
        if (!bookmarkMessage.empty()) ImGui::TextWrapped("  %s", bookmarkMessage.c_str());
      }
      ImGui::Separator();
      ImGui::Text("tiles drawn %zu (wanted %zu, missing %zu), triangles %llu", st.tilesDrawn,
                  st.tilesWanted, st.tilesMissing, (unsigned long long)st.triangles);
      if (appliedOptions.progressive) {
        const hfr::StreamStats ps = strategy->stats();
        ImGui::Text("progressive: %zu drawn lossy, %zu refined of %zu delivered lossy", st.lossyDrawn, ps.refined,
                    ps.deliveredLossy);
      }
      if (st.tauWanted > renderer->settings().tau * 1.0001)
        ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.2f, 1.0f),
                           "atlas too small for this view: streaming at tau %.2f px", st.tauWanted);
      if (ImGui::BeginTable("levels", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
        ImGui::TableSetupColumn("level");
        ImGui::TableSetupColumn("tiles");
        ImGui::TableSetupColumn("triangles");
        ImGui::TableHeadersRow();
        for (size_t l = 0; l < st.tilesPerLevel.size(); ++l) {
          if (!st.tilesPerLevel[l]) continue;
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::Text("%zu", l);
          ImGui::TableNextColumn();
          ImGui::Text("%zu", st.tilesPerLevel[l]);
          ImGui::TableNextColumn();
          ImGui::Text("%llu", (unsigned long long)(l < st.trianglesPerLevel.size()
                                                       ? st.trianglesPerLevel[l] : 0));
        }
        ImGui::EndTable();
      }
      ImGui::Text("uploaded %zu tiles, %s streamed this frame", st.uploads,
                  humanBytes(double(st.bytesStreamed)).c_str());
      ImGui::Text("streamed so far %s, pending %zu",
                  humanBytes(double(bytesStreamedTotal)).c_str(), st.pending);
      // Host -> device: compressed (cuda's packed batches) / decompressed samples (cpu, raw).
      const hfr::StreamStats ss = strategy->stats();
      ImGui::Text("to device this frame %.1f / %.1f KiB (compressed / decompressed)",
                  double(st.compressedToDevice) / 1024.0, double(st.samplesToDevice) / 1024.0);
      ImGui::Text("to device so far %s / %s", humanBytes(double(ss.compressedToDevice)).c_str(),
                  humanBytes(double(ss.samplesToDevice)).c_str());
      if (ss.cacheCapacity)
        ImGui::Text("VRAM cache %s of %s, hits %llu / misses %llu%s", humanBytes(double(ss.cacheBytes)).c_str(),
                    humanBytes(double(ss.cacheCapacity)).c_str(), (unsigned long long)ss.cacheHits,
                    (unsigned long long)ss.cacheMisses,
                    ss.preloadMs > 0 ? (", archive loaded in " + std::to_string(int(ss.preloadMs)) + " ms").c_str() : "");
      if (ss.hostBytes)
        ImGui::Text("host cache %s, %llu requests from it, %llu tiles staged ahead",
                    humanBytes(double(ss.hostBytes)).c_str(), (unsigned long long)ss.hostHits,
                    (unsigned long long)ss.hostStaged);
      if (st.colourCacheBytes)
        ImGui::Text("imagery VRAM cache %s (BC1), %llu tiles from it this frame",
                    humanBytes(double(st.colourCacheBytes)).c_str(), (unsigned long long)st.colourCacheHits);
      if (st.failedTiles)
        ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.2f, 1.0f),
                           "corrupt tiles %zu (drawn from ancestors)", st.failedTiles);
      else
        ImGui::Text("corrupt tiles 0");
      const double occ = st.atlasSlots ? double(st.resident) / double(st.atlasSlots) : 0;
      char label[64];
      std::snprintf(label, sizeof label, "%zu / %zu slots", st.resident, st.atlasSlots);
      ImGui::ProgressBar(float(occ), ImVec2(-1, 0), label);
      if (renderer->hasImagery()) {
        ImGui::Text("imagery %s (%s): %zu uploads, %zu pending, %zu wanted, %zu missing",
                    renderer->imageryStrategy().c_str(), renderer->imageryFormat().c_str(),
                    st.colourUploads, st.colourPending, st.colourWanted, st.colourMissing);
        ImGui::Text("imagery bytes this frame: %.1f KiB read, %.1f KiB to device",
                    double(st.colourBytesStreamed) / 1024.0, double(st.colourBytesToDevice) / 1024.0);
        if (st.colourFailed)
          ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.2f, 1.0f), "corrupt imagery tiles %zu (drawn from ancestors)",
                             st.colourFailed);
        const double cocc = st.colourLayers ? double(st.colourResident) / double(st.colourLayers) : 0;
        std::snprintf(label, sizeof label, "%zu / %zu imagery layers", st.colourResident, st.colourLayers);
        ImGui::ProgressBar(float(cocc), ImVec2(-1, 0), label);
      }
      if (!lastShot.empty()) ImGui::Text("screenshot: %s", lastShot.c_str());
      ImGui::End();
    }
    recording.drawOverlay(now);
    measure->overlay(*renderer, exagNow, sx > 0 ? 1.0 / sx : 1.0, sy > 0 ? 1.0 / sy : 1.0);
    ImGui::Render();

    // Present: the terrain FBO blitted to the window, the UI on top.
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glViewport(0, 0, fbw, fbh);
    renderer->present(fbw, fbh);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

    // Screenshots are of the terrain only (the FBO), without the panel.
    const bool oneShot = !options.screenshot.empty() &&
                         (renderer->settled() || frames >= options.maxFrames);
    if (keys.screenshot || oneShot) {
      const std::string path = oneShot ? options.screenshot : timestampedName();
      if (hfr::writePng(path, fbw, fbh, renderer->readPixels(), error)) {
        lastShot = path;
        if (!options.quiet) std::printf("hfview: wrote %s\n", path.c_str());
      } else {
        std::fprintf(stderr, "Error: %s\n", error.c_str());
        if (oneShot) rc = 1;
      }
      keys.screenshot = false;
      if (oneShot) break;
    }
    window.swapBuffers();

    // Apply: rebuild the strategy and the renderer (GL context current, between frames). The
    // renderer goes first (its destructor releases the strategy's GL/CUDA resources), then the
    // strategy; settings (size, tau, view, exaggeration, ...) and the camera are kept. When the
    // new configuration fails, the previous one is made again.
    if (sui.applyRequested) {
      sui.applyRequested = false;
      const hfr::RenderSettings prevSettings = renderer->settings();
      hfr::RenderSettings next = prevSettings;
      next.atlasBudgetMiB = sui.budgetMiB;
      hfr::StreamOptions nextOptions = appliedOptions;
      nextOptions.streams = sui.streams;
      const std::string nextName = kStrategyNames[sui.strategy];
      auto build = [&](const std::string& name, const hfr::StreamOptions& so,
                       const hfr::RenderSettings& s, std::string& err, std::string& note) {
        renderer.reset();
        strategy.reset();
        strategy = hfr::makeRenderStreamStrategy(name, *archive, err, note, so);
        if (strategy) renderer = hfr::Renderer::create(*archive, *strategy, s, err);
        return renderer != nullptr;
      };
      std::string err, note;
      sui.message.clear();
      sui.messageIsError = false;
      if (build(nextName, nextOptions, next, err, note)) {
        appliedName = strategy->name();
        appliedOptions = nextOptions;
        if (!note.empty()) {
          std::fprintf(stderr, "Note: %s\n", note.c_str());
          sui.message = note;
        }
        if (!options.quiet)
          std::printf("hfview: stream %s, atlas budget %.0f MiB\n", strategy->name(),
                      next.atlasBudgetMiB);
      } else {
        std::fprintf(stderr, "Error: %s (keeping stream %s)\n", err.c_str(), appliedName.c_str());
        sui.message = err;
        sui.messageIsError = true;
        std::string err2, note2;
        if (!build(appliedName, appliedOptions, prevSettings, err2, note2)) {
          std::fprintf(stderr, "Error: %s\n", err2.c_str());
          rc = 1;
          break;
        }
      }
      for (const std::string& n : renderer->notes()) std::fprintf(stderr, "Note: %s\n", n.c_str());
      sui.strategy = strategyIndex(strategy->name());
      sui.budgetMiB = renderer->settings().atlasBudgetMiB;
      renderer->terrainBox(terrainMinZ, terrainMaxZ, extentX, extentY);
      // Statistics start again with the new strategy / renderer.
      st = hfr::FrameStats{};
      bytesStreamedTotal = 0;
    }
  }

  if (!recording.stop(glfwGetTime()) && rc == 0) rc = 1;  // F9 still on: write the path

  // ---- shutdown: reverse order of creation ----
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwSetScrollCallback(win, nullptr);
  glfwSetKeyCallback(win, nullptr);
  glfwSetMouseButtonCallback(win, nullptr);
  glfwSetDropCallback(win, nullptr);
  g_keys = nullptr;
  job.reset();  // a pack in progress is cancelled (hfpack leaves no file)
  renderer.reset();
  if (options.glDebug) {
    glDebugMessageCallback(nullptr, nullptr);
    if (!options.quiet || glLog.errors)
      std::fprintf(stderr, "Note: GL debug: %d errors in %d messages\n", glLog.errors, glLog.messages);
    if (glLog.errors && rc == 0) rc = 3;
  }
  return rc;
}

}  // namespace hfview
