// augment/kernels/cuda/spatial_math.h — exact arithmetic shortcuts of the spatial kernel (spatial.cu), host and device
// (host tests: spatial_math_test.cc):
//  * the float16 rounding of the label vote without conversion instructions: bgv2 compares the per-label scores after
//    `.half()`, so the kernel needs fl16(v) only to compare scores, and the integer form below costs a few integer
//    operations instead of two conversions (which issue at a quarter of the rate of float arithmetic);
//  * the IEEE quotient u / d by a per-launch constant d from its reciprocal: 3 instructions instead of the ~10 of a
//    division (reciprocal, refinement, range check and branch).
#pragma once

#include <cstdint>

#include "augment/kernels/cpu_half.h"

#include <cmath>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace augmentd::cuda {

// The float32 bits of fl16(v) (round to nearest even) for 0 <= v < 65520 (scores are <= 1000): comparing two results
// as unsigned integers compares the rounded values (non-negative floats order like their bits). Normal halves
// (v >= 2^-14) keep the top 10 mantissa bits with ties to even; smaller values go through the exact conversion.
AUGMENTD_KERNEL_HD uint32_t HalfRoundedBits(float v) {
  const uint32_t x = kernels::FloatBits(v);
  if (x < 0x38800000u) {  // below 2^-14: half subnormals (rare; exact conversion)
#if defined(__CUDA_ARCH__)
    return kernels::FloatBits(__half2float(__float2half_rn(v)));
#else
    return kernels::FloatBits(kernels::RoundToHalf(v));
#endif
  }
  return (x + 0x0FFFu + ((x >> 13) & 1u)) & ~0x1FFFu;
}

// fl16(v) > 0 for v >= 0, without rounding: v rounds to a positive half exactly when v > 2^-25 (2^-25 itself is the
// tie between 0 and the smallest subnormal 2^-24, which goes to the even 0).
AUGMENTD_KERNEL_HD bool HalfRoundsPositive(float v) { return v > 2.98023223876953125e-08f; }

// u / d rounded to nearest even, given rcp = RN(1/d) (the float division 1.f / d on the host): q = RN(u·rcp) is within
// one ulp of u/d, so r = u − d·q is exact in a fused multiply-add and RN(q + r·rcp) is the correctly rounded quotient
// (Markstein's theorem) while u, d and u/d are normal floats; with u = ±0 the result is +0 (the kernel only adds 1 to
// it). The spatial kernel divides grid coordinates |u| < 2^24 by S/2 in [0.5, 2048].
AUGMENTD_KERNEL_HD float DivByReciprocal(float u, float d, float rcp) {
#if defined(__CUDA_ARCH__)
  const float q = __fmul_rn(u, rcp);
  return __fmaf_rn(__fmaf_rn(-d, q, u), rcp, q);
#else
  const float q = u * rcp;
  return std::fma(std::fma(-d, q, u), rcp, q);
#endif
}

}  // namespace augmentd::cuda
