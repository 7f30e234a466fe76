// Median filter and sharpening of the DA5 chain (stencils: they read a copy of the image and write the image).
//
// Median: one block per 4×8×8 output tile of one slice; the tile plus its k−1 halo (scipy 'reflect' indices,
// origin 0: the window starts k/2 voxels before the output) is loaded once into shared memory as ordered keys, and
// every thread selects the exact rank-⌊k³/2⌋ key of its window (da5_math.h MedianKey3, one compiled build per DA5
// size 2…7, a run-time build for 8…15): k ≤ 3 the window's 8 / 27 keys in registers through a Batcher sorting
// network; k ≥ 4 a sorted sample of the tile's keys gives every halo key a bin byte (64 bins of about equal shares
// of the tile, monotone in the key order), and each output takes one histogram pass over its window's bytes, then
// gathers the ≤ 16 / 24 keys of the median's bin (sorted by a register network) — 2 passes instead of the ≥ 4 of a
// per-window range — or, where that bin holds more, the key-space levels inside it (≤ 10 passes for any data).
// Bit-identical to scipy / the CPU transform.
// Planar median (d0 = 1: 2D samples, or 3D ones with one slice): ReflectIndex(·, 1) = 0, so the k³ window holds
// each of the k² values of the plane's k×k window exactly k times; sorted, it is the k² values sorted with every
// value repeated k times, so its rank ⌊k³/2⌋ is the k×k window's rank ⌊⌊k³/2⌋/k⌋ = ⌊k³/(2k)⌋ = ⌊k²/2⌋ — the CPU's 2D
// median too. That path selects it on the k×k window (16×16 output tiles): k times less work, same bits.
#include "augment/kernels/cuda/da5_common.cuh"
#include "augment/kernels/cuda/da5_kernels.h"

