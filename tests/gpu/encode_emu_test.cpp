// encode_emu_test.cpp - the GPU encoder's kernels (cuda/encode.cu, the very source nvcc builds)
// run on the CPU under a small SIMT emulator (encode_emu.h) and compared byte for byte with
// hfpac::encode. Needs no GPU: this is what keeps the GPU encoder's byte identity checked in CI;
// encode_test.cpp runs the same cases on the real device.
//
// The emulator uses ucontext fibers, which AddressSanitizer does not follow: under ASan the
// tests skip (the release build runs them).
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#define HFGPU_ENCODE_EMULATION 1
#include "encode_emu.h"

#include "../../cuda/encode.cu"

#include "encode_cases.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define HF_EMU_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HF_EMU_UNDER_ASAN 1
#endif
#endif

namespace {

using hftest::Patch;

#define HF_SKIP_UNDER_ASAN()                                                              \
  do {                                                                                    \
    if (kUnderAsan) GTEST_SKIP() << "ucontext fibers are not supported under ASan";       \
  } while (0)

#ifdef HF_EMU_UNDER_ASAN
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif

// The pipeline of launchEncode(), block by block, on host memory.
std::vector<std::vector<uint8_t>> emulateEncode(const std::vector<const Patch*>& patches,
                                                const hfpac::EncodeOptions& options) {
  using namespace hfgpu::enc;
  const size_t n = patches.size();
  std::vector<PatchDesc> descs(n);
  for (size_t i = 0; i < n; ++i) {
    const Patch& p = *patches[i];
    descs[i].samples = p.data();
    descs[i].stride = p.stride;
    descs[i].width = p.width;
    descs[i].height = p.height;
    descs[i].flip = p.type == hfpac::SampleType::Int16 ? 0x8000u : 0u;
  }
  const Plan plan = planEncode(options, descs.data(), n);
  const Params prm = plan.params;
  std::vector<PrepOut> prep(n);
  std::vector<ComboOut> combos(n * plan.combos);
  std::vector<PatchResult> results(n);
  std::vector<uint64_t> offsets(n + 1);
  std::vector<uint16_t> fill(plan.fillElems + 1, 0xDEAD);
  std::vector<int32_t> ctrl(plan.ctrlElems + 1, 0x5A5A5A5A);
  std::vector<AreaStat> areas(plan.areaElems + 1);
  std::vector<uint32_t> output(plan.capacity / 4 + 1, 0xA5A5A5A5u);  // junk: the writer must zero
  uint32_t error = 7;
  Workspace ws{};
  ws.patches = descs.data();
  ws.prep = prep.data();
  ws.combos = combos.data();
  ws.results = results.data();
  ws.offsets = offsets.data();
  ws.fill = fill.data();
  ws.ctrl = ctrl.data();
  ws.areas = areas.data();
  ws.output = output.data();
  ws.error = &error;

  for (unsigned b = 0; b < n; ++b) hfemu::runBlock(b, 0, [&] { prepareKernel(ws, prm); });
  for (unsigned b = 0; b < n; ++b)
    for (unsigned c = 1; c < unsigned(prm.candidates); ++c)
      hfemu::runBlock(b, c - 1, [&] { fillKernel(ws); });
  for (unsigned b = 0; b < n; ++b)
    for (unsigned c = 0; c < plan.combos; ++c) hfemu::runBlock(b, c, [&] { analyseKernel(ws, prm); });
  hfemu::runBlock(0, 0, [&] { selectKernel(ws, prm, uint64_t(n)); });
  EXPECT_EQ(error, 0u);
  for (unsigned b = 0; b < n; ++b) hfemu::runBlock(b, 0, [&] { writeKernel(ws, prm); });

  std::vector<std::vector<uint8_t>> out(n);
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(output.data());
  for (size_t i = 0; i < n; ++i) out[i].assign(bytes + offsets[i], bytes + offsets[i + 1]);
  return out;
}

// First differing byte, for the failure message.
std::string firstDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return "byte " + std::to_string(i) + ": cpu " + std::to_string(a[i]) + " gpu " + std::to_string(b[i]);
  return "sizes cpu " + std::to_string(a.size()) + " gpu " + std::to_string(b.size());
}

