// Weighted fair queuing (server/fair_queue.h) and the batch executor (server/executor.h): shares under
// saturation follow the weights, a backlog does not starve a newcomer, limits refuse with the limit's name,
// tasks see their pool / worker, and shutdown runs every task exactly once.
#include "server/executor.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/fair_queue.h"

namespace augmentd {
namespace {

// Polls `done` until it holds or 10 s pass: what a worker does after a task's last visible step (its flow's counts,
// the next dispatch) may wait while a loaded machine runs other threads, so no fixed sleep stands in for it.
template <typename F>
bool Eventually(F done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// Saturated flows (always ≥ 1 item queued) with weights 1:2:4: each dispatch is refilled immediately.
std::map<std::string, int> SaturatedShares(const std::map<std::string, double>& weights, int dispatches,
                                           const std::map<std::string, double>& costs = {}) {
  FairQueue<int> q;
  auto cost = [&](const std::string& f) { return costs.count(f) ? costs.at(f) : 1.0; };
  for (const auto& [flow, w] : weights) {
    for (int i = 0; i < 3; ++i) q.Push(flow, w, cost(flow), 0);
  }
  std::map<std::string, int> served;
  for (int i = 0; i < dispatches; ++i) {
    std::string flow;
    EXPECT_TRUE(q.Pop(&flow).has_value());
    ++served[flow];
    q.Push(flow, weights.at(flow), cost(flow), 0);
  }
  return served;
}

TEST(FairQueueTest, SaturatedSharesFollowWeights) {
  const std::map<std::string, double> weights = {{"a", 1}, {"b", 2}, {"c", 4}};
  const int n = 7000;
  std::map<std::string, int> served = SaturatedShares(weights, n);
  EXPECT_NEAR(served["a"] / double(n), 1.0 / 7, 0.01);
  EXPECT_NEAR(served["b"] / double(n), 2.0 / 7, 0.01);
  EXPECT_NEAR(served["c"] / double(n), 4.0 / 7, 0.01);
  // Also over a short window (fairness is not only asymptotic): the first 70 dispatches.
  served = SaturatedShares(weights, 70);
  EXPECT_NEAR(served["a"], 10, 2);
  EXPECT_NEAR(served["c"], 40, 2);
}

TEST(FairQueueTest, CostIsSharedNotCount) {
  // Equal weights, b's items cost 3× a's: a gets 3× as many dispatches (equal bytes).
  std::map<std::string, int> served = SaturatedShares({{"a", 1}, {"b", 1}}, 4000, {{"a", 1}, {"b", 3}});
  EXPECT_NEAR(served["a"] / double(served["b"]), 3.0, 0.1);
}

TEST(FairQueueTest, BacklogDoesNotStarveANewFlow) {
  FairQueue<int> q;
  for (int i = 0; i < 10000; ++i) q.Push("big", 1, 1, i);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(*q.Pop(), i);  // FIFO within a flow
  for (int i = 0; i < 5; ++i) q.Push("new", 1, 1, -1 - i);
  // The newcomer is served within its first two dispatches, then alternates with the backlog.
  std::vector<std::string> order;
  for (int i = 0; i < 10; ++i) {
    std::string flow;
    q.Pop(&flow);
    order.push_back(flow);
  }
  int new_count = 0;
  for (const std::string& f : order) new_count += f == "new";
  EXPECT_EQ(new_count, 5);
  EXPECT_TRUE(order[0] == "new" || order[1] == "new");
  EXPECT_EQ(q.size(), 10000u - 500 - 5);
}

TEST(FairQueueTest, IdleFlowCannotBankCredit) {
  FairQueue<int> q;
  for (int i = 0; i < 100; ++i) q.Push("busy", 1, 1, i);
  q.Push("idle", 1, 1, 0);
  for (int i = 0; i < 60; ++i) q.Pop();  // idle's only item left early; it then sat idle
  for (int i = 0; i < 20; ++i) q.Push("idle", 1, 1, i);
  int idle = 0;
  for (int i = 0; i < 20; ++i) {
    std::string flow;
    q.Pop(&flow);
    idle += flow == "idle";
  }
  EXPECT_NEAR(idle, 10, 1);  // half, not all 20: no credit was saved while idle
}

TEST(FairQueueTest, RemoveFlowAndClear) {
  FairQueue<int> q;
  q.Push("a", 1, 1, 1);
  q.Push("a", 1, 1, 2);
  q.Push("b", 1, 1, 3);
  EXPECT_EQ(q.RemoveFlow("a"), (std::vector<int>{1, 2}));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.size("a"), 0u);
  EXPECT_EQ(q.Clear().size(), 1u);
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.Pop().has_value());
}

// Threads: weighted shares measured on a real executor with one worker (so dispatch order is the share).
TEST(BatchExecutorTest, WeightedSharesWithSaturatedQueues) {
  absl::Notification gate;
  std::mutex mu;
  std::vector<std::string> order;
  BatchExecutor executor(1);  // after what the tasks capture: on a failed ASSERT its destructor runs what is left
  executor.Submit(TaskSpec{"gate"}, [&](const WorkerInfo&) { gate.WaitForNotification(); });
  const std::map<std::string, double> weights = {{"s1", 1}, {"s2", 2}, {"s4", 4}};
  for (int i = 0; i < 400; ++i) {
    for (const auto& [key, w] : weights) {
      TaskSpec spec{key, "cpu", w, 0};
      executor.Submit(spec, [&, key = key](const WorkerInfo&) {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(key);
      });
    }
  }
  gate.Notify();
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> lock(mu);
    return order.size() == 1200u;
  }));
  std::lock_guard<std::mutex> lock(mu);
  // While all three are backlogged (s4's 400 tasks last ~700 dispatches), shares are 1:2:4 within 2 %.
  std::map<std::string, int> served;
  for (size_t i = 0; i < 600; ++i) ++served[order[i]];
  EXPECT_NEAR(served["s1"] / 600.0, 1.0 / 7, 0.02);
  EXPECT_NEAR(served["s2"] / 600.0, 2.0 / 7, 0.02);
  EXPECT_NEAR(served["s4"] / 600.0, 4.0 / 7, 0.02);
  EXPECT_EQ(order.size(), 1200u);
}