namespace augmentd::cuda::da5 {
namespace {
using internal::kThreads;
constexpr int kTz = 4, kTy = 8, kTx = 8;  // output tile (kTz·kTy·kTx == kThreads)
static_assert(kTz * kTy * kTx == kThreads);
constexpr int kPy = 16, kPx = 16;  // planar output tile
static_assert(kPy * kPx == kThreads);
constexpr int kHistWords = kSelectHistBins * kThreads;  // per-thread histogram columns (SelectRankKeyHist)
constexpr size_t kDefaultSmem = 48 * 1024;

// One 4×8×8 output tile of window size k (K: compile-time, 0 = run-time k): halo keys to shared memory (k ≥ 4:
// then the tile's 63 bin boundaries, a sample of its keys sorted by rank, and one QuantileBin byte per halo key),
// then MedianKey3<K> per thread (da5_math.h: the register network for K ≤ 3, the tile-binned selection above).
template <int K>
__device__ __forceinline__ void MedianTile(const float* __restrict__ s, float* __restrict__ o, uint32_t* smem,
                                           int k_run, int d0, int d1, int d2, int o0, int o1, int o2) {
  constexpr bool kBinned = K == 0 || K >= kMedianMinBinnedSize;
  const int k = K == 0 ? k_run : K;
  uint32_t* keys = smem + kSelectHistBins * kThreads;
  const int before = k / 2;
  const int h1 = kTy + k - 1, h2 = kTx + k - 1;
  const int halo = (kTz + k - 1) * h1 * h2;
  uint8_t* bins = reinterpret_cast<uint8_t*>(keys + halo);
  for (int m = threadIdx.x; m < halo; m += blockDim.x) {
    const int c = m % h2, b = m / h2 % h1, a = m / (h1 * h2);
    const int i = ReflectIndex(o0 - before + a, d0), j = ReflectIndex(o1 - before + b, d1);
    const int l = ReflectIndex(o2 - before + c, d2);
    keys[m] = OrderedKey(s[(static_cast<int64_t>(i) * d1 + j) * d2 + l]);
  }
  __syncthreads();
  if constexpr (kBinned) {  // the tile's bin boundaries (a sorted sample of its keys), then a bin byte per key
    __shared__ uint32_t bounds[kTileSamples];
    if (threadIdx.x < kTileSamples)
      bounds[TileSampleRank(keys, halo, threadIdx.x)] = keys[TileSampleIndex(threadIdx.x, halo)];
    __syncthreads();
    for (int m = threadIdx.x; m < halo; m += blockDim.x) bins[m] = static_cast<uint8_t>(QuantileBin(keys[m], bounds));
    __syncthreads();
  }
  const int z = threadIdx.x / (kTy * kTx), y = threadIdx.x / kTx % kTy, x = threadIdx.x % kTx;
  const int i = o0 + z, j = o1 + y, l = o2 + x;
  if (i >= d0 || j >= d1 || l >= d2) return;
  const int at = (z * h1 + y) * h2 + x;
  const uint32_t key = MedianKey3<K>(keys + at, bins + at, k, h1 * h2, h2, smem + threadIdx.x, kThreads);
  o[(static_cast<int64_t>(i) * d1 + j) * d2 + l] = KeyToFloat(key);
}

__global__ void MedianKernel(const float* __restrict__ src, float* __restrict__ dst, const int32_t* __restrict__ ks,
                             int d0, int d1, int d2, int tiles1, int tiles2) {
  const int slice = blockIdx.y;
  const int k = ks[slice];
  if (k <= 1) return;
  extern __shared__ uint32_t smem[];  // kSelectHistBins × kThreads histogram columns, then the key tile
  const int tile = blockIdx.x;
  const int o0 = tile / (tiles1 * tiles2) * kTz;
  const int o1 = tile / tiles2 % tiles1 * kTy;
  const int o2 = tile % tiles2 * kTx;
  const int64_t plane = static_cast<int64_t>(d0) * d1 * d2;
  const float* s = src + slice * plane;
  float* o = dst + slice * plane;
  static_assert(kMedianMaxCompiledSize == 7, "the cases below");
  switch (k) {  // block-uniform
    case 2: MedianTile<2>(s, o, smem, k, d0, d1, d2, o0, o1, o2); break;
    case 3: MedianTile<3>(s, o, smem, k, d0, d1, d2, o0, o1, o2); break;
    case 4: MedianTile<4>(s, o, smem, k, d0, d1, d2, o0, o1, o2); break;
    case 5: MedianTile<5>(s, o, smem, k, d0, d1, d2, o0, o1, o2); break;
    case 6: MedianTile<6>(s, o, smem, k, d0, d1, d2, o0, o1, o2); break;
    case 7: MedianTile<7>(s, o, smem, k, d0, d1, d2, o0, o1, o2); break;
    default: MedianTile<0>(s, o, smem, k, d0, d1, d2, o0, o1, o2); break;
  }
}

// Planar median: one block per 16×16 output tile of a d0 = 1 slice, the (15 + k)² halo as keys.
__global__ void MedianPlaneKernel(const float* __restrict__ src, float* __restrict__ dst,
                                  const int32_t* __restrict__ ks, int d1, int d2, int tiles2) {
  const int slice = blockIdx.y;
  const int k = ks[slice];
  if (k <= 1) return;
  extern __shared__ uint32_t smem[];  // histogram columns, then the key tile
  uint32_t* keys = smem + kSelectHistBins * kThreads;
  const int o1 = blockIdx.x / tiles2 * kPy, o2 = blockIdx.x % tiles2 * kPx;
  const int before = k / 2;
  const int h2 = kPx + k - 1, halo = (kPy + k - 1) * h2;
  const int64_t plane = static_cast<int64_t>(d1) * d2;
  const float* s = src + slice * plane;
  for (int m = threadIdx.x; m < halo; m += blockDim.x) {
    const int j = ReflectIndex(o1 - before + m / h2, d1), l = ReflectIndex(o2 - before + m % h2, d2);
    keys[m] = OrderedKey(s[static_cast<int64_t>(j) * d2 + l]);
  }
  __syncthreads();
  const int y = threadIdx.x / kPx, x = threadIdx.x % kPx;
  const int j = o1 + y, l = o2 + x;
  if (j >= d1 || l >= d2) return;
  const Window2 w{keys + y * h2 + x, k, h2};
  const uint32_t key = SelectRankKeyHist(w, static_cast<uint32_t>(k * k / 2), smem + threadIdx.x, kThreads);
  dst[slice * plane + static_cast<int64_t>(j) * d2 + l] = KeyToFloat(key);
}

__global__ void SharpenKernel(const float* __restrict__ src, float* __restrict__ dst,
                              const SharpenSlice* __restrict__ p, const SliceMoments* __restrict__ stats, int d0,
                              int d1, int d2) {
  const int slice = blockIdx.y;
  const SharpenSlice q = p[slice];
  if (!q.apply) return;
  const int64_t plane = static_cast<int64_t>(d0) * d1 * d2;
  const float* s = src + slice * plane;
  float* o = dst + slice * plane;
  const float lo = q.clamp ? stats[slice].mn : 0.f, hi = q.clamp ? stats[slice].mx : 0.f;
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < plane;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int i, j, l;
    internal::Unravel(v, d1, d2, i, j, l);
    float r = SharpenAt(s, d0, d1, d2, i, j, l, q.strength, q.planar != 0);
    if (q.clamp) r = ClampF(r, lo, hi);
    o[v] = r;
  }
}
}  // namespace

