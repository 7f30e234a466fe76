// augment/kernels/cuda/graph_cache.h — which batches of a CudaAugmenter (augment/cuda/engine.cc) run as a replayed
// CUDA graph: a small host-only cache from a launch key (stage mask, batch shape, output alignment) to an instantiated
// graph. Plain C++ (no CUDA headers) so that its policy is unit-tested without a GPU (graph_cache_test.cc).
//
// Policy: the first `capture_after` sightings of a key run eagerly (a one-off stage mask never pays for a capture and
// an instantiation, and every kernel of the key has been launched once before it is captured); the next sighting
// captures; later ones replay. A key whose capture failed runs eagerly while its sighting is remembered (a forgotten
// key may be captured again). At most `capacity` graphs are
// kept: storing one more destroys the least recently used; sightings of keys without a graph are remembered for at
// most 4 · capacity keys (the oldest forgotten first).
//
//   GraphCache<Key, cudaGraphExec_t> cache(64, [](cudaGraphExec_t e) { cudaGraphExecDestroy(e); });
//   cudaGraphExec_t exec;
//   switch (cache.Lookup(key, &exec)) { case kReplay: launch exec; case kCapture: capture, Store(key, e); ... }
//
// Thread-safety: none (one cache per CudaAugmenter, which is single-threaded). Key: copyable, operator==.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace augmentd::cuda {

enum class GraphAction { kEager, kCapture, kReplay };

template <typename Key, typename Exec>
class GraphCache {
 public:
  GraphCache(size_t capacity, std::function<void(Exec)> destroy, int capture_after = 1)
      : capacity_(capacity < 1 ? 1 : capacity), capture_after_(capture_after), destroy_(std::move(destroy)) {}
  ~GraphCache() { Clear(); }
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  // Counts a sighting of `key`: kReplay (and *exec) when it has a graph, kCapture when it was seen capture_after
  // times before without one (and never failed), else kEager.
  GraphAction Lookup(const Key& key, Exec* exec) {
    ++tick_;
    for (Graph& g : graphs_) {
      if (g.key == key) {
        g.last_use = tick_;
        *exec = g.exec;
        return GraphAction::kReplay;
      }
    }
    for (Sighting& s : seen_) {
      if (!(s.key == key)) continue;
      s.last_use = tick_;
      if (s.failed) return GraphAction::kEager;
      return ++s.count > capture_after_ ? GraphAction::kCapture : GraphAction::kEager;
    }
    if (seen_.size() >= 4 * capacity_) Erase(seen_, Oldest(seen_));
    seen_.push_back(Sighting{key, 1, false, tick_});
    return capture_after_ < 1 ? GraphAction::kCapture : GraphAction::kEager;
  }

  // A graph captured for `key` (after kCapture); the cache owns it from now on.
  void Store(const Key& key, Exec exec) {
    ForgetSighting(key);
    if (graphs_.size() >= capacity_) {
      const size_t i = Oldest(graphs_);
      destroy_(graphs_[i].exec);
      Erase(graphs_, i);
    }
    graphs_.push_back(Graph{key, exec, ++tick_});
  }

  // The capture of `key` failed: it runs eagerly from now on.
  void MarkFailed(const Key& key) {
    for (Sighting& s : seen_) {
      if (s.key == key) s.failed = true;
    }
  }

  // Destroys every graph and forgets every sighting (e.g. when the buffers the graphs point at are reallocated).
  void Clear() {
    for (Graph& g : graphs_) destroy_(g.exec);
    graphs_.clear();
    seen_.clear();
  }

  size_t graphs() const { return graphs_.size(); }

 private:
  struct Graph {
    Key key;
    Exec exec;
    uint64_t last_use;
  };
  struct Sighting {
    Key key;
    int count;
    bool failed;
    uint64_t last_use;
  };

  template <typename T>
  static size_t Oldest(const std::vector<T>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i].last_use < v[best].last_use) best = i;
    }
    return best;
  }
  template <typename T>
  static void Erase(std::vector<T>& v, size_t i) {
    v[i] = std::move(v.back());
    v.pop_back();
  }
  void ForgetSighting(const Key& key) {
    for (size_t i = 0; i < seen_.size(); ++i) {
      if (seen_[i].key == key) {
        Erase(seen_, i);
        return;
      }
    }
  }

  size_t capacity_;
  int capture_after_;
  std::function<void(Exec)> destroy_;
  std::vector<Graph> graphs_;
  std::vector<Sighting> seen_;
  uint64_t tick_ = 0;
};

}  // namespace augmentd::cuda
