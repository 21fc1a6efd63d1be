// imagery_tiles.cpp - colour rasters warped onto the archive's imagery tiles (imagery_tiles.h).
#include "imagery_tiles.h"

#if HFPACK_GPU_JPEG
#include "gpu/cuda_util.h"
#include "gpu/imagery/jpeg_encoder.h"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "imagery/imagery.h"

#ifndef HFPACK_GDAL
#include <cerrno>
#include <cstdio>
#include <memory>
#include <mutex>
// stb_image's implementation, static to this file (hfbench's GDAL-free build has its own).
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNM
#include <stb/stb_image.h>
#endif

#ifdef HFPACK_GDAL
#include <cpl_conv.h>
#include <cpl_string.h>
#include <gdal.h>
#include <gdal_alg.h>
#include <gdal_utils.h>
#include <gdalwarper.h>
#include <sys/stat.h>

#include <cerrno>

#include "demio/gdal_util.h"
#endif

namespace hfpack {

bool checkImageryOptions(const ImageryOptions& o, std::string& error) {
  if (o.inputs.empty()) return true;
  if (o.quality < 1 || o.quality > 100) {
    error = "--imagery-quality " + std::to_string(o.quality) + ": must be 1..100";
    return false;
  }
  static const char* const kResampling[] = {"bilinear", "cubic", "lanczos", "average"};
  if (std::find_if(std::begin(kResampling), std::end(kResampling),
                   [&](const char* r) { return o.resampling == r; }) == std::end(kResampling)) {
    error = "--imagery-resampling " + o.resampling + ": must be bilinear, cubic, lanczos or average";
    return false;
  }
  if (!(o.maxTexelsPerSample >= 1) || !std::isfinite(o.maxTexelsPerSample)) {
    error = "--imagery-max-texels-per-sample must be a number >= 1";
    return false;
  }
  return true;
}

int chooseFinerLevels(double texelsPerSample, int content, int tileLog, double maxTexelsPerSample) {
  const double base = double(content) / double(1 << tileLog);  // texels per sample at level 0
  int e = 0;
  while (e < hfa::kMaxImageryFinerLevels && base * std::ldexp(1.0, e) < texelsPerSample / std::sqrt(2.0) &&
         base * std::ldexp(1.0, e + 1) <= maxTexelsPerSample)
    ++e;
  return e;
}

#ifndef HFPACK_GDAL

// Without GDAL (the GPU machine's build): one image file that stb_image reads (PNG, JPEG, PNM;
// 1..4 channels), not georeferenced, stretched over the DEM as the GDAL build stretches an
// unreferenced raster, sampled bilinearly at each texel's centre (averaged over the texel's
// footprint where a texel covers more than a pixel). Enough for the synthetic
// terrain's relief image (hfterrain --imagery) packed on the device; anything georeferenced
// needs the GDAL build.
namespace {

struct DecodedImage {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> rgba;
};

// Every warper of a pack (one per thread) shares the decoded image: a 16385^2 relief is 1 GiB.
std::shared_ptr<const DecodedImage> loadImageShared(const std::string& path, std::string& error) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const DecodedImage>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto hit = cache[path].lock()) return hit;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = "--imagery " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  auto image = std::make_shared<DecodedImage>();
  int w = 0, h = 0, n = 0;
  stbi_uc* px = stbi_load_from_file(f, &w, &h, &n, 4);
  std::fclose(f);
  if (!px) {
    const char* why = stbi_failure_reason();
    error = "--imagery " + path + ": cannot read (this hfpack has no GDAL: PNG, JPEG or PNM only" +
            (why ? std::string("; ") + why : std::string()) + ")";
    return nullptr;
  }
  image->width = w;
  image->height = h;
  image->channels = n;
  image->rgba.assign(px, px + size_t(w) * size_t(h) * 4);
  stbi_image_free(px);
  cache[path] = image;
  return image;
}

}  // namespace

struct ImageryWarper::Impl {
  std::shared_ptr<const DecodedImage> image;
  hfa::Header h;
  hfa::ImageryHeader geometry;
  double pixelsPerSampleX = 0, pixelsPerSampleY = 0;  // image pixels per level-0 sample step
};
ImageryWarper::ImageryWarper() = default;
ImageryWarper::~ImageryWarper() = default;

