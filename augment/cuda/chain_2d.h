// augment/cuda/chain_2d.h — internal to the generic CUDA chain (cuda/chain.h): 2D samples (image (B, C, X, Y), nnU-Net's
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
//   nnUNetTrainerDA5's local stages (stages_da5*.cc), each equal to the CPU's 2D result:
//   median_filter            as drawn: with d0 = 1 the k³ window holds each of the k² plane values k times, so its
//                            rank ⌊k³/2⌋ is the plane's rank ⌊⌊k³/2⌋/k⌋ = ⌊k²/2⌋, the CPU's 2D median (the kernel
//                            runs any d0 = 1 volume on its k×k planar path: bit-identical)
//   sharpening               → PlanarSharpeningParams (same fields): the kernel's 4-neighbour planar form (the 3D
//                            form on a unit axis computes fl(fl(6x − x) − x), not the CPU's fl(4x))
//   blank_rectangle          boxes [lb, ub) → [(0, lb), (1, ub)]: the whole unit axis
//   brightness_gradient_additive, local_gamma
//                            specs (loc_px, scale) → ((0, loc_px), (kUnitAxisLocalScale, scale)): the unit axis'
//                            1D factor is exactly 1.0f, so the bump fl(fl(1·k1)·k2) = fl(k1·k2) is the CPU's 2D
//                            kernel bit for bit (dense kernels are used as given: same C order)
//   rician_noise             as drawn: pointwise over the sample's C·X·Y values, the same linear noise index
//   MRI artefacts (cuda/stages_mri.cc; TorchIO reads a 2D sample as (X, Y, 1): CPU axis a < 2 is axis a + 1 here
//   and the CPU's unit last axis is the unit axis 0; a DFT over a size-1 axis is the identity, so the k-space
//   stages' spectra are the CPU's 2D spectra — their plans leave size-1 axes out):
//   bias_field               the CPU's coefficient of x^a·y^b·z^c (z its unit axis) → that of u^c·x^a·y^b (u the
//                            unit axis 0): both evaluate the unit axis at coordinate 0, so exactly the monomials
//                            x^a·y^b·1 remain, multiplied and summed in the CPU's order (bit for bit before exp)
//   ghosting                 axis a → a + 1 (the plane factors are those of the same axis length)
//   spike                    positions (p0, p1, p2) → (p2, p0, p1) (floor(p2·1) = 0 on the unit axis both ways)
//   motion                   → PlanarMotionParams (same fields): the stage resamples through PlanarMotionAffine
//                            and takes its k-space segments along the unit axis 0, as the CPU along its unit axis
//                            (one plane: one image — the input or a moved one — fills the whole spectrum)
//   AugLab's extras (cuda/stages_auglab.cc; the CPU reads a 2D sample as 1 × X × Y, the scratch's layout):
//   histogram_equalization, intensity_function (per-channel statistics + pointwise maps) and random_convolution
//   (k³ kernel, reflect padding: every tap of the unit axis reads index 0 on both engines): used as drawn.
//   The cascade's stages (augment/transforms/<kind>/<kind>_cuda.cc), used as drawn:
//   move_seg_as_one_hot_to_data  pointwise copy + one-hot over the same linear index
//   apply_random_binary_operator the stage builds the CPU's 2D footprint disk(r) (ChainTensors::two_d) as 1 × k × k;
//                            the CPU's 2D dilation is its Dilate3 on 1 × X × Y, the stage's on the scratch
//   remove_random_connected_component  the 13 preceding neighbours of the 26-neighbourhood on a unit leading axis
//                            are the 4 preceding ones of the CPU's 8-neighbourhood: the same components, numbering
//   TorchIO's spatial transforms (augment/transforms/{anisotropy,torchio_affine,elastic_deformation}/*_cuda.cc;
//   TorchIO reads a 2D sample as (X, Y, 1), the very C-order buffer of the scratch's (1, X, Y)):
//   anisotropy, torchio_affine, elastic_deformation
//                            → resample_cuda::Planar<P> (same fields, transforms/common/resample_cuda.h): the stage
//                            resamples the planes on the CPU's (X, Y, 1) shape with the CPU's maps (2D flags included)
//   auglab_low_resolution    3D only on both engines: its Draw refuses 2D samples (AugLab's 5D input), so no 2D
//                            parameters reach the stage
//   swap                     (transforms/swap/swap_cuda.cc Lift2DSwap; TorchIO's (X, Y, 1)) patch (px, py, 1) →
//                            (1, px, py), corners (i, j, 0) → (0, i, j): the same voxels, the same C-order copy order
//   redistribute_seg         (the CPU reads (X, Y) as 1 × X × Y) used as drawn: the 7³ ring dilation of the unit
//                            axis is the identity on both engines
// Every kind of today is listed above; a kind added without a verified 2D form is refused for 2D samples with
// UNIMPLEMENTED naming it (CheckStage2D's default). The spatial entry runs on the generic spatial kernel in 2D
// (cuda/chain_spatial.h); downsample_seg_for_ds computes its 2D level shapes (the executor prepends the unit axis).
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "augment/transform.h"
#include "augment/transforms/motion/motion.h"
#include "augment/transforms/sharpening/sharpening.h"

namespace augmentd {

// Blur sigma of the unit axis: GaussianKernel1D(kUnitAxisSigma) is the single tap {1.0f}.
inline constexpr double kUnitAxisSigma = 0.01;

// Local-kernel scale of the unit axis (centre 0): LocalGaussianAxis(1, 0, kUnitAxisLocalScale) is {1.0f} exactly —
// Φ(0.5 / 0.01) − Φ(−0.5 / 0.01) = Φ(50) − Φ(−50), and in double Φ(50) rounds to 1 while Φ(−50) (≈ 1e−545)
// underflows to 0.
inline constexpr double kUnitAxisLocalScale = 0.01;

// sharpening's parameters for a 2D sample (LiftParams2D): the same fields; the stage runs its planar form.
struct PlanarSharpeningParams final : SharpeningParams {
  PlanarSharpeningParams() = default;
  explicit PlanarSharpeningParams(const SharpeningParams& p) : SharpeningParams(p) {}
};

// motion's parameters for a 2D sample (LiftParams2D): the same fields; the stage runs its planar mode.
struct PlanarMotionParams final : MotionParams {
  PlanarMotionParams() = default;
  explicit PlanarMotionParams(const MotionParams& p) : MotionParams(p) {}
};

// The index affine of a 2D sample's CPU form (X, Y, 1) (MotionIndexAffine) on the scratch's (1, X, Y): scratch
// axis g is CPU axis π(g), π = (2, 0, 1), so m'[g][h] = m[π(g)][π(h)] and b'[g] = b[π(g)]. For in-plane motion
// (what Draw gives 2D samples: only the third angle and the first two translations) each input index is computed
// from the same products as the CPU's, bit for bit; out-of-plane (injected) parameters differ in summation order.
MotionAffine PlanarMotionAffine(const MotionAffine& a);

// OK when entry `index` (kind `kind`) may run on 2D samples; UNIMPLEMENTED naming it and why otherwise.
absl::Status CheckStage2D(TransformKind kind, size_t index);

// The 3D form of parameters drawn for a 2D sample: a new object for the kinds listed above that carry spatial axes,
// nullptr when `p` is used as drawn. INVALID_ARGUMENT for parameters that are not 2D.
absl::StatusOr<std::unique_ptr<TransformParams>> LiftParams2D(TransformKind kind, const TransformParams& p);

}  // namespace augmentd
