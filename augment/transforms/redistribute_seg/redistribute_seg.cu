// augment/transforms/redistribute_seg/redistribute_seg.cu — LaunchRedistributeSeg (redistribute_seg_kernels.h).
// Launch sequence per batch (all on `stream`):
//   masks      MaskKernel: mask = seg != 0, the axis-2 pass of the 7-box dilation, any_fg[b] (some label > 0);
//              DilateKernel twice more (axes 1, 0; the last one ∧ ¬mask gives the ring) — the CPU's Dilate3
//   per job    LoadKernel (nan_to_num into w) → StatsKernel (min, max, population moments) → NormalizeKernel;
//              jobs of samples without foreground stop here (AugLab's early exit: the normalised channel)
//   regions    RegionStatsKernel: one block per (job, region, mask | ring): MaskedStats (count clamped to 1,
//              float mean, std around it)
//   add        AddKernel (the Gaussian sum over regions in order) → StatsKernel (its min, max) → FinalKernel
//   retain     StatsKernel (moments of the result) → RetainKernel
//   guard      FiniteKernel → WriteKernel (w into the image unless the result has NaN / Inf)
// Reductions: one block per record, fixed stride and tree order, double sums: deterministic.
#include <cmath>

#include "augment/kernels/common/redistribute_seg_math.h"
#include "augment/transforms/redistribute_seg/redistribute_seg_kernels.h"

namespace augmentd::cuda::redistribute_seg {
namespace {
namespace rsm = redistribute_seg_math;

constexpr int kThreads = 512;
constexpr int kRadius = 3;  // three 3×3×3 max-pools = a radius-3 box

struct BlockStats {
  float mn, mx, mean, std;
};
struct RegionStats {
  float mean, std;
};

// The small records' layout in Scratches::small.
struct Small {
  BlockStats* before;   // J: of nan_to_num(x)
  BlockStats* added;    // J: of the Gaussian sum
  BlockStats* after;    // J: of the redistributed channel (retain_stats)
  RegionStats* region;  // J·R·2: (mask, ring) per region
  int32_t* any_fg;      // B
  int32_t* finite;      // J
};

size_t Align(size_t v) { return (v + 255) / 256 * 256; }

Small SmallLayout(void* base, const Dims& d, int32_t jobs) {
  char* p = static_cast<char*>(base);
  Small s;
  size_t off = 0;
  s.before = reinterpret_cast<BlockStats*>(p + off);
  off += Align(sizeof(BlockStats) * jobs);
  s.added = reinterpret_cast<BlockStats*>(p + off);
  off += Align(sizeof(BlockStats) * jobs);
  s.after = reinterpret_cast<BlockStats*>(p + off);
  off += Align(sizeof(BlockStats) * jobs);
  s.region = reinterpret_cast<RegionStats*>(p + off);
  off += Align(sizeof(RegionStats) * jobs * d.regions * 2);
  s.any_fg = reinterpret_cast<int32_t*>(p + off);
  off += Align(sizeof(int32_t) * d.batch);
  s.finite = reinterpret_cast<int32_t*>(p + off);
  return s;
}

size_t SmallBytes(const Dims& d, int32_t jobs) {
  return 3 * Align(sizeof(BlockStats) * jobs) + Align(sizeof(RegionStats) * jobs * d.regions * 2) +
         Align(sizeof(int32_t) * d.batch) + Align(sizeof(int32_t) * jobs);
}

unsigned GridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks < 1 ? 1 : blocks) : 65535 * 8);
}

