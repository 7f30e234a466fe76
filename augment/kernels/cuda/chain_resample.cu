// augment/kernels/cuda/chain_resample.cu — index-mapping kernels of the generic chain (chain_kernels.h): separable
// blur with reflect padding, low-resolution simulation (nearest-exact down, trilinear up), signed axis permutations
// and the deep-supervision label levels. Index rules (nearest-exact, align_corners=False) are common.cuh's.
#include "augment/kernels/cuda/chain_common.cuh"

namespace augmentd::cuda::chain {
namespace {

using internal::kThreads;

struct Shape3 {
  int s[3];
};

__device__ __forceinline__ void Unravel3(int64_t i, const Shape3& sh, int& a, int& b, int& c) {
  if (i <= INT32_MAX) {  // 32-bit divisions (a 64-bit one is a ~70-instruction routine)
    const int i32 = static_cast<int>(i), t = i32 / sh.s[2];
    c = i32 - t * sh.s[2];
    b = t % sh.s[1];
    a = t / sh.s[1];
    return;
  }
  c = static_cast<int>(i % sh.s[2]);
  const int64_t t = i / sh.s[2];
  b = static_cast<int>(t % sh.s[1]);
  a = static_cast<int>(t / sh.s[1]);
}

// Linear index in `in` of the nearest-exact source (torch's rule per axis) of voxel (a, b, c) of `out`.
__device__ __forceinline__ int64_t NearestExactOffset(int a, int b, int c, const Shape3& in, const Shape3& out) {
  return (int64_t{internal::NearestExactSrc(a, in.s[0], out.s[0])} * in.s[1] +
          internal::NearestExactSrc(b, in.s[1], out.s[1])) *
             in.s[2] +
         internal::NearestExactSrc(c, in.s[2], out.s[2]);
}

// bgv2 'reflect' (mirror without repeating the edge voxel); the caller guarantees n > radius.
__device__ __forceinline__ int ReflectIndex(int i, int n) {
  if (i < 0) i = -i;
  if (i >= n) i = 2 * (n - 1) - i;
  return i;
}

// One axis of the separable blur: dst = correlate(src, taps) along `axis`, accumulated tap by tap from 0 as the CPU.
__global__ void __launch_bounds__(kThreads) BlurPassKernel(Shape3 sh, int axis, const float* src, float* dst,
                                                           const BlurSlice* p, const float* weights) {
  const BlurSlice q = p[blockIdx.y];
  if (!q.on) return;
  const int64_t n = int64_t{sh.s[0]} * sh.s[1] * sh.s[2];
  const int len = sh.s[axis];
  const int64_t stride = axis == 0 ? int64_t{sh.s[1]} * sh.s[2] : (axis == 1 ? sh.s[2] : 1);
  const int taps = q.taps[axis], r = taps / 2;
  const float* w = weights + q.offset[axis];
  const float* s = src + blockIdx.y * n;
  float* o = dst + blockIdx.y * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const int pos = static_cast<int>((i / stride) % len);
    const int64_t row = i - pos * stride;
    float acc = 0.f;
    for (int t = 0; t < taps; ++t)
      acc = __fadd_rn(acc, __fmul_rn(__ldg(s + row + ReflectIndex(pos + t - r, len) * stride), __ldg(w + t)));
    o[i] = acc;
  }
}

__device__ __forceinline__ bool LowResOn(const LowResSlice& q) {
  return q.on && q.q[0] > 0 && q.q[1] > 0 && q.q[2] > 0;
}

__global__ void __launch_bounds__(kThreads) LowResDownKernel(Shape3 sh, const float* x, float* low,
                                                             const LowResSlice* p) {
  const LowResSlice q = p[blockIdx.y];
  if (!LowResOn(q)) return;
  const int64_t n = int64_t{sh.s[0]} * sh.s[1] * sh.s[2];
  const Shape3 Q{{q.q[0], q.q[1], q.q[2]}};
  const int64_t qn = int64_t{Q.s[0]} * Q.s[1] * Q.s[2];
  const float* v = x + blockIdx.y * n;
  float* o = low + blockIdx.y * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, qn) {
    int a, b, c;
    Unravel3(i, Q, a, b, c);
    o[i] = v[NearestExactOffset(a, b, c, sh, Q)];
  }
}

