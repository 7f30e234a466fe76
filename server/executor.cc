#include "server/executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/log.h"

namespace augmentd {
namespace {

ExecutorOptions CpuOnly(int num_workers) {
  ExecutorOptions options;
  options.pools = {DevicePool{"cpu", -1, std::max(1, num_workers)}};
  return options;
}

}  // namespace

BatchExecutor::BatchExecutor(int num_workers) : BatchExecutor(CpuOnly(num_workers)) {}

BatchExecutor::BatchExecutor(ExecutorOptions options) : options_(std::move(options)) {
  std::vector<DevicePool> configs = options_.pools;
  if (configs.empty()) configs.push_back(DevicePool{});
  for (const DevicePool& config : configs) {
    auto pool = std::make_unique<Pool>();
    pool->config = config;
    pool->config.workers = std::max(1, config.workers);
    pools_.push_back(std::move(pool));
  }
  int index = 0;
  for (size_t p = 0; p < pools_.size(); ++p) {
    for (int w = 0; w < pools_[p]->config.workers; ++w) {
      WorkerInfo info;
      info.worker_index = index++;
      info.device = pools_[p]->config.device;
      info.device_ordinal = pools_[p]->config.device_ordinal;
      info.worker_on_device = w;
      workers_.emplace_back([this, p, info] { WorkerLoop(p, info); });
    }
  }
}

BatchExecutor::~BatchExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  // Every worker exits only when all queues are empty and nothing runs, so nothing is left here.
}

absl::Status BatchExecutor::TrySubmit(const TaskSpec& spec, Task task) {
  return Enqueue(spec, std::move(task), /*check_limits=*/true);
}

void BatchExecutor::Submit(const TaskSpec& spec, Task task) {
  (void)Enqueue(spec, std::move(task), /*check_limits=*/false);
}

void BatchExecutor::Submit(const std::string& key, std::function<void()> task) {
  TaskSpec spec;
  spec.key = key;
  Submit(spec, [task = std::move(task)](const WorkerInfo&) { task(); });
}

absl::Status BatchExecutor::Enqueue(const TaskSpec& spec, Task task, bool check_limits) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (check_limits) {
      if (stopping_) return absl::UnavailableError("the server is shutting down");
      const auto it = flows_.find(spec.key);
      const FlowCount count = it == flows_.end() ? FlowCount{} : it->second;
      const uint32_t max_batches = options_.max_inflight_batches_per_session;
      if (max_batches > 0 && count.queued + count.running + 1 > max_batches) {
        return absl::ResourceExhaustedError(
            absl::StrCat("max_inflight_batches_per_session: session ", spec.key, " already has ",
                         count.queued + count.running, " batches queued or running (limit ", max_batches, ")"));
      }
      const uint64_t max_bytes = options_.max_inflight_bytes_per_session;
      if (max_bytes > 0 && count.bytes + spec.bytes > max_bytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat("max_inflight_bytes_per_session: session ", spec.key, " has ", count.bytes,
                         " bytes queued or running; this batch adds ", spec.bytes, " (limit ", max_bytes, ")"));
      }
    }
    Pool* pool = pools_.front().get();
    for (const auto& p : pools_) {
      if (p->config.device == spec.device) pool = p.get();
    }
    FlowCount& count = flows_[spec.key];
    ++count.queued;
    count.bytes += spec.bytes;
    pool->queue.Push(spec.key, spec.weight, spec.bytes > 0 ? static_cast<double>(spec.bytes) : 1.0,
                     Queued{std::move(task), absl::Now(), spec.bytes});
  }
  // Workers of every pool share the condition variable; wake all so the right pool's worker sees it.
  cv_.notify_all();
  return absl::OkStatus();
}

size_t BatchExecutor::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& p : pools_) n += p->queue.size();
  return n;
}

ExecutorStats BatchExecutor::Stats() const {
  ExecutorStats out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& p : pools_) {
    out.pools.push_back({p->config.device, p->config.workers, p->queue.size(), p->running});
  }
  for (const auto& [key, count] : flows_) out.flows[key] = {count.queued, count.running, count.bytes};
  return out;
}

void BatchExecutor::WorkerLoop(size_t pool_index, WorkerInfo info) {
  Pool& pool = *pools_[pool_index];
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto all_idle = [this] {
      for (const auto& p : pools_) {
        if (!p->queue.empty() || p->running > 0) return false;
      }
      return true;
    };
    cv_.wait(lock, [&] { return !pool.queue.empty() || (stopping_ && all_idle()); });
    if (pool.queue.empty()) return;  // stopping and nothing left anywhere
    std::string key;
    std::optional<Queued> next = pool.queue.Pop(&key);
    FlowCount& count = flows_[key];
    --count.queued;
    ++count.running;
    ++pool.running;
    const uint64_t bytes = next->bytes;
    info.queued = absl::Now() - next->submitted;
    info.draining = stopping_;
    lock.unlock();
    // The task's count, ended once: by release_admission or when the task returns. Held by the function too, so a
    // call that comes too late (a copied WorkerInfo) finds it ended and does nothing.
    struct Admission {
      std::string key;
      uint64_t bytes;
      bool counted;  // guarded by mu_
    };
    auto admission = std::make_shared<Admission>(Admission{key, bytes, true});
    auto end_once = [this, admission] {  // mu_ held
      if (!admission->counted) return;
      admission->counted = false;
      EndRunning(admission->key, admission->bytes);
    };
    info.release_admission = [this, end_once] {
      std::lock_guard<std::mutex> release_lock(mu_);
      end_once();
    };
    next->task(info);
    next.reset();  // the task's captures are destroyed outside the lock
    info.release_admission = nullptr;
    lock.lock();
    --pool.running;
    end_once();
    if (stopping_) cv_.notify_all();
  }
}

void BatchExecutor::EndRunning(const std::string& key, uint64_t bytes) {
  auto done = flows_.find(key);
  --done->second.running;
  done->second.bytes -= bytes;
  if (done->second.queued == 0 && done->second.running == 0) flows_.erase(done);
}

}  // namespace augmentd
