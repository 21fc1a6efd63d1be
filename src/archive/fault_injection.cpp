// fault_injection.cpp - see fault_injection.h.
#include "archive/fault_injection.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

namespace hfa {

bool parseFaultSpec(const std::string& text, FaultSpec& spec, std::string& error) {
  FaultSpec s;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? text.size() + 1 : comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      error = "--inject-faults: '" + item + "' is not kind=probability (eio, flip, short, delay, seed)";
      return false;
    }
    const std::string kind = item.substr(0, eq), value = item.substr(eq + 1);
    char* end = nullptr;
    if (kind == "seed") {
      const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end) {
        error = "--inject-faults: seed wants an integer, got '" + value + "'";
        return false;
      }
      s.seed = v;
      continue;
    }
    const double p = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || !(p >= 0 && p <= 1)) {
      error = "--inject-faults: " + kind + " wants a probability in [0, 1], got '" + value + "'";
      return false;
    }
    if (kind == "delay" && *end == ':') {
      const char* ms = end + 1;
      const double d = std::strtod(ms, &end);
      if (end == ms || std::string(end) != "ms" || !(d >= 0 && d <= 10000)) {
        error = "--inject-faults: delay wants P:MSms (0..10000 ms), got '" + value + "'";
        return false;
      }
      s.delayMs = d;
    } else if (*end) {
      error = "--inject-faults: " + kind + " wants a probability in [0, 1], got '" + value + "'";
      return false;
    }
    if (kind == "eio") s.eio = p;
    else if (kind == "flip") s.flip = p;
    else if (kind == "short") s.shortRead = p;
    else if (kind == "delay") s.delay = p;
    else {
      error = "--inject-faults: unknown kind '" + kind + "' (eio, flip, short, delay, seed)";
      return false;
    }
  }
  if (s.eio + s.flip + s.shortRead + s.delay > 1 + 1e-12) {
    error = "--inject-faults: the probabilities add up to more than 1";
    return false;
  }
  spec = s;
  return true;
}

FaultInjector::FaultInjector(const FaultSpec& spec) : spec_(spec), rng_(spec.seed) {}

FaultInjector::Fault FaultInjector::apply(uint8_t* data, size_t& size, bool corruptible) {
  double u = 0;
  uint64_t bits = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    bits = rng_();
  }
  const double flip = corruptible ? spec_.flip : 0, shortRead = corruptible ? spec_.shortRead : 0;
  if (u < spec_.eio) {
    ++eio_;
    return Fault::Eio;
  }
  u -= spec_.eio;
  if (u < flip && size > 0) {
    data[bits % size] ^= uint8_t(1u << ((bits >> 32) & 7));
    ++flips_;
    return Fault::Flip;
  }
  u -= flip;
  if (u < shortRead && size > 0) {
    size = size_t(bits % size);  // fewer bytes than asked (possibly none)
    ++shorts_;
    return Fault::Short;
  }
  u -= shortRead;
  if (u < spec_.delay) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(spec_.delayMs));
    ++delays_;
    return Fault::Delay;
  }
  return Fault::None;
}

}  // namespace hfa