// Trilinear up-sampling Q → shape in torch's nested order (w0·(w0·(w0·v000 + w1·v001) + …) + w1·(…)).
__global__ void __launch_bounds__(kThreads) LowResUpKernel(Shape3 sh, float* x, const float* low,
                                                           const LowResSlice* p) {
  const LowResSlice q = p[blockIdx.y];
  if (!LowResOn(q)) return;
  const int64_t n = int64_t{sh.s[0]} * sh.s[1] * sh.s[2];
  const int Q[3] = {q.q[0], q.q[1], q.q[2]};
  const float ratio[3] = {static_cast<float>(Q[0]) / sh.s[0], static_cast<float>(Q[1]) / sh.s[1],
                          static_cast<float>(Q[2]) / sh.s[2]};
  const float* l = low + blockIdx.y * n;
  float* o = x + blockIdx.y * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    int j0, j1, j2;
    Unravel3(i, sh, j0, j1, j2);
    int a0, a1, b0, b1, c0, c1;
    float la, lb, lc;
    internal::LinearSrc(j0, Q[0], sh.s[0], ratio[0], a0, a1, la);
    internal::LinearSrc(j1, Q[1], sh.s[1], ratio[1], b0, b1, lb);
    internal::LinearSrc(j2, Q[2], sh.s[2], ratio[2], c0, c1, lc);
    const float ha = __fsub_rn(1.f, la), hb = __fsub_rn(1.f, lb), hc = __fsub_rn(1.f, lc);
    const float* r00 = l + (int64_t{a0} * Q[1] + b0) * Q[2];
    const float* r01 = l + (int64_t{a0} * Q[1] + b1) * Q[2];
    const float* r10 = l + (int64_t{a1} * Q[1] + b0) * Q[2];
    const float* r11 = l + (int64_t{a1} * Q[1] + b1) * Q[2];
    const float v0 = __fadd_rn(__fmul_rn(r00[c0], hc), __fmul_rn(r00[c1], lc));
    const float v1 = __fadd_rn(__fmul_rn(r01[c0], hc), __fmul_rn(r01[c1], lc));
    const float v2 = __fadd_rn(__fmul_rn(r10[c0], hc), __fmul_rn(r10[c1], lc));
    const float v3 = __fadd_rn(__fmul_rn(r11[c0], hc), __fmul_rn(r11[c1], lc));
    const float u0 = __fadd_rn(__fmul_rn(v0, hb), __fmul_rn(v1, lb));
    const float u1 = __fadd_rn(__fmul_rn(v2, hb), __fmul_rn(v3, lb));
    o[i] = __fadd_rn(__fmul_rn(u0, ha), __fmul_rn(u1, la));
  }
}

// Gathers one (sample, channel) plane of `src` into `dst` through the sample's signed permutation, by 32 × 32
// tiles of an output plane: output axis 2 by the tile's other axis qa, at kTilesPerBlock consecutive positions r of
// the remaining axis ra. Input axis 2 (contiguous) takes its index from output axis q = perm[2]. q == 2 (axis 2 kept,
// maybe reversed; the identity too): rows map onto rows, read and written directly (qa = 1). Otherwise qa = q: the
// tile is read along input axis 2 (thread x walks output axis q), transposed in shared memory and written along
// output axis 2 — both sides coalesced, where one output voxel per thread read with a stride of a plane or a row.
// Every load of the block's tiles is issued before the first store (16 values a thread in flight: a block of one
// tile kept too few bytes in flight to reach the copy bandwidth, s13). No 64-bit divisions: one tile index
// unravelled per block.
constexpr int kTile = 32, kTileRows = 8;  // a block of 32 × 8 threads, 4 tile rows per thread and tile
constexpr int kTilesPerBlock = 4;
static_assert(kTile * kTileRows == kThreads);

