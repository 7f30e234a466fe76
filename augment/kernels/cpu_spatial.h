// augment/kernels/cpu_spatial.h — CPU kernels of the spatial transform (pure functions, one sample).
//
// They reproduce batchgeneratorsv2 `SpatialTransform` (0.3.5, and 0.3.6's pad-first segmentation resampling and
// shifted constant image padding: LabelSampleOptions::pad_first, SampleImageShifted) + `torch.grid_sample`
// (align_corners=False) with
// the same float32 arithmetic order, so image outputs match to rounding and label outputs match except for
// documented float16 ties. A CUDA port mirrors each function one thread per output voxel.
//
//   GridSpec g = ...;                                   // shapes, affine, centre shift
//   std::vector<float> grid(NumOut(g) * g.ndim);
//   ComputeSamplingGrid(g, /*offsets=*/nullptr, grid.data());
//   SampleImage(g, in, channels, grid.data(), InterpMode::kLinear, out);
//
// Layouts: images/labels are C × spatial, C order. `grid` holds, per output voxel, the normalised sampling
// coordinate of every array axis (axis 0 first; bgv2 flips to (x, y, z) only for grid_sample).
#pragma once

#include <cstdint>

namespace augmentd::kernels {

struct GridSpec {
  int ndim = 3;                      // 2 or 3 spatial dims
  int64_t in_shape[3] = {1, 1, 1};   // S: input (enlarged patch) shape
  int64_t out_shape[3] = {1, 1, 1};  // p: output patch shape
  bool has_affine = false;
  float affine[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};  // A (float32), g' = A·g
  float shift[3] = {0, 0, 0};  // (centre − S/2) − mean(grid) as float32, added after the affine
};

int64_t NumOut(const GridSpec& g);
int64_t NumIn(const GridSpec& g);

// Fills grid[v*ndim + d] with the normalised coordinate (bgv2 `_convert_my_grid_to_grid_sample_grid`, unflipped)
// of output voxel v along axis d: ((lin_d + offsets) · Aᵀ + shift) / (S_d / 2), all float32.
// `offsets` (nullable): elastic offsets, out voxels × ndim. If `center_deformation_mean`, the mean of the
// pre-shift grid is subtracted (bgv2 does this only when elastic offsets exist).
void ComputeSamplingGrid(const GridSpec& g, const float* offsets, bool subtract_mean, float* grid);

enum class InterpMode { kLinear, kNearest };

// Image resampling (torch.grid_sample, padding 'zeros', align_corners=False). `in`: channels × S, `out`:
// channels × p. If `fill_out_of_bounds`, voxels flagged by OutOfBounds() are set to `fill_value`
// (bgv2's constant-padding fix-up).
void SampleImage(const GridSpec& g, const float* in, int64_t channels, const float* grid, InterpMode mode,
                 bool fill_out_of_bounds, float fill_value, float* out);

// bgv2 `_compute_out_of_bounds_mask` (align_corners=False) incl. its axis-swap quirk: the normalised coordinate
// of array axis d is compared with the threshold of axis ndim-1-d.
bool OutOfBounds(const GridSpec& g, const float* grid_voxel);

// Segmentation resampling, one channel at a time, fused over labels:
//  * kLinear, bg_style=false (nnU-Net): per voxel, score(u) = fp32 trilinear weight sum of 1000·[corner==u],
//    rounded to fp16; winner = running strict-> max in ascending label order starting from `lowest_label`
//    (the lowest label present in the input channel) — identical to bgv2's per-label grid_sample loop.
//  * kLinear, bg_style=true: bgv2's threshold mode (score ≥ 0.5, later labels overwrite; see .cc).
//  * kNearest: nearest corner (round half to even), 0 outside.
// `num_labels`: number of distinct labels in the input channel (bg_style needs it).
// bgv2 0.3.6 `seg_tiebreak`: which label a voxel takes where the top fp16 score is shared.
enum class SegTiebreak { kLowest, kNearest, kHighest };

//  * pad_first (bgv2 0.3.6): the segmentation is padded with `pad_label` (0 for 'zeros', padding_value_seg for
//    'constant') before it is resampled. kLinear: the channel's labels are those present plus `pad_label` when
//    `pad_votes` (MayReachOutside of the sample's grid); the padding label scores fp16(1000 − Σ 1000·w of the
//    in-bounds corners with another label) — bgv2's grid_sample of (ind − 1)·1000 plus 1000 — and the others as
//    above. One label: that label. Two labels (L0 < L1): L1 where fp16(score(L1)) > 500 ('highest': >= 500),
//    'nearest' settling == 500. Three or more: the top fp16 score, ties to the lowest / highest label, or
//    ('nearest') to the nearest-neighbour label of the padded segmentation where it has the top score.
//    `lowest_label` / `num_labels` describe that label set (padding label included when it votes).
//    kNearest: nearest corner, `pad_label` outside. bg_style and fill_out_of_bounds are not used.
struct LabelSampleOptions {
  InterpMode mode = InterpMode::kLinear;
  bool bg_style = false;
  bool fill_out_of_bounds = false;
  int16_t fill_value = -1;
  bool pad_first = false;
  int16_t pad_label = 0;
  bool pad_votes = false;
  SegTiebreak tiebreak = SegTiebreak::kLowest;
};

// bgv2 0.3.6 `_may_reach_outside` (bilinear kernel, align_corners=False): false guarantees every sampling point
// of `grid` (NumOut(g) × ndim normalised coordinates) lies within [0, S_d − 1] on every axis; the test is
// bgv2's: min/max over all grid values against min_d (1 − 1/S_d), in double.
bool MayReachOutside(const GridSpec& g, const float* grid);
// The same answer for the grid ComputeSamplingGrid(g, nullptr, false) builds, from the 2^ndim corners of the output
// box only: every float operation of the grid is monotone in each output index, so its extremes lie at the corners
// (the CUDA engine decides it per sample on the host without the grid).
bool MayReachOutsideAffine(const GridSpec& g);

// bgv2 0.3.6 constant image padding with `shift` (padding_value_image): grid_sample(in − shift) + shift, with
// torch's float32 operations (linear: Σ over in-bounds corners of (v − shift)·w, then + shift; nearest: the
// corner's (v − shift) + shift, `shift` outside).
void SampleImageShifted(const GridSpec& g, const float* in, int64_t channels, const float* grid, InterpMode mode,
                        float shift, float* out);
void SampleLabels(const GridSpec& g, const int16_t* in, const float* grid, int16_t lowest_label, int64_t num_labels,
                  const LabelSampleOptions& opt, int16_t* out);

// SampleImage (linear, no image fill) and SampleLabels (per seg channel, lowest_label[ch]/num_labels[ch]) in
// one pass over the output that computes each voxel's corners once — the fused form the CUDA kernel uses.
void SampleImageAndLabels(const GridSpec& g, const float* image, int64_t channels, const int16_t* seg,
                          int64_t seg_channels, const int16_t* lowest_label, const int64_t* num_labels,
                          const float* grid, const LabelSampleOptions& opt, float* image_out, int16_t* seg_out);

// bgv2 `crop_tensor` with constant padding: out[j] = in[floor(center) − p//2 + j] or `pad` outside.
// `start[d]` = floor(center_d) − p_d // 2.
void CropImage(const float* in, int64_t channels, const int64_t* in_shape, const int64_t* out_shape,
               const int64_t* start, int ndim, float pad, float* out);
void CropLabels(const int16_t* in, int64_t channels, const int64_t* in_shape, const int64_t* out_shape,
                const int64_t* start, int ndim, int16_t pad, int16_t* out);

// Elastic offsets (bgv2: np.fft + scipy fourier_gaussian, i.e. a periodic Gaussian over all spatial axes).
// `field`: one component (prod(shape) floats, unit normal noise) smoothed in place with σ (pixels), then
// rescaled so max|field| = max(magnitude, 1e-8).
void SmoothElasticComponent(float* field, const int64_t* shape, int ndim, double sigma, double magnitude);

}  // namespace augmentd::kernels
