// Per-slice moments (mean, unbiased std, min, max) for the DA5 stages: rician_noise (per sample), sharpening's
// clamp, local_gamma's range, brightness gradient's clip. Two launches: fixed per-block partials, then one block
// per slice merges them sequentially — deterministic.
#include <cmath>

#include "augment/kernels/cuda/da5_common.cuh"
#include "augment/kernels/cuda/da5_kernels.h"

namespace augmentd::cuda::da5 {
namespace {
using internal::kThreads;

__global__ void MomentsPartialKernel(const float* __restrict__ x, int64_t len, int nblk,
                                     MomentsPartial* __restrict__ partials) {
  const int slice = blockIdx.y, blk = blockIdx.x;
  const float* s = x + static_cast<int64_t>(slice) * len;
  const double shift = static_cast<double>(s[0]);
  const int64_t begin = len * blk / nblk, end = len * (blk + 1) / nblk;
  MomentsPartial p{0.0, 0.0, INFINITY, -INFINITY};
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = s[i];
    const double d = static_cast<double>(v) - shift;
    p.s += d;
    p.q += d * d;
    p.mn = fminf(p.mn, v);
    p.mx = fmaxf(p.mx, v);
  }
  p = internal::BlockMoments(p);
  if (threadIdx.x == 0) partials[static_cast<int64_t>(slice) * nblk + blk] = p;
}

__global__ void MomentsFinalKernel(const float* __restrict__ x, int64_t len, int nblk,
                                   const MomentsPartial* __restrict__ partials, SliceMoments* __restrict__ out) {
  const int slice = blockIdx.x;
  const MomentsPartial* p = partials + static_cast<int64_t>(slice) * nblk;
  MomentsPartial acc = p[0];
  for (int b = 1; b < nblk; ++b) internal::MergeMoments(acc, p[b]);
  out[slice] = FinalizeMoments(static_cast<double>(x[static_cast<int64_t>(slice) * len]), acc, len);
}
}  // namespace

int MomentsBlocks(int64_t len) {
  return static_cast<int>(std::clamp<int64_t>((len + 8 * kThreads - 1) / (8 * kThreads), 1, 256));
}

cudaError_t LaunchSliceMoments(const float* x, int64_t len, int slices, MomentsPartial* partials, SliceMoments* out,
                               cudaStream_t stream) {
  if (slices <= 0 || len <= 0) return cudaSuccess;
  const int nblk = MomentsBlocks(len);
  MomentsPartialKernel<<<dim3(nblk, slices), kThreads, 0, stream>>>(x, len, nblk, partials);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  MomentsFinalKernel<<<slices, 1, 0, stream>>>(x, len, nblk, partials, out);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::da5
