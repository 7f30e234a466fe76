#include "server/executor.h"

#include <algorithm>
#include <utility>

namespace augmentd {

BatchExecutor::BatchExecutor(int num_workers) {
  for (int i = 0; i < std::max(1, num_workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

BatchExecutor::~BatchExecutor() {
  std::map<std::string, std::deque<std::function<void()>>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queues_);
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  // `dropped` is destroyed here, outside the lock: the tasks' captures may take other locks.
}

void BatchExecutor::Submit(const std::string& key, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    queues_[key].push_back(std::move(task));
    ++queued_;
  }
  cv_.notify_one();
}

size_t BatchExecutor::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void BatchExecutor::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queues_.empty(); });
      if (stopping_) return;
      // Round-robin: the first key after the one served last (wrapping around).
      auto it = queues_.upper_bound(last_key_);
      if (it == queues_.end()) it = queues_.begin();
      task = std::move(it->second.front());
      it->second.pop_front();
      last_key_ = it->first;
      if (it->second.empty()) queues_.erase(it);
      --queued_;
    }
    task();
  }
}

}  // namespace augmentd
