// augment/dataset/lru_cache.h — a byte-budgeted LRU map of immutable values with single-flight loading
// (internal to case_cache.h; header-only).
//
//   LruCache<HostCase> cache(/*budget_bytes=*/8ull << 30);
//   bool hit = false;
//   ASSIGN_OR_RETURN(std::shared_ptr<const HostCase> c, cache.GetOrLoad("case_000", load_fn, &hit));
//
// GetOrLoad returns the resident value (a hit, moved to the front), or runs `load` once for a key even when
// several threads ask at the same time (the others wait for it and share its result). A loaded value is kept
// if its bytes() fit the budget, evicting least-recently-used values first; a value larger than the whole
// budget is returned but not kept. Errors are returned to every waiter and never cached (the next call loads
// again), and so is a null value (a loader's way to say "serve without keeping"). Evicted values are released outside the lock (their destructors may free device memory).
// V must provide `size_t bytes() const`. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace augmentd::dataset {

struct LruCounters {
  uint64_t hits = 0, misses = 0, evictions = 0;
  uint64_t uncacheable = 0;  // misses whose value was not kept (larger than the budget, or null)
  uint64_t resident_bytes = 0, resident_entries = 0, budget_bytes = 0;
};

template <typename V>
class LruCache {
 public:
  using Value = std::shared_ptr<const V>;
  using Loader = std::function<absl::StatusOr<Value>()>;

  explicit LruCache(uint64_t budget_bytes) { counters_.budget_bytes = budget_bytes; }

  absl::StatusOr<Value> GetOrLoad(const std::string& key, const Loader& load, bool* hit = nullptr) {
    std::promise<absl::StatusOr<Value>> promise;
    std::shared_future<absl::StatusOr<Value>> waiting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end()) {
        order_.splice(order_.begin(), order_, it->second.pos);
        ++counters_.hits;
        if (hit != nullptr) *hit = true;
        return it->second.value;
      }
      if (hit != nullptr) *hit = false;
      if (auto f = loading_.find(key); f != loading_.end()) {
        waiting = f->second;  // someone else loads it: count as a hit of the in-flight load
        ++counters_.hits;
      } else {
        ++counters_.misses;
        loading_.emplace(key, promise.get_future().share());
      }
    }
    if (waiting.valid()) return waiting.get();
    absl::StatusOr<Value> loaded = load();
    std::vector<Value> evicted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (loaded.ok() && *loaded != nullptr) {
        Insert(key, *loaded, &evicted);
      } else if (loaded.ok()) {
        ++counters_.uncacheable;
      }
      loading_.erase(key);
    }
    promise.set_value(loaded);
    evicted.clear();  // destructors run outside the lock
    return loaded;
  }

  // Whether `key` is resident or being loaded.
  bool Contains(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.count(key) > 0 || loading_.count(key) > 0;
  }

  LruCounters counters() const {
    std::lock_guard<std::mutex> lock(mu_);
    return counters_;
  }

  // Keys, most recently used first.
  std::vector<std::string> Keys() const {
    std::lock_guard<std::mutex> lock(mu_);
    return std::vector<std::string>(order_.begin(), order_.end());
  }

 private:
  struct Entry {
    Value value;
    std::list<std::string>::iterator pos;
  };

  void Insert(const std::string& key, const Value& value, std::vector<Value>* evicted) {
    const uint64_t bytes = value->bytes();
    if (bytes > counters_.budget_bytes) {
      ++counters_.uncacheable;
      return;
    }
    while (counters_.resident_bytes + bytes > counters_.budget_bytes && !order_.empty()) {
      auto victim = entries_.find(order_.back());
      counters_.resident_bytes -= victim->second.value->bytes();
      evicted->push_back(std::move(victim->second.value));
      entries_.erase(victim);
      order_.pop_back();
      ++counters_.evictions;
    }
    order_.push_front(key);
    entries_.emplace(key, Entry{value, order_.begin()});
    counters_.resident_bytes += bytes;
    counters_.resident_entries = entries_.size();
  }

  mutable std::mutex mu_;
  std::list<std::string> order_;                                                  // guarded by mu_; MRU first
  std::map<std::string, Entry> entries_;                                          // guarded by mu_
  std::map<std::string, std::shared_future<absl::StatusOr<Value>>> loading_;      // guarded by mu_
  LruCounters counters_;                                                          // guarded by mu_
};

}  // namespace augmentd::dataset
