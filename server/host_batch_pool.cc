// Reusable host input buffers (host_batch_pool.h).
#include "server/host_batch_pool.h"

#include <algorithm>
#include <utility>

#include "augment/status_macros.h"

namespace augmentd {

HostBatchPool::HostBatchPool(size_t data_elems, size_t seg_elems, size_t max_idle,
                             std::shared_ptr<dataset::HostAllocator> allocator)
    : data_elems_(data_elems), seg_elems_(seg_elems), max_idle_(max_idle), allocator_(std::move(allocator)) {}

HostBatchPool::Lease::~Lease() {
  if (pool_ != nullptr && data_.data() != nullptr) pool_->Return(std::move(data_), std::move(seg_));
}

absl::StatusOr<HostBatchPool::Lease> HostBatchPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      Pair p = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(p.data), std::move(p.seg));
    }
  }
  // Never zero bytes: a seg-less batch still gets a distinct, valid pointer.
  ASSIGN_OR_RETURN(dataset::HostBuffer data,
                   dataset::HostBuffer::Allocate(allocator_, std::max<size_t>(1, data_elems_ * sizeof(float))));
  ASSIGN_OR_RETURN(dataset::HostBuffer seg,
                   dataset::HostBuffer::Allocate(allocator_, std::max<size_t>(1, seg_elems_ * sizeof(int16_t))));
  std::lock_guard<std::mutex> lock(mu_);
  ++allocated_;
  return Lease(this, std::move(data), std::move(seg));
}

void HostBatchPool::Return(dataset::HostBuffer data, dataset::HostBuffer seg) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(Pair{std::move(data), std::move(seg)});
  // else: the buffers are freed when this returns, after the lock is released
}

size_t HostBatchPool::idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_.size();
}

size_t HostBatchPool::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocated_;
}

}  // namespace augmentd
