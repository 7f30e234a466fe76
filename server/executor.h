// server/executor.h — the server's own worker threads: batch production, dataset opening and patch-mode
// augmentation run here, never on a gRPC thread (STYLE.md: handlers validate, enqueue, return).
//
//   ExecutorOptions options;
//   options.pools = {{"cpu", -1, 4}, {"cuda:0", 0, 2}};   // 4 CPU workers, 2 workers on GPU 0
//   BatchExecutor executor(options);
//   TaskSpec spec{.key = session_id, .device = "cuda:0", .weight = 2, .bytes = batch_bytes};
//   absl::Status admitted = executor.TrySubmit(spec, [](const WorkerInfo& w) { ...w.worker_on_device... });
//
// Pools: one per device. A task runs on a worker of the pool named by TaskSpec.device (an unknown device falls
// back to the first pool, the CPU). A GPU pool has N workers; each may own a CUDA stream / engine: a task
// learns which worker runs it from WorkerInfo (worker_on_device is stable for the thread's lifetime).
//
// Dispatch: weighted fair queuing over per-key (session) queues inside each pool (server/fair_queue.h:
// start-time fair queuing). Cost of a task = its TaskSpec.bytes (the batch's estimated output bytes, a proxy
// for its voxels × samples and so for its compute), or 1 when bytes is 0 — sessions of equal batch shape
// therefore share in batches, in proportion to their weights; a session with a long backlog does not delay a
// new one by more than about one task per worker.
//
// Limits (admission): TrySubmit refuses with RESOURCE_EXHAUSTED naming max_inflight_batches_per_session /
// max_inflight_bytes_per_session when the key's queued + running tasks would exceed them. Submit never
// refuses (for work already bounded elsewhere, e.g. a stream's prefetch depth) but is counted the same way. A
// running task counts until it returns, or until it calls WorkerInfo::release_admission (a unary call's task does,
// right before it finishes the call).
//
// Shutdown (documented ordering; no task is lost): the destructor stops admission (TrySubmit → UNAVAILABLE),
// then the workers run every task still queued — with WorkerInfo.draining set, so that it may finish its RPC
// quickly instead of computing — including tasks those tasks submit, and exit once all queues are empty. So
// every submitted task runs exactly once, and a unary call whose task was queued is always finished. The owner
// destroys the executor after the gRPC server has stopped (server/server.cc), so no outside Submit races it.
//
// Thread-safety: every method may be called from any thread, also from inside a task.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/fair_queue.h"

namespace augmentd {

// Who runs a task.
struct WorkerInfo {
  int worker_index = 0;         // 0 .. total workers - 1, over all pools
  std::string device = "cpu";   // the pool's device ("cpu", "cuda:0")
  int device_ordinal = -1;      // CUDA ordinal; -1 for the CPU pool
  int worker_on_device = 0;     // 0 .. pool workers - 1 (bind one CUDA stream / engine per value)
  absl::Duration queued;        // time between submission and start (the batch's queue latency)
  bool draining = false;        // the executor is shutting down: finish the call, skip the work
  // Ends the task's count against its key's in-flight limits now rather than when the task returns. A task that
  // answers an RPC calls it right before it finishes the call: a client that sends its next call the moment it has
  // the answer is then not refused for the one that is ending (the worker stays busy until the task returns).
  // Call it on the task's own thread, before the task returns; a second call does nothing.
  std::function<void()> release_admission;
};

struct DevicePool {
  std::string device = "cpu";
  int device_ordinal = -1;
  int workers = 1;              // at least 1
};

struct ExecutorOptions {
  std::vector<DevicePool> pools = {DevicePool{}};  // the first pool also takes tasks for unknown devices
  uint32_t max_inflight_batches_per_session = 0;   // TrySubmit admission; 0 = no limit
  uint64_t max_inflight_bytes_per_session = 0;     // TrySubmit admission; 0 = no limit
};

struct TaskSpec {
  std::string key;              // fairness flow and limit scope: the session id
  std::string device = "cpu";   // pool
  double weight = 1;            // SessionConfig.weight (≤ 0 counts as 1)
  uint64_t bytes = 0;           // estimated bytes: WFQ cost and in-flight bytes; 0 = cost 1
};

using Task = std::function<void(const WorkerInfo&)>;

// Point-in-time counters (metrics, GetStats).
struct ExecutorStats {
  struct Pool {
    std::string device;
    int workers = 0;
    size_t queued = 0;
    size_t running = 0;
  };
  struct Flow {
    size_t queued = 0;
    size_t running = 0;
    uint64_t inflight_bytes = 0;
  };
  std::vector<Pool> pools;
  std::map<std::string, Flow> flows;  // keys with queued or running tasks (less those that released admission)
};

class BatchExecutor {
 public:
  explicit BatchExecutor(ExecutorOptions options);
  // One CPU pool of `num_workers` and no limits.
  explicit BatchExecutor(int num_workers);
  ~BatchExecutor();
  BatchExecutor(const BatchExecutor&) = delete;
  BatchExecutor& operator=(const BatchExecutor&) = delete;

  // Queues `task`; RESOURCE_EXHAUSTED naming the limit when the key is at a per-session limit, UNAVAILABLE
  // while shutting down. On error the task is destroyed without running.
  absl::Status TrySubmit(const TaskSpec& spec, Task task);
  // Queues `task` regardless of the limits (always runs, see Shutdown above).
  void Submit(const TaskSpec& spec, Task task);
  // Compatibility: CPU pool, weight 1, cost 1.
  void Submit(const std::string& key, std::function<void()> task);

  int num_workers() const { return static_cast<int>(workers_.size()); }
  // Tasks waiting (not yet started), over all pools.
  size_t queued() const;
  ExecutorStats Stats() const;

 private:
  struct Queued {
    Task task;
    absl::Time submitted;
    uint64_t bytes = 0;
  };
  struct Pool {
    DevicePool config;
    FairQueue<Queued> queue;
    size_t running = 0;
  };
  struct FlowCount {
    size_t queued = 0, running = 0;
    uint64_t bytes = 0;
  };

  absl::Status Enqueue(const TaskSpec& spec, Task task, bool check_limits);
  void WorkerLoop(size_t pool_index, WorkerInfo info);
  // A running task of `key` ends its count (mu_ held).
  void EndRunning(const std::string& key, uint64_t bytes);

  const ExecutorOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Pool>> pools_;   // guarded by mu_ (the vector itself is fixed)
  std::map<std::string, FlowCount> flows_;     // guarded by mu_; keys with queued or running tasks
  bool stopping_ = false;                      // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace augmentd
