#include "augment/kernels/cpu_label.h"

#include <algorithm>
#include <utility>

namespace augmentd::kernels {

template <typename T>
void Flip(T* x, int64_t channels, const int64_t* shape, int ndim, const bool* flip_axis) {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  for (int axis = 0; axis < ndim; ++axis) {
    if (!flip_axis[axis]) continue;
    int64_t inner = 1;
    for (int d = axis + 1; d < ndim; ++d) inner *= shape[d];
    const int64_t len = shape[axis];
    const int64_t outer = channels * n / (inner * len);
    for (int64_t o = 0; o < outer; ++o) {
      T* base = x + o * len * inner;
      if (inner == 1) {
        std::reverse(base, base + len);
      } else {
        for (int64_t i = 0; i < len / 2; ++i) {
          std::swap_ranges(base + i * inner, base + (i + 1) * inner, base + (len - 1 - i) * inner);
        }
      }
    }
  }
}
template void Flip<float>(float*, int64_t, const int64_t*, int, const bool*);
template void Flip<int16_t>(int16_t*, int64_t, const int64_t*, int, const bool*);

// Select-and-store (no conditional store) so that the loops vectorise; same results.
void ReplaceValue(int16_t* x, int64_t n, int16_t from, int16_t to) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] == from ? to : x[i];
}

void MaskWhereNegative(float* image, const int16_t* mask, int64_t n, float value) {
  for (int64_t i = 0; i < n; ++i) image[i] = mask[i] < 0 ? value : image[i];
}

void IsIn(const int16_t* x, int64_t n, const int64_t* labels, int num_labels, int16_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    int16_t hit = 0;
    for (int k = 0; k < num_labels; ++k)
      if (x[i] == labels[k]) {
        hit = 1;
        break;
      }
    out[i] = hit;
  }
}

}  // namespace augmentd::kernels
