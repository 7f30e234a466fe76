#include "augment/kernels/cpu_intensity.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

// Speed (bench/engine_cpu_bench.cc): every per-voxel loop here is branch-free straight-line code that GCC/Clang
// vectorise at -O3. On x86-64 Linux the hot loops are compiled three times (AVX-512, AVX2+FMA, baseline SSE2) and
// the best clone is picked at load time. This file is compiled with -ffp-contract=off (GCC's C++ default is
// "fast", which would fuse a*b+c into FMA in the AVX2/AVX-512 clones and change bits against the CUDA kernels and
// the scalar NormalAt), -fno-math-errno (sqrt without its errno branch) and -fno-trapping-math (lets the selects
// be if-converted); neither changes a result. See augment/CMakeLists.txt; GCC ≥ 11 on Linux (ifunc) for the clones.
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && \
    !defined(AUGMENTD_NO_CPU_CLONES)
#define AUGMENTD_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define AUGMENTD_CPU_CLONES
#endif

namespace augmentd::kernels {
namespace {

// ---- Reductions ---------------------------------------------------------------------------------------------
// Σd and Σd² (d = x − shift) in kLanes independent double accumulators (vectorised; double against the
// cancellation of 10⁶-voxel float sums), min and max in float lanes.
constexpr int kLanes = 16;

struct Sums {
  double sum = 0, sq = 0;
  float mn = 0, mx = 0;
};

AUGMENTD_CPU_CLONES void AccumulateSums(const float* __restrict x, int64_t n, double shift, Sums* out) {
  double s[kLanes] = {}, q[kLanes] = {};
  float lo[kLanes], hi[kLanes];
  for (int l = 0; l < kLanes; ++l) lo[l] = hi[l] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float v = x[i + l];
      const double d = static_cast<double>(v) - shift;
      s[l] += d;
      q[l] += d * d;
      lo[l] = v < lo[l] ? v : lo[l];
      hi[l] = v > hi[l] ? v : hi[l];
    }
  }
  for (; i < n; ++i) {
    const float v = x[i];
    const double d = static_cast<double>(v) - shift;
    s[0] += d;
    q[0] += d * d;
    lo[0] = v < lo[0] ? v : lo[0];
    hi[0] = v > hi[0] ? v : hi[0];
  }
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) {
      s[l] += s[l + w];
      q[l] += q[l + w];
      lo[l] = std::min(lo[l], lo[l + w]);
      hi[l] = std::max(hi[l], hi[l + w]);
    }
  }
  out->sum = s[0];
  out->sq = q[0];
  out->mn = lo[0];
  out->mx = hi[0];
}

double UnbiasedStd(const Sums& s, int64_t n) {
  if (n < 2) return std::nan("");  // torch.std of one element is nan
  const double var = (s.sq - s.sum * s.sum / static_cast<double>(n)) / static_cast<double>(n - 1);
  return std::sqrt(std::max(var, 0.0));
}

// ---- pow(t, g) for t >= 0, g > 0 as exp2(g·log2 t) -----------------------------------------------------------
// Branch-free float polynomials (vectorisable; torch's pow_ is Sleef's vectorised powf). Error against powf:
// a few ulp of the result plus |g·log2 t|·2⁻²³ relative — < 1e-6 of the channel range after ·rnge, far inside
// the parity tolerance (1e-4 of the range).

// log2(t) for finite t >= 0 (−inf for t == 0, so exp2(g·…) is 0 for any g > 0).
inline float Log2NonNegative(float t) {
  const bool sub = t < 1.17549435e-38f;  // subnormal or zero: scale into the normal range
  const float ts = sub ? t * 16777216.0f : t;
  uint32_t ix;
  std::memcpy(&ix, &ts, 4);
  ix += 0x3F800000u - 0x3F3504F3u;  // t = 2^k · x, x in [√2/2, √2)
  const int k = static_cast<int>(ix >> 23) - 0x7F - (sub ? 24 : 0);
  ix = (ix & 0x007FFFFFu) + 0x3F3504F3u;
  float x;
  std::memcpy(&x, &ix, 4);
  const float f = x - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float w = z * z;
  const float r = z * (0.66666662693f + w * 0.28498786688f) + w * (0.40000972152f + w * 0.24279078841f);
  const float hfsq = 0.5f * f * f;
  const float ln_x = f - (hfsq - s * (hfsq + r));  // log(x), |error| < 1 ulp
  const float l2 = ln_x * 1.44269504089f + static_cast<float>(k);
  return t == 0.0f ? -std::numeric_limits<float>::infinity() : l2;
}

