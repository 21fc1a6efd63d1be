// report.cpp - JSON report and console table (report.h).
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>

#include "json.h"
#include "timer.h"

namespace hfbench {

namespace {

double ratioOf(uint64_t original, uint64_t compressed) {
  return compressed ? static_cast<double>(original) / static_cast<double>(compressed) : 0.0;
}
double divide(double a, double b) { return b > 0 ? a / b : 0.0; }

// Per-input figures derived from the raw measurements.
struct Figures {
  double ratio = 0, zstdRatio = 0, lercRatio = 0;
  double encode = 0, encodeMt = 0, decode = 0, decodeMt = 0;
  double zstdEncode = 0, zstdDecode = 0, lercEncode = 0, lercDecode = 0;
};

Figures figures(const InputResult& r) {
  Figures f;
  const double points = static_cast<double>(r.points);
  f.ratio = ratioOf(r.originalBytes(), r.hfpac.compressedBytes);
  f.encode = rate(points, r.hfpac.encodeSeconds);
  f.encodeMt = rate(points, r.hfpac.encodeMtSeconds);
  f.decode = rate(points, r.hfpac.decodeSeconds);
  f.decodeMt = rate(points, r.hfpac.decodeMtSeconds);
  if (r.zstd.ok) {
    f.zstdRatio = ratioOf(r.originalBytes(), r.zstd.compressedBytes);
    f.zstdEncode = rate(points, r.zstd.encodeSeconds);
    f.zstdDecode = rate(points, r.zstd.decodeSeconds);
  }
  if (r.lerc.ok) {
    f.lercRatio = ratioOf(r.originalBytes(), r.lerc.compressedBytes);
    f.lercEncode = rate(points, r.lerc.encodeSeconds);
    f.lercDecode = rate(points, r.lerc.decodeSeconds);
  }
  return f;
}

std::string baseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void writeMismatch(JsonWriter& j, const Mismatch& m) {
  j.beginObject();
  j.field("patch", m.patch);
  j.key("patch_rect").beginArray(true);
  j.value(m.patchX0).value(m.patchY0).value(m.patchWidth).value(m.patchHeight);
  j.endArray();
  j.field("x", m.x).field("y", m.y);
  j.field("expected", m.expected).field("got", m.got).field("patches", m.patches);
  j.endObject();
}

void writeAnchor(JsonWriter& j, const AnchorResult& a, const InputResult& r) {
  const double points = static_cast<double>(r.points);
  j.beginObject();
  j.field("method", a.method);
  if (!a.detail.empty()) j.field("method_choice", a.detail);
  if (!a.ok) {
    j.field("error", a.error);
    j.endObject();
    return;
  }
  j.field("compressed_bytes", a.compressedBytes);
  j.field("ratio", ratioOf(r.originalBytes(), a.compressedBytes));
  j.field("encode_pts_per_s", rate(points, a.encodeSeconds));
  j.field("decode_pts_per_s", rate(points, a.decodeSeconds));
  j.field("lossless", a.lossless);
  if (a.mismatch.any) {
    j.key("mismatch");
    writeMismatch(j, a.mismatch);
  }
  j.endObject();
}

// GPU figures (--device cuda), flat fields of the input's object. Rates count decoded points;
// bytes = compressed bytes read + 2 bytes written per point; the roofline is a device-to-device
// cudaMemcpy measured in the same run (also read + written bytes).
void writeGpu(JsonWriter& j, const InputResult& r, double cpuDecode, double cpuDecodeMt) {
  const GpuResult& g = r.gpu;
  if (!g.measured && g.error.empty()) return;  // not asked for
  if (!g.measured) {
    j.field("gpu_error", g.error);
    return;
  }
  const double pts = static_cast<double>(g.batchPoints);
  const double dec = rate(pts, g.decodeSeconds);
  const double bytes = static_cast<double>(g.batchCompressedBytes) + 2.0 * pts;
  const double bytesPerS = g.decodeSeconds > 0 ? bytes / g.decodeSeconds : 0.0;
  j.field("gpu_device", g.device);
  j.field("gpu_lossless", g.lossless).field("gpu_l1_matches_cpu", g.l1MatchesCpu);
  j.field("gpu_batch_patches", g.batchPatches).field("gpu_batch_points", g.batchPoints);
  j.field("gpu_batch_compressed_bytes", g.batchCompressedBytes).field("gpu_batch_replicas", g.replicas);
  j.field("gpu_decode_pts_per_s", dec);
  j.field("gpu_decode_l1_pts_per_s", rate(pts, g.decodeL1Seconds));
  j.field("gpu_decode_surface_pts_per_s", rate(pts, g.decodeSurfaceSeconds));
  j.field("gpu_surface_vs_linear", divide(g.decodeSurfaceSeconds, g.decodeSeconds));
  j.field("gpu_vs_cpu_decode", divide(dec, cpuDecode));
  j.field("gpu_vs_cpu_mt_decode", divide(dec, cpuDecodeMt));
  j.field("gpu_decode_bytes_per_s", bytesPerS);
  j.field("gpu_d2d_bytes_per_s", g.d2dBytesPerSecond);
  j.field("gpu_roofline_fraction", divide(bytesPerS, g.d2dBytesPerSecond));
  j.field("gpu_decode_16_us", g.decode16Us);
  for (const auto& [k, v] : g.extra) j.field(k, v);  // e.g. gpu_encode_* (encoder hook)
}

void writeInput(JsonWriter& j, const InputResult& r) {
  const demio::Dem& d = r.dem;
  j.beginObject();
  j.field("input", r.input);
  if (!r.error.empty()) j.field("error", r.error);
  if (d.width > 0) {
    j.field("width", d.width).field("height", d.height);
    j.field("type", demio::sampleTypeName(d.type));
    j.field("source_type", d.sourceType);
    j.field("driver", d.driver);
    j.field("bands", d.bandCount);
    if (d.widened) j.field("note_8bit", "8-bit samples coded as 16-bit (values unchanged)");
    if (d.paletteMapped) j.field("palette_mapped", true);
    if (d.quant.applied) {
      j.key("quantisation").beginObject();
      j.field("step", d.quant.step).field("offset", d.quant.offset);
      j.field("max_error", d.quant.maxError);
      j.field("measured_max_error", d.quant.measuredMaxError);
      j.field("source_min", d.quant.sourceMin).field("source_max", d.quant.sourceMax);
      j.field("integer_valued", d.quant.integerValued);
      j.field("nodata_code", 65535);
      j.field("note", "lossless refers to the quantised 16-bit grid");
      j.endObject();
    }
    j.key("nodata");
    if (d.hasNodata || d.nodataCount) {
      j.beginObject(true);
      if (d.hasNodata) j.field("value", d.nodata); else j.key("value").null();
      if (d.nodataInSamples) j.field("sample", d.nodataSample);
      j.field("count", d.nodataCount);
      j.endObject();
    } else {
      j.null();
    }
    j.key("geotransform");
    if (d.hasGeoTransform) {
      j.beginArray(true);
      for (double g : d.geoTransform) j.value(g);
      j.endArray();
    } else {
      j.null();
    }
    if (!d.warnings.empty()) {
      j.key("gdal_warnings").beginArray();
      for (const std::string& w : d.warnings) j.value(w);
      j.endArray();
    }
  }
  if (r.patches == 0) {
    j.endObject();
    return;
  }
  const HfpacResult& h = r.hfpac;
  const Figures f = figures(r);
  j.field("patch", r.patchSide).field("patches", r.patches).field("points", r.points);
  j.field("read_seconds", r.readSeconds);
  if (r.ok) {
    j.field("original_bytes", r.originalBytes());
    j.field("compressed_bytes", h.compressedBytes);
    j.field("ratio", f.ratio);
    j.key("layer_bytes").beginObject(true);
    j.field("layer1", h.layer1Bytes).field("layer2", h.layer2Bytes).field("layer3", h.layer3Bytes);
    j.endObject();
    j.key("bits_histogram").beginArray(true);
    for (uint64_t n : h.bitsHistogram) j.value(n);
    j.endArray();
    j.field("prominent_points", h.prominentPoints);
    j.field("flat_patches", h.flatPatches);
    j.field("per_area_bits_patches", h.perAreaBitsPatches);
    j.field("stored_patches", h.storedPatches);
    j.field("masked_patches", h.maskedPatches);
    j.key("segment_histogram").beginObject(true);
    for (const auto& [m, n] : h.segmentHistogram) j.field(std::to_string(m), n);
    j.endObject();
    j.field("encode_pts_per_s", f.encode).field("encode_mt_pts_per_s", f.encodeMt);
    j.field("decode_pts_per_s", f.decode).field("decode_mt_pts_per_s", f.decodeMt);
    j.field("max_err_l1", h.maxErrL1).field("max_err_l12", h.maxErrL12);
    j.field("l12_within_bound", h.l12BoundViolations == 0);
    j.field("lossless", h.lossless);
    j.field("lossless_mt", h.losslessMt);
    j.field("deterministic_mt", h.deterministicMt);
    j.field("point_decode_ok", h.pointDecodeOk);
    if (!h.decodeError.empty()) j.field("decode_error", h.decodeError);
    if (h.mismatch.any) {
      j.key("mismatch");
      writeMismatch(j, h.mismatch);
    }
    j.key("anchors").beginObject();
    j.key("zstd");
    writeAnchor(j, r.zstd, r);
    j.key("lerc");
    writeAnchor(j, r.lerc, r);
    j.endObject();
    j.key("hfpac_rbuc");
    writeAnchor(j, r.rbuc, r);
    j.field("ratio_rbuc_vs_zstd",
            divide(ratioOf(r.originalBytes(), r.rbuc.compressedBytes), f.zstdRatio));
    j.key("hfpac_ans");
    writeAnchor(j, r.ans, r);
    j.field("ratio_ans_vs_zstd", divide(ratioOf(r.originalBytes(), r.ans.compressedBytes), f.zstdRatio));
    j.field("ratio_auto", ratioOf(r.originalBytes(), r.autoBytes));
    j.field("ratio_auto_vs_zstd", divide(ratioOf(r.originalBytes(), r.autoBytes), f.zstdRatio));
    j.field("ratio_vs_zstd", divide(f.ratio, f.zstdRatio));
    j.field("ratio_vs_lerc", divide(f.ratio, f.lercRatio));
    j.field("decode_vs_lerc", divide(f.decode, f.lercDecode));
    j.field("decode_vs_zstd", divide(f.decode, f.zstdDecode));
    j.field("seconds", r.totalSeconds);
    writeGpu(j, r, f.decode, f.decodeMt);
  }
  if (!h.notes.empty()) {
    j.key("codec_notes").beginArray();
    for (const std::string& n : h.notes) j.value(n);
    j.endArray();
  }
  j.endObject();
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

// The figures the codec targets are judged by (issue 17), per input: the best GPU-decodable
// option's ratio over zstd-19's (auto: the per-patch smaller of HFPaC and HFAN; HFPaC alone when
// HFAN was not measured), and single-thread decode over LERC's. The smaller of the two orders
// the table: the worst case first.
struct TargetFigures {
  double autoVsZstd = 0, decodeVsLerc = 0, ansVsLerc = 0;
  double worst() const { return std::min(autoVsZstd, decodeVsLerc); }
};
TargetFigures targetFigures(const InputResult& r) {
  TargetFigures t;
  if (!r.ok) return t;
  const Figures f = figures(r);
  t.autoVsZstd = r.ans.ok ? divide(ratioOf(r.originalBytes(), r.autoBytes), f.zstdRatio) : divide(f.ratio, f.zstdRatio);
  t.decodeVsLerc = divide(f.decode, f.lercDecode);
  if (r.ans.ok && r.ans.decodeSeconds > 0) t.ansVsLerc = divide(double(r.points) / r.ans.decodeSeconds, f.lercDecode);
  return t;
}

// The inputs with the worst of each target figure (null when no input was measured; ans: only
// inputs whose HFAN decode was measured).
struct WorstCases {
  const InputResult* ratio = nullptr;
  const InputResult* decode = nullptr;
  const InputResult* ans = nullptr;
};
WorstCases worstCases(const std::vector<InputResult>& results) {
  WorstCases w;
  for (const InputResult& r : results) {
    if (!r.ok) continue;
    const TargetFigures t = targetFigures(r);
    if (!w.ratio || t.autoVsZstd < targetFigures(*w.ratio).autoVsZstd) w.ratio = &r;
    if (!w.decode || t.decodeVsLerc < targetFigures(*w.decode).decodeVsLerc) w.decode = &r;
    if (t.ansVsLerc > 0 && (!w.ans || t.ansVsLerc < targetFigures(*w.ans).ansVsLerc)) w.ans = &r;
  }
  return w;
}

void writeSummary(JsonWriter& j, const std::vector<InputResult>& results) {
  size_t measured = 0, failed = 0;
  bool all_lossless = true;
  uint64_t points = 0, original = 0, hfpac_bytes = 0, zstd_bytes = 0, lerc_bytes = 0;
  double dec = 0, dec_mt = 0, enc = 0, zstd_dec = 0, lerc_dec = 0;
  std::vector<double> vs_zstd, dec_vs_lerc, dec_vs_zstd;
  for (const InputResult& r : results) {
    if (!r.ok) {
      ++failed;
      continue;
    }
    ++measured;
    all_lossless = all_lossless && r.allLossless();
    if (!r.zstd.ok || !r.lerc.ok) continue;  // aggregates only over complete inputs
    points += r.points;
    original += r.originalBytes();
    hfpac_bytes += r.hfpac.compressedBytes;
    zstd_bytes += r.zstd.compressedBytes;
    lerc_bytes += r.lerc.compressedBytes;
    dec += r.hfpac.decodeSeconds;
    dec_mt += r.hfpac.decodeMtSeconds;
    enc += r.hfpac.encodeSeconds;
    zstd_dec += r.zstd.decodeSeconds;
    lerc_dec += r.lerc.decodeSeconds;
    const Figures f = figures(r);
    if (f.zstdRatio > 0 && f.ratio > 0) vs_zstd.push_back(f.ratio / f.zstdRatio);
    if (f.lercDecode > 0 && f.decode > 0) dec_vs_lerc.push_back(f.decode / f.lercDecode);
    if (f.zstdDecode > 0 && f.decode > 0) dec_vs_zstd.push_back(f.decode / f.zstdDecode);
  }
  const double p = static_cast<double>(points);
  j.beginObject();
  j.field("inputs", results.size()).field("measured", measured).field("failed", failed);
  j.field("all_lossless", measured > 0 && all_lossless);  // over the measured inputs
  j.field("points", points).field("original_bytes", original);
  j.field("ratio", ratioOf(original, hfpac_bytes));
  j.field("zstd_ratio", ratioOf(original, zstd_bytes));
  j.field("lerc_ratio", ratioOf(original, lerc_bytes));
  j.field("encode_pts_per_s", rate(p, enc));
  j.field("decode_pts_per_s", rate(p, dec));
  j.field("decode_mt_pts_per_s", rate(p, dec_mt));
  j.field("zstd_decode_pts_per_s", rate(p, zstd_dec));
  j.field("lerc_decode_pts_per_s", rate(p, lerc_dec));
  j.field("ratio_vs_zstd", divide(ratioOf(original, hfpac_bytes), ratioOf(original, zstd_bytes)));
  j.field("ratio_vs_zstd_geomean", geomean(vs_zstd));
  j.field("decode_vs_lerc_geomean", geomean(dec_vs_lerc));
  j.field("decode_vs_zstd_geomean", geomean(dec_vs_zstd));
  // The worst case of each target figure (targetFigures), with its input.
  const WorstCases w = worstCases(results);
  const InputResult* worstRatio = w.ratio;
  const InputResult* worstDecode = w.decode;
  const InputResult* worstAns = w.ans;
  if (worstRatio) {
    j.field("worst_auto_vs_zstd", targetFigures(*worstRatio).autoVsZstd).field("worst_auto_vs_zstd_input", worstRatio->input);
    j.field("worst_decode_vs_lerc", targetFigures(*worstDecode).decodeVsLerc)
        .field("worst_decode_vs_lerc_input", worstDecode->input);
  }
  if (worstAns)
    j.field("worst_ans_decode_vs_lerc", targetFigures(*worstAns).ansVsLerc).field("worst_ans_decode_vs_lerc_input", worstAns->input);
  j.field("note", "totals and aggregate rates over inputs where all three codecs ran; "
                  "geomeans over per-input ratios; worst_*: auto (per-patch HFPaC or HFAN) ratio over "
                  "zstd-19's, single-thread HFPaC and HFAN decode over LERC's");
  j.endObject();
}

// ---- console table ----

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string ratioCell(double v) { return v > 0 ? format("%.2f", v) : "-"; }
std::string mptsCell(double v) { return v > 0 ? format("%.1f", v / 1e6) : "-"; }

}  // namespace

std::string codecJson(const HostInfo& host, const CodecBenchOptions& options, int threads_used,
                      const std::vector<InputResult>& results) {
  std::string out;
  JsonWriter j(out);
  j.beginObject();
  j.field("tool", "hfbench codec");
  j.key("host").beginObject();
  j.field("cpu", host.cpu).field("threads", host.threads).field("os", host.os);
  j.field("compiler", host.compiler).field("optimized_build", host.optimized);
  j.field("gdal", host.gdal).field("zstd", host.zstd).field("lerc", host.lerc);
  j.endObject();
  j.key("options").beginObject();
  j.field("patch", options.patch).field("segment", options.segment);
  if (options.bits < 0) j.field("bits", "auto"); else j.field("bits", options.bits);
  j.field("threads", options.threads).field("threads_used", threads_used);
  j.field("repeat", options.repeat);
  j.field("zstd_level", options.zstdLevel).field("lerc_max_z_err", 0.5);
  if (options.read.quantStep > 0) j.field("quant_step", options.read.quantStep); else j.field("quant_step", "auto");
  j.field("band", options.read.band);
  j.field("nodata_to_encoder", options.passNodata).field("auto_mask", options.autoMask);
  j.field("timing", "steady_clock wall time over all patches of an input; encode: one run; "
                    "decode: single thread, the best of repeat rounds that run every codec's decode in turn (interleaved, so that a slow phase of the machine slows them alike); *_mt: encodeBatch/decodeBatch on threads_used threads");
  j.field("patching", "P x P patches stepping by P-1 (shared rows/columns counted in each patch), "
                      "smaller patches at the right/bottom edges; ratio = 2 bytes per point / "
                      "compressed bytes incl. headers");
  j.endObject();
  j.key("inputs").beginArray();
  for (const InputResult& r : results) writeInput(j, r);
  j.endArray();
  j.key("summary");
  writeSummary(j, results);
  j.endObject();
  return out;
}

void printCodecTable(std::FILE* out, const std::vector<InputResult>& results) {
  bool gpu = false;
  for (const InputResult& r : results) gpu = gpu || r.gpu.measured;
  std::vector<std::string> header = {"input",     "size",    "type",     "hfpac",    "+rbuc",    "+ans",
                                     "zstd",      "lerc",    "vs zstd",  "auto/zstd", "dec Mpt/s", "ans dec",
                                     "zstd dec",  "lerc dec", "dec/lerc", "ans/lerc"};
  if (gpu) {
    header.push_back("gpu Gpt/s");
    header.push_back("roofline");
  }
  header.push_back("lossless");
  // Worst case first (errors before everything): the smaller of auto/zstd and dec/lerc.
  std::vector<size_t> order(results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return targetFigures(results[a]).worst() < targetFigures(results[b]).worst();
  });
  std::vector<std::vector<std::string>> rows;
  for (size_t index : order) {
    const InputResult& r = results[index];
    std::vector<std::string> row;
    row.push_back(baseName(r.input));
    if (!r.ok) {
      row.push_back(r.dem.width > 0 ? format("%dx%d", r.dem.width, r.dem.height) : "-");
      row.push_back(r.dem.width > 0 ? r.dem.sourceType : "-");
      while (row.size() + 1 < header.size()) row.push_back("-");
      row.push_back("ERROR");
      rows.push_back(row);
      continue;
    }
    const Figures f = figures(r);
    const TargetFigures t = targetFigures(r);
    row.push_back(format("%dx%d", r.dem.width, r.dem.height));
    std::string type = r.dem.sourceType;
    if (r.dem.quant.applied) type += "->q16";
    else if (r.dem.widened) type += "->16";
    row.push_back(type);
    row.push_back(ratioCell(f.ratio));
    row.push_back(r.rbuc.ok ? ratioCell(ratioOf(r.originalBytes(), r.rbuc.compressedBytes)) : "-");
    row.push_back(r.ans.ok ? ratioCell(ratioOf(r.originalBytes(), r.ans.compressedBytes)) : "-");
    row.push_back(ratioCell(f.zstdRatio));
    row.push_back(ratioCell(f.lercRatio));
    row.push_back(ratioCell(divide(f.ratio, f.zstdRatio)));
    row.push_back(r.ans.ok ? ratioCell(t.autoVsZstd) : "-");
    row.push_back(mptsCell(f.decode));
    row.push_back(r.ans.ok && r.ans.decodeSeconds > 0 ? mptsCell(double(r.points) / r.ans.decodeSeconds) : "-");
    row.push_back(mptsCell(f.zstdDecode));
    row.push_back(mptsCell(f.lercDecode));
    row.push_back(ratioCell(t.decodeVsLerc));
    row.push_back(t.ansVsLerc > 0 ? ratioCell(t.ansVsLerc) : "-");
    if (gpu) {
      const GpuResult& g = r.gpu;
      const double pts = static_cast<double>(g.batchPoints);
      const double bytes = static_cast<double>(g.batchCompressedBytes) + 2.0 * pts;
      row.push_back(g.measured && g.decodeSeconds > 0 ? format("%.1f", pts / g.decodeSeconds / 1e9) : "-");
      row.push_back(g.measured && g.decodeSeconds > 0 && g.d2dBytesPerSecond > 0
                        ? format("%.3f", bytes / g.decodeSeconds / g.d2dBytesPerSecond)
                        : "-");
    }
    std::string lossless = r.hfpac.lossless && r.hfpac.losslessMt ? "yes" : "NO";
    if (!r.zstd.lossless || !r.lerc.lossless) lossless += " (anchor NO)";
    if (r.rbuc.ok && !r.rbuc.lossless) lossless += " (rbuc NO)";
    if (r.ans.ok && !r.ans.lossless) lossless += " (ans NO)";
    row.push_back(lossless);
    rows.push_back(row);
  }
  std::vector<size_t> widths(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    widths[c] = header[c].size();
    for (const auto& row : rows) widths[c] = std::max(widths[c], row[c].size());
  }
  auto printRow = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - row[c].size(), ' ');
      const bool left = c == 0 || c == 2 || c + 1 == row.size();
      if (c) line += "  ";
      line += left ? row[c] + pad : pad + row[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", line.c_str());
  };
  printRow(header);
  for (const auto& row : rows) printRow(row);