// Blocks of one slice whose tile axes are 2 and qa (ra = the third axis, kTilesPerBlock positions of it a block).
__host__ __device__ __forceinline__ int64_t PermuteTiles(const Shape3& sh, int qa) {
  const int sq = qa == 0 ? sh.s[0] : sh.s[1], sr = qa == 0 ? sh.s[1] : sh.s[0];  // selects: no indexed local copy
  return int64_t{(sh.s[2] + kTile - 1) / kTile} * ((sq + kTile - 1) / kTile) *
         ((sr + kTilesPerBlock - 1) / kTilesPerBlock);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) PermuteKernel(Shape3 sh, int channels, const T* __restrict__ src,
                                                          T* __restrict__ dst, const PermuteSample* p) {
  const int b = blockIdx.y / channels;
  const PermuteSample q = p[b];
  const int n = sh.s[0] * sh.s[1] * sh.s[2];
  const T* s = src + static_cast<int64_t>(blockIdx.y) * n;
  T* o = dst + static_cast<int64_t>(blockIdx.y) * n;
  const int p0 = q.on ? q.perm[0] : 0, p1 = q.on ? q.perm[1] : 1, p2 = q.on ? q.perm[2] : 2;
  const bool f0 = q.on && q.flip[0], f1 = q.on && q.flip[1], f2 = q.on && q.flip[2];
  const bool direct = p2 == 2;
  const int qa = direct ? 1 : p2;  // the remaining axis ra = qa == 0 ? 1 : 0 holds r
  if (static_cast<int64_t>(blockIdx.x) >= PermuteTiles(sh, qa)) return;  // block-uniform
  const int lx = sh.s[2], ly = qa == 0 ? sh.s[0] : sh.s[1], lr = qa == 0 ? sh.s[1] : sh.s[0];
  const int n2 = (lx + kTile - 1) / kTile, nq = (ly + kTile - 1) / kTile;
  const int t2 = static_cast<int>(blockIdx.x % n2);
  const int rest = static_cast<int>(blockIdx.x / n2);
  const int x0 = t2 * kTile, y0 = rest % nq * kTile, r0 = rest / nq * kTilesPerBlock;
  // Input offset of output voxel (o[2] = x, o[qa] = y, o[ra] = r): src[d] = flip[d] ? S_d − 1 − o[perm[d]] : o[perm[d]].
  auto in_offset = [&](int r, int x, int y) {
    const int o0 = qa == 0 ? y : r, o1 = qa == 1 ? y : r;
    auto pick = [&](int pd) { return pd == 0 ? o0 : (pd == 1 ? o1 : x); };
    const int i0 = f0 ? sh.s[0] - 1 - pick(p0) : pick(p0);
    const int i1 = f1 ? sh.s[1] - 1 - pick(p1) : pick(p1);
    const int i2 = f2 ? sh.s[2] - 1 - pick(p2) : pick(p2);
    return (i0 * sh.s[1] + i1) * sh.s[2] + i2;
  };
  auto out_offset = [&](int r, int x, int y) {
    const int o0 = qa == 0 ? y : r, o1 = qa == 1 ? y : r;
    return (o0 * sh.s[1] + o1) * sh.s[2] + x;
  };
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  constexpr int kRows = kTile / kTileRows;
  T v[kTilesPerBlock][kRows] = {};
  if (direct) {
#pragma unroll
    for (int t = 0; t < kTilesPerBlock; ++t)
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        const int r = r0 + t, x = x0 + tx, y = y0 + ty + k * kTileRows;
        if (r < lr && x < lx && y < ly) v[t][k] = s[in_offset(r, x, y)];
      }
#pragma unroll
    for (int t = 0; t < kTilesPerBlock; ++t)
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        const int r = r0 + t, x = x0 + tx, y = y0 + ty + k * kTileRows;
        if (r < lr && x < lx && y < ly) o[out_offset(r, x, y)] = v[t][k];
      }
    return;
  }
  __shared__ T tile[kTilesPerBlock][kTile][kTile + 1];
#pragma unroll
  for (int t = 0; t < kTilesPerBlock; ++t)
#pragma unroll
    for (int k = 0; k < kRows; ++k) {  // thread x walks output axis q: input axis 2
      const int r = r0 + t, x = x0 + ty + k * kTileRows, y = y0 + tx;
      if (r < lr && x < lx && y < ly) v[t][k] = s[in_offset(r, x, y)];
    }
#pragma unroll
  for (int t = 0; t < kTilesPerBlock; ++t)
#pragma unroll
    for (int k = 0; k < kRows; ++k) tile[t][ty + k * kTileRows][tx] = v[t][k];
  __syncthreads();
#pragma unroll
  for (int t = 0; t < kTilesPerBlock; ++t)
#pragma unroll
    for (int k = 0; k < kRows; ++k) {  // thread x walks output axis 2
      const int r = r0 + t, x = x0 + tx, y = y0 + ty + k * kTileRows;
      if (r < lr && x < lx && y < ly) o[out_offset(r, x, y)] = tile[t][tx][ty + k * kTileRows];
    }
}