TEST(BatchExecutorTest, TasksRunOnTheirDevicePoolWithStableWorkerIndices) {
  ExecutorOptions options;
  options.pools = {{"cpu", -1, 2}, {"cuda:0", 0, 3}};
  BatchExecutor executor(options);
  EXPECT_EQ(executor.num_workers(), 5);
  std::mutex mu;
  std::set<int> gpu_workers, cpu_worker_indices;
  std::atomic<int> done{0};
  for (int i = 0; i < 60; ++i) {
    const bool gpu = i % 2 == 0;
    TaskSpec spec{"s", gpu ? "cuda:0" : (i % 3 ? "cpu" : "cuda:7"), 1, 0};  // cuda:7: unknown → first pool
    executor.Submit(spec, [&, gpu](const WorkerInfo& w) {
      absl::SleepFor(absl::Milliseconds(2));
      std::lock_guard<std::mutex> lock(mu);
      if (gpu) {
        EXPECT_EQ(w.device, "cuda:0");
        EXPECT_EQ(w.device_ordinal, 0);
        EXPECT_GE(w.worker_index, 2);
        gpu_workers.insert(w.worker_on_device);
      } else {
        EXPECT_EQ(w.device, "cpu");
        EXPECT_EQ(w.device_ordinal, -1);
        cpu_worker_indices.insert(w.worker_index);
      }
      EXPECT_FALSE(w.draining);
      ++done;
    });
  }
  while (done.load() < 60) absl::SleepFor(absl::Milliseconds(5));
  std::lock_guard<std::mutex> lock(mu);
  for (int w : gpu_workers) EXPECT_LT(w, 3);
  EXPECT_GE(gpu_workers.size(), 2u);
  for (int w : cpu_worker_indices) EXPECT_LT(w, 2);
}

TEST(BatchExecutorTest, LimitsRefuseNamingTheLimit) {
  ExecutorOptions options;
  options.pools = {{"cpu", -1, 1}};
  options.max_inflight_batches_per_session = 3;
  options.max_inflight_bytes_per_session = 1000;
  absl::Notification gate;
  std::atomic<int> ran{0};
  auto work = [&](const WorkerInfo&) {
    gate.WaitForNotification();
    ++ran;
  };
  // Declared after what `work` captures: its destructor runs the last task, which must still see them (ASan).
  BatchExecutor executor(options);
  ASSERT_TRUE(executor.TrySubmit({"a", "cpu", 1, 100}, work).ok());
  ASSERT_TRUE(executor.TrySubmit({"a", "cpu", 1, 100}, work).ok());
  ASSERT_TRUE(executor.TrySubmit({"a", "cpu", 1, 100}, work).ok());
  absl::Status s = executor.TrySubmit({"a", "cpu", 1, 100}, work);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(s.message(), "max_inflight_batches_per_session")) << s;
  s = executor.TrySubmit({"b", "cpu", 1, 1001}, work);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(s.message(), "max_inflight_bytes_per_session")) << s;
  EXPECT_TRUE(executor.TrySubmit({"b", "cpu", 1, 900}, work).ok());  // another session has its own budget
  ExecutorStats stats = executor.Stats();
  EXPECT_EQ(stats.flows["a"].queued + stats.flows["a"].running, 3u);
  EXPECT_EQ(stats.flows["a"].inflight_bytes, 300u);
  executor.Submit(TaskSpec{"a", "cpu", 1, 100}, work);  // Submit is never refused
  gate.Notify();
  EXPECT_TRUE(Eventually([&] { return executor.Stats().flows.empty(); }));  // a flow ends after its task returns
  EXPECT_EQ(ran.load(), 5);
  EXPECT_TRUE(executor.TrySubmit({"a", "cpu", 1, 100}, work).ok());  // freed once they completed
}

