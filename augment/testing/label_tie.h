// augment/testing/label_tie.h — the fp16 label-vote tie rule the CUDA spatial tests share (test-only,
// header-only, no dependencies beyond the standard library).
//
// The CUDA kernel votes labels in fp16, so where two labels' trilinear weights are within ~2 fp16 ulps the GPU
// may pick either; such voxels (and those on the out-of-bounds threshold) are excused from exact comparison:
//   const double u[3] = {...};  // per axis: the sample position relative to the centre of the source, in voxels
//   if (testing::LabelVoteNearTie(seg, S, u)) continue;
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace augmentd::testing {

// `seg`: the source labels of shape S (C order). `u[d]`: the sample position along axis d relative to the source
// centre, in voxels. True when the position lies on the out-of-bounds threshold of grid_sample
// (align_corners=False) or the two strongest labels of the trilinear vote (weights × 1000) differ by <= 1.
template <typename Size>
bool LabelVoteNearTie(const int16_t* seg, const Size* S, const double* u) {
  double x[3];
  for (int d = 0; d < 3; ++d) {
    const double n = u[d] / (S[d] * 0.5);
    const double lo = -1.0 + 1.0 / S[2 - d];
    if (std::fabs(n - lo) < 1e-5 || std::fabs(n + lo) < 1e-5) return true;
    x[d] = ((n + 1) * S[d] - 1) / 2;
  }
  std::vector<std::pair<int, double>> acc;
  const int64_t f[3] = {static_cast<int64_t>(std::floor(x[0])), static_cast<int64_t>(std::floor(x[1])),
                        static_cast<int64_t>(std::floor(x[2]))};
  for (int m = 0; m < 8; ++m) {
    const int64_t z = f[0] + ((m >> 2) & 1), y = f[1] + ((m >> 1) & 1), xx = f[2] + (m & 1);
    if (z < 0 || z >= S[0] || y < 0 || y >= S[1] || xx < 0 || xx >= S[2]) continue;
    const double w = (((m >> 2) & 1) ? x[0] - f[0] : f[0] + 1 - x[0]) *
                     (((m >> 1) & 1) ? x[1] - f[1] : f[1] + 1 - x[1]) * ((m & 1) ? x[2] - f[2] : f[2] + 1 - x[2]);
    const int l = seg[(z * S[1] + y) * S[2] + xx];
    bool found = false;
    for (auto& e : acc)
      if (e.first == l) {
        e.second += 1000.0 * w;
        found = true;
      }
    if (!found) acc.push_back({l, 1000.0 * w});
  }
  if (acc.size() < 2) return false;
  std::sort(acc.begin(), acc.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return acc[0].second - acc[1].second <= 1.0;  // within ~2 fp16 ulps at 256..1024
}

// bgv2 0.3.6 (pad-first): the same test with the padding label `pad` among the candidates, scoring 1000 minus the
// other in-bounds corners (bgv2's padded vote; no swapped-threshold quirk in 0.3.6).
template <typename Size>
bool LabelVoteNearTiePadFirst(const int16_t* seg, const Size* S, const double* u, int pad) {
  double x[3];
  for (int d = 0; d < 3; ++d) x[d] = ((u[d] / (S[d] * 0.5) + 1) * S[d] - 1) / 2;
  std::vector<std::pair<int, double>> acc = {{pad, 1000.0}};
  const int64_t f[3] = {static_cast<int64_t>(std::floor(x[0])), static_cast<int64_t>(std::floor(x[1])),
                        static_cast<int64_t>(std::floor(x[2]))};
  for (int m = 0; m < 8; ++m) {
    const int64_t z = f[0] + ((m >> 2) & 1), y = f[1] + ((m >> 1) & 1), xx = f[2] + (m & 1);
    if (z < 0 || z >= S[0] || y < 0 || y >= S[1] || xx < 0 || xx >= S[2]) continue;
    const double w = (((m >> 2) & 1) ? x[0] - f[0] : f[0] + 1 - x[0]) *
                     (((m >> 1) & 1) ? x[1] - f[1] : f[1] + 1 - x[1]) * ((m & 1) ? x[2] - f[2] : f[2] + 1 - x[2]);
    const int l = seg[(z * S[1] + y) * S[2] + xx];
    if (l != pad) acc[0].second -= 1000.0 * w;
    bool found = false;
    for (auto& e : acc)
      if (e.first == l && l != pad) {
        e.second += 1000.0 * w;
        found = true;
      }
    if (!found && l != pad) acc.push_back({l, 1000.0 * w});
  }
  if (acc.size() < 2) return false;
  std::sort(acc.begin(), acc.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return acc[0].second - acc[1].second <= 1.0;  // within ~2 fp16 ulps at 256..1024
}

}  // namespace augmentd::testing