  // Geometric means and anything noteworthy.
  std::vector<double> vs_zstd, dec_vs_lerc;
  for (const InputResult& r : results) {
    if (!r.ok || !r.zstd.ok || !r.lerc.ok) continue;
    const Figures f = figures(r);
    if (f.zstdRatio > 0 && f.ratio > 0) vs_zstd.push_back(f.ratio / f.zstdRatio);
    if (f.lercDecode > 0 && f.decode > 0) dec_vs_lerc.push_back(f.decode / f.lercDecode);
  }
  if (!vs_zstd.empty())
    std::fprintf(out, "geomean over %zu inputs: ratio vs zstd %.3f, decode vs lerc %.2fx\n",
                 vs_zstd.size(), geomean(vs_zstd), geomean(dec_vs_lerc));
  // The worst case of each target figure, named.
  const WorstCases w = worstCases(results);
  const InputResult* worstRatio = w.ratio;
  const InputResult* worstDecode = w.decode;
  if (worstRatio && worstDecode)
    std::fprintf(out, "worst: auto/zstd %.3f (%s), decode/lerc %.2fx (%s)\n", targetFigures(*worstRatio).autoVsZstd,
                 baseName(worstRatio->input).c_str(), targetFigures(*worstDecode).decodeVsLerc,
                 baseName(worstDecode->input).c_str());
  for (const InputResult& r : results) {
    const std::string name = baseName(r.input);
    if (!r.error.empty()) std::fprintf(out, "%s: error: %s\n", name.c_str(), r.error.c_str());
    if (!r.ok) continue;
    const HfpacResult& h = r.hfpac;
    if (h.mismatch.any) {
      const Mismatch& m = h.mismatch;
      std::fprintf(out,
                   "%s: hfpac NOT lossless: %zu patches differ; first: patch %zu at (%d, %d) "
                   "%dx%d, point (%d, %d): %ld instead of %ld\n",
                   name.c_str(), m.patches, m.patch, m.patchX0, m.patchY0, m.patchWidth,
                   m.patchHeight, m.x, m.y, m.got, m.expected);
    }
    if (!h.decodeError.empty()) std::fprintf(out, "%s: hfpac %s\n", name.c_str(), h.decodeError.c_str());
    for (const std::string& n : h.notes) std::fprintf(out, "%s: %s\n", name.c_str(), n.c_str());
    if (!r.zstd.ok) std::fprintf(out, "%s: zstd: %s\n", name.c_str(), r.zstd.error.c_str());
    if (!r.lerc.ok) std::fprintf(out, "%s: lerc: %s\n", name.c_str(), r.lerc.error.c_str());
  }
}

}  // namespace hfbench
