// encode_emu.h - a tiny single-threaded SIMT emulator, just enough to run cuda/encode.cu's
// kernels on the CPU (tests/gpu/encode_emu_test.cpp): CI and developer machines have nvcc but no
// GPU, and byte identity of the GPU encoder must not wait for the device machine.
//
// Every CUDA thread of a block is a ucontext fiber (one OS thread in all); __syncthreads and the
// warp intrinsics are barriers that yield to a round-robin scheduler until every thread of the
// block (or warp) has arrived. Blocks run one after another, so `__shared__` = function-local
// `static`, and atomics are plain read-modify-writes. Limits (all fine for encode.cu): blocks of
// exactly kEmuThreads threads, warp intrinsics called convergently by all 32 lanes with a full
// mask, values of at most 8 bytes shuffled, no dynamic shared memory.
//
// Include it before cuda/encode.cu, with HFGPU_ENCODE_EMULATION defined, in one test file only.
#pragma once

#include <ucontext.h>
#include <vector_types.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

namespace hfemu {

constexpr int kEmuThreads = 256;
constexpr size_t kStackBytes = 256 * 1024;

struct State {
  ucontext_t scheduler;
  ucontext_t fibers[kEmuThreads];
  std::unique_ptr<char[]> stacks;
  bool done[kEmuThreads];
  int current = 0;
  unsigned blockArrived = 0, blockGeneration = 0;
  unsigned warpArrived[kEmuThreads / 32] = {}, warpGeneration[kEmuThreads / 32] = {};
  uint64_t slots[kEmuThreads] = {};
  const std::function<void()>* body = nullptr;
};

inline State& state() {
  static State s;
  return s;
}

}  // namespace hfemu

// CUDA's built-in index variables (the scheduler sets threadIdx before resuming a fiber).
inline uint3 threadIdx;
inline uint3 blockIdx;

namespace hfemu {

inline void yield() {
  State& s = state();
  swapcontext(&s.fibers[s.current], &s.scheduler);
}

inline void blockBarrier() {
  State& s = state();
  const unsigned generation = s.blockGeneration;
  if (++s.blockArrived == unsigned(kEmuThreads)) {
    s.blockArrived = 0;
    ++s.blockGeneration;
    return;
  }
  while (s.blockGeneration == generation) yield();
}

inline void warpBarrier() {
  State& s = state();
  const int warp = int(threadIdx.x) / 32;
  const unsigned generation = s.warpGeneration[warp];
  if (++s.warpArrived[warp] == 32u) {
    s.warpArrived[warp] = 0;
    ++s.warpGeneration[warp];
    return;
  }
  while (s.warpGeneration[warp] == generation) yield();
}

inline void fiberEntry(int index) {
  State& s = state();
  (*s.body)();
  s.done[index] = true;
}

// Runs `body` as one block of kEmuThreads threads with the given blockIdx.
inline void runBlock(unsigned bx, unsigned by, const std::function<void()>& body) {
  State& s = state();
  if (!s.stacks) s.stacks.reset(new char[kStackBytes * kEmuThreads]);
  s.body = &body;
  s.blockArrived = 0;
  for (int w = 0; w < kEmuThreads / 32; ++w) s.warpArrived[w] = 0;
  for (int t = 0; t < kEmuThreads; ++t) {
    s.done[t] = false;
    getcontext(&s.fibers[t]);
    s.fibers[t].uc_stack.ss_sp = s.stacks.get() + size_t(t) * kStackBytes;
    s.fibers[t].uc_stack.ss_size = kStackBytes;
    s.fibers[t].uc_link = &s.scheduler;
    makecontext(&s.fibers[t], reinterpret_cast<void (*)()>(&fiberEntry), 1, t);
  }
  blockIdx = uint3{bx, by, 0};
  for (bool any = true; any;) {
    any = false;
    for (int t = 0; t < kEmuThreads; ++t) {
      if (s.done[t]) continue;
      any = true;
      s.current = t;
      threadIdx = uint3{unsigned(t), 0, 0};
      swapcontext(&s.scheduler, &s.fibers[t]);
    }
  }
}

// Every lane publishes a value; `read` sees all 32 of its warp.
template <class T, class F>
inline auto warpExchange(T value, F read) {
  State& s = state();
  const int tid = int(threadIdx.x), base = tid & ~31;
  uint64_t bits = 0;
  static_assert(sizeof(T) <= sizeof(bits), "8 bytes at most");
  std::memcpy(&bits, &value, sizeof(T));
  s.slots[tid] = bits;
  warpBarrier();
  T lanes[32];
  for (int l = 0; l < 32; ++l) std::memcpy(&lanes[l], &s.slots[base + l], sizeof(T));
  warpBarrier();
  return read(lanes, tid & 31);
}

}  // namespace hfemu

// ---- CUDA device API subset ----

inline void __syncthreads() { hfemu::blockBarrier(); }
inline void __syncwarp(unsigned = 0xffffffffu) { hfemu::warpBarrier(); }

template <class T>
inline T __shfl_down_sync(unsigned, T v, unsigned off) {
  return hfemu::warpExchange(v, [&](const T* l, int lane) { return lane + int(off) < 32 ? l[lane + int(off)] : l[lane]; });
}
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned off) {
  return hfemu::warpExchange(v, [&](const T* l, int lane) { return lane - int(off) >= 0 ? l[lane - int(off)] : l[lane]; });
}
inline unsigned __ballot_sync(unsigned, bool p) {
  return hfemu::warpExchange(p, [](const bool* l, int) {
    unsigned m = 0;
    for (int i = 0; i < 32; ++i) m |= unsigned(l[i]) << i;
    return m;
  });
}
template <class T>
inline T __reduce_min_sync(unsigned, T v) {
  return hfemu::warpExchange(v, [](const T* l, int) {
    T m = l[0];
    for (int i = 1; i < 32; ++i) m = l[i] < m ? l[i] : m;
    return m;
  });
}
template <class T>
inline T __reduce_max_sync(unsigned, T v) {
  return hfemu::warpExchange(v, [](const T* l, int) {
    T m = l[0];
    for (int i = 1; i < 32; ++i) m = l[i] > m ? l[i] : m;
    return m;
  });
}
inline unsigned __reduce_add_sync(unsigned, unsigned v) {
  return hfemu::warpExchange(v, [](const unsigned* l, int) {
    unsigned m = 0;
    for (int i = 0; i < 32; ++i) m += l[i];
    return m;
  });
}
inline unsigned __reduce_or_sync(unsigned, unsigned v) {
  return hfemu::warpExchange(v, [](const unsigned* l, int) {
    unsigned m = 0;
    for (int i = 0; i < 32; ++i) m |= l[i];
    return m;
  });
}

inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(unsigned(v)); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }

// One OS thread runs everything: atomics are plain read-modify-writes.
template <class T, class U>
inline T atomicAdd(T* p, U v) {
  const T old = *p;
  *p = old + T(v);
  return old;
}
template <class T, class U>
inline T atomicOr(T* p, U v) {
  const T old = *p;
  *p = old | T(v);
  return old;
}
template <class T, class U>
inline T atomicMax(T* p, U v) {
  const T old = *p;
  *p = old < T(v) ? T(v) : old;
  return old;
}
template <class T, class U>
inline T atomicMin(T* p, U v) {
  const T old = *p;
  *p = T(v) < old ? T(v) : old;
  return old;
}

template <class T>
inline T min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
inline T max(T a, T b) {
  return a < b ? b : a;
}
