// augment/dataset/host_allocator.h — pluggable host memory for the case cache (case_cache.h).
//
//   std::shared_ptr<HostAllocator> a = DefaultHostAllocator();   // pinned if CUDA build + GPU, else plain
//   HostBuffer b = HostBuffer::Allocate(a, 64 << 20);
//   if (!b.ok()) ...;                                            // RESOURCE_EXHAUSTED naming the size
//
// Pinned (page-locked, cudaHostAlloc) memory makes host→device uploads of cached cases DMA transfers; the
// plain allocator is std::malloc; the huge-page one suits reused output buffers of box reads.
// DefaultHostAllocator() picks pinned memory when the build has CUDA and a GPU is present (checked once), plain
// otherwise. Allocators are thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace augmentd::dataset {

class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  // nullptr on failure.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* p, size_t bytes) = 0;
  virtual const char* name() const = 0;  // "plain" / "pinned"
};

// std::malloc / std::free.
std::shared_ptr<HostAllocator> PlainHostAllocator();
// Anonymous mmap rounded up to 2 MiB and marked MADV_HUGEPAGE before the first touch ("huge"): transparent
// huge pages where the kernel allows them (THP "madvise" or "always"), else ordinary pages. For large output
// buffers that box reads fill: a 205³ float box spans 8,400 4-KiB pages, written 820-byte row by row in runs
// of 32 rows per plane; with 4-KiB pages the TLB misses cost about as much as the stores (dataset_bench).
std::shared_ptr<HostAllocator> HugePageHostAllocator();
// cudaHostAlloc / cudaFreeHost; nullptr when the build has no CUDA or no GPU is visible.
std::shared_ptr<HostAllocator> PinnedHostAllocator();
// PinnedHostAllocator() if available, else PlainHostAllocator().
std::shared_ptr<HostAllocator> DefaultHostAllocator();

// An owned allocation (move-only); frees through its allocator.
class HostBuffer {
 public:
  HostBuffer() = default;
  static absl::StatusOr<HostBuffer> Allocate(std::shared_ptr<HostAllocator> allocator, size_t bytes);
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { Reset(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }
  void Reset();

 private:
  std::shared_ptr<HostAllocator> allocator_;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace augmentd::dataset