// Block-wide sum (double) / min / max in a fixed tree order; every thread gets the result.
__device__ double BlockSum(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

__device__ float BlockMin(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = fminf(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

__device__ float BlockMax(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

// Position of voxel i (within its slice) along `axis` and that axis' stride.
__device__ __forceinline__ void AxisOf(int64_t i, int axis, const int32_t* s, int64_t* pos, int64_t* stride) {
  const int64_t st[3] = {int64_t{s[1]} * s[2], s[2], 1};
  *stride = st[axis];
  *pos = (i / st[axis]) % s[axis];
}

__global__ void MaskKernel(const int16_t* seg, uint8_t* mask, uint8_t* out, int32_t* any_fg, int64_t total,
                           int64_t voxels, int32_t regions, int32_t s0, int32_t s1, int32_t s2) {
  const int32_t s[3] = {s0, s1, s2};
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = g % voxels;
    const int16_t v = seg[g];
    mask[g] = v != 0;
    if (v > 0) any_fg[(g / voxels) / regions] = 1;
    int64_t pos, stride;
    AxisOf(i, 2, s, &pos, &stride);
    uint8_t hit = 0;
    for (int64_t q = pos - kRadius; q <= pos + kRadius && !hit; ++q)
      if (q >= 0 && q < s[2]) hit = seg[g + (q - pos) * stride] != 0;
    out[g] = hit;
  }
}

__global__ void DilateKernel(const uint8_t* in, uint8_t* out, const uint8_t* exclude, int64_t total, int64_t voxels,
                             int axis, int32_t s0, int32_t s1, int32_t s2) {
  const int32_t s[3] = {s0, s1, s2};
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    int64_t pos, stride;
    AxisOf(g % voxels, axis, s, &pos, &stride);
    uint8_t hit = 0;
    for (int64_t q = pos - kRadius; q <= pos + kRadius && !hit; ++q)
      if (q >= 0 && q < s[axis]) hit = in[g + (q - pos) * stride];
    out[g] = exclude != nullptr ? (hit && !exclude[g]) : hit;
  }
}

__global__ void LoadKernel(const float* image, float* w, const Job* jobs, int64_t total, int64_t voxels,
                           int32_t channels) {
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    const Job jb = jobs[g / voxels];
    const float x = image[(int64_t{jb.sample} * channels + jb.channel) * voxels + g % voxels];
    w[g] = isfinite(x) ? x : 0.0f;
  }
}

// out[j] = min, max, population mean and std (double mean, as the CPU's PopulationStats) of v[j·P, (j+1)·P).
__global__ void StatsKernel(const float* v, int64_t voxels, BlockStats* out) {
  __shared__ double shd[kThreads];
  __shared__ float shf[kThreads];
  const float* x = v + blockIdx.x * voxels;
  double sum = 0;
  float mn = INFINITY, mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < voxels; i += kThreads) {
    const float a = x[i];
    sum += a;
    mn = fminf(mn, a);
    mx = fmaxf(mx, a);
  }
  const double mean = BlockSum(sum, shd) / static_cast<double>(voxels);
  mn = BlockMin(mn, shf);
  mx = BlockMax(mx, shf);
  double sq = 0;
  for (int64_t i = threadIdx.x; i < voxels; i += kThreads) {
    const double dlt = static_cast<double>(x[i]) - mean;
    sq += dlt * dlt;
  }
  sq = BlockSum(sq, shd);
  if (threadIdx.x == 0)
    out[blockIdx.x] = BlockStats{mn, mx, static_cast<float>(mean), static_cast<float>(sqrt(sq / voxels))};
}

__global__ void NormalizeKernel(float* w, const BlockStats* before, int64_t total, int64_t voxels) {
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    const BlockStats st = before[g / voxels];
    w[g] = rsm::Normalize(w[g], st.mn, rsm::Denominator(st.mn, st.mx));
  }
}