bool ImageryWarper::open(const ImageryOptions& o, const hfa::Header& h, const hfa::ImageryHeader& geometry,
                         int unreferenced, ImageryPlan& plan, std::string& error) {
  impl_.reset();
  plan = ImageryPlan();
  if (o.inputs.empty()) {
    error = "--imagery: no input";
    return false;
  }
  if (!checkImageryOptions(o, error)) return false;
  if (o.inputs.size() != 1) {
    error = "--imagery: this hfpack is built without GDAL (HF_WITH_GDAL=OFF): one image only, no mosaics";
    return false;
  }
  if (o.resampling != "bilinear") {
    error = "--imagery-resampling " + o.resampling + ": this hfpack is built without GDAL: bilinear only";
    return false;
  }
  if (unreferenced == 0) {
    error = "--imagery: the archive's imagery is georeferenced; this hfpack is built without GDAL and cannot warp it";
    return false;
  }
  if (h.width < 2 || h.height < 2) {
    error = "--imagery: the DEM is too small to stretch imagery over";
    return false;
  }
  auto m = std::make_unique<Impl>();
  m->image = loadImageShared(o.inputs[0], error);
  if (!m->image) return false;
  m->h = h;
  m->geometry = geometry;
  const DecodedImage& img = *m->image;
  plan.width = img.width;
  plan.height = img.height;
  plan.bands = img.channels;
  plan.unreferenced = true;
  // Pixel corner (0, 0) on sample (0, 0), corner (w, h) on sample (W - 1, H - 1).
  m->pixelsPerSampleX = double(img.width) / double(h.width - 1);
  m->pixelsPerSampleY = double(img.height) / double(h.height - 1);
  plan.texelsPerSample = m->pixelsPerSampleX;
  if (unreferenced < 0)
    plan.warnings.push_back("the imagery is not georeferenced: it is stretched over the DEM's extent (" +
                            std::to_string(plan.width) + " x " + std::to_string(plan.height) + " pixels over " +
                            std::to_string(h.width) + " x " + std::to_string(h.height) + " samples)");
  plan.finerLevels = geometry.finerLevels >= 0
                         ? geometry.finerLevels
                         : chooseFinerLevels(plan.texelsPerSample, geometry.content(), h.tileLog, o.maxTexelsPerSample);
  m->geometry.finerLevels = plan.finerLevels;
  impl_ = std::move(m);
  return true;
}

bool ImageryWarper::warpTile(int k, uint32_t x, uint32_t y, uint8_t* rgba, std::string& error) {
  if (!impl_) {
    error = "imagery warper not open";
    return false;
  }
  const Impl& m = *impl_;
  const DecodedImage& img = *m.image;
  const hfa::ImageryHeader& im = m.geometry;
  const int T = im.tileSize, B = im.border, C = im.content();
  // Texel i's centre at level-0 sample coordinate x span + (i + 0.5 - B) s (archive.h).
  const double span = double(1 << m.h.tileLog) * std::ldexp(1.0, k - im.finerLevels);
  const double s = span / C;
  const int W = img.width, H = img.height;
  // Pixels per texel: up to 1 a bilinear sample at the texel's centre; above (the coarse levels)
  // the mean of the pixels whose centres lie in the texel's footprint, as GDAL's warper widens
  // its kernel when it reduces, so coarse tiles do not alias.
  const double rx = s * m.pixelsPerSampleX, ry = s * m.pixelsPerSampleY;
  const auto span1 = [](double u, double r, int n, int& i0, int& i1) {  // centres in [u - r/2, u + r/2)
    i0 = std::clamp(int(std::ceil(u - r / 2 - 0.5)), 0, n - 1);
    i1 = std::clamp(int(std::ceil(u + r / 2 - 0.5)) - 1, i0, n - 1);
  };
  const auto bilinear = [](double u, int n, int& i0, int& i1, double& f) {
    const double c = u - 0.5;  // pixel centres at p + 0.5
    const double fl = std::floor(c);
    f = c - fl;
    i0 = std::clamp(int(fl), 0, n - 1);
    i1 = std::clamp(int(fl) + 1, 0, n - 1);
  };
  const auto px = [&](int px_, int py_) { return &img.rgba[(size_t(py_) * size_t(W) + size_t(px_)) * 4]; };
  for (int j = 0; j < T; ++j) {
    const double v = (double(y) * span + (j + 0.5 - B) * s) * m.pixelsPerSampleY;
    const bool rowIn = v >= 0 && v < H;
    for (int i = 0; i < T; ++i) {
      uint8_t* out = rgba + (size_t(j) * size_t(T) + size_t(i)) * 4;
      const double u = (double(x) * span + (i + 0.5 - B) * s) * m.pixelsPerSampleX;
      if (!rowIn || !(u >= 0 && u < W)) {
        out[0] = out[1] = out[2] = out[3] = 0;
        continue;
      }
      double c[4] = {0, 0, 0, 0};
      if (rx <= 1 && ry <= 1) {
        int x0, x1, y0, y1;
        double fx, fy;
        bilinear(u, W, x0, x1, fx);
        bilinear(v, H, y0, y1, fy);
        const uint8_t *p00 = px(x0, y0), *p01 = px(x1, y0), *p10 = px(x0, y1), *p11 = px(x1, y1);
        for (int b = 0; b < 4; ++b)
          c[b] = (1 - fy) * ((1 - fx) * p00[b] + fx * p01[b]) + fy * ((1 - fx) * p10[b] + fx * p11[b]);
      } else {
        int x0, x1, y0, y1;
        span1(u, std::max(rx, 1.0), W, x0, x1);
        span1(v, std::max(ry, 1.0), H, y0, y1);
        uint64_t sum[4] = {0, 0, 0, 0};
        for (int yy = y0; yy <= y1; ++yy)
          for (int xx = x0; xx <= x1; ++xx) {
            const uint8_t* p = px(xx, yy);
            for (int b = 0; b < 4; ++b) sum[b] += p[b];
          }
        const double count = double(x1 - x0 + 1) * double(y1 - y0 + 1);
        for (int b = 0; b < 4; ++b) c[b] = double(sum[b]) / count;
      }
      const bool covered = c[3] >= 127.5;
      for (int b = 0; b < 3; ++b) out[b] = covered ? uint8_t(std::clamp(std::lround(c[b]), 0L, 255L)) : 0;
      out[3] = covered ? 255 : 0;
    }
  }
  return true;
}