cudaError_t LaunchMedian(const float* src, float* dst, const int32_t* k, int slices, const int32_t shape[3], int max_k,
                         cudaStream_t stream) {
  if (slices <= 0 || max_k <= 1) return cudaSuccess;
  if (max_k > kMaxMedianSize) return cudaErrorInvalidValue;
  if (shape[0] == 1) {
    const int t1 = (shape[1] + kPy - 1) / kPy, t2 = (shape[2] + kPx - 1) / kPx;
    const size_t smem = sizeof(uint32_t) * (kHistWords + (kPy + max_k - 1) * (kPx + max_k - 1));
    MedianPlaneKernel<<<dim3(t1 * t2, slices), kThreads, smem, stream>>>(src, dst, k, shape[1], shape[2], t2);
    return cudaGetLastError();
  }
  const int t0 = (shape[0] + kTz - 1) / kTz, t1 = (shape[1] + kTy - 1) / kTy, t2 = (shape[2] + kTx - 1) / kTx;
  // Histogram columns, the key tile and its bin bytes (MedianTile) for the largest window of the batch.
  auto bytes = [](int k) {
    const size_t halo = static_cast<size_t>(kTz + k - 1) * (kTy + k - 1) * (kTx + k - 1);
    return sizeof(uint32_t) * (kHistWords + halo) + halo;
  };
  const size_t smem = bytes(max_k);
  if (smem > kDefaultSmem) {  // windows ≥ 10: above the default 48 KiB of dynamic shared memory (once, to the max)
    static const cudaError_t opt_in = cudaFuncSetAttribute(MedianKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                           static_cast<int>(bytes(kMaxMedianSize)));
    if (opt_in != cudaSuccess) return opt_in;
  }
  MedianKernel<<<dim3(t0 * t1 * t2, slices), kThreads, smem, stream>>>(src, dst, k, shape[0], shape[1], shape[2], t1,
                                                                       t2);
  return cudaGetLastError();
}

cudaError_t LaunchSharpen(const float* src, float* dst, const SharpenSlice* p, const SliceMoments* stats, int slices,
                          const int32_t shape[3], cudaStream_t stream) {
  if (slices <= 0) return cudaSuccess;
  const int64_t plane = int64_t{shape[0]} * shape[1] * shape[2];
  SharpenKernel<<<dim3(internal::SliceBlocks(plane), slices), kThreads, 0, stream>>>(src, dst, p, stats, shape[0],
                                                                                     shape[1], shape[2]);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::da5
