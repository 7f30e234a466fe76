// ParamArena and ChainWorkspace of the generic CUDA chain (cuda/stage.h).
#include "augment/cuda/stage.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "augment/status_macros.h"

namespace augmentd {

namespace {
constexpr size_t kArenaAlign = 16;
constexpr size_t kArenaMin = size_t{64} << 10;  // first capacity of the arena's buffers
size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

ParamArena::~ParamArena() {
  if (uploaded_ != nullptr) {
    cudaEventSynchronize(uploaded_);
    cudaEventDestroy(uploaded_);
  }
  if (pinned_ != nullptr) cudaFreeHost(pinned_);
  if (device_ != nullptr) cudaFree(device_);
  cudaGetLastError();
}

void ParamArena::Reset() { host_.clear(); }

size_t ParamArena::Append(const void* data, size_t bytes) {
  const size_t offset = RoundUp(host_.size(), kArenaAlign);
  host_.resize(offset + bytes);
  if (bytes > 0) std::memcpy(host_.data() + offset, data, bytes);
  return offset;
}

absl::Status ParamArena::Upload(cudaStream_t stream) {
  const size_t bytes = RoundUp(host_.size(), kArenaAlign);
  if (bytes == 0) return absl::OkStatus();
  if (uploaded_ == nullptr) {
    RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&uploaded_, cudaEventDisableTiming), "cudaEventCreate"));
  } else {
    // The previous upload still reads the pinned buffer until it has executed.
    RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(uploaded_), "cudaEventSynchronize(arena)"));
  }
  // Growth at least doubles from kArenaMin: the record count varies per batch (stage rounds, radii), and every
  // reallocation synchronises the device (cudaFree, cudaFreeHost) — a handful in a run, not one per new maximum.
  if (bytes > pinned_bytes_) {
    const size_t cap = std::max({bytes, 2 * pinned_bytes_, kArenaMin});
    if (pinned_ != nullptr) RETURN_IF_ERROR(CudaStatus(cudaFreeHost(pinned_), "cudaFreeHost(arena)"));
    pinned_ = nullptr;
    pinned_bytes_ = 0;
    RETURN_IF_ERROR(CudaStatus(cudaMallocHost(&pinned_, cap), "cudaMallocHost(arena)"));
    pinned_bytes_ = cap;
  }
  if (bytes > device_bytes_) {
    const size_t cap = std::max({bytes, 2 * device_bytes_, kArenaMin});
    // cudaFree synchronises the device: kernels of an earlier batch reading the old buffer have finished.
    if (device_ != nullptr) RETURN_IF_ERROR(CudaStatus(cudaFree(device_), "cudaFree(arena)"));
    device_ = nullptr;
    device_bytes_ = 0;
    RETURN_IF_ERROR(CudaStatus(cudaMalloc(&device_, cap), "cudaMalloc(arena)"));
    device_bytes_ = cap;
  }
  std::memcpy(pinned_, host_.data(), host_.size());
  RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(device_, pinned_, bytes, cudaMemcpyHostToDevice, stream),
                                  "cudaMemcpyAsync(arena)"));
  return CudaStatus(cudaEventRecord(uploaded_, stream), "cudaEventRecord(arena)");
}

const void* ParamArena::device(size_t offset) const { return static_cast<const char*>(device_) + offset; }

ChainWorkspace::~ChainWorkspace() {
  for (auto& [p, bytes] : slots_)
    if (p != nullptr) cudaFree(p);
  cudaGetLastError();
}

size_t ChainWorkspace::CapacityOf(const void* p) const {
  for (const auto& [buf, cap] : slots_)
    if (buf != nullptr && buf == p) return cap;
  return 0;
}

void* ChainWorkspace::Exchange(int slot, const void* held) {
  if (slot < 0 || static_cast<size_t>(slot) >= slots_.size() || held == nullptr) return nullptr;
  auto& mine = slots_[static_cast<size_t>(slot)];
  if (mine.first == nullptr || mine.first == held) return nullptr;
  for (auto& other : slots_) {
    if (other.first != held) continue;
    if (other.second != mine.second) return nullptr;
    std::swap(other.first, mine.first);
    return other.first;
  }
  return nullptr;
}

absl::StatusOr<void*> ChainWorkspace::Scratch(int slot, size_t bytes) {
  if (slot < 0) return absl::InvalidArgumentError("ChainWorkspace: negative slot");
  if (static_cast<size_t>(slot) >= slots_.size()) slots_.resize(static_cast<size_t>(slot) + 1, {nullptr, 0});
  auto& [p, cap] = slots_[static_cast<size_t>(slot)];
  bytes = RoundUp(bytes == 0 ? 1 : bytes, 256);
  if (p != nullptr && cap >= bytes) return p;
  if (p != nullptr) RETURN_IF_ERROR(CudaStatus(cudaFree(p), "cudaFree(chain workspace)"));  // synchronises
  p = nullptr;
  cap = 0;
  RETURN_IF_ERROR(CudaStatus(cudaMalloc(&p, bytes), "cudaMalloc(chain workspace)"));
  cap = bytes;
  return p;
}

}  // namespace augmentd
