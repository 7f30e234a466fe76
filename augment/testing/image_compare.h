// augment/testing/image_compare.h — reading and comparing engine output images in the CPU-vs-CUDA tests (test-only,
// header-only): values of any output dtype as float, a channel's range, and the tolerance.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "augment/kernels/cpu_half.h"
#include "augment/types.h"

namespace augmentd::testing {

// Element i of a float32 / float16 / bfloat16 tensor as float.
inline float ValueAt(const HostTensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat16:
      return kernels::HalfBitsToFloat(t.data<uint16_t>()[i]);
    case DType::kBFloat16:
      return kernels::BFloat16BitsToFloat(t.data<uint16_t>()[i]);
    default:
      return t.data<float>()[i];
  }
}

// max − min of elements [base, base + n) (at least 1e-6, so it can divide).
inline double RangeOf(const HostTensor& t, int64_t base, int64_t n) {
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t o = 0; o < n; ++o) {
    lo = std::min(lo, ValueAt(t, base + o));
    hi = std::max(hi, ValueAt(t, base + o));
  }
  return std::max(1e-6, static_cast<double>(hi) - lo);
}

// The CPU-vs-CUDA tolerance of a reference value r in a channel of `range`, stored in `dtype`: 1e-4 of the range
// plus the storage rounding (none for float32).
inline double ImageTolerance(double range, DType dtype, double r) {
  double tol = 1e-4 * range;
  if (dtype == DType::kFloat16) tol += std::fabs(r) / 1024;
  if (dtype == DType::kBFloat16) tol += std::fabs(r) / 128;
  return tol;
}

}  // namespace augmentd::testing
