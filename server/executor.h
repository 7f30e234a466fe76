// server/executor.h — the server's own worker threads: batch production, dataset opening and patch-mode
// augmentation run here, never on a gRPC thread (STYLE.md: handlers validate, enqueue, return).
//
//   BatchExecutor executor(4);
//   executor.Submit(session_id, [state] { ...produce batch, hand it to the stream... });
//
// Tasks are queued per key (a session id) and the workers take from the keys round-robin, so one session
// with a deep prefetch cannot starve another (weighted fair queuing is later work, issue 5).
// Thread-safety: Submit may be called from any thread, also from inside a task. The destructor stops the
// workers after their current task and drops queued tasks (their captures are destroyed, not run).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace augmentd {

class BatchExecutor {
 public:
  explicit BatchExecutor(int num_workers);
  ~BatchExecutor();
  BatchExecutor(const BatchExecutor&) = delete;
  BatchExecutor& operator=(const BatchExecutor&) = delete;

  // Queues `task` behind the earlier tasks of `key`.
  void Submit(const std::string& key, std::function<void()> task);

  int num_workers() const { return static_cast<int>(workers_.size()); }
  // Tasks waiting (not yet started), over all keys.
  size_t queued() const;

 private:
  void WorkerLoop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::deque<std::function<void()>>> queues_;  // non-empty queues only
  std::string last_key_;                                             // round-robin cursor
  size_t queued_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace augmentd
