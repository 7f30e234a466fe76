// augment/dataset/case_cache.h — the cache tiers of dataset mode, between BatchLoader::PlanSample and the
// crop: (1) host: whole decompressed cases in (pinned) host memory within a byte budget, LRU; (2) device:
// whole cases in GPU memory within a byte budget, LRU, cropped by a CUDA kernel straight into device batch
// buffers (device_tier.h); (3) disk: the readers. Upcoming cases are prefetched on a CPU thread pool.
//
//   CaseCacheOptions o;
//   o.host_budget_bytes = 32ull << 30;  o.device_budget_bytes = 40ull << 30;  o.prefetch_threads = 4;
//   ASSIGN_OR_RETURN(std::shared_ptr<CaseCache> cache, CaseCache::Create(dataset, o));
//   LoaderOptions lo;  lo.cache = cache;  lo.prefetch_batches = 4;
//   BatchLoader loader(dataset, std::move(sampler), lo);       // LoadBatch / LoadBatchToDevice use the tiers
//   CaseCacheStats s = cache->Stats();                         // hits, misses, resident bytes per tier
//
// Tier rules: GetHost loads a miss from disk (OpenCase + decode all of it) and keeps it if it fits the host
// budget (evicting least-recently-used cases); a case larger than the budget is served but not kept.
// GetDevice uploads a miss from the host tier (or from a temporary host copy when there is no host tier) and
// keeps it within the device budget; it returns nullptr — "not resident, crop on the host and copy the box" —
// when the case is larger than the device budget or cudaMalloc fails (the GPU is shared). Concurrent requests
// for the same case load it once. A request waiting for an in-flight load counts as a hit.
// Errors: a missing, truncated or corrupt case gives the reader's NOT_FOUND / DATA_LOSS naming the file; it
// is never cached (the next request reads again) and affects only the requests for that case. Prefetch errors
// are counted (prefetch_failed) and surface when the batch that needs the case is loaded.
// Budgets count the decoded bytes of data (float32) + seg (int8/int16); 0 disables a tier. The device tier
// needs a CUDA build and a GPU (Create: FAILED_PRECONDITION otherwise).
// Thread-safety: all methods may be called concurrently. The destructor stops the prefetch pool (queued
// prefetches are dropped, running ones finish).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/dataset/device_tier.h"
#include "augment/dataset/host_allocator.h"
#include "augment/dataset/host_case.h"
#include "augment/dataset/lru_cache.h"
#include "augment/dataset/nnunet_dataset.h"

namespace augmentd::dataset {

struct CaseCacheOptions {
  uint64_t host_budget_bytes = 0;            // 0: no host tier
  uint64_t device_budget_bytes = 0;          // 0: no device tier
  int device_index = 0;                      // CUDA device of the device tier
  int prefetch_threads = 2;                  // 0: Prefetch does nothing
  size_t max_queued_prefetches = 256;        // further requests are dropped (prefetching is advisory)
  std::shared_ptr<HostAllocator> allocator;  // host tier memory; null: DefaultHostAllocator()
};

struct CaseCacheStats {
  LruCounters host, device;
  uint64_t prefetch_requested = 0, prefetch_loaded = 0, prefetch_failed = 0, prefetch_dropped = 0;
  std::string host_allocator;  // "pinned" / "plain"
};

class CaseCache {
 public:
  // INVALID_ARGUMENT for negative thread counts; FAILED_PRECONDITION for a device budget without CUDA/GPU.
  static absl::StatusOr<std::shared_ptr<CaseCache>> Create(std::shared_ptr<const NnunetDataset> dataset,
                                                           CaseCacheOptions options);
  ~CaseCache();
  CaseCache(const CaseCache&) = delete;
  CaseCache& operator=(const CaseCache&) = delete;

  const CaseCacheOptions& options() const { return options_; }
  bool has_host_tier() const { return host_ != nullptr; }
  bool has_device_tier() const { return device_ != nullptr; }

  // The case in host memory (from the host tier, or decoded now). Without a host tier: decoded, not kept.
  absl::StatusOr<std::shared_ptr<const HostCase>> GetHost(const std::string& id);
  // The case to crop from: the host tier's in-memory case (loaded on a miss), or the disk case when there is
  // no host tier or the case is larger than the whole host budget (decoding it whole for one box would cost
  // more than reading the box).
  absl::StatusOr<std::shared_ptr<const CaseHandle>> OpenCase(const std::string& id);
  // The case resident on the device, or nullptr when it cannot be (see above). FAILED_PRECONDITION without a
  // device tier.
  absl::StatusOr<std::shared_ptr<const DeviceCase>> GetDevice(const std::string& id);

  // Loads the given cases in the background into the device tier (if any, else the host tier); cases that
  // are resident, loading or queued are skipped. No-op without tiers or prefetch threads.
  void Prefetch(const std::vector<std::string>& ids);
  // Blocks until no prefetch is queued or running (tests, benchmarks).
  void WaitForPrefetches();

  CaseCacheStats Stats() const;

 private:
  CaseCache(std::shared_ptr<const NnunetDataset> dataset, CaseCacheOptions options);
  absl::StatusOr<std::shared_ptr<const HostCase>> LoadFromDisk(const std::string& id) const;
  void WorkerLoop();

  std::shared_ptr<const NnunetDataset> dataset_;
  CaseCacheOptions options_;
  std::unique_ptr<LruCache<HostCase>> host_;
  std::unique_ptr<LruCache<DeviceCase>> device_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::string> queue_;  // guarded by mu_
  std::set<std::string> queued_;   // guarded by mu_: queued or running
  int running_ = 0;                // guarded by mu_
  bool stop_ = false;              // guarded by mu_
  uint64_t requested_ = 0, loaded_ = 0, failed_ = 0, dropped_ = 0;  // guarded by mu_
  std::vector<std::thread> workers_;
};

// The cache of one dataset configuration folder shared by every session that reads it with the same options
// on the same device (e.g. the DDP ranks or folds of one training): the first call creates it, later calls
// with an equal key (data_dir, budgets, device, threads) get the same cache while any session holds it. An
// allocator in `options` is not part of the key. Errors as Create.
absl::StatusOr<std::shared_ptr<CaseCache>> SharedCaseCache(std::shared_ptr<const NnunetDataset> dataset,
                                                           const CaseCacheOptions& options);

}  // namespace augmentd::dataset
