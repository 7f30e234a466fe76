// augment/dataset/host_case.h — a whole case decompressed into host memory (the host tier of case_cache.h).
//
//   ASSIGN_OR_RETURN(std::shared_ptr<const CaseHandle> disk, dataset.OpenCase("case_000"));
//   ASSIGN_OR_RETURN(std::shared_ptr<const HostCase> c, HostCase::Load(*disk, DefaultHostAllocator()));
//   RETURN_IF_ERROR(loader.LoadSample(plan, c->handle(), data, n, seg, m));   // same bytes as from disk
//
// Layout: data as float32 (C, X, Y, Z) — nnU-Net stores float32, other types are converted once; the
// segmentation in its own type when that is int8 (nnU-Net's usual), else converted to int16 (1, X, Y, Z).
// handle() is a CaseHandle over in-memory arrays (same id, shapes and file paths as the disk case), so every
// crop through CaseArray::ReadBox gives exactly the bytes the disk read would (crop_and_pad_nd semantics,
// conversion to float32 / int16 at crop time as before). Errors: the reader's (DATA_LOSS / NOT_FOUND naming
// the file) and RESOURCE_EXHAUSTED when the allocator fails. Immutable, thread-safe.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "augment/dataset/host_allocator.h"
#include "augment/dataset/nnunet_dataset.h"

namespace augmentd::dataset {

class HostCase {
 public:
  static absl::StatusOr<std::shared_ptr<const HostCase>> Load(const CaseHandle& disk,
                                                              std::shared_ptr<HostAllocator> allocator);

  const CaseHandle& handle() const { return *handle_; }
  const std::string& id() const { return handle_->id(); }
  const float* data() const { return data_; }         // (C, X, Y, Z)
  const void* seg() const { return seg_; }            // (1, X, Y, Z) of seg_dtype()
  DType seg_dtype() const { return handle_->seg().dtype(); }
  const Shape& data_shape() const { return handle_->data().shape(); }
  size_t data_bytes() const;
  size_t seg_bytes() const;
  size_t bytes() const { return data_bytes() + seg_bytes(); }

 private:
  HostCase() = default;
  std::unique_ptr<const CaseHandle> handle_;
  const float* data_ = nullptr;
  const void* seg_ = nullptr;
};

}  // namespace augmentd::dataset
