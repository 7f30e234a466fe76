// remove_random_connected_component's kernels (cc_cuda_types.h; the stage: remove_random_connected_component_cuda.cc).
// Per round: CcInit (mask, labels[i] = i), CcMerge (every foreground voxel unites with its foreground neighbours that
// precede it in raster order — the 13 of the 26-neighbourhood the CPU's Label visits — by atomicMin union-find: a
// root only ever links to a smaller index, so a tree's root is its component's smallest voxel index), CcCompress
// (labels[i] = root, sizes[root] += 1), CcSelect (one block per sample: the valid roots — size < limit — counted per
// thread chunk in raster order, a block scan, then the k-th of them, k = min(⌊u_c · V⌋, V − 1) in double as the CPU's
// Pick), CcApply (x[a] ← 0 on the chosen component, x[fill] ← 1 when set).
#include <cstdint>

#include "augment/kernels/cuda/chain_common.cuh"
#include "augment/transforms/remove_random_connected_component/cc_cuda_types.h"

namespace augmentd::cuda::chain {
namespace {

constexpr int kSelectThreads = 1024;

// Root of x: follows parents (always to smaller indices) until a self-loop. Loads bypass L1 (other blocks relink).
__device__ int32_t CcFind(const int32_t* labels, int32_t x) {
  int32_t p = __ldcg(labels + x);
  while (p != x) {
    x = p;
    p = __ldcg(labels + x);
  }
  return x;
}

__device__ void CcUnion(int32_t* labels, int32_t a, int32_t b) {
  while (true) {
    a = CcFind(labels, a);
    b = CcFind(labels, b);
    if (a == b) return;
    if (a > b) {
      const int32_t s = a;
      a = b;
      b = s;
    }
    // Link the larger root b under a; when b stopped being a root meanwhile, retry from its new parent.
    const int32_t old = atomicMin(labels + b, a);
    if (old == b) return;
    b = old;
  }
}

__global__ void CcInitKernel(const CcSample* __restrict__ recs, int32_t channels, int64_t n, const float* __restrict__ x,
                             uint8_t* __restrict__ mask, int32_t* __restrict__ labels, int32_t* __restrict__ sizes) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const CcSample r = recs[b];
  if (!r.on) return;
  const float* xa = x + (static_cast<int64_t>(b) * channels + r.channel) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const int64_t o = static_cast<int64_t>(b) * n + i;
    mask[o] = xa[i] != 0.0f;
    labels[o] = static_cast<int32_t>(i);
    sizes[o] = 0;
  }
}

__global__ void CcMergeKernel(const CcSample* __restrict__ recs, int32_t d0, int32_t d1, int32_t d2,
                              const uint8_t* __restrict__ mask, int32_t* labels) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  if (!recs[b].on) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  const uint8_t* m = mask + static_cast<int64_t>(b) * n;
  int32_t* l = labels + static_cast<int64_t>(b) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    if (!m[i]) continue;
    const int32_t c = static_cast<int32_t>(i % d2);
    const int32_t bb = static_cast<int32_t>((i / d2) % d1), a = static_cast<int32_t>(i / (int64_t{d1} * d2));
    for (int32_t da = -1; da <= 0; ++da)
      for (int32_t db = -1; db <= 1; ++db)
        for (int32_t dc = -1; dc <= 1; ++dc) {
          if (da == 0 && (db > 0 || (db == 0 && dc >= 0))) continue;  // only neighbours before i (as the CPU)
          const int32_t xa = a + da, y = bb + db, z = c + dc;
          if (xa < 0 || y < 0 || z < 0 || y >= d1 || z >= d2) continue;
          const int64_t j = (int64_t{xa} * d1 + y) * d2 + z;
          if (m[j]) CcUnion(l, static_cast<int32_t>(i), static_cast<int32_t>(j));
        }
  }
}

__global__ void CcCompressKernel(const CcSample* __restrict__ recs, int64_t n, const uint8_t* __restrict__ mask,
                                 int32_t* labels, int32_t* sizes) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  if (!recs[b].on) return;
  const uint8_t* m = mask + static_cast<int64_t>(b) * n;
  int32_t* l = labels + static_cast<int64_t>(b) * n;
  int32_t* s = sizes + static_cast<int64_t>(b) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    if (!m[i]) continue;
    const int32_t root = CcFind(l, static_cast<int32_t>(i));
    l[i] = root;
    atomicAdd(s + root, 1);
  }
}

