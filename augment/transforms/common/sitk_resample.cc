#include "augment/transforms/common/sitk_resample.h"

#include <algorithm>
#include <cmath>

namespace augmentd::sitk {

template <typename T>
void Resample(const T* in, const Shape3& s, const IndexAffine& a, Interpolation interp, T fill, T* out,
              const Shape3& os) {
  for (int64_t j = 0; j < os[1]; ++j)
    for (int64_t k = 0; k < os[2]; ++k) {
      // ITK's linear-transform scanline runs along its x axis (augmentd axis 0): the continuous index is the line's
      // start plus (one-past-end − start) · i / n0, not M·o + b per voxel (the two differ in the last bits, which
      // decides nearest-neighbour halves and the inside bound).
      double start[3], end[3];
      const double n0 = static_cast<double>(os[0]);
      for (int r = 0; r < 3; ++r) {
        const double rest = a.m[r * 3 + 1] * static_cast<double>(j) + a.m[r * 3 + 2] * static_cast<double>(k);
        start[r] = a.m[r * 3] * 0.0 + rest + a.b[r];
        end[r] = a.m[r * 3] * n0 + rest + a.b[r];
      }
      for (int64_t i = 0; i < os[0]; ++i) {
        const double alpha = static_cast<double>(i) / n0;
        double ci[3];
        bool inside = true;
        for (int r = 0; r < 3; ++r) {
          ci[r] = start[r] + (end[r] - start[r]) * alpha;
          inside = inside && ci[r] >= -0.5 && ci[r] < static_cast<double>(s[r]) - 0.5;
        }
        T& o = out[(i * os[1] + j) * os[2] + k];
        if (!inside) {
          o = fill;
          continue;
        }
        if (interp == Interpolation::kNearest) {
          int64_t q[3];
          for (int r = 0; r < 3; ++r)
            q[r] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(ci[r] + 0.5)), 0, s[r] - 1);
          o = in[(q[0] * s[1] + q[1]) * s[2] + q[2]];
          continue;
        }
        int64_t lo[3], hi[3];
        double w[3];
        for (int r = 0; r < 3; ++r) {
          const double f = std::floor(ci[r]);
          w[r] = ci[r] - f;
          lo[r] = std::clamp<int64_t>(static_cast<int64_t>(f), 0, s[r] - 1);
          hi[r] = std::clamp<int64_t>(static_cast<int64_t>(f) + 1, 0, s[r] - 1);
        }
        double v = 0;
        for (int c = 0; c < 8; ++c) {
          const int64_t x = (c & 4) ? hi[0] : lo[0], y = (c & 2) ? hi[1] : lo[1], z = (c & 1) ? hi[2] : lo[2];
          const double wt = ((c & 4) ? w[0] : 1 - w[0]) * ((c & 2) ? w[1] : 1 - w[1]) * ((c & 1) ? w[2] : 1 - w[2]);
          v += wt * static_cast<double>(in[(x * s[1] + y) * s[2] + z]);
        }
        o = static_cast<T>(v);
      }
    }
}

template void Resample<float>(const float*, const Shape3&, const IndexAffine&, Interpolation, float, float*,
                              const Shape3&);
template void Resample<int16_t>(const int16_t*, const Shape3&, const IndexAffine&, Interpolation, int16_t, int16_t*,
                                const Shape3&);

}  // namespace augmentd::sitk