// Block (which, r, j): the CPU's MaskedStats of job j's normalised channel over region r's mask (which 0) or ring.
__global__ void RegionStatsKernel(const float* w, const uint8_t* mask, const uint8_t* ring, const Job* jobs,
                                  const int32_t* any_fg, int64_t voxels, int32_t regions, RegionStats* out) {
  __shared__ double shd[kThreads];
  const int which = static_cast<int>(blockIdx.x);
  const int32_t r = static_cast<int32_t>(blockIdx.y), j = static_cast<int32_t>(blockIdx.z);
  const Job jb = jobs[j];
  if (!any_fg[jb.sample]) return;
  const float* x = w + int64_t{j} * voxels;
  const uint8_t* m = (which == 0 ? mask : ring) + (int64_t{jb.sample} * regions + r) * voxels;
  double cnt = 0, sum = 0;
  for (int64_t i = threadIdx.x; i < voxels; i += kThreads)
    if (m[i]) {
      cnt += 1;
      sum += x[i];
    }
  cnt = BlockSum(cnt, shd);
  sum = BlockSum(sum, shd);
  cnt = cnt < 1.0 ? 1.0 : cnt;
  const float mean = static_cast<float>(sum / cnt);
  double sq = 0;
  for (int64_t i = threadIdx.x; i < voxels; i += kThreads)
    if (m[i]) {
      const double dlt = static_cast<double>(x[i]) - mean;
      sq += dlt * dlt;
    }
  sq = BlockSum(sq, shd);
  if (threadIdx.x == 0)
    out[(int64_t{j} * regions + r) * 2 + which] = RegionStats{mean, static_cast<float>(sqrt(sq / cnt))};
}

__global__ void AddKernel(const float* w, const uint8_t* mask, const Job* jobs, const int32_t* any_fg,
                          const float* jitter, const float* amplitude, const RegionStats* region, float* add,
                          int64_t total, int64_t voxels, int32_t regions) {
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = g / voxels, i = g % voxels;
    const Job jb = jobs[j];
    if (!any_fg[jb.sample]) continue;
    const float x = w[g];
    float acc = 0.0f;
    for (int32_t r = 0; r < regions; ++r) {
      if (jb.in_seg && !mask[(int64_t{jb.sample} * regions + r) * voxels + i]) continue;
      const RegionStats in = region[(j * regions + r) * 2], rg = region[(j * regions + r) * 2 + 1];
      const float sigma = rsm::Sigma(jitter[j * regions + r], in.mean, in.std, rg.mean, rg.std);
      acc = RnAdd(acc, RnMul(rsm::NormalPdf(x, in.mean, sigma), amplitude[j * regions + r]));
    }
    add[g] = acc;
  }
}

__global__ void FinalKernel(float* w, const float* add, const Job* jobs, const int32_t* any_fg,
                            const BlockStats* added, int64_t total, int64_t voxels) {
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = g / voxels;
    if (!any_fg[jobs[j].sample]) continue;
    const BlockStats a = added[j];
    if (RnSub(a.mx, a.mn) > 1e-8f) w[g] = rsm::Redistribute(w[g], add[g], a.mn, a.mx);
  }
}

__global__ void RetainKernel(float* w, const Job* jobs, const int32_t* any_fg, const BlockStats* before,
                             const BlockStats* after, int64_t total, int64_t voxels) {
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = g / voxels;
    if (!any_fg[jobs[j].sample]) continue;
    const BlockStats b = before[j], a = after[j];
    w[g] = rsm::Retain(w[g], a.mean, rsm::Max(a.std, 1e-7f), b.std, b.mean);
  }
}

__global__ void FiniteKernel(const float* w, int64_t voxels, int32_t* finite) {
  const float* x = w + blockIdx.x * voxels;
  int ok = 1;
  for (int64_t i = threadIdx.x; i < voxels && ok; i += kThreads) ok = isfinite(x[i]);
  ok = __syncthreads_and(ok);
  if (threadIdx.x == 0) finite[blockIdx.x] = ok;
}

__global__ void WriteKernel(float* image, const float* w, const Job* jobs, const int32_t* any_fg,
                            const int32_t* finite, int64_t total, int64_t voxels, int32_t channels) {
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < total; g += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = g / voxels;
    const Job jb = jobs[j];
    if (any_fg[jb.sample] && !finite[j]) continue;  // AugLab's guard (not applied to the early exit)
    image[(int64_t{jb.sample} * channels + jb.channel) * voxels + g % voxels] = w[g];
  }
}

}  // namespace

