// augment/kernels/common/swap_math.h — the index math of one TorchIO patch swap (augment/transforms/swap/swap.h) in a
// form every voxel can evaluate on its own, so the CUDA stage (augment/transforms/swap/swap.cu) reproduces the CPU's
// in-place sequential copy (SwapPatches) exactly, overlapping patches included. Host test: swap_test.cc
// (Swap.IndependentFormEqualsSequentialCopy), no GPU needed.
//
// The CPU step for patches at corners f (first) and g (second), extent P, on a C-order volume:
//   tmp ← x[g + P];  x[g + p] ← x[f + p] for p in C order (element by element, in place);  x[f + P] ← tmp.
// In C order the write addresses of the middle copy increase. Its read of x[f + p] sees a value the same copy wrote
// before iff f + p = g + q for a q inside P written earlier, i.e. q = p − d (d = g − f) inside P and addr(f) <
// addr(g). So with F = the snapshot of x[f + P] taken before the step:
//   x[g + p] = F[p − n·d] with n the largest n ≥ 0 such that p − k·d ∈ P for k = 0..n   (addr(f) < addr(g)),
//   x[g + p] = F[p]                                                                      (otherwise),
// and the last copy writes the snapshot of x[g + P] into x[f + P] (after the middle copy: it wins on the overlap).
//
//   const int64_t t = swap_math::SecondSource(p, d, extent, forward);  // index into F (C order over the patch)
//
// Header-only, no CUDA headers: usable from plain C++.
#pragma once

#include <cstdint>

#include "augment/rng.h"  // AUGMENTD_HD

namespace augmentd::swap_math {

AUGMENTD_HD bool InPatch(int64_t i, int64_t j, int64_t k, const int32_t* extent) {
  return i >= 0 && j >= 0 && k >= 0 && i < extent[0] && j < extent[1] && k < extent[2];
}

// C-order index of patch voxel (i, j, k).
AUGMENTD_HD int64_t PatchIndex(int64_t i, int64_t j, int64_t k, const int32_t* extent) {
  return (i * extent[1] + j) * extent[2] + k;
}

// The index into the first patch's snapshot whose value the sequential copy leaves at second-patch voxel p (C-order
// index `t`). `d` = second corner − first corner (per axis); `forward` = the first patch starts at a lower address
// than the second (only then can the copy read its own writes).
AUGMENTD_HD int64_t SecondSource(int64_t t, const int32_t* d, const int32_t* extent, bool forward) {
  if (!forward) return t;
  int64_t k = t % extent[2];
  int64_t j = (t / extent[2]) % extent[1];
  int64_t i = t / (static_cast<int64_t>(extent[2]) * extent[1]);
  while (InPatch(i - d[0], j - d[1], k - d[2], extent)) {
    i -= d[0];
    j -= d[1];
    k -= d[2];
  }
  return PatchIndex(i, j, k, extent);
}

// Linear address of corner `o` in a volume of shape `s` (C order).
AUGMENTD_HD int64_t CornerAddress(const int32_t* o, const int32_t* s) {
  return (static_cast<int64_t>(o[0]) * s[1] + o[1]) * s[2] + o[2];
}

}  // namespace augmentd::swap_math
