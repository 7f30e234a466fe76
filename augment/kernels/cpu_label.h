// augment/kernels/cpu_label.h — small label/mask kernels (pure; C × spatial buffers, C order).
//
//   Flip(x, channels, shape, 3, flip_axes);          // torch.flip along the flagged spatial axes
//   ReplaceValue(seg, n, -1, 0);                      // RemoveLabelTransform
#pragma once

#include <cstdint>

namespace augmentd::kernels {

// Reverses the flagged spatial axes of every channel in place.
template <typename T>
void Flip(T* x, int64_t channels, const int64_t* shape, int ndim, const bool* flip_axis);

void ReplaceValue(int16_t* x, int64_t n, int16_t from, int16_t to);

// image[i] = value where mask[i] < 0 (MaskImageTransform: mask = seg channel).
void MaskWhereNegative(float* image, const int16_t* mask, int64_t n, float value);

// out[i] = 1 if x[i] is one of labels[0..num_labels) else 0.
void IsIn(const int16_t* x, int64_t n, const int64_t* labels, int num_labels, int16_t* out);

}  // namespace augmentd::kernels
