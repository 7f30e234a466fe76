// augment/rng.h — counter-based random numbers (Philox4x32-10) shared by the CPU and CUDA engines.
//
// Every random draw in augmentd is a pure function of
//     (session seed, global sample index, transform index, sub-stream, draw counter)
// so a sample's augmentation parameters do not depend on batch size, thread count, device or scheduling,
// and the CPU reference and the CUDA kernels draw identical values (same integer arithmetic on both).
//
//   augmentd::RandomStream rng(seed, sample_index, transform_index);
//   bool apply = rng.Uniform() < 0.2;          // draw 0
//   double sigma = rng.Uniform(0.0, 0.1);      // draw 1
//   // Per-voxel fields (noise) use a sub-stream and address draws by element index. Sub-stream 0 is the
//   // parameter stream above, so fields use 1 + channel (noise) / 1 + axis (elastic offsets):
//   const augmentd::StreamKey key = augmentd::MakeStreamKey(seed, sample_index, transform_index, 1 + channel);
//   float n = augmentd::NormalAt(key, voxel);   // bit-identical on CPU and CUDA (basic IEEE ops only)
//   // CPU bulk path, same bits, each Philox block computed once and vectorised (augment/kernels/cpu_intensity.h):
//   augmentd::kernels::FillNormalField(key, /*first=*/0, n_voxels, out);
//
// Header-only, no dependencies; every function is usable in host and device code. Thread-safety: a
// RandomStream is a small value type, not shared between threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define AUGMENTD_HD __host__ __device__ __forceinline__
#else
#define AUGMENTD_HD inline
#endif

