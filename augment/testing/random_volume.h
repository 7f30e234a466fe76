// augment/testing/random_volume.h — random inputs shared by the CUDA tests and benchmarks (header-only).
//
// Labels are "blobby": a coarse uniform random field of 4³ cells, nearest-upsampled to the volume, so that the
// spatial label vote sees real boundaries instead of salt-and-pepper noise.
//
//   std::mt19937_64 g(seed);
//   augmentd::testing::FillNormal(g, image);                              // N(0.3, 1): never all zeros
//   for (int64_t p = 0; p < planes; ++p) augmentd::testing::FillBlobbyLabels(g, S, 4, seg.data() + p * n);
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace augmentd::testing {

inline void FillNormal(std::mt19937_64& g, std::vector<float>& v) {
  std::normal_distribution<float> nd(0.3f, 1.0f);
  for (float& x : v) x = nd(g);
}

// One (S0, S1, S2) label plane with values 0 .. labels-1 into out[0 .. S0·S1·S2).
inline void FillBlobbyLabels(std::mt19937_64& g, const std::vector<int64_t>& S, int labels, int16_t* out) {
  std::uniform_int_distribution<int> ld(0, labels - 1);
  const int64_t c0 = (S[0] + 3) / 4, c1 = (S[1] + 3) / 4, c2 = (S[2] + 3) / 4;
  std::vector<int16_t> coarse(c0 * c1 * c2);
  for (int16_t& v : coarse) v = static_cast<int16_t>(ld(g));
  for (int64_t i = 0; i < S[0]; ++i)
    for (int64_t j = 0; j < S[1]; ++j)
      for (int64_t k = 0; k < S[2]; ++k) out[(i * S[1] + j) * S[2] + k] = coarse[((i / 4) * c1 + j / 4) * c2 + k / 4];
}

}  // namespace augmentd::testing