#else

using demio::detail::gdalError;
using demio::detail::oneLine;

namespace {

GDALResampleAlg resamplingAlg(const std::string& r) {
  if (r == "cubic") return GRA_Cubic;
  if (r == "lanczos") return GRA_Lanczos;
  if (r == "average") return GRA_Average;
  return GRA_Bilinear;
}

bool isReferenced(GDALDatasetH ds) {
  double gt[6];
  return GDALGetGeoTransform(ds, gt) == CE_None || GDALGetGCPCount(ds) > 0;
}

// gdal_translate -of VRT with `args`, in memory.
GDALDatasetH translateVrt(GDALDatasetH ds, std::vector<std::string> args, const std::string& what,
                          std::string& error) {
  args.insert(args.begin(), {"-of", "VRT"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  GDALTranslateOptions* to = GDALTranslateOptionsNew(argv.data(), nullptr);
  GDALDatasetH out = to ? GDALTranslate("", ds, to, nullptr) : nullptr;
  if (to) GDALTranslateOptionsFree(to);
  if (!out) error = gdalError(what);
  return out;
}

}  // namespace

struct ImageryWarper::Impl {
  std::vector<GDALDatasetH> owned;  // closed in reverse order (VRTs before their sources)
  GDALDatasetH src = nullptr;       // what is warped (mosaic / expanded / placed)
  GDALDatasetH mem = nullptr;       // one tile, colour bands + alpha
  void* transformer = nullptr;      // src -> mem pixels (the mem geotransform changes per tile)
  int colourBands = 3;              // 1 (grey) or 3
  int srcAlpha = 0;                 // the source's alpha band (0: none)
  bool haveNodata = false;
  double nodata = 0;
  GDALResampleAlg alg = GRA_Bilinear;
  hfa::Header h;
  hfa::ImageryHeader geometry;
  std::vector<uint8_t> buffer;

  ~Impl() {
    if (transformer) GDALDestroyGenImgProjTransformer(transformer);
    if (mem) GDALClose(mem);
    for (auto it = owned.rbegin(); it != owned.rend(); ++it) GDALClose(*it);
  }
  GDALDatasetH own(GDALDatasetH ds) {
    owned.push_back(ds);
    return ds;
  }
  bool openSource(const ImageryOptions& o, int unreferenced, ImageryPlan& plan, std::string& error);
  bool measure(ImageryPlan& plan, std::string& error);
};

bool ImageryWarper::Impl::openSource(const ImageryOptions& o, int unreferenced, ImageryPlan& plan,
                                     std::string& error) {
  std::vector<GDALDatasetH> inputs;
  int bands = 0;
  for (const std::string& path : o.inputs) {
    if (path.compare(0, 4, "/vsi") != 0) {
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) {
        error = "--imagery " + path + ": " + std::strerror(errno);
        return false;
      }
    }
    GDALDatasetH ds = GDALOpenEx(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY, nullptr, nullptr, nullptr);
    if (!ds) {
      const std::string msg = oneLine(CPLGetLastErrorMsg());
      error = "--imagery " + path + ": " +
              (msg.empty() || msg.find("not recognized") != std::string::npos ? "not a raster format GDAL recognises"
                                                                               : "cannot open: " + msg);
      return false;
    }
    own(ds);
    const int n = GDALGetRasterCount(ds);
    if (n < 1 || n > 4) {
      error = "--imagery " + path + ": " + std::to_string(n) +
              " bands; imagery needs 1 (grey or palette), 2 (grey + alpha), 3 (RGB) or 4 (RGBA) Byte bands";
      return false;
    }
    for (int b = 1; b <= n; ++b) {
      const GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(ds, b));
      if (t != GDT_Byte) {
        error = "--imagery " + path + ": band " + std::to_string(b) + " is " + GDALGetDataTypeName(t) +
                "; imagery needs Byte bands (8-bit colour)";
        return false;
      }
    }
    GDALRasterBandH b1 = GDALGetRasterBand(ds, 1);
    if (n == 1 && GDALGetRasterColorInterpretation(b1) == GCI_PaletteIndex) {
      GDALColorTableH ct = GDALGetRasterColorTable(b1);
      if (!ct || GDALGetColorEntryCount(ct) == 0) {
        error = "--imagery " + path + ": a palette band without colours (no colour table)";
        return false;
      }
    }
    if (bands && n != bands) {
      error = "--imagery " + path + ": " + std::to_string(n) + " bands, the other inputs have " + std::to_string(bands) +
              " (a mosaic needs the same bands)";
      return false;
    }
    bands = n;
    inputs.push_back(ds);
  }
  GDALDatasetH ds = inputs[0];
  if (inputs.size() > 1) {
    int usage = 0;
    ds = GDALBuildVRT("", int(inputs.size()), inputs.data(), nullptr, nullptr, &usage);
    if (!ds) {
      error = gdalError("--imagery: cannot mosaic the inputs");
      return false;
    }
    own(ds);
  }
  // A palette becomes RGB(A) (alpha when some entry is not opaque).
  GDALRasterBandH b1 = GDALGetRasterBand(ds, 1);
  if (bands == 1 && GDALGetRasterColorInterpretation(b1) == GCI_PaletteIndex) {
    GDALColorTableH ct = GDALGetRasterColorTable(b1);
    bool alpha = false;
    for (int i = 0; ct && i < GDALGetColorEntryCount(ct); ++i) alpha |= GDALGetColorEntry(ct, i)->c4 != 255;
    ds = translateVrt(ds, {"-expand", alpha ? "rgba" : "rgb"}, "--imagery: cannot expand the palette", error);
    if (!ds) return false;
    own(ds);
    bands = alpha ? 4 : 3;
  }
  colourBands = bands >= 3 ? 3 : 1;
  srcAlpha = bands == 2 || bands == 4 ? bands : 0;
  // Nodata shared by the colour bands: uncovered.
  int has = 0;
  nodata = GDALGetRasterNoDataValue(GDALGetRasterBand(ds, 1), &has);
  haveNodata = has != 0 && srcAlpha == 0;
  for (int b = 2; haveNodata && b <= colourBands; ++b) {
    const double v = GDALGetRasterNoDataValue(GDALGetRasterBand(ds, b), &has);
    haveNodata = has && v == nodata;
  }
  plan.width = GDALGetRasterXSize(ds);
  plan.height = GDALGetRasterYSize(ds);
  plan.bands = bands;

