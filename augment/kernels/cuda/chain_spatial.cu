// augment/kernels/cuda/chain_spatial.cu — the generic chain's spatial resampling (chain_kernels.h, "Generic spatial"):
// a device port of augment/kernels/cpu_spatial.cc (SampleImage, SampleLabels, CropImage/CropLabels) that reads the
// host-computed sampling grid. Every float operation is an explicitly rounded intrinsic in the CPU's order: 3D uses
// plain products and sums, 2D the FMA forms of torch's vectorised 2D kernel (std::fma on the CPU).
#include "augment/kernels/cpu_half.h"
#include "augment/kernels/cuda/chain_common.cuh"

namespace augmentd::cuda::chain {
namespace {

using internal::kThreads;

// cpu_spatial.cc FloorIndex: far outside for |x| >= 2^30 or NaN.
__device__ __forceinline__ int64_t FloorIndex(float x) {
  if (!(x > -1073741824.0f && x < 1073741824.0f)) return -(int64_t{1} << 40);
  const int64_t i = static_cast<int64_t>(x);
  return static_cast<float>(i) > x ? i - 1 : i;
}

// 3D: ((c + 1)·S − 1) / 2; 2D: fma(c + 1, S/2, −0.5). The halvings are products by 0.5: RN(x·0.5) and RN(x / 2) are
// the rounding of the same real number, so they are the same float for every x (NaN and ±inf included), at one
// instruction instead of the ≈ 10 of an IEEE division.
__device__ __forceinline__ float Unnormalize(float c, int size, int ndim) {
  const float s = static_cast<float>(size);
  if (ndim == 3) return __fmul_rn(__fsub_rn(__fmul_rn(__fadd_rn(c, 1.0f), s), 1.0f), 0.5f);
  return __fmaf_rn(__fadd_rn(c, 1.0f), __fmul_rn(s, 0.5f), -0.5f);
}

struct Corners {
  int n = 0;
  int64_t offset[8];
  bool inb[8];
  float w[8];
};

__device__ __forceinline__ void LinearCorners(const SpatialGeom& g, const float* gv, Corners& c) {
  if (g.ndim == 3) {
    const int D = g.in[0], H = g.in[1], W = g.in[2];
    const float ix = Unnormalize(gv[2], W, 3), iy = Unnormalize(gv[1], H, 3), iz = Unnormalize(gv[0], D, 3);
    const int64_t x0 = FloorIndex(ix), y0 = FloorIndex(iy), z0 = FloorIndex(iz);
    const int64_t x1 = x0 + 1, y1 = y0 + 1, z1 = z0 + 1;
    const float wx[2] = {__fsub_rn(static_cast<float>(x1), ix), __fsub_rn(ix, static_cast<float>(x0))};
    const float wy[2] = {__fsub_rn(static_cast<float>(y1), iy), __fsub_rn(iy, static_cast<float>(y0))};
    const float wz[2] = {__fsub_rn(static_cast<float>(z1), iz), __fsub_rn(iz, static_cast<float>(z0))};
    const int64_t zs[2] = {z0, z1}, ys[2] = {y0, y1}, xs[2] = {x0, x1};
    c.n = 8;
    int k = 0;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        for (int e = 0; e < 2; ++e, ++k) {
          c.w[k] = __fmul_rn(__fmul_rn(wx[e], wy[b]), wz[a]);
          const int64_t z = zs[a], y = ys[b], x = xs[e];
          c.inb[k] = z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
          c.offset[k] = c.inb[k] ? (z * H + y) * W + x : 0;
        }
    return;
  }
  const int H = g.in[0], W = g.in[1];
  const float ix = Unnormalize(gv[1], W, 2), iy = Unnormalize(gv[0], H, 2);
  const int64_t x0 = FloorIndex(ix), y0 = FloorIndex(iy);
  const float w = __fsub_rn(ix, static_cast<float>(x0)), e = __fsub_rn(1.0f, w);
  const float n = __fsub_rn(iy, static_cast<float>(y0)), s = __fsub_rn(1.0f, n);
  const int64_t ys[2] = {y0, y0 + 1}, xs[2] = {x0, x0 + 1};
  const float wy[2] = {s, n}, wx[2] = {e, w};
  c.n = 4;
  int k = 0;
  for (int b = 0; b < 2; ++b)
    for (int a = 0; a < 2; ++a, ++k) {
      c.w[k] = __fmul_rn(wy[b], wx[a]);
      const int64_t y = ys[b], x = xs[a];
      c.inb[k] = y >= 0 && y < H && x >= 0 && x < W;
      c.offset[k] = c.inb[k] ? y * W + x : 0;
    }
}

__device__ __forceinline__ float Interpolate(const Corners& c, int ndim, const float* src) {
  if (ndim == 3) {
    float acc = 0.0f;
    for (int k = 0; k < 8; ++k)
      if (c.inb[k]) acc = __fadd_rn(acc, __fmul_rn(__ldg(src + c.offset[k]), c.w[k]));
    return acc;
  }
  float acc = __fmul_rn(c.inb[0] ? __ldg(src + c.offset[0]) : 0.0f, c.w[0]);
  for (int k = 1; k < 4; ++k) acc = __fmaf_rn(c.inb[k] ? __ldg(src + c.offset[k]) : 0.0f, c.w[k], acc);
  return acc;
}

// Nearest neighbour (round half to even of the unnormalised coordinate); −1 outside.
__device__ __forceinline__ int64_t NearestOffset(const SpatialGeom& g, const float* gv) {
  int64_t off = 0;
  for (int d = 0; d < g.ndim; ++d) {
    const float x = rintf(Unnormalize(gv[d], g.in[d], g.ndim));
    if (!(x >= 0.0f && x < static_cast<float>(g.in[d]))) return -1;
    off = off * g.in[d] + static_cast<int64_t>(x);
  }
  return off;
}

// bgv2 _compute_out_of_bounds_mask's thresholds −1 + 1/size, 1 − 1/size of array axis k (cpu_spatial.cc OutOfBounds),
// computed once per thread instead of one IEEE division per axis and voxel.
struct OobBounds {
  float lo[3], hi[3];
};

__device__ __forceinline__ OobBounds MakeOobBounds(const SpatialGeom& g) {
  OobBounds r{};
  for (int k = 0; k < g.ndim; ++k) {
    const float inv = __fdiv_rn(1.0f, static_cast<float>(g.in[k]));
    r.lo[k] = __fadd_rn(-1.0f, inv);
    r.hi[k] = __fsub_rn(1.0f, inv);
  }
  return r;
}

// bgv2 _compute_out_of_bounds_mask with its axis-swap quirk (cpu_spatial.cc OutOfBounds).
__device__ __forceinline__ bool OutOfBounds(const SpatialGeom& g, const OobBounds& t, const float* gv) {
  for (int k = 0; k < g.ndim; ++k) {
    const float c = gv[g.ndim - 1 - k];
    if (c < t.lo[k] || c > t.hi[k]) return true;
  }
  return false;
}

// The corner labels of one seg plane, loaded once (0 for out-of-bounds corners, which no vote reads): the votes
// below read each corner up to three times (uniform test, scores, and the nearest neighbour's label is separate).
__device__ __forceinline__ void LoadCornerLabels(const Corners& c, const int16_t* in, int16_t* lab) {
  for (int k = 0; k < c.n; ++k) lab[k] = c.inb[k] ? __ldg(in + c.offset[k]) : int16_t{0};
}

// cpu_spatial.cc DecideLabel's bg_style tail on ascending (labels, score): exactly 2 labels in the channel:
// the non-lowest label scoring >= 0.5, else lowest; otherwise 0 overwritten in ascending order by every label
// scoring >= 0.5 (a 0 background skipped).
__device__ __forceinline__ int16_t ThresholdVote(const int16_t* labels, const float* score, int nl, int16_t lowest,
                                                 int32_t num_labels) {
  int16_t r = 0;
  if (num_labels == 2) {
    bool hit = false;
    for (int i = 0; i < nl; ++i)
      if (labels[i] != lowest && score[i] >= 0.5f) {
        r = labels[i];
        hit = true;
      }
    return hit ? r : lowest;
  }
  for (int i = 0; i < nl; ++i) {
    if (labels[i] == 0 && lowest == 0) continue;
    if (score[i] >= 0.5f) r = labels[i];
  }
  return r;
}

// cpu_spatial.cc DecideLabel. bg_style off: per-label 1000·w sums in corner order (2D: fma), fp16 running max over
// ascending labels, strict '>' from (0, lowest). bg_style on: per-label w sums, bgv2's >= 0.5 threshold vote.
__device__ __forceinline__ int16_t DecideLabel(const Corners& c, int ndim, const int16_t* corner_lab, int16_t lowest,
                                               bool bg_style, int32_t num_labels) {
  if (!bg_style) {
    bool uniform = true;
    const int16_t first = c.inb[0] ? corner_lab[0] : 0;
    for (int k = 0; k < c.n && uniform; ++k) uniform = c.inb[k] && corner_lab[k] == first;
    if (uniform) return first;
  }
  const float scale = bg_style ? 1.0f : 1000.0f;
  int16_t labels[8];
  float score[8];
  int nl = 0;
  for (int k = 0; k < c.n; ++k) {
    if (!c.inb[k]) continue;
    const int16_t lab = corner_lab[k];
    int i = 0;
    while (i < nl && labels[i] != lab) ++i;
    if (i == nl) {
      labels[nl] = lab;
      score[nl] = 0.0f;
      ++nl;
    }
    score[i] = ndim == 3 ? __fadd_rn(score[i], __fmul_rn(scale, c.w[k])) : __fmaf_rn(scale, c.w[k], score[i]);
  }
  for (int i = 1; i < nl; ++i)
    for (int j = i; j > 0 && labels[j] < labels[j - 1]; --j) {
      const int16_t tl = labels[j];
      labels[j] = labels[j - 1];
      labels[j - 1] = tl;
      const float ts = score[j];
      score[j] = score[j - 1];
      score[j - 1] = ts;
    }
  if (bg_style) return ThresholdVote(labels, score, nl, lowest, num_labels);
  int16_t best_label = lowest;
  float best = 0.0f;
  int i0 = 0;
  if (nl > 0 && labels[0] == lowest) {
    best = kernels::RoundToHalf(score[0]);
    i0 = 1;
  }
  for (int i = i0; i < nl; ++i) {
    const float sc = kernels::RoundToHalf(score[i]);
    if (sc > best) {
      best = sc;
      best_label = labels[i];
    }
  }
  return best_label;
}

// cpu_spatial.cc DecideLabelPadFirst (bgv2 0.3.6): `lowest` / `count` describe the sample's label set with the
// padding label included when `pad_votes`.
__device__ __forceinline__ int16_t DecideLabelPadFirst(const SpatialGeom& g, const float* gv, const Corners& c,
                                                       const int16_t* in, const int16_t* corner_lab, int16_t lowest,
                                                       int32_t count, bool pad_votes) {
  if (count <= 1) return lowest;
  const int16_t pad = static_cast<int16_t>(g.pad_label);
  bool uniform = true;
  const int16_t first = c.inb[0] ? corner_lab[0] : 0;
  for (int k = 0; k < c.n && uniform; ++k) uniform = c.inb[k] && corner_lab[k] == first;
  if (uniform) return first;
  int16_t labels[9];
  float score[9];
  int nl = 0;
  float others = 0.0f;
  for (int k = 0; k < c.n; ++k) {
    if (!c.inb[k]) continue;
    const int16_t lab = corner_lab[k];
    int i = 0;
    while (i < nl && labels[i] != lab) ++i;
    if (i == nl) {
      labels[nl] = lab;
      score[nl] = 0.0f;
      ++nl;
    }
    if (g.ndim == 3) {
      const float x = __fmul_rn(1000.0f, c.w[k]);
      score[i] = __fadd_rn(score[i], x);
      if (lab != pad) others = __fadd_rn(others, x);
    } else {
      score[i] = __fmaf_rn(1000.0f, c.w[k], score[i]);
      if (lab != pad) others = __fmaf_rn(1000.0f, c.w[k], others);
    }
  }
  if (pad_votes) {
    int i = 0;
    while (i < nl && labels[i] != pad) ++i;
    if (i == nl) {
      labels[nl] = pad;
      ++nl;
    }
    score[i] = __fadd_rn(-others, 1000.0f);
  }
  for (int i = 1; i < nl; ++i)
    for (int j = i; j > 0 && labels[j] < labels[j - 1]; --j) {
      const int16_t tl = labels[j];
      labels[j] = labels[j - 1];
      labels[j - 1] = tl;
      const float ts = score[j];
      score[j] = score[j - 1];
      score[j - 1] = ts;
    }
  for (int i = 0; i < nl; ++i) score[i] = kernels::RoundToHalf(score[i]);
  const auto nearest = [&]() -> int16_t {
    const int64_t off = NearestOffset(g, gv);
    return off < 0 ? pad : __ldg(in + off);
  };
  if (count == 2) {
    float hi = 0.0f;
    int16_t l1 = lowest;
    for (int i = 0; i < nl; ++i)
      if (labels[i] != lowest) {
        hi = score[i];
        l1 = labels[i];
      }
    if (g.tiebreak == 1 && hi == 500.0f) return nearest();
    return (g.tiebreak == 2 ? hi >= 500.0f : hi > 500.0f) ? l1 : lowest;
  }
  float top = 0.0f;
  for (int i = 0; i < nl; ++i) top = fmaxf(top, score[i]);
  if (!(top > 0.0f)) return lowest;
  if (g.tiebreak == 1) {
    const int16_t nn = nearest();
    for (int i = 0; i < nl; ++i)
      if (labels[i] == nn && score[i] == top) return nn;
  }
  if (g.tiebreak == 2) {
    for (int i = nl - 1; i >= 0; --i)
      if (score[i] == top) return labels[i];
  }
  for (int i = 0; i < nl; ++i)
    if (score[i] == top) return labels[i];
  return lowest;
}

// 0.3.6 constant image padding: Σ over in-bounds corners of (v − shift)·w (2D: fma chain), then + shift.
__device__ __forceinline__ float InterpolateShifted(const Corners& c, int ndim, const float* src, float shift) {
  float acc;
  if (ndim == 3) {
    acc = 0.0f;
    for (int k = 0; k < 8; ++k)
      if (c.inb[k]) acc = __fadd_rn(acc, __fmul_rn(__fsub_rn(__ldg(src + c.offset[k]), shift), c.w[k]));
  } else {
    acc = __fmul_rn(c.inb[0] ? __fsub_rn(__ldg(src + c.offset[0]), shift) : 0.0f, c.w[0]);
    for (int k = 1; k < 4; ++k)
      acc = __fmaf_rn(c.inb[k] ? __fsub_rn(__ldg(src + c.offset[k]), shift) : 0.0f, c.w[k], acc);
  }
  return __fadd_rn(acc, shift);
}

// grid (blocks over the working output, B·F planes); each thread: one output voxel of one (b, f), every channel.
__global__ void __launch_bounds__(kThreads) SpatialGenericKernel(const SpatialGeom g, const SpatialSampleRec* recs,
                                                                 const float* grids, const float* image,
                                                                 const int16_t* seg, const int16_t* lowest,
                                                                 const int32_t* num_labels, float* out_image,
                                                                 int16_t* out_seg, const int32_t* pad_present) {
  const int F = g.fold;
  const int b = blockIdx.y / F, f = blockIdx.y % F;
  const SpatialSampleRec rec = recs[b];
  int64_t n_in = 1, n_out = 1;
  for (int d = 0; d < g.ndim; ++d) {
    n_in *= g.in[d];
    n_out *= g.out[d];
  }
  const int C = g.channels, SC = g.seg_channels;
  const OobBounds oob_t = MakeOobBounds(g);
  AUGMENTD_CHAIN_FOR_VOXELS(v, n_out) {
    if (rec.grid < 0) {  // integer crop (CropImpl)
      int64_t rem = v, src = 0;
      bool inb = true;
      int idx[3];
      for (int d = g.ndim - 1; d >= 0; --d) {
        idx[d] = static_cast<int>(rem % g.out[d]);
        rem /= g.out[d];
      }
      for (int d = 0; d < g.ndim; ++d) {
        const int64_t i = int64_t{rec.start[d]} + idx[d];
        inb = inb && i >= 0 && i < g.in[d];
        src = src * g.in[d] + (inb ? i : 0);
      }
      for (int c = 0; c < C; ++c) {
        const int64_t plane = (int64_t{b} * C + c) * F + f;
        out_image[plane * n_out + v] = inb ? __ldg(image + plane * n_in + src) : g.image_crop_pad;
      }
      for (int s = 0; s < SC; ++s) {
        const int64_t plane = (int64_t{b} * SC + s) * F + f;
        out_seg[plane * n_out + v] = inb ? __ldg(seg + plane * n_in + src) : static_cast<int16_t>(g.seg_crop_pad);
      }
      continue;
    }
    const float* gv = grids + rec.grid + v * g.ndim;
    const bool oob = (g.image_fill || g.seg_fill) && OutOfBounds(g, oob_t, gv);
    Corners cr;
    const bool need_linear = !g.image_nearest || (SC > 0 && !g.seg_nearest);
    if (need_linear) LinearCorners(g, gv, cr);
    const int64_t near = (g.image_nearest || (SC > 0 && g.seg_nearest)) ? NearestOffset(g, gv) : -1;
    for (int c = 0; c < C; ++c) {
      const int64_t plane = (int64_t{b} * C + c) * F + f;
      float val;
      if (g.image_fill && oob) {
        val = g.image_fill_value;
      } else if (g.image_shifted) {  // 0.3.6 constant padding
        val = g.image_nearest ? (near < 0 ? g.image_shift
                                          : __fadd_rn(__fsub_rn(__ldg(image + plane * n_in + near), g.image_shift),
                                                      g.image_shift))
                              : InterpolateShifted(cr, g.ndim, image + plane * n_in, g.image_shift);
      } else if (g.image_nearest) {
        val = near < 0 ? 0.0f : __ldg(image + plane * n_in + near);
      } else {
        val = Interpolate(cr, g.ndim, image + plane * n_in);
      }
      out_image[plane * n_out + v] = val;
    }
    for (int s = 0; s < SC; ++s) {
      const int64_t plane = (int64_t{b} * SC + s) * F + f;
      int16_t lab;
      if (g.seg_fill && oob) {
        lab = static_cast<int16_t>(g.seg_fill_value);
      } else if (g.seg_nearest) {
        lab = near < 0 ? static_cast<int16_t>(g.pad_first ? g.pad_label : 0) : __ldg(seg + plane * n_in + near);
      } else if (g.pad_first) {
        int16_t corner_lab[8];
        LoadCornerLabels(cr, seg + plane * n_in, corner_lab);
        const bool votes = rec.pad_votes != 0;
        const bool add = votes && pad_present[plane] == 0;  // the padding label joins the plane's labels
        const int16_t lo = votes ? static_cast<int16_t>(min(static_cast<int>(lowest[plane]), g.pad_label))
                                 : lowest[plane];
        lab = DecideLabelPadFirst(g, gv, cr, seg + plane * n_in, corner_lab, lo, num_labels[plane] + (add ? 1 : 0),
                                  votes);
      } else {
        int16_t corner_lab[8];
        LoadCornerLabels(cr, seg + plane * n_in, corner_lab);
        lab = DecideLabel(cr, g.ndim, corner_lab, lowest[plane], g.bg_style != 0, g.bg_style ? num_labels[plane] : 0);
      }
      out_seg[plane * n_out + v] = lab;
    }
  }
}

// One block per plane: the minimum and, with `num_labels`, the popcount of a shared 65536-bit presence bitmap.
__global__ void __launch_bounds__(kThreads) LowestPerPlaneKernel(int64_t voxels, const int16_t* seg, int16_t* lowest,
                                                                 int32_t* num_labels, int32_t pad_label,
                                                                 int32_t* pad_present) {
  constexpr int kWords = 65536 / 32;
  __shared__ uint32_t seen[kWords];
  const bool count = num_labels != nullptr;
  if (count) {
    for (int w = threadIdx.x; w < kWords; w += blockDim.x) seen[w] = 0u;
    __syncthreads();
  }
  const int16_t* s = seg + static_cast<int64_t>(blockIdx.x) * voxels;
  int m = INT32_MAX;
  for (int64_t i = threadIdx.x; i < voxels; i += blockDim.x) {
    const int v = static_cast<int>(__ldg(s + i));
    m = min(m, v);
    if (count) {
      const uint32_t u = static_cast<uint32_t>(v + 32768);
      atomicOr(&seen[u >> 5], 1u << (u & 31));
    }
  }
  int distinct = 0;
  if (count) {
    __syncthreads();
    for (int w = threadIdx.x; w < kWords; w += blockDim.x) distinct += __popc(seen[w]);
  }
  for (int o = 16; o > 0; o >>= 1) {
    m = min(m, __shfl_down_sync(0xffffffffu, m, o));
    distinct += __shfl_down_sync(0xffffffffu, distinct, o);
  }
  __shared__ int warp_min[kThreads / 32], warp_count[kThreads / 32];
  if ((threadIdx.x & 31) == 0) {
    warp_min[threadIdx.x >> 5] = m;
    warp_count[threadIdx.x >> 5] = distinct;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) {
      m = min(m, warp_min[w]);
      distinct += warp_count[w];
    }
    lowest[blockIdx.x] = static_cast<int16_t>(m);
    if (count) num_labels[blockIdx.x] = distinct;
    if (count && pad_present != nullptr) {
      const uint32_t u = static_cast<uint32_t>(pad_label + 32768);
      pad_present[blockIdx.x] = (seen[u >> 5] >> (u & 31)) & 1u;
    }
  }
}

}  // namespace

