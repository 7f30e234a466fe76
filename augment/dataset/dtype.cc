#include "augment/dataset/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace augmentd::dataset {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  char kind;  // numpy kind: 'i', 'u', 'f'
  size_t size;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kInt8, "int8", 'i', 1},       {DType::kUInt8, "uint8", 'u', 1},     {DType::kInt16, "int16", 'i', 2},
    {DType::kUInt16, "uint16", 'u', 2},   {DType::kInt32, "int32", 'i', 4},     {DType::kInt64, "int64", 'i', 8},
    {DType::kFloat32, "float32", 'f', 4}, {DType::kFloat64, "float64", 'f', 8},
};

const DTypeInfo& Info(DType t) { return kInfos[static_cast<int>(t)]; }

// One element From -> To. A plain static_cast of a floating-point value outside the integer type's range is
// undefined behaviour (UBSan in RegionCopyStreamTest) whose result differs between CPUs. Defined here: a value
// truncated toward zero that fits int64 converts like the integer it is (two's-complement wrap, as an integer ->
// narrower integer conversion does: pad -1 in uint8 is 255, as before), larger magnitudes saturate, NaN is 0.
// Integer -> integer and anything -> float are the usual conversions.
template <typename To, typename From>
To ConvertOne(From v) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To{0};
    constexpr double kInt64Bound = 9223372036854775808.0;  // 2^63
    const double t = std::trunc(static_cast<double>(v));
    if (t >= kInt64Bound) return std::numeric_limits<To>::max();
    if (t < -kInt64Bound) return std::numeric_limits<To>::lowest();
    return static_cast<To>(static_cast<int64_t>(t));
  }
  return static_cast<To>(v);
}

// `src` and `dst` may be misaligned (stored .npz members and .npy files with odd header lengths are mapped in
// place; destinations are byte offsets into slots): elements are loaded and stored with memcpy, which compiles to
// plain unaligned loads and stores (found by tests/fuzz/npy_fuzz and UBSan).
template <typename To, typename From>
void ConvertTyped(const From* src, To* dst, size_t n) {
  const auto* in = reinterpret_cast<const unsigned char*>(src);
  auto* out = reinterpret_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, in + i * sizeof(From), sizeof(From));
    const To w = ConvertOne<To>(v);
    std::memcpy(out + i * sizeof(To), &w, sizeof(To));
  }
}

// Type-erased ConvertTyped (ElementConverter's table entries).
template <typename From, typename To>
void ConvertErased(const void* src, void* dst, size_t n) {
  ConvertTyped(static_cast<const From*>(src), static_cast<To*>(dst), n);
}

void CopyBytes1(const void* src, void* dst, size_t n) { std::memcpy(dst, src, n); }
void CopyBytes2(const void* src, void* dst, size_t n) { std::memcpy(dst, src, 2 * n); }
void CopyBytes4(const void* src, void* dst, size_t n) { std::memcpy(dst, src, 4 * n); }
void CopyBytes8(const void* src, void* dst, size_t n) { std::memcpy(dst, src, 8 * n); }

// Second dispatch level: the source type is known, pick the destination type.
template <typename From>
ConvertFn ConverterFrom(DType to) {
  switch (to) {
    case DType::kInt8:
      return ConvertErased<From, int8_t>;
    case DType::kUInt8:
      return ConvertErased<From, uint8_t>;
    case DType::kInt16:
      return ConvertErased<From, int16_t>;
    case DType::kUInt16:
      return ConvertErased<From, uint16_t>;
    case DType::kInt32:
      return ConvertErased<From, int32_t>;
    case DType::kInt64:
      return ConvertErased<From, int64_t>;
    case DType::kFloat32:
      return ConvertErased<From, float>;
    case DType::kFloat64:
      return ConvertErased<From, double>;
  }
  return nullptr;
}

template <typename T>
void FillTyped(void* dst, size_t n, double value) {  // dst may be misaligned, as in ConvertTyped
  const T w = ConvertOne<T>(value);
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; ++i) std::memcpy(out + i * sizeof(T), &w, sizeof(T));
}

}  // namespace

size_t DTypeSize(DType t) { return Info(t).size; }

const char* DTypeName(DType t) { return Info(t).name; }

absl::StatusOr<DType> DTypeFromName(const std::string& name) {
  for (const DTypeInfo& info : kInfos) {
    if (name == info.name) return info.type;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

absl::StatusOr<DType> DTypeFromNumpyDescr(const std::string& descr) {
  if (descr.size() >= 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=')) {
    const char kind = descr[1];
    const std::string digits = descr.substr(2);
    if (digits.size() == 1 && digits[0] >= '1' && digits[0] <= '8') {
      const size_t size = static_cast<size_t>(digits[0] - '0');
      // '|' is only meaningful for one-byte types; numpy writes '<' for wider ones on little-endian hosts.
      if (descr[0] != '|' || size == 1) {
        for (const DTypeInfo& info : kInfos) {
          if (info.kind == kind && info.size == size) return info.type;
        }
      }
    }
  }
  return absl::UnimplementedError(
      absl::StrCat("unsupported numpy dtype '", descr,
                   "' (supported: little-endian int8/uint8/int16/uint16/int32/int64/float32/float64)"));
}

ConvertFn ElementConverter(DType from, DType to) {
  if (from == to) {
    switch (DTypeSize(from)) {
      case 1:
        return CopyBytes1;
      case 2:
        return CopyBytes2;
      case 4:
        return CopyBytes4;
      default:
        return CopyBytes8;
    }
  }
  switch (from) {
    case DType::kInt8:
      return ConverterFrom<int8_t>(to);
    case DType::kUInt8:
      return ConverterFrom<uint8_t>(to);
    case DType::kInt16:
      return ConverterFrom<int16_t>(to);
    case DType::kUInt16:
      return ConverterFrom<uint16_t>(to);
    case DType::kInt32:
      return ConverterFrom<int32_t>(to);
    case DType::kInt64:
      return ConverterFrom<int64_t>(to);
    case DType::kFloat32:
      return ConverterFrom<float>(to);
    case DType::kFloat64:
      return ConverterFrom<double>(to);
  }
  return nullptr;
}

void ConvertElements(DType from, const void* src, DType to, void* dst, size_t n) {
  ElementConverter(from, to)(src, dst, n);
}

void FillElements(DType t, void* dst, size_t n, double value) {
  switch (t) {
    case DType::kInt8:
      return FillTyped<int8_t>(dst, n, value);
    case DType::kUInt8:
      return FillTyped<uint8_t>(dst, n, value);
    case DType::kInt16:
      return FillTyped<int16_t>(dst, n, value);
    case DType::kUInt16:
      return FillTyped<uint16_t>(dst, n, value);
    case DType::kInt32:
      return FillTyped<int32_t>(dst, n, value);
    case DType::kInt64:
      return FillTyped<int64_t>(dst, n, value);
    case DType::kFloat32:
      return FillTyped<float>(dst, n, value);
    case DType::kFloat64:
      return FillTyped<double>(dst, n, value);
  }
}

}  // namespace augmentd::dataset
