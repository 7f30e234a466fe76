#include "augment/transforms/common/sitk_resample.h"

#include "augment/kernels/common/sitk_math.h"

namespace augmentd::sitk {

template <typename T>
void Resample(const T* in, const Shape3& s, const IndexAffine& a, Interpolation interp, T fill, T* out,
              const Shape3& os) {
  // ITK's linear-transform scanline runs along its x axis (augmentd axis 0): the continuous index is the line's start
  // plus (one-past-end − start) · i / n0, not M·o + b per voxel (the two differ in the last bits, which decides
  // nearest-neighbour halves and the inside bound). The per-voxel math is sitk_math.h's, shared with the CUDA stages.
  const bool linear = interp == Interpolation::kLinear;
  for (int64_t j = 0; j < os[1]; ++j)
    for (int64_t k = 0; k < os[2]; ++k)
      for (int64_t i = 0; i < os[0]; ++i) {
        double ci[3];
        sitk_math::LineIndex(a.m.data(), a.b.data(), i, j, k, os[0], ci);
        out[(i * os[1] + j) * os[2] + k] = sitk_math::Sample(in, s.data(), ci, linear, fill);
      }
}

template void Resample<float>(const float*, const Shape3&, const IndexAffine&, Interpolation, float, float*,
                              const Shape3&);
template void Resample<int16_t>(const int16_t*, const Shape3&, const IndexAffine&, Interpolation, int16_t, int16_t*,
                                const Shape3&);

}  // namespace augmentd::sitk
