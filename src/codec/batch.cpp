// batch.cpp - many patches on CPU threads. Patches are independent, so a shared atomic cursor
// hands them out one at a time; that balances mixed sizes without any scheduling state.
#include <algorithm>
#include <atomic>
#include <thread>

#include "codec/hfpac.h"

namespace hfpac {
namespace {

template <class F>
void parallelFor(size_t count, int threads, F&& body) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  threads = int(std::min<size_t>(size_t(threads), std::max<size_t>(count, 1)));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) body(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

Status firstFailure(const std::vector<Status>& statuses) {
  for (Status s : statuses)
    if (s != Status::Ok) return s;
  return Status::Ok;
}

}  // namespace

Status encodeBatch(const PatchIn* patches, size_t count, const EncodeOptions& options,
                   std::vector<std::vector<uint8_t>>& out, std::vector<Status>& statuses,
                   int threads, std::vector<EncodeStats>* stats) {
  out.resize(count);
  statuses.assign(count, Status::Ok);
  if (stats) stats->resize(count);
  if (count > 0 && patches == nullptr) {
    std::fill(statuses.begin(), statuses.end(), Status::InvalidArgument);
    return Status::InvalidArgument;
  }
  parallelFor(count, threads, [&](size_t i) {
    const PatchIn& p = patches[i];
    statuses[i] = encode(p.samples, p.stride, p.width, p.height, p.type, options, out[i],
                         stats ? &(*stats)[i] : nullptr);
  });
  return firstFailure(statuses);
}

Status decodeBatch(const PatchOut* patches, size_t count, Layers layers,
                   std::vector<Status>& statuses, int threads) {
  statuses.assign(count, Status::Ok);
  if (count > 0 && patches == nullptr) {
    std::fill(statuses.begin(), statuses.end(), Status::InvalidArgument);
    return Status::InvalidArgument;
  }
  parallelFor(count, threads, [&](size_t i) {
    const PatchOut& p = patches[i];
    statuses[i] = decode(p.data, p.size, p.dst, p.dstStride, p.dstCapacity, layers);
  });
  return firstFailure(statuses);
}

}  // namespace hfpac
