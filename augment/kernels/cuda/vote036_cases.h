// augment/kernels/cuda/vote036_cases.h — test support (spatial_math_test.cc on the host, spatial_vote_test.cc on the
// device): random corner sets for bgv2 0.3.6's vote (PadFirstVote, PadFirstVoteKeys in spatial_math.h).
#pragma once

#include <climits>
#include <random>
#include <type_traits>

namespace augmentd::cuda {

// A random 0.3.6 vote case: labels from a few (the padding label among them, corners out of bounds), weights from
// trilinear products of fractions that make ties likely (0, ½, ¼, … and random ones), scaled by 1000 as the kernel's.
struct Vote036Case {
  int lab[8];
  float x1000[8];
  int nn_m, pad, tiebreak, lowest;
  bool votes;
  // The corners as FewLabelVote036 takes them: `raw`, the labels loaded at clamped offsets (an out-of-bounds corner
  // carries an in-bounds corner's label, here the first one's; any label when none is in bounds), and the flags.
  int raw[8];
  bool all_in, none_in;
};
static_assert(std::is_trivially_copyable_v<Vote036Case>, "copied to the device as bytes (spatial_vote_check.cu)");

inline Vote036Case RandomVote036Case(std::mt19937& rng) {
  static constexpr float kFractions[] = {0.f, 0.5f, 0.25f, 0.75f, 0.125f, 1.f};
  std::uniform_int_distribution<int> pick(0, 9), frac(0, 7), small(0, 7), tb(0, 2), coin(0, 1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Vote036Case c;
  c.pad = coin(rng) ? -1 : 0;
  c.votes = coin(rng) != 0;
  c.tiebreak = tb(rng);
  c.nn_m = small(rng);
  c.lowest = tb(rng) - 1;  // the sample's lowest label (−1, 0 or 1), drawn apart from the padding label
  float f[3][2];
  for (auto& axis : f) {
    const int k = frac(rng);
    const float a = k < 6 ? kFractions[k] : u(rng);
    axis[0] = 1.f - a;
    axis[1] = a;
  }
  for (int m = 0; m < 8; ++m) {
    const int p = pick(rng);
    c.lab[m] = p == 0 ? INT32_MIN : (p == 1 ? c.pad : (p < 6 ? 1 + (p & 1) : 3 + (p & 1)));
    const float w = f[0][(m >> 2) & 1] * f[1][(m >> 1) & 1] * f[2][m & 1];
    c.x1000[m] = c.lab[m] == INT32_MIN ? 0.f : 1000.f * w;
  }
  int first = INT32_MIN;
  for (int m = 7; m >= 0; --m) first = c.lab[m] != INT32_MIN ? c.lab[m] : first;
  c.all_in = true;
  c.none_in = first == INT32_MIN;
  for (int m = 0; m < 8; ++m) {
    c.all_in = c.all_in && c.lab[m] != INT32_MIN;
    c.raw[m] = c.lab[m] != INT32_MIN ? c.lab[m] : (c.none_in ? 1 + 2 * (m & 1) : first);
  }
  return c;
}

}  // namespace augmentd::cuda
