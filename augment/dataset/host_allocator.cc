#include "augment/dataset/host_allocator.h"

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

}  // namespace

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
