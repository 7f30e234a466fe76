#include "augment/dataset/host_case.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace augmentd::dataset {
namespace {

// A case array whose elements live in an owned host buffer (read through CaseArray's MappedData path).
class MemoryCaseArray final : public CaseArray {
 public:
  MemoryCaseArray(std::string path, Shape shape, DType dtype, HostBuffer buffer)
      : CaseArray(std::move(path), std::move(shape), dtype), buffer_(std::move(buffer)) {}

 protected:
  const void* MappedData() const override { return buffer_.data(); }

 private:
  HostBuffer buffer_;
};

absl::StatusOr<std::unique_ptr<CaseArray>> Decode(const CaseArray& disk, DType dtype,
                                                  const std::shared_ptr<HostAllocator>& allocator) {
  const size_t bytes = static_cast<size_t>(NumElements(disk.shape())) * DTypeSize(dtype);
  absl::StatusOr<HostBuffer> buffer = HostBuffer::Allocate(allocator, bytes);
  if (!buffer.ok()) return absl::Status(buffer.status().code(), absl::StrCat(disk.path(), ": ", buffer.status().message()));
  if (absl::Status st = disk.ReadAll(dtype, buffer->data(), bytes); !st.ok()) return st;
  return std::unique_ptr<CaseArray>(new MemoryCaseArray(disk.path(), disk.shape(), dtype, *std::move(buffer)));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const HostCase>> HostCase::Load(const CaseHandle& disk,
                                                               std::shared_ptr<HostAllocator> allocator) {
  absl::StatusOr<std::unique_ptr<CaseArray>> data = Decode(disk.data(), DType::kFloat32, allocator);
  if (!data.ok()) return data.status();
  const DType seg_type = disk.seg().dtype() == DType::kInt8 ? DType::kInt8 : DType::kInt16;
  absl::StatusOr<std::unique_ptr<CaseArray>> seg = Decode(disk.seg(), seg_type, allocator);
  if (!seg.ok()) return seg.status();
  std::unique_ptr<CaseArray> prev;  // cascade: the previous stage's segmentation, decoded as int16
  if (disk.seg_prev() != nullptr) {
    absl::StatusOr<std::unique_ptr<CaseArray>> p = Decode(*disk.seg_prev(), DType::kInt16, allocator);
    if (!p.ok()) return p.status();
    prev = *std::move(p);
  }
  std::shared_ptr<HostCase> c(new HostCase());
  c->handle_ = std::make_unique<const CaseHandle>(disk.id(), *std::move(data), *std::move(seg), std::move(prev));
  c->data_ = static_cast<const float*>(c->handle_->data().ElementData());
  c->seg_ = c->handle_->seg().ElementData();
  return std::shared_ptr<const HostCase>(std::move(c));
}

size_t HostCase::data_bytes() const { return static_cast<size_t>(NumElements(data_shape())) * sizeof(float); }

size_t HostCase::seg_bytes() const {
  const CaseArray* prev = handle_->seg_prev();
  return static_cast<size_t>(NumElements(handle_->seg().shape())) * DTypeSize(seg_dtype()) +
         (prev != nullptr ? static_cast<size_t>(NumElements(prev->shape())) * sizeof(int16_t) : 0);
}

}  // namespace augmentd::dataset