// 2^y; 0 below 2⁻¹²⁶ (flush, fine at float precision relative to the range), +inf above 2¹²⁸, NaN stays NaN.
inline float Exp2(float y) {
  const float yc = std::min(std::max(y, -127.0f), 128.0f);
  const int ni = static_cast<int>(yc + 128.5f) - 128;  // round(yc): the truncated argument is positive
  const float r = yc - static_cast<float>(ni);        // [−0.5, 0.5]
  // 2^r = Σ (r·ln2)^k / k!, k ≤ 7 (truncation < 2e-9)
  float p = 1.5252733804e-5f;
  p = p * r + 1.5403530393e-4f;
  p = p * r + 1.3333558146e-3f;
  p = p * r + 9.6181291076e-3f;
  p = p * r + 5.5504108665e-2f;
  p = p * r + 2.4022650696e-1f;
  p = p * r + 6.9314718056e-1f;
  p = p * r + 1.0f;
  const uint32_t eb = static_cast<uint32_t>(ni + 127) << 23;  // ni = −127: 0; ni = 128: +inf
  float scale;
  std::memcpy(&scale, &eb, 4);
  const float v = p * scale;
  return y != y ? y : v;
}

// x ← (pow((sign·x − minm) / denom, g) · rnge + minm), optionally with the sums of the new values.
AUGMENTD_CPU_CLONES void GammaMap(float* __restrict x, int64_t n, float sign, float minm, float denom, float g,
                                  float rnge, bool accumulate, double shift, Sums* out) {
  if (!accumulate) {
    for (int64_t i = 0; i < n; ++i) x[i] = Exp2(g * Log2NonNegative((sign * x[i] - minm) / denom)) * rnge + minm;
    return;
  }
  double s[kLanes] = {}, q[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float v = Exp2(g * Log2NonNegative((sign * x[i + l] - minm) / denom)) * rnge + minm;
      x[i + l] = v;
      const double d = static_cast<double>(v) - shift;
      s[l] += d;
      q[l] += d * d;
    }
  }
  for (; i < n; ++i) {
    const float v = Exp2(g * Log2NonNegative((sign * x[i] - minm) / denom)) * rnge + minm;
    x[i] = v;
    const double d = static_cast<double>(v) - shift;
    s[0] += d;
    q[0] += d * d;
  }
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) {
      s[l] += s[l + w];
      q[l] += q[l + w];
    }
  }
  out->sum = s[0];
  out->sq = q[0];
}

// x ← ((x − sub) · mul + add) · sign
AUGMENTD_CPU_CLONES void AffineSign(float* __restrict x, int64_t n, float sub, float mul, float add, float sign) {
  for (int64_t i = 0; i < n; ++i) x[i] = ((x[i] - sub) * mul + add) * sign;
}

AUGMENTD_CPU_CLONES void Scale(float* __restrict x, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) x[i] *= m;
}

AUGMENTD_CPU_CLONES void ContrastMap(float* __restrict x, int64_t n, float mean, float m, bool clamp, float lo,
                                     float hi) {
  if (clamp) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = (x[i] - mean) * m + mean;
      x[i] = std::min(std::max(v, lo), hi);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = (x[i] - mean) * m + mean;
  }
}

// ---- Normal fields -----------------------------------------------------------------------------------------
// The field is defined per Philox block (rng.h: element i = NormalBlock(key, i / 4)[i % 4]); the bulk path runs
// the Philox rounds over kChunkBlocks consecutive blocks in structure-of-arrays form and then rng.h's
// NormalsFromBlock per block, in loops the compiler vectorises (32×32→64 products, LogUnit, CosSinTwoPi and the
// quadrant selects are branch-free integer / IEEE float operations, so every SIMD lane computes exactly the
// scalar bits; tested: NormalAt == FillNormalField bit for bit).
constexpr int64_t kChunkBlocks = 64;  // 256 normals (1 KiB) per chunk: stays in L1 between generation and use

// out[0 .. 4·kChunkBlocks) = the normals of blocks block0 .. block0 + kChunkBlocks − 1, in field order.
AUGMENTD_CPU_CLONES void NormalChunk(const StreamKey& key, uint64_t block0, float* __restrict out) {
  alignas(64) uint32_t w0[kChunkBlocks], w1[kChunkBlocks], w2[kChunkBlocks], w3[kChunkBlocks];
  for (int64_t j = 0; j < kChunkBlocks; ++j) {
    const uint64_t b = block0 + static_cast<uint64_t>(j);
    w0[j] = static_cast<uint32_t>(b);
    w1[j] = static_cast<uint32_t>(b >> 32);
    w2[j] = key.transform_and_substream;
    w3[j] = key.sample_lo;
  }
  uint32_t k0 = key.k0, k1 = key.k1;
  for (int round = 0; round < 10; ++round) {  // Philox4x32_10 of rng.h, one lane per block
    for (int64_t j = 0; j < kChunkBlocks; ++j) {
      const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * w0[j];
      const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * w2[j];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ w1[j] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ w3[j] ^ k1;
      w0[j] = n0;
      w1[j] = static_cast<uint32_t>(p1);
      w2[j] = n2;
      w3[j] = static_cast<uint32_t>(p0);
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int64_t j = 0; j < kChunkBlocks; ++j) NormalsFromBlock(Philox4x32{{w0[j], w1[j], w2[j], w3[j]}}, out + 4 * j);
}

// x[i] += sigma · buf[i]: sigma·N rounded to float, then added (what the CUDA kernel does with _rn intrinsics).
AUGMENTD_CPU_CLONES void AddScaled(float* __restrict x, const float* __restrict buf, int64_t m, float sigma) {
  for (int64_t i = 0; i < m; ++i) x[i] += sigma * buf[i];
}

}  // namespace