  // Placement.
  const bool demReferenced = (h.flags & hfa::kFlagGeoTransform) != 0;
  const bool imgReferenced = isReferenced(ds);
  plan.unreferenced = unreferenced >= 0 ? unreferenced != 0 : !imgReferenced;
  if (!plan.unreferenced && !demReferenced) {
    error = "--imagery " + o.inputs[0] +
            ": the imagery is georeferenced but the DEM is not (give the DEM its place with -a_srs / -a_ullr)";
    return false;
  }
  if (plan.unreferenced) {
    // Stretched over the DEM's sample-centre extent: pixel corner (0, 0) on sample (0, 0),
    // corner (w, h) on sample (W - 1, H - 1); sample (X, Y) lies at DEM pixel (X + 0.5, Y + 0.5).
    ds = translateVrt(ds, {}, "--imagery: cannot place the imagery", error);
    if (!ds) return false;
    own(ds);
    const double* g = h.geoTransform;
    const double sx = double(h.width - 1) / plan.width, sy = double(h.height - 1) / plan.height;
    const double gt[6] = {g[0] + 0.5 * g[1] + 0.5 * g[2], g[1] * sx, g[2] * sy,
                          g[3] + 0.5 * g[4] + 0.5 * g[5], g[4] * sx, g[5] * sy};
    if (GDALSetGeoTransform(ds, const_cast<double*>(gt)) != CE_None ||
        GDALSetProjection(ds, h.crsWkt.c_str()) != CE_None) {
      error = gdalError("--imagery: cannot place the imagery");
      return false;
    }
    if (unreferenced < 0)
      plan.warnings.push_back("the imagery is not georeferenced: it is stretched over the DEM's extent (" +
                              std::to_string(plan.width) + " x " + std::to_string(plan.height) + " pixels over " +
                              std::to_string(h.width) + " x " + std::to_string(h.height) + " samples)");
  } else if (h.crsWkt.empty() != (GDALGetProjectionRef(ds) == nullptr || !*GDALGetProjectionRef(ds))) {
    if (unreferenced < 0)
      plan.warnings.push_back(std::string("only ") + (h.crsWkt.empty() ? "the imagery" : "the DEM") +
                              " has a CRS: the imagery's coordinates are taken as the DEM's");
  }
  src = ds;
  return true;
}