void expectParity(const std::vector<Patch>& patches, const hftest::OptionCase& oc) {
  std::vector<const Patch*> ptrs;
  for (const Patch& p : patches) ptrs.push_back(&p);
  const auto gpu = emulateEncode(ptrs, oc.options);
  ASSERT_EQ(gpu.size(), patches.size());
  for (size_t i = 0; i < patches.size(); ++i) {
    const Patch& p = patches[i];
    const std::vector<uint8_t> cpu = hftest::encodeOrDie(p, oc.options);
    EXPECT_TRUE(cpu == gpu[i]) << oc.name << " " << p.name << ": " << firstDifference(cpu, gpu[i]);
    std::vector<uint16_t> decoded;
    ASSERT_EQ(hftest::decodeTo(gpu[i], p.width, p.height, decoded), hfpac::Status::Ok) << oc.name << " " << p.name;
    bool lossless = true;
    for (int y = 0; y < p.height && lossless; ++y)
      for (int x = 0; x < p.width && lossless; ++x) lossless = decoded[size_t(y) * size_t(p.width) + size_t(x)] == p.at(x, y);
    EXPECT_TRUE(lossless) << oc.name << " " << p.name;
  }
}

TEST(GpuEncodeEmulated, SmallBatchDefaultOptions) {
  HF_SKIP_UNDER_ASAN();
  std::vector<Patch> patches;
  patches.push_back(hftest::smooth(33, 33, hfpac::SampleType::UInt16, 1));
  patches.push_back(hftest::constant(5, 5, 9));
  patches.push_back(hftest::withHoles(40, 30, hfpac::SampleType::Int16, 3));
  hfpac::EncodeOptions o;
  expectParity(patches, {"default", o});
}

// A representative subset of encode_test.cpp's matrix (the emulator runs ~1000x slower than a
// CPU encode): every segment size, auto and fixed b, every mask variant, all parity patches.
std::vector<hftest::OptionCase> emulatedOptions() {
  std::vector<hftest::OptionCase> v;
  auto add = [&](int segment, int bits, bool nodata, uint16_t nodataValue, bool autoMask) {
    hfpac::EncodeOptions o = hftest::opts(segment, bits);
    o.hasNodata = nodata;
    o.nodata = nodataValue;
    o.autoMask = autoMask;
    std::string name = hftest::optionsName(o);
    if (nodata) name += nodataValue == 0xFFFF ? "_nodataFFFF" : "_nodata8000";
    if (!autoMask) name += "_noAutoMask";
    v.push_back({name, o});
  };
  add(9, -1, false, 0, true);
  add(9, -1, true, 0xFFFF, true);
  add(9, -1, true, 0x8000, false);
  add(9, -1, false, 0, false);
  add(9, 0, false, 0, true);
  add(9, 16, true, 0xFFFF, true);
  add(5, -1, false, 0, true);
  add(5, 7, false, 0, true);
  add(17, 4, true, 0x8000, true);
  add(33, -1, false, 0, true);
  add(33, 2, false, 0, false);
  add(0, -1, true, 0xFFFF, true);
  return v;
}

class GpuEncodeEmulatedParity : public ::testing::TestWithParam<hftest::OptionCase> {};

TEST_P(GpuEncodeEmulatedParity, BytesEqualCpu) {
  HF_SKIP_UNDER_ASAN();
  static const std::vector<Patch> patches = hftest::encodeParityPatches(true);
  expectParity(patches, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Options, GpuEncodeEmulatedParity, ::testing::ValuesIn(emulatedOptions()),
                         [](const ::testing::TestParamInfo<hftest::OptionCase>& param_info) {
                           std::string name = param_info.param.name;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
