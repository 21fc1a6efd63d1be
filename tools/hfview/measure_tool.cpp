// measure_tool.cpp - see measure_tool.h.
#include "measure_tool.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int kProfilePoints = 200;

std::string metres(double m) {
  char b[48];
  if (std::abs(m) >= 10000) std::snprintf(b, sizeof b, "%.3f km", m / 1000);
  else std::snprintf(b, sizeof b, "%.1f m", m);
  return b;
}

}  // namespace

MeasureTool::MeasureTool(const hfa::ArchiveReader& archive) : frame_(archive.header()), sampler_(archive) {}

bool MeasureTool::click(const std::array<double, 3>& picked, double exaggeration) {
  const double e = exaggeration > 0 ? exaggeration : 1;
  const std::array<double, 3> p{picked[0], picked[1], picked[2] / e};
  if (ends_ != 1) {
    a_ = p;
    ends_ = 1;
    return false;
  }
  b_ = p;
  ends_ = 2;
  result_ = hfr::measure(frame_, a_, b_);
  profile_ = hfr::profile(sampler_, frame_, a_, b_, kProfilePoints);
  return true;
}

std::string MeasureTool::summary() const {
  char b[200];
  std::snprintf(b, sizeof b, "measured %s horizontal%s, %s in 3D, height difference %+.1f m (%.0f .. %.0f m along it)",
                metres(result_.horizontal).c_str(), result_.ellipsoidal ? " (geodesic)" : "",
                metres(result_.spatial).c_str(), result_.dz, profile_.minHeight, profile_.maxHeight);
  return b;
}

void MeasureTool::panel() {
  ImGui::Checkbox("measure (M)", &active);
  if (!active) return;
  ImGui::SameLine();
  if (ImGui::SmallButton("clear")) clear();
  if (ends_ == 0) {
    ImGui::TextUnformatted("  click the first point on the terrain");
    return;
  }
  if (ends_ == 1) {
    ImGui::Text("  from %.0f, %.0f (%.1f m): click the second point", a_[0], a_[1], a_[2]);
    return;
  }
  ImGui::Text("  horizontal %s%s", metres(result_.horizontal).c_str(),
              result_.ellipsoidal ? " (geodesic, WGS84)" : "");
  ImGui::Text("  3D %s, height difference %+.1f m", metres(result_.spatial).c_str(), result_.dz);
  if (result_.horizontal > 0) ImGui::Text("  mean slope %.1f%%", 100.0 * result_.dz / result_.horizontal);
  std::vector<float> h;
  h.reserve(profile_.height.size());
  for (double v : profile_.height) h.push_back(float(std::isfinite(v) ? v : profile_.minHeight));
  if (!h.empty()) {
    char label[96];
    std::snprintf(label, sizeof label, "%.0f .. %.0f m", profile_.minHeight, profile_.maxHeight);
    ImGui::PlotLines("profile", h.data(), int(h.size()), 0, label, float(profile_.minHeight),
                     float(profile_.maxHeight > profile_.minHeight ? profile_.maxHeight : profile_.minHeight + 1),
                     ImVec2(0, 80));
  }
  if (!sampler_.error().empty()) ImGui::TextColored(ImVec4(1, 0.6f, 0.2f, 1), "  %s", sampler_.error().c_str());
}

void MeasureTool::overlay(const hfr::Renderer& renderer, double exaggeration, double toWindowX,
                          double toWindowY) const {
  if (!active || ends_ == 0) return;
  const double e = exaggeration > 0 ? exaggeration : 1;
  ImDrawList* d = ImGui::GetBackgroundDrawList();
  const ImU32 colour = IM_COL32(255, 220, 40, 255);
  auto screen = [&](const std::array<double, 3>& p, ImVec2& out) {
    double px, py;
    if (!renderer.project({p[0], p[1], p[2] * e}, px, py)) return false;
    out = ImVec2(float(px * toWindowX), float(py * toWindowY));
    return true;
  };
  ImVec2 sa, sb;
  const bool haveA = screen(a_, sa);
  if (haveA) d->AddCircleFilled(sa, 4.0f, colour);
  if (ends_ < 2) return;
  const bool haveB = screen(b_, sb);
  if (haveB) d->AddCircleFilled(sb, 4.0f, colour);
  if (haveA && haveB) {
    d->AddLine(sa, sb, colour, 2.0f);
    const std::string text = metres(result_.horizontal);
    d->AddText(ImVec2(0.5f * (sa.x + sb.x) + 6, 0.5f * (sa.y + sb.y) - 16), colour, text.c_str());
  }
}