// The imagery's footprint on the DEM's grid: overlap and texels per sample.
bool ImageryWarper::Impl::measure(ImageryPlan& plan, std::string& error) {
  char** opts = nullptr;
  if (!h.crsWkt.empty()) opts = CSLSetNameValue(opts, "DST_SRS", h.crsWkt.c_str());
  void* t = GDALCreateGenImgProjTransformer2(src, nullptr, opts);
  CSLDestroy(opts);
  if (!t) {
    error = gdalError("--imagery: cannot transform the imagery to the DEM's CRS");
    return false;
  }
  double gt[6], extent[4];
  int px = 0, ln = 0;
  const CPLErr e = GDALSuggestedWarpOutput2(src, GDALGenImgProjTransform, t, gt, &px, &ln, extent, 0);
  GDALDestroyGenImgProjTransformer(t);
  if (e != CE_None) {
    error = gdalError("--imagery: the imagery cannot be placed in the DEM's CRS");
    return false;
  }
  // The DEM's pixel-area extent in its CRS (the bounding box of its corners).
  const double* g = h.geoTransform;
  double lo[2] = {double(INFINITY), double(INFINITY)}, hi[2] = {-double(INFINITY), -double(INFINITY)};
  for (int c = 0; c < 4; ++c) {
    const double P = (c & 1) ? h.width : 0, Q = (c & 2) ? h.height : 0;
    const double X = g[0] + P * g[1] + Q * g[2], Y = g[3] + P * g[4] + Q * g[5];
    lo[0] = std::min(lo[0], X), hi[0] = std::max(hi[0], X);
    lo[1] = std::min(lo[1], Y), hi[1] = std::max(hi[1], Y);
  }
  const double ox = std::min(hi[0], extent[2]) - std::max(lo[0], extent[0]);
  const double oy = std::min(hi[1], extent[3]) - std::max(lo[1], extent[1]);
  if (!(ox > 0) || !(oy > 0)) {
    char buf[256];
    snprintf(buf, sizeof buf, "the imagery (%.6g, %.6g .. %.6g, %.6g) does not overlap the DEM (%.6g, %.6g .. %.6g, %.6g)",
             extent[0], extent[1], extent[2], extent[3], lo[0], lo[1], hi[0], hi[1]);
    error = "--imagery " + std::string(buf);
    return false;
  }
  const double demStep = std::hypot(g[1], g[4]);
  plan.texelsPerSample = std::fabs(gt[1]) > 0 ? demStep / std::fabs(gt[1]) : 0;
  return true;
}

ImageryWarper::ImageryWarper() = default;
ImageryWarper::~ImageryWarper() = default;

bool ImageryWarper::open(const ImageryOptions& o, const hfa::Header& h, const hfa::ImageryHeader& geometry,
                         int unreferenced, ImageryPlan& plan, std::string& error) {
  demio::detail::registerDriversOnce();
  std::vector<std::string> quietWarnings;
  demio::detail::ErrorCollector collector;
  collector.warnings = &quietWarnings;
  demio::detail::ScopedErrorHandler quiet(&collector);
  impl_ = std::make_unique<Impl>();
  Impl& m = *impl_;
  plan = ImageryPlan();
  if (o.inputs.empty()) {
    error = "--imagery: no input";
    return false;
  }
  if (!checkImageryOptions(o, error)) return false;
  m.h = h;
  m.geometry = geometry;
  m.alg = resamplingAlg(o.resampling);
  if (!m.openSource(o, unreferenced, plan, error) || !m.measure(plan, error)) {
    impl_.reset();
    return false;
  }
  plan.finerLevels = geometry.finerLevels >= 0
                         ? geometry.finerLevels
                         : chooseFinerLevels(plan.texelsPerSample, geometry.content(), h.tileLog, o.maxTexelsPerSample);
  m.geometry.finerLevels = plan.finerLevels;
  const int T = geometry.tileSize;
  GDALDriverH memDriver = GDALGetDriverByName("MEM");
  m.mem = memDriver ? GDALCreate(memDriver, "", T, T, m.colourBands + 1, GDT_Byte, nullptr) : nullptr;
  if (!m.mem) {
    error = gdalError("--imagery: cannot create a tile in memory");
    impl_.reset();
    return false;
  }
  const double unit[6] = {0, 1, 0, 0, 0, 1};
  GDALSetGeoTransform(m.mem, const_cast<double*>(unit));
  if (!h.crsWkt.empty()) GDALSetProjection(m.mem, h.crsWkt.c_str());
  GDALSetRasterColorInterpretation(GDALGetRasterBand(m.mem, m.colourBands + 1), GCI_AlphaBand);
  m.transformer = GDALCreateGenImgProjTransformer2(m.src, m.mem, nullptr);
  if (!m.transformer) {
    error = gdalError("--imagery: cannot transform the imagery to the DEM's CRS");
    impl_.reset();
    return false;
  }
  m.buffer.resize(size_t(T) * size_t(T) * size_t(m.colourBands + 1));
  return true;
}

