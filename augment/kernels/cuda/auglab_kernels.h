// augment/kernels/cuda/auglab_kernels.h — launchers of AugLab's GPU extras (histogram equalisation, random
// convolution, intensity function / inverse) on the generic chain's scratch (augment/cuda/stage.h; the stages in
// augment/cuda/stages_auglab.cc call them). One or a few launches per batch; per-slice records in device memory (the
// uploaded ParamArena); every launcher enqueues on `stream`, never synchronises or allocates, and returns the
// launch error. Per-voxel math: auglab_math.h (shared with the CPU transforms augment/transforms/{histogram_equalization,random_convolution,intensity_function}/).
//
// Layout: image (B, C, d0, d1, d2) float32, C order; slice s = b·C + c covers x + s·n, n = d0·d1·d2.
// Statistics (`SliceMoments`) come from da5::LaunchSliceMoments (deterministic).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "augment/kernels/common/auglab_math.h"
#include "augment/kernels/common/da5_math.h"

namespace augmentd::cuda::auglab {

// One (sample, channel) of one step. 48 bytes.
struct AuglabSlice {
  int32_t on = 0;               // 0: slice untouched by this step
  int32_t retain = 0;           // retain_stats after this step
  int32_t fn = 0;               // intensity step: IntensityFn code, −1 = inverse
  int32_t k = 0;                // random convolution: kernel size (odd)
  int32_t mix = 0;              // random convolution: blend with the input
  float alpha = 0;              // random convolution: blend weight of the input
  int64_t w_off = 0;            // random convolution: first weight (floats) of the slice's k³ kernel in `weights`
  int32_t region = kRegionAll;  // RegionMode (augment/transforms/common/auglab_region.h)
  int32_t pad = 0;
  uint64_t keep = kKeepAllLabels;  // labels of the region (bit l mod 64)
};
static_assert(sizeof(AuglabSlice) == 48, "AuglabSlice is packed into the ParamArena as is");

// Histogram equalisation of the slices with p[s].on and stats[s].mx > stats[s].mn: zeroes `counts`
// (slices · kHistBins), counts torch.histc bins, builds each slice's LUT in `luts` (slices · kHistBins floats),
// then maps x ← lut[LookupBin(x)]. `stats`: the slices' moments before the step.
cudaError_t LaunchHistogramEqualize(float* x, int64_t n, int slices, const AuglabSlice* p,
                                    const da5::SliceMoments* stats, uint32_t* counts, float* luts, cudaStream_t stream);

// Random convolution: dst slice s = ConvAt(src slice s) (mixed with src where p[s].mix) for p[s].on; other slices
// of dst are not written. `src` must not alias `dst`.
cudaError_t LaunchRandomConvolution(const float* src, float* dst, const int32_t shape[3], int slices,
                                    const AuglabSlice* p, const float* weights, cudaStream_t stream);

// One intensity step: x ← f(NormalizeMinMax(x, mn, mx)) (p[s].fn >= 0) or mx − x (fn = −1) for p[s].on.
cudaError_t LaunchIntensityStep(float* x, int64_t n, int slices, const AuglabSlice* p, const da5::SliceMoments* stats,
                                cudaStream_t stream);

// Region restriction after a step: for p[s].on with p[s].region != kRegionAll, x[v] ← orig[v] wherever
// !TakesTransformed(label, p[s].region, p[s].keep), label = seg[(b · seg_channels + seg_channel) · n + v] of the
// slice's sample b = s / channels. `seg` must hold seg_channel (the stage checks); `orig` is the image before the
// step (same layout as x).
cudaError_t LaunchRegionRestore(float* x, const float* orig, int64_t n, int slices, int channels, const AuglabSlice* p,
                                const int16_t* seg, int seg_channels, int seg_channel, cudaStream_t stream);

// retain_stats for p[s].on && p[s].retain: x ← Retain(x, MakeRetain(before[s], after[s])).
cudaError_t LaunchRetain(float* x, int64_t n, int slices, const AuglabSlice* p, const da5::SliceMoments* before,
                         const da5::SliceMoments* after, cudaStream_t stream);

}  // namespace augmentd::cuda::auglab
