#include "augment/dataset/case_cache.h"

#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace augmentd::dataset {

namespace {

// Bytes of a case in either tier (HostCase layout: float32 data, int8 or int16 seg), from its headers.
uint64_t DecodedBytes(const CaseHandle& c) {
  const size_t seg_size = c.seg().dtype() == DType::kInt8 ? 1 : 2;
  return static_cast<uint64_t>(NumElements(c.data().shape())) * sizeof(float) +
         static_cast<uint64_t>(NumElements(c.seg().shape())) * seg_size +
         (c.seg_prev() != nullptr ? static_cast<uint64_t>(NumElements(c.seg_prev()->shape())) * 2 : 0);
}

}  // namespace

absl::StatusOr<std::shared_ptr<CaseCache>> CaseCache::Create(std::shared_ptr<const NnunetDataset> dataset,
                                                             CaseCacheOptions options) {
  if (options.prefetch_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cache: prefetch_threads must be >= 0, got ", options.prefetch_threads));
  }
  if (options.device_budget_bytes > 0 && (options.device_index < 0 || options.device_index >= CudaDeviceCount())) {
    return absl::FailedPreconditionError(absl::StrCat("cache: a GPU cache budget needs CUDA device ", options.device_index,
                                                      " (visible CUDA devices: ", CudaDeviceCount(), ")"));
  }
  if (options.allocator == nullptr) options.allocator = DefaultHostAllocator();
  return std::shared_ptr<CaseCache>(new CaseCache(std::move(dataset), std::move(options)));
}

CaseCache::CaseCache(std::shared_ptr<const NnunetDataset> dataset, CaseCacheOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  if (options_.host_budget_bytes > 0) host_ = std::make_unique<LruCache<HostCase>>(options_.host_budget_bytes);
  if (options_.device_budget_bytes > 0) device_ = std::make_unique<LruCache<DeviceCase>>(options_.device_budget_bytes);
  if (host_ != nullptr || device_ != nullptr) {
    for (int i = 0; i < options_.prefetch_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }
}

CaseCache::~CaseCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

absl::StatusOr<std::shared_ptr<const HostCase>> CaseCache::LoadFromDisk(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<const CaseHandle>> disk = dataset_->OpenCase(id);
  if (!disk.ok()) return disk.status();
  return HostCase::Load(**disk, options_.allocator);
}

absl::StatusOr<std::shared_ptr<const HostCase>> CaseCache::GetHost(const std::string& id) {
  if (host_ == nullptr) return LoadFromDisk(id);
  return host_->GetOrLoad(id, [&] { return LoadFromDisk(id); });
}

absl::StatusOr<std::shared_ptr<const CaseHandle>> CaseCache::OpenCase(const std::string& id) {
  if (host_ == nullptr) return dataset_->OpenCase(id);
  absl::StatusOr<std::shared_ptr<const HostCase>> c =
      host_->GetOrLoad(id, [&]() -> absl::StatusOr<std::shared_ptr<const HostCase>> {
        absl::StatusOr<std::shared_ptr<const CaseHandle>> disk = dataset_->OpenCase(id);
        if (!disk.ok()) return disk.status();
        if (DecodedBytes(**disk) > options_.host_budget_bytes) return std::shared_ptr<const HostCase>();
        return HostCase::Load(**disk, options_.allocator);
      });
  if (!c.ok()) return c.status();
  if (*c == nullptr) return dataset_->OpenCase(id);
  return std::shared_ptr<const CaseHandle>(*c, &(*c)->handle());  // keeps the host case alive
}

absl::StatusOr<std::shared_ptr<const DeviceCase>> CaseCache::GetDevice(const std::string& id) {
  if (device_ == nullptr) return absl::FailedPreconditionError("cache: no GPU cache tier (device budget 0)");
  return device_->GetOrLoad(id, [&]() -> absl::StatusOr<std::shared_ptr<const DeviceCase>> {
    // Headers first: a case larger than the whole budget is never uploaded.
    absl::StatusOr<std::shared_ptr<const CaseHandle>> disk = dataset_->OpenCase(id);
    if (!disk.ok()) return disk.status();
    if (DecodedBytes(**disk) > options_.device_budget_bytes) return std::shared_ptr<const DeviceCase>();
    absl::StatusOr<std::shared_ptr<const HostCase>> host = GetHost(id);
    if (!host.ok()) return host.status();
    absl::StatusOr<std::shared_ptr<const DeviceCase>> dev = UploadCase(**host, options_.device_index);
    if (!dev.ok() && dev.status().code() == absl::StatusCode::kResourceExhausted) {
      return std::shared_ptr<const DeviceCase>();  // the GPU is full: serve this case from the host
    }
    return dev;
  });
}

void CaseCache::Prefetch(const std::vector<std::string>& ids) {
  if (workers_.empty()) return;
  LruCache<HostCase>* host = host_.get();
  LruCache<DeviceCase>* device = device_.get();
  bool queued_any = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& id : ids) {
      if (queued_.count(id) > 0 || (device != nullptr ? device->Contains(id) : host->Contains(id))) continue;
      ++requested_;
      if (queue_.size() >= options_.max_queued_prefetches) {
        ++dropped_;
        continue;
      }
      queue_.push_back(id);
      queued_.insert(id);
      queued_any = true;
    }
  }
  if (queued_any) work_cv_.notify_all();
}

void CaseCache::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::string id = queue_.front();
    queue_.pop_front();
    ++running_;
    lock.unlock();
    const absl::Status st = device_ != nullptr ? GetDevice(id).status() : GetHost(id).status();
    lock.lock();
    --running_;
    queued_.erase(id);
    ++(st.ok() ? loaded_ : failed_);
    if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
  }
}

void CaseCache::WaitForPrefetches() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return stop_ || (queue_.empty() && running_ == 0); });
}

CaseCacheStats CaseCache::Stats() const {
  CaseCacheStats s;
  if (host_ != nullptr) s.host = host_->counters();
  if (device_ != nullptr) s.device = device_->counters();
  s.host_allocator = options_.allocator->name();
  std::lock_guard<std::mutex> lock(mu_);
  s.prefetch_requested = requested_;
  s.prefetch_loaded = loaded_;
  s.prefetch_failed = failed_;
  s.prefetch_dropped = dropped_;
  return s;
}

absl::StatusOr<std::shared_ptr<CaseCache>> SharedCaseCache(std::shared_ptr<const NnunetDataset> dataset,
                                                           const CaseCacheOptions& options) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<CaseCache>> caches;  // guarded by mu
  // The previous stage's folder is part of the key: a cascade's cached cases carry its segmentation too.
  const std::string key = absl::StrCat(dataset->data_dir(), "|", dataset->options().previous_stage_dir, "|",
                                       options.host_budget_bytes, "|",
                                       options.device_budget_bytes, "|", options.device_index, "|",
                                       options.prefetch_threads, "|", options.max_queued_prefetches);
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = caches.begin(); it != caches.end();) it = it->second.expired() ? caches.erase(it) : std::next(it);
  if (auto it = caches.find(key); it != caches.end()) {
    if (std::shared_ptr<CaseCache> alive = it->second.lock()) return alive;
  }
  absl::StatusOr<std::shared_ptr<CaseCache>> cache = CaseCache::Create(std::move(dataset), options);
  if (cache.ok()) caches[key] = *cache;
  return cache;
}

}  // namespace augmentd::dataset
