// augment/thread_pool.h — minimal parallel-for over independent work items (internal).
//
//   ParallelFor(batch, /*threads=*/4, [&](int64_t i) { ProcessSample(i); });
//
// Items are claimed dynamically by up to `threads` std::threads (the calling thread is one of them); each item
// runs single-threaded. Results must not depend on which thread runs an item (the engine keys all randomness by
// sample index). Exceptions thrown by `fn` are caught and rethrown on the calling thread (first one wins). If a
// thread cannot be started, the items run on the threads that were (at least the calling one).
#pragma once

#include <cstdint>
#include <functional>

namespace augmentd {

// threads <= 0: std::thread::hardware_concurrency().
void ParallelFor(int64_t n, int threads, const std::function<void(int64_t)>& fn);

}  // namespace augmentd
