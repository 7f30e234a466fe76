// augment/kernels/cuda/chain_stats.cu — the statistics-based transforms of the generic chain (chain_kernels.h):
// contrast and gamma. Per-slice statistics (mean, unbiased std, min, max) are deterministic two-kernel reductions
// (fixed partials per block, then one block per slice in a fixed order); the pointwise maths is common.cuh's
// (GammaCore & co., shared with the fused kernels).
#include "augment/kernels/cuda/chain_common.cuh"

namespace augmentd::cuda::chain {
namespace {

using internal::kThreads;
using internal::Partial;
using internal::Stats;

// Scratch layout: partials [slices][blocks], stats A [slices], stats B [slices].
struct StatsScratch {
  Partial* partials;
  int blocks;
  Stats* a;
  Stats* b;
};

StatsScratch Carve(const Dims& d, void* base) {
  StatsScratch s{};
  const size_t slices = static_cast<size_t>(d.slices());
  s.blocks = BlocksPerSlice(d.voxels(), d.slices());
  char* p = static_cast<char*>(base);
  s.partials = reinterpret_cast<Partial*>(p);
  p += internal::AlignUp(slices * s.blocks * sizeof(Partial));
  s.a = reinterpret_cast<Stats*>(p);
  p += internal::AlignUp(slices * sizeof(Stats));
  s.b = reinterpret_cast<Stats*>(p);
  return s;
}

// Which slices a pass touches (functors evaluated per block).
struct ContrastOn {
  const ContrastSlice* p;
  __device__ bool operator()(int slice) const { return p[slice].on != 0; }
};
struct GammaOn {
  const GammaSlice* p;
  bool retain_only;
  __device__ bool operator()(int slice) const { return p[slice].on != 0 && (!retain_only || p[slice].retain != 0); }
};

template <typename On>
__global__ void __launch_bounds__(kThreads) PartialsKernel(int64_t n, const float* x, On on, Partial* partials) {
  const int slice = blockIdx.y;
  if (!on(slice)) return;
  const float* v = x + slice * n;
  Partial acc = internal::EmptyPartial();
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) internal::Accumulate(acc, v[i]);
  acc = internal::BlockReduce(acc);
  if (threadIdx.x == 0) partials[static_cast<int64_t>(slice) * gridDim.x + blockIdx.x] = acc;
}

template <typename On>
__global__ void __launch_bounds__(kThreads) FinalizeKernel(int64_t n, On on, const Partial* partials, int blocks,
                                                           Stats* out) {
  const int slice = blockIdx.x;
  if (!on(slice)) return;
  Partial acc = internal::EmptyPartial();
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) {
    internal::AddPartial(acc, partials[static_cast<int64_t>(slice) * blocks + i]);
  }
  acc = internal::BlockReduce(acc);
  if (threadIdx.x == 0) out[slice] = internal::SliceStats(acc, n);
}

template <typename On>
cudaError_t SliceStats(const Dims& d, const float* x, On on, const StatsScratch& s, Stats* out, cudaStream_t stream) {
  PartialsKernel<<<dim3(s.blocks, d.slices()), kThreads, 0, stream>>>(d.voxels(), x, on, s.partials);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  FinalizeKernel<<<d.slices(), kThreads, 0, stream>>>(d.voxels(), on, s.partials, s.blocks, out);
  return cudaGetLastError();
}

// bgv2 ContrastTransform: (x − mean)·f + mean, clamped to the prior [min, max] with preserve_range.
__global__ void __launch_bounds__(kThreads) ContrastKernel(int64_t n, float* x, const ContrastSlice* p,
                                                           const Stats* st) {
  const ContrastSlice q = p[blockIdx.y];
  if (!q.on) return;
  const Stats s = st[blockIdx.y];
  float* v = x + blockIdx.y * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    float y = __fadd_rn(__fmul_rn(__fsub_rn(v[i], s.mean), q.factor), s.mean);
    if (q.preserve_range) y = fminf(fmaxf(y, s.mn), s.mx);
    v[i] = y;
  }
}

__device__ __forceinline__ internal::GammaConsts GammaOf(const GammaSlice& q, const Stats* before) {
  ChannelParams cp;
  cp.gamma[0] = q.gamma;
  cp.gamma_invert[0] = q.invert;
  cp.gamma_retain[0] = q.retain;
  return internal::MakeGammaCore(cp, 0, before);
}

// y = ((±x − min)/max(r, 1e-7))^γ·r + min; without retain the sign is restored here.
__global__ void __launch_bounds__(kThreads) GammaMapKernel(int64_t n, float* x, const GammaSlice* p,
                                                           const Stats* before) {
  const GammaSlice q = p[blockIdx.y];
  if (!q.on) return;
  const internal::GammaConsts c = GammaOf(q, before + blockIdx.y);
  float* v = x + blockIdx.y * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const float y = internal::GammaCore(v[i], c);
    v[i] = (!c.retain && c.inv) ? -y : y;
  }
}

// retain: (y − mean(y))·σ_x / max(σ_y, 1e-7) + μ_x, then the sign.
__global__ void __launch_bounds__(kThreads) GammaRetainKernel(int64_t n, float* x, const GammaSlice* p,
                                                              const Stats* before, const Stats* after) {
  const GammaSlice q = p[blockIdx.y];
  if (!q.on || !q.retain) return;
  internal::GammaConsts c = GammaOf(q, before + blockIdx.y);
  internal::AddRetain(c, after + blockIdx.y);
  float* v = x + blockIdx.y * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const float y = __fadd_rn(__fmul_rn(__fsub_rn(v[i], c.mean_y), c.scale), c.mu);
    v[i] = c.inv ? -y : y;
  }
}

}  // namespace

size_t StatsScratchBytes(const Dims& d) {
  const size_t slices = static_cast<size_t>(d.slices());
  return internal::AlignUp(slices * BlocksPerSlice(d.voxels(), d.slices()) * sizeof(Partial)) +
         2 * internal::AlignUp(slices * sizeof(Stats));
}

cudaError_t LaunchContrast(const Dims& d, float* x, const ContrastSlice* p, void* stats_scratch, cudaStream_t stream) {
  const StatsScratch s = Carve(d, stats_scratch);
  AUGMENTD_CUDA_RETURN_IF_ERROR(SliceStats(d, x, ContrastOn{p}, s, s.a, stream));
  ContrastKernel<<<SliceGrid(d.voxels(), d.slices()), kThreads, 0, stream>>>(d.voxels(), x, p, s.a);
  return cudaGetLastError();
}

cudaError_t LaunchGamma(const Dims& d, float* x, const GammaSlice* p, void* stats_scratch, cudaStream_t stream) {
  const StatsScratch s = Carve(d, stats_scratch);
  AUGMENTD_CUDA_RETURN_IF_ERROR(SliceStats(d, x, GammaOn{p, false}, s, s.a, stream));
  const dim3 grid = SliceGrid(d.voxels(), d.slices());
  GammaMapKernel<<<grid, kThreads, 0, stream>>>(d.voxels(), x, p, s.a);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  AUGMENTD_CUDA_RETURN_IF_ERROR(SliceStats(d, x, GammaOn{p, true}, s, s.b, stream));
  GammaRetainKernel<<<grid, kThreads, 0, stream>>>(d.voxels(), x, p, s.a, s.b);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