bool ImageryWarper::warpTile(int k, uint32_t x, uint32_t y, uint8_t* rgba, std::string& error) {
  if (!impl_) {
    error = "imagery warper not open";
    return false;
  }
  Impl& m = *impl_;
  std::vector<std::string> quietWarnings;
  demio::detail::ErrorCollector collector;
  collector.warnings = &quietWarnings;
  demio::detail::ScopedErrorHandler quiet(&collector);
  const hfa::ImageryHeader& im = m.geometry;
  const int T = im.tileSize, B = im.border, C = im.content();
  // Texel i's corner at sample coordinate x span + (i - B) s (s = span / C); sample X lies at
  // DEM pixel X + 0.5; the DEM's geotransform takes pixels to its CRS.
  const double span = double(1 << m.h.tileLog) * std::ldexp(1.0, k - im.finerLevels);
  const double s = span / C;
  const double P0 = double(x) * span - B * s + 0.5, Q0 = double(y) * span - B * s + 0.5;
  const double* g = m.h.geoTransform;
  double gt[6] = {g[0] + P0 * g[1] + Q0 * g[2], s * g[1], s * g[2], g[3] + P0 * g[4] + Q0 * g[5], s * g[4], s * g[5]};
  GDALSetGeoTransform(m.mem, gt);
  GDALSetGenImgProjTransformerDstGeoTransform(m.transformer, gt);

  GDALWarpOptions* wo = GDALCreateWarpOptions();
  wo->hSrcDS = m.src;
  wo->hDstDS = m.mem;
  wo->nBandCount = m.colourBands;
  wo->panSrcBands = static_cast<int*>(CPLMalloc(sizeof(int) * size_t(m.colourBands)));
  wo->panDstBands = static_cast<int*>(CPLMalloc(sizeof(int) * size_t(m.colourBands)));
  for (int b = 0; b < m.colourBands; ++b) wo->panSrcBands[b] = wo->panDstBands[b] = b + 1;
  wo->nSrcAlphaBand = m.srcAlpha;
  wo->nDstAlphaBand = m.colourBands + 1;
  wo->eResampleAlg = m.alg;
  wo->pfnTransformer = GDALGenImgProjTransform;
  wo->pTransformerArg = m.transformer;
  wo->papszWarpOptions = CSLSetNameValue(wo->papszWarpOptions, "INIT_DEST", "0");
  if (m.haveNodata) {
    wo->padfSrcNoDataReal = static_cast<double*>(CPLMalloc(sizeof(double) * size_t(m.colourBands)));
    for (int b = 0; b < m.colourBands; ++b) wo->padfSrcNoDataReal[b] = m.nodata;
  }
  GDALWarpOperationH op = GDALCreateWarpOperation(wo);
  CPLErr e = op ? GDALChunkAndWarpImage(op, 0, 0, T, T) : CE_Failure;
  if (op) GDALDestroyWarpOperation(op);
  wo->pTransformerArg = nullptr;  // ours, kept for the next tile
  GDALDestroyWarpOptions(wo);
  const int nb = m.colourBands + 1;
  if (e == CE_None)
    e = GDALDatasetRasterIO(m.mem, GF_Read, 0, 0, T, T, m.buffer.data(), T, T, GDT_Byte, nb, nullptr, nb,
                            GSpacing(T) * nb, 1);
  if (e != CE_None) {
    error = gdalError("warping imagery tile (k" + std::to_string(k) + ", x" + std::to_string(x) + ", y" +
                      std::to_string(y) + ")");
    return false;
  }
  const size_t texels = size_t(T) * size_t(T);
  for (size_t i = 0; i < texels; ++i) {
    const uint8_t* in = &m.buffer[i * size_t(nb)];
    uint8_t* out = rgba + i * 4;
    const bool covered = in[nb - 1] >= 128;
    out[0] = covered ? in[0] : 0;
    out[1] = covered ? in[m.colourBands == 3 ? 1 : 0] : 0;
    out[2] = covered ? in[m.colourBands == 3 ? 2 : 0] : 0;
    out[3] = covered ? 255 : 0;
  }
  return true;
}

#endif  // HFPACK_GDAL

}  // namespace hfpack

// ---- the imagery pyramid (both builds: without GDAL the warpers refuse to open) ----

