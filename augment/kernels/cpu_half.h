// augment/kernels/cpu_half.h — IEEE binary16 / bfloat16 conversions (round to nearest even), host and device.
//
// Used at the API edges (float16/bfloat16 images) and by the segmentation resampler, which reproduces bgv2's
// comparison of interpolated label scores in float16 (`RoundToHalf`). Header-only, no dependencies.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define AUGMENTD_KERNEL_HD __host__ __device__ __forceinline__
#else
#define AUGMENTD_KERNEL_HD inline
#endif

namespace augmentd::kernels {

AUGMENTD_KERNEL_HD uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
AUGMENTD_KERNEL_HD float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float32 -> binary16 bits, round to nearest even; handles subnormals, overflow to inf, NaN.
AUGMENTD_KERNEL_HD uint16_t FloatToHalfBits(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520 -> inf
  if (abs < 0x38800000u) {                                               // below 2^-14: subnormal half
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);           // < 2^-25 rounds to 0
    // value = mant * 2^(e-150); in units of the half subnormal step 2^-24: q = mant * 2^(e-126).
    const uint32_t mant = (abs & 0x007FFFFFu) | 0x00800000u;
    const int drop = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t q = mant >> drop;
    const uint32_t rem = mant & ((1u << drop) - 1u);
    const uint32_t half_point = 1u << (drop - 1);
    if (rem > half_point || (rem == half_point && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // normal: rebias exponent (127 -> 15), keep 10 mantissa bits with RNE.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

AUGMENTD_KERNEL_HD float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    // subnormal or zero: mant * 2^-24
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return BitsToFloat(sign | 0x7F800000u | (mant << 13));
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

// The float32 value of `f` rounded to binary16 (what `tensor.to(torch.float16)` keeps).
AUGMENTD_KERNEL_HD float RoundToHalf(float f) { return HalfBitsToFloat(FloatToHalfBits(f)); }

// bfloat16: upper 16 bits with round to nearest even.
AUGMENTD_KERNEL_HD uint16_t FloatToBFloat16Bits(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7FFFu + lsb) >> 16);
}
AUGMENTD_KERNEL_HD float BFloat16BitsToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

}  // namespace augmentd::kernels
