// augment/types.h — tensor types of the engine's public API (torch-free).
//
// The engine exchanges tensors with its callers through two small types:
//   * TensorView: a non-owning view (pointer + shape + dtype) of a dense, C-ordered host buffer;
//   * HostTensor: an owning, dense, C-ordered host buffer (64-byte aligned).
//
//   std::vector<float> buf(2 * 64 * 64 * 64);
//   augmentd::TensorView image{buf.data(), {1, 2, 64, 64, 64}, augmentd::DType::kFloat32};
//   augmentd::HostTensor out = augmentd::HostTensor::Empty({1, 2, 64, 64, 64}, augmentd::DType::kFloat32);
//   float* p = out.data<float>();
//
// No LibTorch or protobuf types appear here (DESIGN.md: the server includes these headers).
// Thread-safety: HostTensor is a value type (movable, not copyable); concurrent reads are fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace augmentd {

// Element types. Images: float32/float16/bfloat16. Labels: int8/int16. Region targets: bool (1 byte).
enum class DType : uint8_t { kFloat32, kFloat16, kBFloat16, kInt8, kInt16, kBool };

// Lower-case numpy-style name: "float32", "float16", "bfloat16", "int8", "int16", "bool".
std::string_view DTypeName(DType dtype);
// Parses DTypeName() output; INVALID_ARGUMENT for anything else.
absl::StatusOr<DType> ParseDType(std::string_view name);
// Size of one element in bytes.
size_t DTypeSize(DType dtype);
bool IsFloatingDType(DType dtype);

// Product of the dimensions (1 for rank 0).
int64_t NumElements(const std::vector<int64_t>& shape);
// "[2, 64, 64]" for messages.
std::string ShapeString(const std::vector<int64_t>& shape);

// Non-owning view of a dense C-ordered host buffer. The caller keeps `data` alive while the view is used.
struct TensorView {
  const void* data = nullptr;
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;

  int64_t numel() const { return NumElements(shape); }
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
};

// Owning dense C-ordered host tensor. Move-only. Storage is 64-byte aligned.
class HostTensor {
 public:
  HostTensor() = default;
  // Uninitialised storage of the given shape/dtype.
  static HostTensor Empty(std::vector<int64_t> shape, DType dtype);
  // Deep copy of a view.
  static HostTensor CopyOf(const TensorView& view);

  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;

  const std::vector<int64_t>& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return NumElements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype_); }
  bool defined() const { return storage_ != nullptr; }

  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }
  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  TensorView view() const { return TensorView{raw_data(), shape_, dtype_}; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> storage_;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::kFloat32;
};

}  // namespace augmentd
