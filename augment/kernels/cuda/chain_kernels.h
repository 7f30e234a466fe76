// augment/kernels/cuda/chain_kernels.h — kernels of the generic CUDA chain (augment/cuda/stage.h): one transform per
// launch (or a few), in place on the chain scratch, per-slice / per-sample parameter arrays in device memory (the
// batch's ParamArena). Host-callable from plain C++ (no CUDA device code here); every launcher enqueues on `stream`,
// never synchronises or allocates, and returns the launch error.
//
// Layout: image (B, C, d0, d1, d2) float32; seg (B, S, d0, d1, d2) int16. An image "slice" is one (b, c) channel,
// index b·C + c. Semantics equal the CPU transforms (augment/transforms/<name>.h) channel by channel; the float
// arithmetic uses the CPU's operation order with explicitly rounded operations (no FMA contraction).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/rng.h"

namespace augmentd::cuda::chain {

// Geometry of one chain tensor: `slices` = batch · channels (image) or batch · seg channels (labels).
struct Dims {
  int32_t batch = 0;
  int32_t channels = 0;
  int32_t shape[3] = {0, 0, 0};
  int64_t voxels() const { return int64_t{shape[0]} * shape[1] * shape[2]; }
  int32_t slices() const { return batch * channels; }
};

// ---- Per image slice ------------------------------------------------------------------------------------
struct ScaleShiftSlice {  // x ← x·mul + add (multiplicative_brightness: add 0; brightness_additive: mul 1)
  float mul = 1.f, add = 0.f;
  int32_t on = 0, pad = 0;
};
struct NoiseSlice {  // x[i] ← x[i] + sigma · NormalAt(key, i)
  StreamKey key{};
  float sigma = 0.f;
  int32_t on = 0, pad[2] = {0, 0};
};
struct ContrastSlice {  // x ← (x − mean)·factor + mean, clamped to the prior [min, max] with preserve_range
  float factor = 1.f;
  int32_t on = 0, preserve_range = 1, pad = 0;
};
struct GammaSlice {  // augment/transforms/gamma/gamma.h
  float gamma = 1.f;
  int32_t on = 0, invert = 0, retain = 0;
};
struct LowResSlice {  // nearest-exact down to q, trilinear (align_corners=False) back up
  int32_t q[3] = {0, 0, 0};
  int32_t on = 0;
};
struct BlurSlice {  // separable correlation along axes 0, 1, 2 with reflect padding; taps in the weights array
  int32_t offset[3] = {0, 0, 0};  // first tap of axis d in `weights`
  int32_t taps[3] = {0, 0, 0};    // odd
  int32_t on = 0, pad = 0;
};

// ---- Per sample ----------------------------------------------------------------------------------------
// Signed axis permutation (mirror, rot90, transpose_axes on equal-size axes): output voxel o reads the input voxel
// src with src[d] = flip[d] ? S_d − 1 − o[perm[d]] : o[perm[d]] (augment/transforms/transpose_axes/transpose_axes.h).
struct PermuteSample {
  int32_t perm[3] = {0, 1, 2};
  int32_t flip[3] = {0, 0, 0};
  int32_t on = 0, pad = 0;
};

// Bytes of `stats_scratch` the statistics-based launchers (contrast, gamma) need for `d`.
size_t StatsScratchBytes(const Dims& d);

cudaError_t LaunchScaleShift(const Dims& d, float* x, const ScaleShiftSlice* p, cudaStream_t stream);
cudaError_t LaunchNoise(const Dims& d, float* x, const NoiseSlice* p, cudaStream_t stream);
cudaError_t LaunchContrast(const Dims& d, float* x, const ContrastSlice* p, void* stats_scratch, cudaStream_t stream);
cudaError_t LaunchGamma(const Dims& d, float* x, const GammaSlice* p, void* stats_scratch, cudaStream_t stream);
// `tmp`: 2 · batch · channels · voxels floats.
cudaError_t LaunchBlur(const Dims& d, float* x, const BlurSlice* p, const float* weights, float* tmp,
                       cudaStream_t stream);
// `tmp`: batch · channels · voxels floats.
cudaError_t LaunchLowRes(const Dims& d, float* x, const LowResSlice* p, float* tmp, cudaStream_t stream);
// Image and labels gathered per sample through its permutation into `x_out` / `s_out` (other buffers of the same
// sizes; samples whose record is off are copied; `s` may be null when seg.channels == 0). Every axis exchanged by a
// permutation must have equal sizes (the caller checks). `rows_kept`: every sample's perm[2] is 2 (whole rows move:
// 16-byte vectors where the row length and the buffers allow).
cudaError_t LaunchPermute(const Dims& img, const float* x, float* x_out, const Dims& seg, const int16_t* s,
                          int16_t* s_out, const PermuteSample* p, bool rows_kept, cudaStream_t stream);
// mask_image: for each sample with on[b] and each channel c with bit c of `channel_bits`:
// x[b, c] ← value where seg[b, seg_channel] < 0.
cudaError_t LaunchMaskImage(const Dims& img, float* x, const Dims& seg, const int16_t* s, int32_t seg_channel,
                            uint64_t channel_bits, float value, const int32_t* on, cudaStream_t stream);
// remove_label: for each sample with on[b] and seg channel k with bit k of `channel_bits`: label → set_to.
cudaError_t LaunchReplaceLabel(const Dims& seg, int16_t* s, uint64_t channel_bits, int16_t label, int16_t set_to,
                               const int32_t* on, cudaStream_t stream);
// convert_segmentation_to_regions: out[b, r] = isin(src[b], labels[offsets[r] .. offsets[r + 1])) as 0/1, r < regions.
// `src` (B, 1, voxels) must not alias `out` (B, regions, voxels).
cudaError_t LaunchRegions(int32_t batch, int64_t voxels, const int16_t* src, int16_t* out, int32_t regions,
                          const int32_t* offsets, const int16_t* labels, cudaStream_t stream);
// Copies channel `channel` of (B, channels, voxels) int16 into dst (B, 1, voxels) (and back with `scatter`).
cudaError_t LaunchSegChannelCopy(int32_t batch, int32_t channels, int64_t voxels, int32_t channel, int16_t* planes,
                                 int16_t* dst, bool scatter, cudaStream_t stream);

// ---- Generic spatial resampling (augment/cuda/chain_spatial.h) ------------------------------------------
// The spatial entries the fused kernel does not take (2D samples, dummy-2D, nearest modes, random_crop, any
// padding value): the CPU kernels of augment/kernels/cpu_spatial.h, one thread per output voxel and plane, the
// sampling grid computed on the host by the CPU's own ComputeSamplingGrid (so coordinates are bit-identical), the
// corner weights, sums and fp16 label votes with the CPU's float operations (2D: torch's FMA forms; 3D: none).
// Working layout: image (B, C, F, in...) → (B, C, F, out...) where `ndim` working dims follow the F planes
// (dummy-2D: F = S0 and ndim 2; 2D samples: F = 1, ndim 2; 3D: F = 1, ndim 3); seg likewise with seg_channels.
struct SpatialGeom {
  int32_t ndim = 3;                   // 2 or 3
  int32_t fold = 1;                   // F
  int32_t in[3] = {1, 1, 1};          // working input shape (first ndim entries)
  int32_t out[3] = {1, 1, 1};         // working output shape
  int32_t batch = 0, channels = 0, seg_channels = 0;
  int32_t image_nearest = 0, seg_nearest = 0;
  int32_t image_fill = 0, seg_fill = 0;  // bgv2's constant-padding fix-up of out-of-bounds voxels (grid path)
  float image_fill_value = 0.f;
  int32_t seg_fill_value = 0;
  float image_crop_pad = 0.f;  // crop path: value outside the input
  int32_t seg_crop_pad = 0;
  int32_t bg_style = 0;  // bgv2's bg_style_seg_sampling threshold vote (linear seg mode; needs `num_labels`)
  // bgv2 0.3.6 (cpu_spatial.h LabelSampleOptions::pad_first): the seg is padded with `pad_label` before it is
  // resampled (the vote needs `num_labels` and `pad_present`); `tiebreak` 0 lowest, 1 nearest, 2 highest.
  int32_t pad_first = 0, pad_label = 0, tiebreak = 0;
  int32_t image_shifted = 0;  // 0.3.6 constant image padding: grid_sample(image − shift) + shift (grid path)
  float image_shift = 0.f;
};
// One sample: grid path (grid >= 0: float offset of its (out voxels × ndim) grid in `grids`) or integer crop
// starting at `start` (grid < 0).
struct SpatialSampleRec {
  int64_t grid = -1;
  int32_t start[3] = {0, 0, 0};
  int32_t pad = 0;
  int32_t pad_votes = 0;  // 0.3.6: the padding label is one of the sample's labels (cpu_spatial.h MayReachOutside)
};
// lowest[p] = min of plane p (`voxels` int16 values at seg + p·voxels), p < planes (the CPU's lowest label per
// folded seg channel).
// `num_labels` (may be null: not computed): the number of distinct values of plane p (the CPU's count of the
// bg_style vote, bgv2's unique()), through a 65536-bit presence bitmap per plane.
// `pad_present` (may be null; needs `num_labels`): 1 where plane p holds the value `pad_label`.
cudaError_t LaunchLowestPerPlane(int32_t planes, int64_t voxels, const int16_t* seg, int16_t* lowest,
                                 int32_t* num_labels, cudaStream_t stream, int32_t pad_label = 0,
                                 int32_t* pad_present = nullptr);
// `seg`/`out_seg`/`lowest`/`num_labels` may be null when g.seg_channels == 0; `lowest` is read only by the linear
// label vote, `num_labels` only by the bg_style and pad-first ones, `pad_present` only by the pad-first one.
cudaError_t LaunchSpatialGeneric(const SpatialGeom& g, const SpatialSampleRec* recs, const float* grids,
                                 const float* image, const int16_t* seg, const int16_t* lowest,
                                 const int32_t* num_labels, float* out_image, int16_t* out_seg, cudaStream_t stream,
                                 const int32_t* pad_present = nullptr);

// ---- Outputs -------------------------------------------------------------------------------------------
// float32 (n values) → out in `dtype`.
cudaError_t LaunchStoreImage(int64_t n, const float* x, void* out, OutDType dtype, cudaStream_t stream);
// One deep-supervision level: its spatial shape and its output (planes × shape values).
struct SegLevel {
  int32_t shape[3] = {0, 0, 0};
  void* dst = nullptr;
};
// Labels (`planes` planes of `in` voxels) → every level (nearest-exact, torch's index rule), as int16 or, with
// `as_bool`, as 0/1 bytes. An int16 level of the input's shape is a copy (none when its dst is `s` itself); the
// other levels share one launch per kMaxSegLevelsPerLaunch.
inline constexpr int kMaxSegLevelsPerLaunch = 8;
cudaError_t LaunchSegLevels(int32_t planes, const int32_t in[3], const int16_t* s, const SegLevel* levels,
                            int32_t num_levels, bool as_bool, cudaStream_t stream);

}  // namespace augmentd::cuda::chain