namespace hfpack {

bool encodeImageryTile(const uint8_t* rgba, int T, hfa::ImageryCodec codec, int quality, himg::Bc1Mode bc1Mode,
                       std::vector<uint8_t>& out, std::string& error) {
  out.clear();
  if (T < 16 || T > 4096 || T % 16) {
    error = "imagery tile size " + std::to_string(T) + ": must be a multiple of 16 in 16..4096";
    return false;
  }
  switch (codec) {
    case hfa::ImageryCodec::Raw:
      out.assign(rgba, rgba + size_t(T) * size_t(T) * 4);
      return true;
    case hfa::ImageryCodec::Jpeg:
      return himg::encodeJpegTile(rgba, T, quality, out, error);
    case hfa::ImageryCodec::Bc1: {
      // The renderer's own chain (ColourStrategy::makeTile for a BC1 atlas), made once, offline.
      const int levels = hfa::imageryBc1Levels(T);
      std::vector<std::vector<uint8_t>> mips;
      himg::buildMipChain(rgba, T, levels, mips);
      out.resize(size_t(hfa::imageryBc1ChainBytes(T)));
      for (int m = 0; m < levels; ++m)
        himg::encodeBc1(mips[size_t(m)].data(), T >> m, T >> m, bc1Mode,
                        out.data() + hfa::imageryBc1LevelOffset(T, m));
      return true;
    }
  }
  error = "unknown imagery codec " + std::to_string(int(codec));
  return false;
}

bool decodeImageryTile(const uint8_t* data, size_t size, hfa::ImageryCodec codec, int T,
                       himg::JpegTileDecoder* jpeg, uint8_t* rgba, std::string& error) {
  const size_t texels = size_t(T) * size_t(T);
  switch (codec) {
    case hfa::ImageryCodec::Raw:
      if (size != texels * 4) {
        error = "raw payload of " + std::to_string(size) + " bytes, not " + std::to_string(texels * 4);
        return false;
      }
      std::copy(data, data + size, rgba);
      return true;
    case hfa::ImageryCodec::Jpeg:
      if (!jpeg) {
        error = "jpeg tile without JPEG tables";
        return false;
      }
      return jpeg->decode(data, size, T, rgba, error);
    case hfa::ImageryCodec::Bc1:
      if (uint64_t(size) != hfa::imageryBc1ChainBytes(T)) {
        error = "bc1 payload of " + std::to_string(size) + " bytes, not the " +
                std::to_string(hfa::imageryBc1ChainBytes(T)) + " of a BC1 mip chain";
        return false;
      }
      himg::decodeBc1(data, T, T, rgba);  // level 0 comes first
      return true;
  }
  error = "unknown imagery codec " + std::to_string(int(codec));
  return false;
}

size_t imageryTilesFor(const std::vector<TileKey>& heightTiles, int finerLevels) {
  size_t perLevel0 = 1;
  for (int d = 1; d <= finerLevels; ++d) perLevel0 += size_t(1) << (2 * d);
  size_t n = 0;
  for (const TileKey& t : heightTiles) n += t.level == 0 ? perLevel0 : 1;
  return n;
}

namespace {

// hfpack --device cuda's JPEG coder: hfgpu::GpuJpegEncoder on its own stream, or nothing (the
// CPU codes) with the reason in `note`.
class GpuJpegBatch {
 public:
  static std::unique_ptr<GpuJpegBatch> make(int quality, std::string& note) {
#if HFPACK_GPU_JPEG
    if (hfgpu::cudaDeviceCountOrZero() == 0) {
      note = "no CUDA device: JPEG tiles coded on the CPU";
      return nullptr;
    }
    try {
      return std::unique_ptr<GpuJpegBatch>(new GpuJpegBatch(quality));
    } catch (const std::exception& e) {
      note = std::string("the GPU JPEG encoder cannot run here (") + e.what() + "): JPEG tiles coded on the CPU";
      return nullptr;
    }
#else
    (void)quality;
    note = "this hfpack has no GPU imagery codec: JPEG tiles coded on the CPU";
    return nullptr;
#endif
  }
  // `count` tiles of size^2 RGBA8 one after another -> their abbreviated streams.
  bool encode(const uint8_t* rgba, size_t count, int size, std::vector<std::vector<uint8_t>>& streams,
              std::string& error) {
#if HFPACK_GPU_JPEG
    try {
      encoder_.encode(rgba, count, size, streams, stream_);
      return streams.size() == count || fail(error, "the GPU JPEG encoder returned too few tiles");
    } catch (const std::exception& e) {
      return fail(error, std::string("GPU JPEG encoding: ") + e.what());
    }
#else
    (void)rgba, (void)count, (void)size, (void)streams;
    return fail(error, "no GPU JPEG encoder");
#endif
  }

