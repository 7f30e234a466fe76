// server/host_batch_pool.h — reusable host input buffers for a dataset-mode session's host path.
//
//   HostBatchPool pool(data_elems, seg_elems);                 // sizes of one batch: B·C·P floats, B·P int16
//   ASSIGN_OR_RETURN(HostBatchPool::Lease buf, pool.Acquire());
//   loader.LoadBatchInto(b, buf.data(), pool.data_elems(), buf.seg(), pool.seg_elems());
//   ...                                                        // the engine reads buf; the lease returns it
//
// Why: a fresh (B, C, *patch) batch per call costs a zero fill, one page fault per 4 KiB and an munmap (≈ 100 MB
// for B = 2, 205³); box reads into a reused, huge-page-backed buffer fault nothing in the steady state
// (augment/dataset/host_allocator.h, bench/results/2026-11-30-dataset-cpu-s4.md).
// Contract: Acquire() hands out an idle buffer or allocates one (RESOURCE_EXHAUSTED naming the size when the
// allocation fails); the pool keeps at most `max_idle` idle buffers (the rest are freed on return), so it holds
// as many buffers as batches were ever loaded at once, capped. Contents of an acquired buffer are unspecified.
// Thread-safe; a Lease must not outlive its pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/dataset/host_allocator.h"

namespace augmentd {

class HostBatchPool {
 public:
  HostBatchPool(size_t data_elems, size_t seg_elems, size_t max_idle = 4,
                std::shared_ptr<dataset::HostAllocator> allocator = dataset::HugePageHostAllocator());

  class Lease {
   public:
    Lease(Lease&& o) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    float* data() const { return static_cast<float*>(data_.data()); }
    int16_t* seg() const { return static_cast<int16_t*>(seg_.data()); }

   private:
    friend class HostBatchPool;
    Lease(HostBatchPool* pool, dataset::HostBuffer data, dataset::HostBuffer seg)
        : pool_(pool), data_(std::move(data)), seg_(std::move(seg)) {}
    HostBatchPool* pool_;
    dataset::HostBuffer data_, seg_;
  };

  absl::StatusOr<Lease> Acquire();
  size_t data_elems() const { return data_elems_; }
  size_t seg_elems() const { return seg_elems_; }
  size_t idle() const;       // buffers waiting for reuse
  size_t allocated() const;  // buffers allocated since construction

 private:
  struct Pair {
    dataset::HostBuffer data, seg;
  };
  void Return(dataset::HostBuffer data, dataset::HostBuffer seg);

  const size_t data_elems_, seg_elems_, max_idle_;
  const std::shared_ptr<dataset::HostAllocator> allocator_;
  mutable std::mutex mu_;
  std::vector<Pair> idle_;  // guarded by mu_
  size_t allocated_ = 0;    // guarded by mu_
};

}  // namespace augmentd
