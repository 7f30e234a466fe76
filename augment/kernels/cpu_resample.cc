#include "augment/kernels/cpu_resample.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace augmentd::kernels {

int64_t PyRoundToInt(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

int64_t NearestExactIndex(int64_t dst, int64_t in_size, int64_t out_size) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  const int64_t idx = static_cast<int64_t>(std::floor(static_cast<float>((static_cast<double>(dst) + 0.5) * scale)));
  return std::min(idx, in_size - 1);
}

template <typename T>
void NearestExactResize(const T* in, const int64_t* in_shape, T* out, const int64_t* out_shape, int ndim) {
  int64_t is[3] = {1, 1, 1}, os[3] = {1, 1, 1};
  for (int d = 0; d < ndim; ++d) {
    is[3 - ndim + d] = in_shape[d];
    os[3 - ndim + d] = out_shape[d];
  }
  std::vector<int64_t> ix[3];
  for (int d = 0; d < 3; ++d) {
    ix[d].resize(os[d]);
    for (int64_t i = 0; i < os[d]; ++i) ix[d][i] = NearestExactIndex(i, is[d], os[d]);
  }
  for (int64_t a = 0; a < os[0]; ++a)
    for (int64_t b = 0; b < os[1]; ++b) {
      const T* src = in + (ix[0][a] * is[1] + ix[1][b]) * is[2];
      T* dst = out + (a * os[1] + b) * os[2];
      for (int64_t c = 0; c < os[2]; ++c) dst[c] = src[ix[2][c]];
    }
}
template void NearestExactResize<float>(const float*, const int64_t*, float*, const int64_t*, int);
template void NearestExactResize<int16_t>(const int16_t*, const int64_t*, int16_t*, const int64_t*, int);

LinearTaps ComputeTaps(int64_t in_size, int64_t out_size) {
  LinearTaps t;
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  t.i0.resize(out_size);
  t.i1.resize(out_size);
  t.w0.resize(out_size);
  t.w1.resize(out_size);
  for (int64_t i = 0; i < out_size; ++i) {
    float src = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
    if (src < 0.0f) src = 0.0f;
    const int64_t idx = std::min(static_cast<int64_t>(std::floor(src)), in_size - 1);
    const float lambda = std::min(std::max(src - static_cast<float>(idx), 0.0f), 1.0f);
    t.i0[i] = idx;
    t.i1[i] = idx + (idx < in_size - 1 ? 1 : 0);
    t.w1[i] = lambda;
    t.w0[i] = 1.0f - lambda;
  }
  return t;
}

void LinearResize(const float* in, const int64_t* in_shape, float* out, const int64_t* out_shape, int ndim) {
  int64_t is[3] = {1, 1, 1}, os[3] = {1, 1, 1};
  for (int d = 0; d < ndim; ++d) {
    is[3 - ndim + d] = in_shape[d];
    os[3 - ndim + d] = out_shape[d];
  }
  LinearTaps t[3];
  for (int d = 0; d < 3; ++d) t[d] = ComputeTaps(is[d], os[d]);
  // torch evaluates the nested form w0_a·(w0_b·(w0_c·v000 + w1_c·v001) + w1_b·(…)) + w1_a·(…).
  for (int64_t a = 0; a < os[0]; ++a) {
    const int64_t a0 = t[0].i0[a], a1 = t[0].i1[a];
    const float wa0 = t[0].w0[a], wa1 = t[0].w1[a];
    for (int64_t b = 0; b < os[1]; ++b) {
      const int64_t b0 = t[1].i0[b], b1 = t[1].i1[b];
      const float wb0 = t[1].w0[b], wb1 = t[1].w1[b];
      const float* r00 = in + (a0 * is[1] + b0) * is[2];
      const float* r01 = in + (a0 * is[1] + b1) * is[2];
      const float* r10 = in + (a1 * is[1] + b0) * is[2];
      const float* r11 = in + (a1 * is[1] + b1) * is[2];
      float* dst = out + (a * os[1] + b) * os[2];
      for (int64_t c = 0; c < os[2]; ++c) {
        const int64_t c0 = t[2].i0[c], c1 = t[2].i1[c];
        const float wc0 = t[2].w0[c], wc1 = t[2].w1[c];
        float v0 = r00[c0] * wc0;
        v0 += r00[c1] * wc1;
        float v1 = r01[c0] * wc0;
        v1 += r01[c1] * wc1;
        float u0 = v0 * wb0;
        u0 += v1 * wb1;
        float v2 = r10[c0] * wc0;
        v2 += r10[c1] * wc1;
        float v3 = r11[c0] * wc0;
        v3 += r11[c1] * wc1;
        float u1 = v2 * wb0;
        u1 += v3 * wb1;
        float o = u0 * wa0;
        o += u1 * wa1;
        dst[c] = o;
      }
    }
  }
}

}  // namespace augmentd::kernels
