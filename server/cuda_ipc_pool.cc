// CudaWorkerPool (server/cuda_ipc_slots.h): builds with and without CUDA.
#include "server/cuda_ipc_slots.h"

namespace augmentd {

void CudaWorkerPool::Add(std::unique_ptr<CudaWorker> worker) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(worker));
}

absl::StatusOr<CudaWorkerPool::Lease> CudaWorkerPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<CudaWorker> w = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(w));
    }
  }
  absl::StatusOr<std::unique_ptr<CudaWorker>> w = CudaWorker::Create(spec_, device_);
  if (!w.ok()) return w.status();
  std::lock_guard<std::mutex> lock(mu_);
  ++created_;
  return Lease(this, *std::move(w));
}

size_t CudaWorkerPool::created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

}  // namespace augmentd