__device__ bool CcValidRoot(const uint8_t* m, const int32_t* l, const int32_t* s, int64_t i, double limit) {
  return m[i] && l[i] == i && static_cast<double>(s[i]) < limit;
}

// One block per sample.
__global__ void __launch_bounds__(kSelectThreads) CcSelectKernel(const CcSample* __restrict__ recs, int64_t n,
                                                                 const uint8_t* __restrict__ mask,
                                                                 const int32_t* __restrict__ labels,
                                                                 const int32_t* __restrict__ sizes,
                                                                 int32_t* __restrict__ chosen) {
  __shared__ int32_t scan[kSelectThreads];
  const int32_t b = static_cast<int32_t>(blockIdx.x);
  const CcSample r = recs[b];
  if (!r.on) {
    if (threadIdx.x == 0) chosen[b] = -1;
    return;
  }
  const uint8_t* m = mask + static_cast<int64_t>(b) * n;
  const int32_t* l = labels + static_cast<int64_t>(b) * n;
  const int32_t* s = sizes + static_cast<int64_t>(b) * n;
  const int64_t chunk = (n + kSelectThreads - 1) / kSelectThreads;
  const int64_t lo = min(n, static_cast<int64_t>(threadIdx.x) * chunk), hi = min(n, lo + chunk);
  int32_t count = 0;
  for (int64_t i = lo; i < hi; ++i) count += CcValidRoot(m, l, s, i, r.limit);
  scan[threadIdx.x] = count;
  __syncthreads();
  for (int off = 1; off < kSelectThreads; off <<= 1) {  // inclusive Hillis–Steele scan
    const int32_t v = threadIdx.x >= static_cast<unsigned>(off) ? scan[threadIdx.x - off] : 0;
    __syncthreads();
    scan[threadIdx.x] += v;
    __syncthreads();
  }
  const int32_t total = scan[kSelectThreads - 1];
  if (total == 0) {
    if (threadIdx.x == 0) chosen[b] = -1;
    return;
  }
  const int64_t pick = static_cast<int64_t>(r.component_draw * static_cast<double>(total));
  const int32_t k = static_cast<int32_t>(pick < total - 1 ? pick : int64_t{total} - 1);
  const int32_t before = scan[threadIdx.x] - count;
  if (k < before || k >= before + count) return;
  int32_t seen = before;
  for (int64_t i = lo; i < hi; ++i) {
    if (!CcValidRoot(m, l, s, i, r.limit)) continue;
    if (seen == k) {
      chosen[b] = static_cast<int32_t>(i);
      return;
    }
    ++seen;
  }
}

__global__ void CcApplyKernel(const CcSample* __restrict__ recs, int32_t channels, int64_t n,
                              const uint8_t* __restrict__ mask, const int32_t* __restrict__ labels,
                              const int32_t* __restrict__ chosen, float* __restrict__ x) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const CcSample r = recs[b];
  const int32_t root = chosen[b];
  if (!r.on || root < 0) return;
  const uint8_t* m = mask + static_cast<int64_t>(b) * n;
  const int32_t* l = labels + static_cast<int64_t>(b) * n;
  float* xb = x + static_cast<int64_t>(b) * channels * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    if (!m[i] || l[i] != root) continue;
    xb[int64_t{r.channel} * n + i] = 0.0f;
    if (r.fill_channel >= 0) xb[int64_t{r.fill_channel} * n + i] = 1.0f;
  }
}

}  // namespace

cudaError_t LaunchRemoveComponentRound(int32_t batch, int32_t channels, const int32_t shape[3], float* x,
                                       const CcSample* recs, uint8_t* mask, int32_t* labels, int32_t* sizes,
                                       int32_t* chosen, cudaStream_t stream) {
  const int64_t n = int64_t{shape[0]} * shape[1] * shape[2];
  const dim3 grid = SliceGrid(n, batch);
  const int threads = internal::kThreads;
  CcInitKernel<<<grid, threads, 0, stream>>>(recs, channels, n, x, mask, labels, sizes);
  CcMergeKernel<<<grid, threads, 0, stream>>>(recs, shape[0], shape[1], shape[2], mask, labels);
  CcCompressKernel<<<grid, threads, 0, stream>>>(recs, n, mask, labels, sizes);
  CcSelectKernel<<<batch, kSelectThreads, 0, stream>>>(recs, n, mask, labels, sizes, chosen);
  CcApplyKernel<<<grid, threads, 0, stream>>>(recs, channels, n, mask, labels, chosen, x);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
