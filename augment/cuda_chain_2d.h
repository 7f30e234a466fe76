// augment/cuda_chain_2d.h — internal to the generic CUDA chain (cuda_chain.h): 2D samples (image (B, C, X, Y), nnU-Net's
// "2d" configuration) run through the 3D stages as (B, C, 1, X, Y). A stage may do so only where its 3D result with
// the unit leading axis equals the CPU transform's 2D result within the engine's tolerance; its 2D parameters are
// then lifted to the 3D form here (host-only, no GPU needed):
//   gaussian_blur            sigmas (s0, s1) → (kUnitAxisSigma, s0, s1): one tap of weight exactly 1 on the unit axis
//   simulate_low_resolution  scales (s0, s1) → (1, s0, s1): the unit axis keeps size 1 (nearest-exact and linear
//                            resampling of a size-1 axis onto itself are the identity)
//   mirror                   axes a → a + 1
//   rot90                    axis combinations (a, b) → (a + 1, b + 1) (dims counted with the channel dim)
//   transpose_axes           axis_order (0, a, b) → (0, 1, a + 1, b + 1)
//   pointwise / statistics / label stages (gaussian_noise: the voxel index is the same linear index;
//   multiplicative_brightness, brightness_additive, contrast, gamma, mask_image, remove_label,
//   convert_segmentation_to_regions): used as drawn.
// Every other stage refuses 2D samples with UNIMPLEMENTED naming it (its kernels have a 3D neighbourhood, k-space or
// geometry that differs from the CPU's 2D form). The spatial entry runs on the generic spatial kernel in 2D
// (cuda_chain_spatial.h); downsample_seg_for_ds computes its 2D level shapes (the executor prepends the unit axis).
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "augment/transform.h"

namespace augmentd {

// Blur sigma of the unit axis: GaussianKernel1D(kUnitAxisSigma) is the single tap {1.0f}.
inline constexpr double kUnitAxisSigma = 0.01;

// OK when entry `index` (kind `kind`) may run on 2D samples; UNIMPLEMENTED naming it and why otherwise.
absl::Status CheckStage2D(TransformKind kind, size_t index);

// The 3D form of parameters drawn for a 2D sample: a new object for the kinds listed above that carry spatial axes,
// nullptr when `p` is used as drawn. INVALID_ARGUMENT for parameters that are not 2D.
absl::StatusOr<std::unique_ptr<TransformParams>> LiftParams2D(TransformKind kind, const TransformParams& p);

}  // namespace augmentd
