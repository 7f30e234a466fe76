// augment/kernels/cuda/mri_kernels.h — launchers of the MRI artefact stages (augment/cuda/stages_mri.cc) on the
// generic chain's scratch (augment/cuda/stage.h). Definitions are the CPU transforms' (augment/transforms/{bias_field,ghosting,spike,motion}/);
// the Fourier transforms themselves are cuFFT plans owned by the stages, these kernels only prepare, modify and
// read back spectra. All enqueue on `stream` and return the launch error.
//
// Layout: image (B, C, d0, d1, d2) float32, C order; slice s = b·C + c covers x + s·P, P = d0·d1·d2; spectra are
// (B·C, d0, d1, d2) cuFloatComplex in cuFFT's (unshifted, numpy) order.
#pragma once

#include <cuComplex.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::mri {

// bias_field: per sample, coefficients[first .. first + count) (float64, TorchIO's loop order); order < 0 = skip.
struct BiasSample {
  int32_t order;
  int32_t first;
};
cudaError_t LaunchBiasField(float* x, const BiasSample* samples, const double* coefficients, int batch, int channels,
                            const int32_t shape[3], cudaStream_t stream);

// spec[s] = x[s] + 0i for every slice.
cudaError_t LaunchToComplex(const float* x, cuFloatComplex* spec, int slices, int64_t voxels, cudaStream_t stream);
// x[s] = real(spec[s]) · scale for the slices of active samples (active[s / channels] != 0).
cudaError_t LaunchToReal(const cuFloatComplex* spec, float* x, const int32_t* active, int slices, int channels,
                         int64_t voxels, float scale, cudaStream_t stream);

// ghosting: per sample, `axis` (< 0 = skip) and a factor per unshifted plane index along it (factors + first).
struct GhostSample {
  int32_t axis;
  int32_t first;
};
cudaError_t LaunchGhostPlanes(cuFloatComplex* spec, const GhostSample* samples, const float* factors, int batch,
                              int channels, const int32_t shape[3], cudaStream_t stream);

// spike k (one launch pair per k): per slice of samples with more than k spikes, X[index] += max|X| · intensity.
// `max_bits` (slices floats, zeroed by the caller) receives max|X| as float bits via atomicMax.
struct SpikeSample {
  int32_t count;        // spikes of this sample
  int32_t first;        // into the spike index array (unshifted flat spectrum indices, int64)
  float intensity;
};
cudaError_t LaunchSpikeMax(const cuFloatComplex* spec, const SpikeSample* samples, int k, int slices, int channels,
                           int64_t voxels, unsigned int* max_bits, cudaStream_t stream);
cudaError_t LaunchSpikeAdd(cuFloatComplex* spec, const SpikeSample* samples, const int64_t* indices, int k,
                           int slices, int channels, int64_t voxels, const unsigned int* max_bits,
                           cudaStream_t stream);

// motion: per slice minimum (the resampling fill), as order-preserving uint bits (zeroed → set by the kernel).
cudaError_t LaunchSliceMin(const float* x, int slices, int64_t voxels, unsigned int* min_key, cudaStream_t stream);
// Image t of every active sample as complex: t = 0 the input, else the input resampled through affines[b·N + t−1]
// (12 doubles: 3×3 then offset, mri_motion.h's MotionIndexAffine), fill = the slice minimum.
struct MotionSample {
  int32_t active;
  int32_t first_segment;  // segments[first + t] = shifted planes [lo, hi) along seg_axis that image t fills
  int32_t seg_axis;       // 2: the last axis (3D samples); 0: the unit axis of a 2D sample (1, X, Y) — the CPU's
                          // 2D form (X, Y, 1) segments its unit last axis (cuda/chain_2d.h, PlanarMotionParams)
};
struct MotionSegmentDev {
  int32_t lo, hi;
};
cudaError_t LaunchMotionImage(const float* x, const MotionSample* samples, const double* affines, int num_transforms,
                              int t, const unsigned int* min_key, int batch, int channels, const int32_t shape[3],
                              cuFloatComplex* out, cudaStream_t stream);
// result[s][v] = spec[s][v] where shifted(index of v along the sample's seg_axis) is in image t's segment.
cudaError_t LaunchMotionCopySegment(const cuFloatComplex* spec, const MotionSample* samples,
                                    const MotionSegmentDev* segments, int t, int batch, int channels,
                                    const int32_t shape[3], cuFloatComplex* result, cudaStream_t stream);

}  // namespace augmentd::cuda::mri