// Whole rows (every sample keeps axis 2 in place: perm[2] == 2 — mirror, rot90 / transpose of axes 0 and 1), as
// 16-byte vectors of kPer values (S2 % kPer == 0 and 16-byte aligned slices: the launcher checks): output vector c of
// row (o0, o1) is input vector c (or rv − 1 − c, reversed, when axis 2 flips) of row (i0, i1). kUnroll vectors a
// thread in flight. The tiled kernel moved 2-byte labels one a thread: 0.6 TB/s (s13).
template <typename T>
__device__ __forceinline__ uint4 ReverseVector(uint4 v) {
  if constexpr (sizeof(T) == 4) return make_uint4(v.w, v.z, v.y, v.x);
  const auto swap = [](uint32_t x) { return __byte_perm(x, 0, 0x1032); };  // the two 16-bit halves
  return make_uint4(swap(v.w), swap(v.z), swap(v.y), swap(v.x));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) PermuteRowsKernel(Shape3 sh, int channels, const T* __restrict__ src,
                                                              T* __restrict__ dst, const PermuteSample* p) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2);
  constexpr int kPer = 16 / sizeof(T), kUnroll = 4;
  const PermuteSample q = p[blockIdx.y / channels];
  const bool swap01 = q.on && q.perm[0] == 1;  // axes 0 and 1 exchanged (equal sizes)
  const bool f0 = q.on && q.flip[0], f1 = q.on && q.flip[1], f2 = q.on && q.flip[2];
  const int rv = sh.s[2] / kPer, nv = sh.s[0] * sh.s[1] * rv;
  const uint4* s = reinterpret_cast<const uint4*>(src) + static_cast<int64_t>(blockIdx.y) * nv;
  uint4* o = reinterpret_cast<uint4*>(dst) + static_cast<int64_t>(blockIdx.y) * nv;
  for (int first = blockIdx.x * kThreads * kUnroll + threadIdx.x; first < nv; first += gridDim.x * kThreads * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = first + u * kThreads;
      if (i >= nv) continue;
      const int r = i / rv, c = i - r * rv;
      const int o0 = r / sh.s[1], o1 = r - o0 * sh.s[1];
      const int a0 = swap01 ? o1 : o0, a1 = swap01 ? o0 : o1;  // src[d] from o[perm[d]]
      const int i0 = f0 ? sh.s[0] - 1 - a0 : a0, i1 = f1 ? sh.s[1] - 1 - a1 : a1;
      v[u] = __ldg(s + (i0 * sh.s[1] + i1) * rv + (f2 ? rv - 1 - c : c));
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = first + u * kThreads;
      if (i < nv) o[i] = f2 ? ReverseVector<T>(v[u]) : v[u];
    }
  }
}

// Up to kMaxSegLevelsPerLaunch levels of one launch (blockIdx.z), each grid-striding over its planes' voxels.
struct SegLevelSet {
  Shape3 out[kMaxSegLevelsPerLaunch];
  void* dst[kMaxSegLevelsPerLaunch];
};

__global__ void __launch_bounds__(kThreads) SegLevelsKernel(Shape3 in, const SegLevelSet set, const int16_t* s,
                                                            int as_bool) {
  const Shape3 out = set.out[blockIdx.z];
  const int64_t in_n = int64_t{in.s[0]} * in.s[1] * in.s[2], out_n = int64_t{out.s[0]} * out.s[1] * out.s[2];
  const int16_t* v = s + blockIdx.y * in_n;
  void* dst = set.dst[blockIdx.z];
  AUGMENTD_CHAIN_FOR_VOXELS(i, out_n) {
    int a, b, c;
    Unravel3(i, out, a, b, c);
    const int16_t label = __ldg(v + NearestExactOffset(a, b, c, in, out));
    const int64_t o = blockIdx.y * out_n + i;
    if (as_bool) {
      static_cast<uint8_t*>(dst)[o] = label != 0 ? 1 : 0;
    } else {
      static_cast<int16_t*>(dst)[o] = label;
    }
  }
}

Shape3 ShapeOf(const Dims& d) { return Shape3{{d.shape[0], d.shape[1], d.shape[2]}}; }

}  // namespace

cudaError_t LaunchBlur(const Dims& d, float* x, const BlurSlice* p, const float* weights, float* tmp,
                       cudaStream_t stream) {
  const Shape3 sh = ShapeOf(d);
  float* t0 = tmp;
  float* t1 = tmp + static_cast<int64_t>(d.slices()) * d.voxels();
  const dim3 grid = SliceGrid(d.voxels(), d.slices());
  BlurPassKernel<<<grid, kThreads, 0, stream>>>(sh, 0, x, t0, p, weights);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  BlurPassKernel<<<grid, kThreads, 0, stream>>>(sh, 1, t0, t1, p, weights);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  BlurPassKernel<<<grid, kThreads, 0, stream>>>(sh, 2, t1, x, p, weights);
  return cudaGetLastError();
}

