// fault_injection.h - faults injected into archive reads, to test that every corruption is
// detected and that the viewer survives I/O errors (issue 16: `hfbench soak --inject-faults`).
//
// A FaultInjector set on an ArchiveReader (setFaultInjector) acts on the viewer's reads of
// height payloads (copyPayload, copyLossyPayload; not the imagery): for each read, one draw
// decides whether it fails like an I/O error (EIO: the read returns false, "injected I/O
// error"), gets one bit flipped, is cut short (a read that returned fewer bytes), or waits
// `delayMs` first. A flipped or short whole payload fails its CRC check (counted as a corrupt
// tile, as a real one would be); the lossy part of a payload (layers 1 + 2, which no CRC covers)
// gets I/O errors and delays only, so that every injected corruption is one the reader detects.
// Off unless set; draws come from one seeded generator (reproducible for one thread).
//
// Spec (parseFaultSpec): comma-separated `kind=probability` with kinds eio, flip, short, delay
// (delay=P:MSms sets the delay too, default 5 ms) and seed=N; e.g. "eio=0.01,flip=0.01,
// short=0.005,delay=0.02:10ms,seed=7". Probabilities in [0, 1], at most 1 in total.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>

namespace hfa {

struct FaultSpec {
  double eio = 0, flip = 0, shortRead = 0, delay = 0;
  double delayMs = 5;
  uint64_t seed = 1;
  bool any() const { return eio > 0 || flip > 0 || shortRead > 0 || delay > 0; }
};

// False with a one-line error for anything else than the syntax above.
bool parseFaultSpec(const std::string& text, FaultSpec& spec, std::string& error);

class FaultInjector {
 public:
  enum class Fault { None, Eio, Flip, Short, Delay };
  explicit FaultInjector(const FaultSpec& spec);

  // Draws the fault of one read of `size` bytes at `data` and applies it: Flip flips one bit,
  // Short lowers `size`, Delay sleeps; Eio tells the caller to fail. `corruptible` false (the
  // unchecked lossy part): only Eio and Delay are drawn. Thread-safe.
  Fault apply(uint8_t* data, size_t& size, bool corruptible = true);

  const FaultSpec& spec() const { return spec_; }
  // Injected so far, per kind.
  uint64_t eio() const { return eio_; }
  uint64_t flips() const { return flips_; }
  uint64_t shorts() const { return shorts_; }
  uint64_t delays() const { return delays_; }
  uint64_t corruptions() const { return flips_ + shorts_; }  // what CRC checks must catch

 private:
  FaultSpec spec_;
  std::mutex mutex_;
  std::mt19937_64 rng_;
  std::atomic<uint64_t> eio_{0}, flips_{0}, shorts_{0}, delays_{0};
};

}  // namespace hfa