 private:
  static bool fail(std::string& error, const std::string& message) {
    error = message;
    return false;
  }
#if HFPACK_GPU_JPEG
  explicit GpuJpegBatch(int quality) : encoder_(quality) {}
  hfgpu::Stream stream_;
  hfgpu::GpuJpegEncoder encoder_;
#endif
};

}  // namespace

bool writeImagery(const ImageryOptions& o, const hfa::Header& h, const hfa::ImageryHeader& im, const ImageryPlan& plan,
                  const std::vector<TileKey>& heightTiles, int threads, hfa::ArchiveWriter& writer,
                  const std::function<bool(double)>& progress, ImageryResult& result, std::string& error) {
  const auto t0 = std::chrono::steady_clock::now();
  const int E = im.finerLevels, levels = h.levels + E;
  result = ImageryResult();
  result.levels = levels;
  result.finerLevels = E;
  result.tileSize = im.tileSize;
  result.perLevel.assign(size_t(levels), ImageryLevelSummary());
  // Imagery tiles by level (coarsest first), row by row: neighbours warp from the same rows.
  std::map<int, std::vector<TileKey>, std::greater<int>> byLevel;
  for (const TileKey& t : heightTiles) {
    byLevel[t.level + E].push_back({t.level + E, t.x, t.y});
    if (t.level != 0) continue;
    for (int k = E - 1; k >= 0; --k) {
      const uint32_t n = 1u << (E - k);
      for (uint32_t y = 0; y < n; ++y)
        for (uint32_t x = 0; x < n; ++x) byLevel[k].push_back({k, t.x * n + x, t.y * n + y});
    }
  }
  std::vector<TileKey> order;
  for (auto& [k, tiles] : byLevel) {
    std::sort(tiles.begin(), tiles.end(), [](const TileKey& a, const TileKey& b) {
      return a.y != b.y ? a.y < b.y : a.x < b.x;
    });
    order.insert(order.end(), tiles.begin(), tiles.end());
  }
  const int workers = std::max(1, threads);
  std::atomic<uint64_t> encodeNs{0};  // CPU coding time summed over the workers
  std::vector<std::unique_ptr<ImageryWarper>> warpers(static_cast<size_t>(workers));
  hfa::ImageryHeader geometry = im;
  const int T = im.tileSize;
  const size_t batch = size_t(workers) * 4;
  struct Coded {
    std::vector<uint8_t> payload;
    bool partial = false;
    std::string error;
  };
  std::vector<Coded> coded(batch);
  // --device cuda: JPEG tiles of a batch coded in one GPU call from the warped RGBA8.
  std::unique_ptr<GpuJpegBatch> gpu;
  if (o.gpuJpeg && im.codec == hfa::ImageryCodec::Jpeg) {
    gpu = GpuJpegBatch::make(im.quality, result.deviceNote);
    if (gpu) result.device = "cuda";
  }
  std::vector<uint8_t> batchRgba(gpu ? batch * size_t(T) * size_t(T) * 4 : 0);
  for (size_t first = 0; first < order.size(); first += batch) {
    const size_t n = std::min(batch, order.size() - first);
    std::atomic<size_t> next{0};
    auto work = [&](int w) {
      std::vector<uint8_t> rgba(size_t(T) * size_t(T) * 4);
      for (size_t i; (i = next.fetch_add(1)) < n;) {
        Coded& c = coded[i];
        c = Coded();
        const TileKey& key = order[first + i];
        if (!warpers[size_t(w)]) {
          auto wp = std::make_unique<ImageryWarper>();
          ImageryPlan p2;
          if (!wp->open(o, h, geometry, plan.unreferenced ? 1 : 0, p2, c.error)) continue;
          warpers[size_t(w)] = std::move(wp);
        }
        if (!warpers[size_t(w)]->warpTile(key.level, key.x, key.y, rgba.data(), c.error)) continue;
        for (size_t t = 3; t < rgba.size() && !c.partial; t += 4) c.partial = rgba[t] == 0;
        if (gpu) {
          std::memcpy(batchRgba.data() + i * rgba.size(), rgba.data(), rgba.size());
          continue;
        }
        const auto e0 = std::chrono::steady_clock::now();
        encodeImageryTile(rgba.data(), T, im.codec, im.quality, o.bc1, c.payload, c.error);
        encodeNs += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - e0).count());
      }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < std::min<int>(workers, int(n)); ++w) pool.emplace_back(work, w);
    work(0);
    for (std::thread& t : pool) t.join();
    if (gpu) {
      for (size_t i = 0; i < n; ++i)
        if (!coded[i].error.empty()) {
          error = coded[i].error;
          return false;
        }
      const auto e0 = std::chrono::steady_clock::now();
      std::vector<std::vector<uint8_t>> streams;
      if (!gpu->encode(batchRgba.data(), n, T, streams, error)) return false;
      for (size_t i = 0; i < n; ++i) coded[i].payload.swap(streams[i]);
      result.encodeSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
    }
    for (size_t i = 0; i < n; ++i) {
      const TileKey& key = order[first + i];
      Coded& c = coded[i];
      if (!c.error.empty()) {
        error = c.error;
        return false;
      }
      hfa::ImageryEntry e;
      e.level = uint8_t(key.level);
      e.codec = im.codec;
      e.x = key.x;
      e.y = key.y;
      e.flags = c.partial ? hfa::kImageryPartial : 0;
      if (!writer.addImageryTile(e, c.payload.data(), c.payload.size(), error)) return false;
      ImageryLevelSummary& ls = result.perLevel[size_t(key.level)];
      ++ls.tiles;
      ls.bytes += c.payload.size();
      ls.partialTiles += c.partial;
      ++result.tiles;
      result.bytes += c.payload.size();
      std::vector<uint8_t>().swap(c.payload);
    }
    if (progress && !progress(double(first + n) / double(order.size()))) {
      error = "interrupted";
      return false;
    }
  }
  result.texels = result.tiles * uint64_t(T) * uint64_t(T);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!gpu) result.encodeSeconds = double(encodeNs.load()) / 1e9 / double(workers);  // per thread, as wall time
  return true;
}

}  // namespace hfpack