cudaError_t LaunchLowRes(const Dims& d, float* x, const LowResSlice* p, float* tmp, cudaStream_t stream) {
  const Shape3 sh = ShapeOf(d);
  const dim3 grid = SliceGrid(d.voxels(), d.slices());
  LowResDownKernel<<<grid, kThreads, 0, stream>>>(sh, x, tmp, p);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  LowResUpKernel<<<grid, kThreads, 0, stream>>>(sh, x, tmp, p);
  return cudaGetLastError();
}

cudaError_t LaunchPermute(const Dims& img, const float* x, float* x_out, const Dims& seg, const int16_t* s,
                          int16_t* s_out, const PermuteSample* p, bool rows_kept, cudaStream_t stream) {
  // Blocks: the larger tile count of the two tile planes a sample may use (qa = 0 or 1); the others return.
  auto grid = [](const Dims& d) {
    const Shape3 sh = ShapeOf(d);
    return dim3(static_cast<unsigned>(std::max(PermuteTiles(sh, 0), PermuteTiles(sh, 1))),
                static_cast<unsigned>(d.slices()));
  };
  auto launch = [&](const Dims& d, const auto* in, auto* out) -> cudaError_t {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>;
    constexpr int kPer = 16 / sizeof(T);
    const bool aligned = (reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) % 16 == 0;
    if (rows_kept && d.shape[2] % kPer == 0 && aligned) {
      const int64_t vectors = d.voxels() / kPer;
      const auto blocks = static_cast<unsigned>((vectors + 4 * kThreads - 1) / (4 * kThreads));
      PermuteRowsKernel<T><<<dim3(blocks, static_cast<unsigned>(d.slices())), kThreads, 0, stream>>>(
          ShapeOf(d), d.channels, in, out, p);
    } else {
      PermuteKernel<T><<<grid(d), kThreads, 0, stream>>>(ShapeOf(d), d.channels, in, out, p);
    }
    return cudaGetLastError();
  };
  if (img.voxels() > INT32_MAX || seg.voxels() > INT32_MAX) return cudaErrorInvalidValue;  // 32-bit offsets
  if (img.slices() > 0) AUGMENTD_CUDA_RETURN_IF_ERROR(launch(img, x, x_out));
  if (s != nullptr && seg.slices() > 0) AUGMENTD_CUDA_RETURN_IF_ERROR(launch(seg, s, s_out));
  return cudaSuccess;
}

cudaError_t LaunchSegLevels(int32_t planes, const int32_t in[3], const int16_t* s, const SegLevel* levels,
                            int32_t num_levels, bool as_bool, cudaStream_t stream) {
  const Shape3 a{{in[0], in[1], in[2]}};
  const int64_t in_n = int64_t{in[0]} * in[1] * in[2];
  SegLevelSet set{};
  int pending = 0;
  int64_t widest = 0;
  const auto flush = [&]() -> cudaError_t {
    if (pending == 0) return cudaSuccess;
    SegLevelsKernel<<<dim3(static_cast<unsigned>(BlocksPerSlice(widest, planes)), static_cast<unsigned>(planes),
                           static_cast<unsigned>(pending)),
                      kThreads, 0, stream>>>(a, set, s, as_bool ? 1 : 0);
    pending = 0;
    widest = 0;
    return cudaGetLastError();
  };
  for (int32_t l = 0; l < num_levels; ++l) {
    const int32_t* q = levels[l].shape;
    if (!as_bool && q[0] == in[0] && q[1] == in[1] && q[2] == in[2]) {  // the full-resolution level
      if (levels[l].dst == s) continue;  // the labels already live there (the chain's final_seg)
      AUGMENTD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(levels[l].dst, s, sizeof(int16_t) * planes * in_n,
                                                    cudaMemcpyDeviceToDevice, stream));
      continue;
    }
    set.out[pending] = Shape3{{q[0], q[1], q[2]}};
    set.dst[pending] = levels[l].dst;
    widest = std::max(widest, int64_t{q[0]} * q[1] * q[2]);
    if (++pending == kMaxSegLevelsPerLaunch) AUGMENTD_CUDA_RETURN_IF_ERROR(flush());
  }
  return flush();
}

}  // namespace augmentd::cuda::chain