ScratchSizes Scratch(const Dims& d, int32_t jobs) {
  ScratchSizes s;
  s.bytes_u8 = static_cast<size_t>(d.batch) * static_cast<size_t>(d.regions) * static_cast<size_t>(d.voxels());
  s.bytes_f32 = static_cast<size_t>(jobs) * static_cast<size_t>(d.voxels()) * sizeof(float);
  s.bytes_small = SmallBytes(d, jobs);
  return s;
}

cudaError_t LaunchRedistributeSeg(float* image, const int16_t* seg, const Dims& d, const Job* jobs, int32_t num_jobs,
                                  const float* jitter, const float* amplitude, bool retain_stats, const Scratches& s,
                                  cudaStream_t stream) {
  if (num_jobs <= 0 || d.regions <= 0) return cudaSuccess;
  const int64_t p = d.voxels(), seg_total = int64_t{d.batch} * d.regions * p, job_total = int64_t{num_jobs} * p;
  const Small sm = SmallLayout(s.small, d, num_jobs);
  uint8_t* mask = s.u8[0];
  uint8_t* tmp = s.u8[1];
  uint8_t* ring = s.u8[2];
  float* w = s.f32[0];
  float* add = s.f32[1];
  const unsigned gs = GridFor(seg_total), gj = GridFor(job_total), nj = static_cast<unsigned>(num_jobs);
  cudaError_t e = cudaMemsetAsync(sm.any_fg, 0, sizeof(int32_t) * d.batch, stream);
  if (e != cudaSuccess) return e;
  // Masks and rings: axis 2 (from seg) → tmp, axis 1 → ring buffer, axis 0 ∧ ¬mask → tmp, which is the ring.
  MaskKernel<<<gs, kThreads, 0, stream>>>(seg, mask, tmp, sm.any_fg, seg_total, p, d.regions, d.shape[0], d.shape[1],
                                          d.shape[2]);
  DilateKernel<<<gs, kThreads, 0, stream>>>(tmp, ring, nullptr, seg_total, p, 1, d.shape[0], d.shape[1], d.shape[2]);
  DilateKernel<<<gs, kThreads, 0, stream>>>(ring, tmp, mask, seg_total, p, 0, d.shape[0], d.shape[1], d.shape[2]);
  ring = tmp;
  LoadKernel<<<gj, kThreads, 0, stream>>>(image, w, jobs, job_total, p, d.channels);
  StatsKernel<<<nj, kThreads, 0, stream>>>(w, p, sm.before);
  NormalizeKernel<<<gj, kThreads, 0, stream>>>(w, sm.before, job_total, p);
  RegionStatsKernel<<<dim3(2, static_cast<unsigned>(d.regions), nj), kThreads, 0, stream>>>(
      w, mask, ring, jobs, sm.any_fg, p, d.regions, sm.region);
  AddKernel<<<gj, kThreads, 0, stream>>>(w, mask, jobs, sm.any_fg, jitter, amplitude, sm.region, add, job_total, p,
                                         d.regions);
  StatsKernel<<<nj, kThreads, 0, stream>>>(add, p, sm.added);  // jobs without foreground: unused
  FinalKernel<<<gj, kThreads, 0, stream>>>(w, add, jobs, sm.any_fg, sm.added, job_total, p);
  if (retain_stats) {
    StatsKernel<<<nj, kThreads, 0, stream>>>(w, p, sm.after);
    RetainKernel<<<gj, kThreads, 0, stream>>>(w, jobs, sm.any_fg, sm.before, sm.after, job_total, p);
  }
  FiniteKernel<<<nj, kThreads, 0, stream>>>(w, p, sm.finite);
  WriteKernel<<<gj, kThreads, 0, stream>>>(image, w, jobs, sm.any_fg, sm.finite, job_total, p, d.channels);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::redistribute_seg
