#include "augment/dataset/host_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace augmentd::dataset {
namespace {

class MallocAllocator final : public HostAllocator {
 public:
  void* Allocate(size_t bytes) override { return std::malloc(bytes == 0 ? 1 : bytes); }
  void Free(void* p, size_t) override { std::free(p); }
  const char* name() const override { return "plain"; }
};

class HugePageAllocator final : public HostAllocator {
 public:
  static constexpr size_t kHuge = size_t{2} << 20;
  static size_t Rounded(size_t bytes) { return (std::max<size_t>(bytes, 1) + kHuge - 1) / kHuge * kHuge; }
  void* Allocate(size_t bytes) override {
    if (bytes > SIZE_MAX - 2 * kHuge) return nullptr;  // Rounded(bytes) + kHuge would wrap
    // Over-allocate by one huge page so that the returned range starts on a 2 MiB boundary.
    const size_t length = Rounded(bytes) + kHuge;
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    const uintptr_t base = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (base + kHuge - 1) / kHuge * kHuge;
    if (aligned > base) ::munmap(p, aligned - base);
    const size_t tail = base + length - (aligned + Rounded(bytes));
    if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + Rounded(bytes)), tail);
    ::madvise(reinterpret_cast<void*>(aligned), Rounded(bytes), MADV_HUGEPAGE);  // advisory: failure is harmless
    return reinterpret_cast<void*>(aligned);
  }
  void Free(void* p, size_t bytes) override { ::munmap(p, Rounded(bytes)); }
  const char* name() const override { return "huge"; }
};

}  // namespace

std::shared_ptr<HostAllocator> HugePageHostAllocator() {
  static const std::shared_ptr<HostAllocator> a = std::make_shared<HugePageAllocator>();
  return a;
}

std::shared_ptr<HostAllocator> PlainHostAllocator() {
  static const std::shared_ptr<HostAllocator> a = std::make_shared<MallocAllocator>();
  return a;
}

std::shared_ptr<HostAllocator> DefaultHostAllocator() {
  std::shared_ptr<HostAllocator> pinned = PinnedHostAllocator();
  return pinned != nullptr ? pinned : PlainHostAllocator();
}

absl::StatusOr<HostBuffer> HostBuffer::Allocate(std::shared_ptr<HostAllocator> allocator, size_t bytes) {
  HostBuffer b;
  b.data_ = allocator->Allocate(bytes);
  if (b.data_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes of ", allocator->name(), " host memory"));
  }
  b.size_ = bytes;
  b.allocator_ = std::move(allocator);
  return b;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    allocator_ = std::move(o.allocator_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void HostBuffer::Reset() {
  if (data_ != nullptr) allocator_->Free(data_, size_);
  data_ = nullptr;
  size_ = 0;
  allocator_.reset();
}

}  // namespace augmentd::dataset