namespace augmentd {

struct Philox4x32 {
  uint32_t v[4];
};

// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
AUGMENTD_HD Philox4x32 Philox4x32_10(Philox4x32 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr.v[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = Philox4x32{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// 53-bit uniform double in [0, 1) from two 32-bit words.
AUGMENTD_HD double ToUnitDouble(uint32_t a, uint32_t b) {
  const uint64_t bits = (static_cast<uint64_t>(a) << 21) ^ (static_cast<uint64_t>(b) >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// 24-bit uniform float in (0, 1] (never 0, so log() is safe).
AUGMENTD_HD float ToUnitFloatOpenZero(uint32_t a) {
  return (static_cast<float>(a >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

// The key mixes the session seed with the high half of the sample index; the counter carries the rest.
struct StreamKey {
  uint32_t k0, k1;
  uint32_t sample_lo, transform_and_substream;
};

AUGMENTD_HD StreamKey MakeStreamKey(uint64_t seed, uint64_t sample_index, uint32_t transform_index,
                                    uint32_t substream) {
  StreamKey key;
  key.k0 = static_cast<uint32_t>(seed) ^ (static_cast<uint32_t>(sample_index >> 32) * 0x85EBCA6Bu);
  key.k1 = static_cast<uint32_t>(seed >> 32) ^ 0x632BE5ABu;
  key.sample_lo = static_cast<uint32_t>(sample_index);
  key.transform_and_substream = (transform_index << 20) ^ substream;  // <4096 transforms, <1M substreams
  return key;
}

// Four random words for block `block` of a stream.
AUGMENTD_HD Philox4x32 RandomBlock(const StreamKey& key, uint64_t block) {
  Philox4x32 ctr{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), key.transform_and_substream,
                  key.sample_lo}};
  return Philox4x32_10(ctr, key.k0, key.k1);
}

// IEEE single-precision basic operations with round-to-nearest and no contraction on every device (nvcc fuses
// a*b+c into FMA by default; the _rn intrinsics forbid it). On the host the plain operators are exact IEEE as long
// as the compiler does not contract them into FMA: GCC's C++ default is -ffp-contract=fast, harmless for the
// x86-64 baseline (no FMA instructions) but not for code compiled for AVX2/AVX-512 (-march=native, target
// clones). Such translation units must add -ffp-contract=off (augment/kernels/cpu_intensity.cc does; its test
// Rng.NormalAtEqualsBulkFieldBitForBit fails otherwise). No -ffast-math anywhere.
#if defined(__CUDA_ARCH__)
AUGMENTD_HD float RnMul(float a, float b) { return __fmul_rn(a, b); }
AUGMENTD_HD float RnAdd(float a, float b) { return __fadd_rn(a, b); }
AUGMENTD_HD float RnSub(float a, float b) { return __fsub_rn(a, b); }
AUGMENTD_HD float RnDiv(float a, float b) { return __fdiv_rn(a, b); }
AUGMENTD_HD float RnSqrt(float a) { return __fsqrt_rn(a); }
#else
AUGMENTD_HD float RnMul(float a, float b) { return a * b; }
AUGMENTD_HD float RnAdd(float a, float b) { return a + b; }
AUGMENTD_HD float RnSub(float a, float b) { return a - b; }
AUGMENTD_HD float RnDiv(float a, float b) { return a / b; }
AUGMENTD_HD float RnSqrt(float a) { return sqrtf(a); }
#endif

AUGMENTD_HD uint32_t FloatAsBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}
AUGMENTD_HD float BitsAsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}

// Natural logarithm of u in [2^-24, 1] (the ToUnitFloatOpenZero range) from basic IEEE operations only, so every
// device computes the same bits (library logf differs between glibc and CUDA). Classic reduction
// u = 2^k · x, x in [√2/2, √2), log(x) = 2s + s·R(s²) with s = f/(2+f), f = x − 1; minimax R (< 1 ulp).
AUGMENTD_HD float LogUnit(float u) {
  uint32_t ix = FloatAsBits(u);
  ix += 0x3F800000u - 0x3F3504F3u;
  const int k = static_cast<int>(ix >> 23) - 0x7F;
  ix = (ix & 0x007FFFFFu) + 0x3F3504F3u;
  const float x = BitsAsFloat(ix);
  const float f = RnSub(x, 1.0f);
  const float s = RnDiv(f, RnAdd(2.0f, f));
  const float z = RnMul(s, s);
  const float w = RnMul(z, z);
  const float t1 = RnMul(w, RnAdd(0.40000972152f, RnMul(w, 0.24279078841f)));
  const float t2 = RnMul(z, RnAdd(0.66666662693f, RnMul(w, 0.28498786688f)));
  const float r = RnAdd(t2, t1);
  const float hfsq = RnMul(RnMul(0.5f, f), f);
  const float dk = static_cast<float>(k);
  // s·(hfsq + R) + k·ln2_lo − hfsq + f + k·ln2_hi
  float y = RnMul(s, RnAdd(hfsq, r));
  y = RnAdd(y, RnMul(dk, 9.0580006145e-06f));
  y = RnSub(y, hfsq);
  y = RnAdd(y, f);
  return RnAdd(y, RnMul(dk, 6.9313812256e-01f));
}

// cos(2π·u) and sin(2π·u) for u in [0, 1] from basic IEEE operations. u − q/4 (q = nearest quarter turn) is exact
// for the 24-bit uniforms used here; the remaining |θ| ≤ π/4 uses Taylor polynomials (error < 1e-7). Branch-free
// (the quadrant is applied through the bit patterns), so loops over it vectorise.
AUGMENTD_HD void CosSinTwoPi(float u, float& cos_out, float& sin_out) {
  const int qi = static_cast<int>(RnAdd(RnMul(u, 4.0f), 0.5f));  // floor: the argument is positive
  const float q = static_cast<float>(qi);
  const float r = RnSub(u, RnMul(q, 0.25f));
  const float t = RnMul(r, 6.2831853071795865f);
  const float t2 = RnMul(t, t);
  // cos t = 1 − t²/2 + t⁴/24 − t⁶/720 + t⁸/40320 ;  sin t = t·(1 − t²/6 + t⁴/120 − t⁶/5040 + t⁸/362880)
  float c = RnAdd(-1.0f / 720.0f, RnMul(t2, 1.0f / 40320.0f));
  c = RnAdd(1.0f / 24.0f, RnMul(t2, c));
  c = RnAdd(-0.5f, RnMul(t2, c));
  c = RnAdd(1.0f, RnMul(t2, c));
  float sn = RnAdd(-1.0f / 5040.0f, RnMul(t2, 1.0f / 362880.0f));
  sn = RnAdd(1.0f / 120.0f, RnMul(t2, sn));
  sn = RnAdd(-1.0f / 6.0f, RnMul(t2, sn));
  sn = RnAdd(1.0f, RnMul(t2, sn));
  sn = RnMul(t, sn);
  // cos(θ + qπ/2) = c, −s, −c, s and sin(θ + qπ/2) = s, c, −s, −c (q mod 4): select and negate through the
  // bit patterns (exact, branch-free).
  const uint32_t odd = 0u - static_cast<uint32_t>(qi & 1);                // all ones for odd q
  const uint32_t cos_neg = static_cast<uint32_t>(((qi + 1) & 2) >> 1) << 31;  // sign bit for q = 1, 2 (mod 4)
  const uint32_t sin_neg = static_cast<uint32_t>((qi & 2) >> 1) << 31;        // sign bit for q = 2, 3 (mod 4)
  const uint32_t cb = FloatAsBits(c), sb = FloatAsBits(sn);
  cos_out = BitsAsFloat(((cb & ~odd) | (sb & odd)) ^ cos_neg);
  sin_out = BitsAsFloat(((sb & ~odd) | (cb & odd)) ^ sin_neg);
}

AUGMENTD_HD float CosTwoPi(float u) {
  float c, s;
  CosSinTwoPi(u, c, s);
  return c;
}

// Per-element normal fields (noise, elastic offsets). Element i of the field of `key` is normal i % 4 of Philox
// block i / 4: the block's four words give two Box–Muller pairs (u0, u1) and (u2, u3), and the four normals are
//   [ρ0·cos 2πu1, ρ0·sin 2πu1, ρ2·cos 2πu3, ρ2·sin 2πu3],   ρ = sqrt(−2·log u)
// with the device-independent LogUnit/CosSinTwoPi above, so every device computes the same bits. NormalBlock
// returns the four normals of one block (what bulk CPU generators compute once per block, see
// kernels::FillNormalField); NormalAt returns one of them (a GPU thread per voxel): for every (key, i),
//   NormalAt(key, i) == NormalBlock(key, i / 4)[i % 4]   bit for bit.
AUGMENTD_HD float BoxMullerRadius(uint32_t word) {
  return RnSqrt(RnMul(-2.0f, LogUnit(ToUnitFloatOpenZero(word))));
}

AUGMENTD_HD void NormalsFromBlock(const Philox4x32& r, float out[4]) {
  const float rho0 = BoxMullerRadius(r.v[0]);
  const float rho2 = BoxMullerRadius(r.v[2]);
  float c1, s1, c3, s3;
  CosSinTwoPi(ToUnitFloatOpenZero(r.v[1]), c1, s1);
  CosSinTwoPi(ToUnitFloatOpenZero(r.v[3]), c3, s3);
  out[0] = RnMul(rho0, c1);
  out[1] = RnMul(rho0, s1);
  out[2] = RnMul(rho2, c3);
  out[3] = RnMul(rho2, s3);
}

AUGMENTD_HD void NormalBlock(const StreamKey& key, uint64_t block, float out[4]) {
  NormalsFromBlock(RandomBlock(key, block), out);
}

// Standard normal for element `i` of a per-element field (e.g. the noise of voxel i); see above.
AUGMENTD_HD float NormalAt(const StreamKey& key, uint64_t i) {
  const Philox4x32 r = RandomBlock(key, i >> 2);
  const uint32_t e = static_cast<uint32_t>(i & 3u);
  const uint32_t pair = 0u - (e >> 1);  // all ones for elements 2, 3 (second pair)
  const float rho = BoxMullerRadius((r.v[0] & ~pair) | (r.v[2] & pair));
  float c, s;
  CosSinTwoPi(ToUnitFloatOpenZero((r.v[1] & ~pair) | (r.v[3] & pair)), c, s);
  return RnMul(rho, (e & 1u) ? s : c);
}

// A sequential stream of scalar draws (transform parameters). Each draw consumes one Philox block, so
// the k-th draw is the same whatever came before it in other streams.
class RandomStream {
 public:
  AUGMENTD_HD RandomStream(uint64_t seed, uint64_t sample_index, uint32_t transform_index, uint32_t substream = 0)
      : key_(MakeStreamKey(seed, sample_index, transform_index, substream)) {}

  AUGMENTD_HD uint32_t NextU32() { return RandomBlock(key_, counter_++).v[0]; }
  // Uniform double in [0, 1).
  AUGMENTD_HD double Uniform() {
    const Philox4x32 r = RandomBlock(key_, counter_++);
    return ToUnitDouble(r.v[0], r.v[1]);
  }
  // Uniform in [lo, hi); returns lo when lo == hi (numpy.random.uniform semantics for a degenerate range).
  AUGMENTD_HD double Uniform(double lo, double hi) { return lo == hi ? lo : lo + (hi - lo) * Uniform(); }
  // Integer uniform in [lo, hi] inclusive (hi >= lo).
  AUGMENTD_HD int64_t UniformInt(int64_t lo, int64_t hi) {
    const double u = Uniform();
    int64_t v = lo + static_cast<int64_t>(u * static_cast<double>(hi - lo + 1));
    return v > hi ? hi : v;
  }
  AUGMENTD_HD bool Bernoulli(double p) { return Uniform() < p; }
  AUGMENTD_HD double Normal(double mean = 0.0, double stddev = 1.0) {
    const Philox4x32 r = RandomBlock(key_, counter_++);
    const double u1 = 1.0 - ToUnitDouble(r.v[0], r.v[1]);  // (0, 1]
    const double u2 = ToUnitDouble(r.v[2], r.v[3]);
    return mean + stddev * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  }
  AUGMENTD_HD const StreamKey& key() const { return key_; }
  AUGMENTD_HD uint64_t counter() const { return counter_; }

 private:
  StreamKey key_;
  uint64_t counter_ = 0;
};

}  // namespace augmentd
