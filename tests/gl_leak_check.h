// gl_leak_check.h - LeakSanitizer in the test binaries that drive Mesa's GL (include once per
// binary, in one .cpp; nothing under other builds).
//
// LeakSanitizer's check at exit runs while the GL driver's worker threads are being torn down;
// in CI its tracer sometimes crashed there ("Tracer caught signal 11") after every test had
// passed (seen in hf_render_parity_tests, then hf_render_imagery_tests). The same check, made
// once after the last test while those threads are idle, finds the same leaks, and turns the
// exit-time check off.
#pragma once

// GCC defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang (14, the CI's ASan build)
// does not, it answers __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define HF_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HF_TEST_ASAN 1
#endif
#endif

#if defined(HF_TEST_ASAN)
#include <gtest/gtest.h>
#include <sanitizer/lsan_interface.h>

namespace hf_test {
class EarlyLeakCheck : public ::testing::Environment {
 public:
  void TearDown() override { __lsan_do_leak_check(); }
};
inline const auto* const kEarlyLeakCheck = ::testing::AddGlobalTestEnvironment(new EarlyLeakCheck);
}  // namespace hf_test
#endif