// A task that answers an RPC ends its admission count before it finishes the call (server/augment.cc): the
// client's next call, sent the moment it has the answer, must not be refused for the task that is ending.
TEST(BatchExecutorTest, ReleasedAdmissionLetsTheNextCallInBeforeTheTaskReturns) {
  ExecutorOptions options;
  options.pools = {{"cpu", -1, 1}};
  options.max_inflight_batches_per_session = 1;
  options.max_inflight_bytes_per_session = 100;
  absl::Notification second_ran, gate;
  absl::Status before, after;
  BatchExecutor executor(options);  // after what its tasks capture: its destructor runs the last one
  ASSERT_TRUE(executor.TrySubmit({"a", "cpu", 1, 100}, [&](const WorkerInfo& w) {
    before = executor.TrySubmit({"a", "cpu", 1, 100}, [](const WorkerInfo&) {});
    w.release_admission();
    w.release_admission();  // a second call does nothing
    after = executor.TrySubmit({"a", "cpu", 1, 100}, [&](const WorkerInfo&) { second_ran.Notify(); });
  }).ok());
  // One worker: the second task runs after the first returned, so both statuses are written.
  ASSERT_TRUE(second_ran.WaitForNotificationWithTimeout(absl::Seconds(10))) << "the call after the release was refused";
  EXPECT_EQ(before.code(), absl::StatusCode::kResourceExhausted) << before;  // still counted before the release
  EXPECT_TRUE(after.ok()) << after;
  // The counts balance: the first task is not ended twice (release, then return), nor the second one's count taken.
  EXPECT_TRUE(Eventually([&] { return executor.Stats().flows.empty(); }));
  ASSERT_TRUE(executor.TrySubmit({"a", "cpu", 1, 100}, [&](const WorkerInfo&) { gate.WaitForNotification(); }).ok());
  const absl::Status full = executor.TrySubmit({"a", "cpu", 1, 100}, [](const WorkerInfo&) {});
  gate.Notify();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;  // a task that does not release counts
}

TEST(BatchExecutorTest, ShutdownRunsEveryQueuedTaskOnceAndDrainsFollowUps) {
  std::atomic<int> ran{0}, draining{0};
  const int kTasks = 200;
  {
    auto executor = std::make_unique<BatchExecutor>(2);
    BatchExecutor* ex = executor.get();
    absl::Notification gate;
    for (int i = 0; i < kTasks; ++i) {
      ex->Submit(TaskSpec{i % 2 ? "a" : "b"}, [&, ex, i](const WorkerInfo& w) {
        if (i < 2) gate.WaitForNotification();  // both workers block: the rest is queued at shutdown
        ++ran;
        draining += w.draining;
        // A task that submits a follow-up (like a stream producing its next batch) during shutdown.
        if (i % 50 == 1) ex->Submit(TaskSpec{"c"}, [&](const WorkerInfo&) { ++ran; });
      });
    }
    std::thread release([&] {
      // Opens the gate once the destructor has stopped admission (the executor lives until the gate opens).
      EXPECT_TRUE(Eventually([ex] { return !ex->TrySubmit(TaskSpec{"probe"}, [](const WorkerInfo&) {}).ok(); }));
      gate.Notify();
    });
    executor.reset();  // blocks until everything ran
    release.join();
  }
  EXPECT_EQ(ran.load(), kTasks + 4);
  EXPECT_GT(draining.load(), 0);  // tasks dequeued after the destructor started know it
}

TEST(BatchExecutorTest, TrySubmitIsRefusedWhileShuttingDown) {
  auto executor = std::make_unique<BatchExecutor>(1);
  BatchExecutor* ex = executor.get();
  absl::Notification started;
  absl::Status late;
  ex->Submit(TaskSpec{"a"}, [&](const WorkerInfo&) {
    started.Notify();
    // Accepted until the destructor, started meanwhile, stops admission.
    Eventually([&] {
      late = ex->TrySubmit(TaskSpec{"a"}, [](const WorkerInfo&) {});
      return !late.ok();
    });
  });
  started.WaitForNotification();
  executor.reset();
  EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable) << late;
}

}  // namespace
}  // namespace augmentd
