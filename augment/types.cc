#include "augment/types.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace augmentd {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kBool:
      return "bool";
  }
  return "unknown";
}

absl::StatusOr<DType> ParseDType(std::string_view name) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kInt16, DType::kBool}) {
    if (DTypeName(d) == name) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat("dtype: unknown dtype '", std::string(name), "'"));
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
      return 2;
    case DType::kInt8:
    case DType::kBool:
      return 1;
  }
  return 1;
}

bool IsFloatingDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

void HostTensor::Free::operator()(void* p) const { std::free(p); }

HostTensor HostTensor::Empty(std::vector<int64_t> shape, DType dtype) {
  HostTensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  size_t bytes = t.nbytes();
  bytes = (bytes + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  void* p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  t.storage_.reset(p);
  return t;
}

HostTensor HostTensor::CopyOf(const TensorView& view) {
  HostTensor t = Empty(view.shape, view.dtype);
  if (t.nbytes() > 0) std::memcpy(t.raw_data(), view.data, t.nbytes());
  return t;
}

}  // namespace augmentd
