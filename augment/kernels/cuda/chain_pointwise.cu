// augment/kernels/cuda/chain_pointwise.cu — pointwise kernels of the generic chain (chain_kernels.h): scale/shift,
// Gaussian noise, image masking, label replacement, regions, output conversion.
#include "augment/kernels/cuda/chain_common.cuh"

namespace augmentd::cuda::chain {
namespace {

using internal::kThreads;

__global__ void __launch_bounds__(kThreads) ScaleShiftKernel(int64_t n, float* x, const ScaleShiftSlice* p) {
  const ScaleShiftSlice q = p[blockIdx.y];
  if (!q.on) return;
  float* v = x + blockIdx.y * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) v[i] = __fadd_rn(__fmul_rn(v[i], q.mul), q.add);
}

// One Philox block (4 normals) per iteration: x[i] + sigma · NormalAt(key, i), as the CPU's AddScaled.
__global__ void __launch_bounds__(kThreads) NoiseKernel(int64_t n, float* x, const NoiseSlice* p) {
  const NoiseSlice q = p[blockIdx.y];
  if (!q.on) return;
  float* v = x + blockIdx.y * n;
  const int64_t blocks = (n + 3) / 4;
  AUGMENTD_CHAIN_FOR_VOXELS(j, blocks) {
    float z[4];
    NormalBlock(q.key, static_cast<uint64_t>(j), z);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int64_t i = 4 * j + k;
      if (i < n) v[i] = __fadd_rn(v[i], __fmul_rn(q.sigma, z[k]));
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    MaskKernel(int64_t n, int channels, float* x, int seg_channels, const int16_t* s, int seg_channel,
               uint64_t bits, float value, const int32_t* on) {
  const int b = blockIdx.y;
  if (!on[b]) return;
  const int16_t* m = s + (static_cast<int64_t>(b) * seg_channels + seg_channel) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    if (m[i] >= 0) continue;
    for (int c = 0; c < channels; ++c)
      if ((bits >> c) & 1u) x[(static_cast<int64_t>(b) * channels + c) * n + i] = value;
  }
}

// kVector: 8 labels a 16-byte access (n % 8 == 0, `s` 16-byte aligned: the launcher checks), written back only when
// one of them changed; else one label an access.
template <bool kVector>
__global__ void __launch_bounds__(kThreads)
    ReplaceLabelKernel(int64_t n, int seg_channels, int16_t* s, uint64_t bits, int16_t label, int16_t set_to,
                       const int32_t* on) {
  const int b = blockIdx.y / seg_channels, k = blockIdx.y % seg_channels;
  if (!on[b] || !((bits >> k) & 1u)) return;
  int16_t* v = s + static_cast<int64_t>(blockIdx.y) * n;
  if constexpr (kVector) {
    uint4* v8 = reinterpret_cast<uint4*>(v);
    const uint32_t from = static_cast<uint16_t>(label), to = static_cast<uint16_t>(set_to);
    AUGMENTD_CHAIN_FOR_VOXELS(i, n / 8) {
      uint4 w = v8[i];
      bool changed = false;
      const auto word = [&](uint32_t& x) {  // two labels: the low and the high half
        const uint32_t lo = x & 0xffffu, hi = x >> 16;
        const uint32_t nlo = lo == from ? to : lo, nhi = hi == from ? to : hi;
        changed |= nlo != lo || nhi != hi;
        x = nlo | (nhi << 16);
      };
      word(w.x);
      word(w.y);
      word(w.z);
      word(w.w);
      if (changed) v8[i] = w;
    }
  } else {
    AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
      if (v[i] == label) v[i] = set_to;
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    RegionsKernel(int64_t n, const int16_t* src, int16_t* out, int regions, const int32_t* offsets,
                  const int16_t* labels) {
  const int b = blockIdx.y / regions, r = blockIdx.y % regions;
  const int16_t* in = src + static_cast<int64_t>(b) * n;
  int16_t* o = out + static_cast<int64_t>(blockIdx.y) * n;
  const int lo = offsets[r], hi = offsets[r + 1];
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const int16_t v = in[i];
    int16_t hit = 0;
    for (int k = lo; k < hi; ++k) hit = hit | static_cast<int16_t>(labels[k] == v);
    o[i] = hit;
  }
}

__global__ void __launch_bounds__(kThreads) StoreKernel(int64_t n, const float* x, void* out, OutDType dtype) {
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) internal::StoreOut(out, dtype, i, x[i]);
}

}  // namespace

cudaError_t LaunchScaleShift(const Dims& d, float* x, const ScaleShiftSlice* p, cudaStream_t stream) {
  ScaleShiftKernel<<<SliceGrid(d.voxels(), d.slices()), kThreads, 0, stream>>>(d.voxels(), x, p);
  return cudaGetLastError();
}

cudaError_t LaunchNoise(const Dims& d, float* x, const NoiseSlice* p, cudaStream_t stream) {
  NoiseKernel<<<SliceGrid((d.voxels() + 3) / 4, d.slices()), kThreads, 0, stream>>>(d.voxels(), x, p);
  return cudaGetLastError();
}

cudaError_t LaunchMaskImage(const Dims& img, float* x, const Dims& seg, const int16_t* s, int32_t seg_channel,
                            uint64_t channel_bits, float value, const int32_t* on, cudaStream_t stream) {
  MaskKernel<<<SliceGrid(img.voxels(), img.batch), kThreads, 0, stream>>>(
      img.voxels(), img.channels, x, seg.channels, s, seg_channel, channel_bits, value, on);
  return cudaGetLastError();
}

cudaError_t LaunchReplaceLabel(const Dims& seg, int16_t* s, uint64_t channel_bits, int16_t label, int16_t set_to,
                               const int32_t* on, cudaStream_t stream) {
  if (seg.voxels() % 8 == 0 && reinterpret_cast<uintptr_t>(s) % 16 == 0) {
    ReplaceLabelKernel<true><<<SliceGrid(seg.voxels() / 8, seg.slices()), kThreads, 0, stream>>>(
        seg.voxels(), seg.channels, s, channel_bits, label, set_to, on);
  } else {
    ReplaceLabelKernel<false><<<SliceGrid(seg.voxels(), seg.slices()), kThreads, 0, stream>>>(
        seg.voxels(), seg.channels, s, channel_bits, label, set_to, on);
  }
  return cudaGetLastError();
}

cudaError_t LaunchRegions(int32_t batch, int64_t voxels, const int16_t* src, int16_t* out, int32_t regions,
                          const int32_t* offsets, const int16_t* labels, cudaStream_t stream) {
  RegionsKernel<<<SliceGrid(voxels, batch * regions), kThreads, 0, stream>>>(voxels, src, out, regions, offsets,
                                                                             labels);
  return cudaGetLastError();
}

cudaError_t LaunchSegChannelCopy(int32_t batch, int32_t channels, int64_t voxels, int32_t channel, int16_t* planes,
                                 int16_t* dst, bool scatter, cudaStream_t stream) {
  const size_t row = static_cast<size_t>(voxels) * sizeof(int16_t);
  int16_t* plane0 = planes + static_cast<int64_t>(channel) * voxels;
  if (scatter) {
    return cudaMemcpy2DAsync(plane0, row * channels, dst, row, row, batch, cudaMemcpyDeviceToDevice, stream);
  }
  return cudaMemcpy2DAsync(dst, row, plane0, row * channels, row, batch, cudaMemcpyDeviceToDevice, stream);
}

cudaError_t LaunchStoreImage(int64_t n, const float* x, void* out, OutDType dtype, cudaStream_t stream) {
  if (dtype == OutDType::kFloat32) {
    return cudaMemcpyAsync(out, x, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream);
  }
  StoreKernel<<<SliceGrid(n, 1), kThreads, 0, stream>>>(n, x, out, dtype);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
