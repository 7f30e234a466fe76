// server/fair_queue.h — weighted fair queuing over per-flow FIFO queues (the dispatch order of the batch
// scheduler, server/executor.h). A flow is one session; its weight is SessionConfig.weight.
//
// Algorithm: start-time fair queuing (SFQ, Goyal et al. 1996), which stays fair with several servers (workers)
// and with flows that come and go. Each item gets, when pushed,
//     start  = max(V, finish tag of the flow's previous item)      finish = start + cost / weight
// and Pop returns the item with the smallest start tag (ties: smallest finish, then arrival order). The
// virtual time V is the start tag of the item dispatched last. Consequences:
//   - saturated flows are served in proportion to their weights (1:2:4 → 1/7, 2/7, 4/7 of the cost);
//   - a new (or idle) flow starts at V, not behind another flow's backlog: a session with thousands of queued
//     batches does not starve one that just arrived, and an idle session cannot bank credit for later;
//   - within a flow, items leave in FIFO order.
// Cost is chosen by the caller (the server passes the batch's estimated bytes: server/executor.h).
//
// Not thread-safe: the owner (BatchExecutor) serialises access under its mutex.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace augmentd {

template <typename T>
class FairQueue {
 public:
  // Queues `item` at the end of `flow`. weight ≤ 0 counts as 1; cost ≤ 0 counts as 1.
  void Push(const std::string& flow, double weight, double cost, T item) {
    Flow& f = flows_[flow];
    if (weight <= 0) weight = 1;
    if (cost <= 0) cost = 1;
    Entry e;
    e.start = std::max(virtual_time_, f.last_finish);
    e.finish = e.start + cost / weight;
    e.seq = next_seq_++;
    e.item = std::move(item);
    f.last_finish = e.finish;
    f.items.push_back(std::move(e));
    ++size_;
  }

  // Removes and returns the next item by SFQ order (nullopt when empty); `flow` receives its flow.
  std::optional<T> Pop(std::string* flow = nullptr) {
    auto best = flows_.end();
    for (auto it = flows_.begin(); it != flows_.end(); ++it) {
      if (it->second.items.empty()) continue;
      if (best == flows_.end() || Before(it->second.items.front(), best->second.items.front())) best = it;
    }
    if (best == flows_.end()) return std::nullopt;
    Entry e = std::move(best->second.items.front());
    best->second.items.pop_front();
    --size_;
    virtual_time_ = std::max(virtual_time_, e.start);
    if (flow != nullptr) *flow = best->first;
    Prune();
    return std::move(e.item);
  }

  // Removes every item of `flow` (and its state) and returns them in FIFO order.
  std::vector<T> RemoveFlow(const std::string& flow) {
    std::vector<T> out;
    auto it = flows_.find(flow);
    if (it == flows_.end()) return out;
    for (Entry& e : it->second.items) out.push_back(std::move(e.item));
    size_ -= it->second.items.size();
    flows_.erase(it);
    return out;
  }

  // Removes every item of every flow, in no particular order.
  std::vector<T> Clear() {
    std::vector<T> out;
    for (auto& [name, f] : flows_) {
      for (Entry& e : f.items) out.push_back(std::move(e.item));
    }
    flows_.clear();
    size_ = 0;
    return out;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t size(const std::string& flow) const {
    auto it = flows_.find(flow);
    return it == flows_.end() ? 0 : it->second.items.size();
  }
  double virtual_time() const { return virtual_time_; }

 private:
  struct Entry {
    double start = 0, finish = 0;
    uint64_t seq = 0;
    T item;
  };
  struct Flow {
    double last_finish = 0;
    std::deque<Entry> items;
  };

  static bool Before(const Entry& a, const Entry& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.finish != b.finish) return a.finish < b.finish;
    return a.seq < b.seq;
  }

  // Forgets idle flows whose tags are behind V: they would start at V anyway, so nothing is lost.
  void Prune() {
    for (auto it = flows_.begin(); it != flows_.end();) {
      if (it->second.items.empty() && it->second.last_finish <= virtual_time_) {
        it = flows_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::map<std::string, Flow> flows_;
  double virtual_time_ = 0;
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
};

}  // namespace augmentd