ChannelStats ComputeStats(const float* x, int64_t n, bool with_std) {
  ChannelStats s;
  if (n == 0) return s;
  // One pass; shifted by x[0] against cancellation: var = (Σd² − (Σd)²/n) / (n − 1), d = x − x[0].
  const double k = x[0];
  Sums sums;
  AccumulateSums(x, n, k, &sums);
  s.mean = k + sums.sum / static_cast<double>(n);
  s.min = sums.mn;
  s.max = sums.mx;
  if (with_std) s.std_unbiased = UnbiasedStd(sums, n);
  return s;
}

void FillNormalField(const StreamKey& key, uint64_t first, int64_t n, float* out) {
  alignas(64) float buf[4 * kChunkBlocks];
  int64_t done = 0;
  uint64_t block = first / 4;
  int64_t skip = static_cast<int64_t>(first % 4);  // elements of the first block before `first`
  while (done < n) {
    NormalChunk(key, block, buf);
    const int64_t m = std::min<int64_t>(4 * kChunkBlocks - skip, n - done);
    std::copy(buf + skip, buf + skip + m, out + done);
    done += m;
    skip = 0;
    block += static_cast<uint64_t>(kChunkBlocks);
  }
}

void AddGaussianNoise(float* x, int64_t n, float sigma, const StreamKey& key) {
  alignas(64) float buf[4 * kChunkBlocks];
  for (int64_t done = 0; done < n; done += 4 * kChunkBlocks) {
    NormalChunk(key, static_cast<uint64_t>(done / 4), buf);
    AddScaled(x + done, buf, std::min<int64_t>(4 * kChunkBlocks, n - done), sigma);
  }
}

void MultiplyChannel(float* x, int64_t n, float m) { Scale(x, n, m); }

void ApplyContrast(float* x, int64_t n, float m, bool preserve_range) {
  if (n == 0) return;
  const ChannelStats s = ComputeStats(x, n, false);
  ContrastMap(x, n, static_cast<float>(s.mean), m, preserve_range, s.min, s.max);
}

void ApplyGamma(float* x, int64_t n, float gamma, bool invert, bool retain_stats) {
  constexpr float kEps = 1e-7f;
  if (n == 0) return;
  // bgv2: [x = −x]; mean, std; minm, maxm; x = ((x − minm) / max(rnge, eps))^γ · rnge + minm;
  // [x = (x − mean_here) · std / max(std_here, eps) + mean]; [x = −x]. Three passes here: statistics of x (those
  // of −x follow exactly: negation is exact), the power with the statistics of its result, the affine map with
  // the final negation folded in.
  const float sign = invert ? -1.0f : 1.0f;
  const ChannelStats st = ComputeStats(x, n, retain_stats);
  const double mean_before = invert ? -st.mean : st.mean;
  const float minm = invert ? -st.max : st.min;
  const float maxm = invert ? -st.min : st.max;
  const float rnge = maxm - minm;
  const float denom = std::max(rnge, kEps);
  if (!(gamma > 0.0f) || !std::isfinite(gamma)) {  // outside the fast power's domain: library pow
    for (int64_t i = 0; i < n; ++i) x[i] = std::pow((sign * x[i] - minm) / denom, gamma) * rnge + minm;
    if (retain_stats) {
      const ChannelStats after = ComputeStats(x, n, true);
      const float factor =
          static_cast<float>(st.std_unbiased) / std::max(static_cast<float>(after.std_unbiased), kEps);
      AffineSign(x, n, static_cast<float>(after.mean), factor, static_cast<float>(mean_before), sign);
    } else if (invert) {
      Scale(x, n, -1.0f);
    }
    return;
  }
  if (!retain_stats) {
    GammaMap(x, n, sign, minm, denom, gamma, rnge, false, 0.0, nullptr);
    if (invert) Scale(x, n, -1.0f);
    return;
  }
  Sums after;
  const double shift = static_cast<double>(minm) + 0.5 * static_cast<double>(rnge);
  GammaMap(x, n, sign, minm, denom, gamma, rnge, true, shift, &after);
  const float mean_here = static_cast<float>(shift + after.sum / static_cast<double>(n));
  const float std_here = static_cast<float>(UnbiasedStd(after, n));
  const float factor = static_cast<float>(st.std_unbiased) / std::max(std_here, kEps);
  AffineSign(x, n, mean_here, factor, static_cast<float>(mean_before), sign);
}

}  // namespace augmentd::kernels