cudaError_t LaunchLowestPerPlane(int32_t planes, int64_t voxels, const int16_t* seg, int16_t* lowest,
                                 int32_t* num_labels, cudaStream_t stream, int32_t pad_label, int32_t* pad_present) {
  if (planes <= 0 || voxels <= 0) return cudaSuccess;
  LowestPerPlaneKernel<<<planes, kThreads, 0, stream>>>(voxels, seg, lowest, num_labels, pad_label, pad_present);
  return cudaGetLastError();
}

cudaError_t LaunchSpatialGeneric(const SpatialGeom& g, const SpatialSampleRec* recs, const float* grids,
                                 const float* image, const int16_t* seg, const int16_t* lowest,
                                 const int32_t* num_labels, float* out_image, int16_t* out_seg, cudaStream_t stream,
                                 const int32_t* pad_present) {
  if (g.ndim != 2 && g.ndim != 3) return cudaErrorInvalidValue;
  const int64_t planes = int64_t{g.batch} * g.fold;
  if (planes < 1 || planes > 65535) return cudaErrorInvalidValue;
  int64_t n_out = 1;
  for (int d = 0; d < g.ndim; ++d) n_out *= g.out[d];
  const dim3 grid = SliceGrid(n_out, static_cast<int>(planes));
  SpatialGenericKernel<<<grid, kThreads, 0, stream>>>(g, recs, grids, image, seg, lowest, num_labels, out_image,
                                                      out_seg, pad_present);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
