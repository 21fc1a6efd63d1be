// gl_leak_check.h - LeakSanitizer in the test binaries that drive Mesa's GL (include once per
// binary, in one .cpp; nothing under other builds).
//
// LeakSanitizer's tracer (the thread that stops the others to scan their stacks) crashes now
// and then in these binaries ("Tracer caught signal 11", after every test passed), with Mesa's
// llvmpipe threads alive: at exit (seen in hf_render_parity_tests, then
// hf_render_imagery_tests) and also when the check is made early, after the last test, while
// those threads are idle (session 16, once clang's ASan build had the early check compiled
// in). So these binaries turn the leak check off (__lsan_is_turned_off, which ASAN_OPTIONS does
// not override); AddressSanitizer's other checks stay on, and the GL-free code they use is
// leak-checked by the other test binaries.
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
extern "C" int __lsan_is_turned_off() { return 1; }
#endif
