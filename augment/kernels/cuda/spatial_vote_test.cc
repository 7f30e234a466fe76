// GPU test of the fused spatial kernel's 0.3.5 vote (spatial_math.h): on the device, LabelVote035 (since session 10)
// and LabelVote035BranchFree (the 1-channel builds', sessions 18-19) equal TriangularVote035 (the s9 kernel's vote)
// on every assignment of {out of bounds, 4 labels} to the 8 corners under several weight sets, and all three equal
// their host builds (the host test SpatialMath.LabelVote035BothFormsEqualTheTriangularVoteOnEveryCornerPattern checks
// the host side against an independent reference). Skipped without a device. The device's branch-free vote rounds with
// packed float16 conversions and the host's with HalfRoundedBits (spatial_math.h's HalfRoundedKeys): equal labels check
// the two roundings against each other. The 0.3.6 vote: PadFirstVote and PadFirstVoteKeys (packed keys) on the device
// equal PadFirstVote on the host on random corner sets (vote036_cases.h), and FewLabelVote036 decides the same cases
// on both, with PadFirstVote's label.
#include <climits>
#include <cstdint>
#include <random>
#include <vector>

#include "augment/kernels/cuda/spatial_math.h"
#include "augment/kernels/cuda/spatial_vote_check.h"
#include "gtest/gtest.h"

namespace augmentd::cuda {
namespace {

bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(SpatialVoteDevice, LabelVote035FormsEqualTheS9VoteAndTheHostOnEveryCornerPattern) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  constexpr int kPatterns = 390625;  // 5^8
  constexpr int kSets = 4;
  const int label_of[5] = {INT32_MIN, 2, 0, 5, -1};
  const int lowest_of[3] = {0, -1, 3};
  std::mt19937_64 g(20261202);
  std::uniform_real_distribution<float> frac(0.f, 1.f);
  const int n = kPatterns * kSets;
  std::vector<int> lab(static_cast<size_t>(n) * 8), lowest(n);
  std::vector<float> x1000(static_cast<size_t>(n) * 8);
  for (int pattern = 0; pattern < kPatterns; ++pattern) {
    for (int set = 0; set < kSets; ++set) {
      const int i = pattern * kSets + set;
      float f[3];
      for (int d = 0; d < 3; ++d) {
        switch (set) {
          case 0: f[d] = frac(g); break;
          case 1: f[d] = 0.5f; break;  // equal weights: ties between labels of equal corner counts
          case 2: f[d] = (pattern + d) % 2 ? 3e-7f * frac(g) : 1.f - 6e-8f * static_cast<float>(d + 1); break;
          default: f[d] = d == pattern % 3 ? 0.f : frac(g); break;
        }
      }
      for (int m = 0, p = pattern; m < 8; ++m, p /= 5) {
        lab[8 * i + m] = label_of[p % 5];
        const float wx = (m & 1) ? f[2] : 1.f - f[2], wy = (m & 2) ? f[1] : 1.f - f[1], wz = (m & 4) ? f[0] : 1.f - f[0];
        const volatile float w = (wx * wy) * wz;
        x1000[8 * i + m] = lab[8 * i + m] == INT32_MIN ? 0.f : 1000.f * w;
      }
      lowest[i] = lowest_of[pattern % 3];
    }
  }
  std::vector<int> got_new(n), got_bf(n), got_old(n);
  ASSERT_EQ(RunVotesOnDevice(lab.data(), x1000.data(), lowest.data(), n, got_new.data(), got_bf.data(), got_old.data()),
            cudaSuccess);
  int64_t differ = 0, host_differ = 0;
  for (int i = 0; i < n; ++i) {
    differ += got_new[i] != got_old[i];
    differ += got_bf[i] != got_old[i];
    int lab_sentinel[8];
    BranchFreeVoteLabels(&lab[8 * i], lab_sentinel);
    host_differ += got_old[i] != TriangularVote035(&lab[8 * i], &x1000[8 * i], lowest[i]);
    host_differ += got_new[i] != LabelVote035(&lab[8 * i], &x1000[8 * i], lowest[i]);
    host_differ += got_bf[i] != LabelVote035BranchFree(lab_sentinel, &x1000[8 * i], lowest[i]);
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(host_differ, 0);
}

TEST(SpatialVoteDevice, PadFirstVoteBothFormsEqualTheHostOnRandomCorners) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  constexpr int n = 1 << 21;
  std::mt19937 rng(20261205);
  std::vector<Vote036Case> cases(n);
  for (auto& c : cases) c = RandomVote036Case(rng);
  std::vector<int> plain(n), keys(n), few(n);
  ASSERT_EQ(RunPadFirstVotesOnDevice(cases.data(), n, plain.data(), keys.data(), few.data()), cudaSuccess);
  int64_t plain_differ = 0, keys_differ = 0, few_differ = 0, few_decided = 0;
  for (int i = 0; i < n; ++i) {
    const Vote036Case& c = cases[i];
    const int want = PadFirstVote(c.lab, c.x1000, c.nn_m, c.pad, c.votes, c.tiebreak, c.lowest);
    plain_differ += plain[i] != want;
    keys_differ += keys[i] != want;
    // FewLabelVote036: the device decides where the host does, and then PadFirstVote's label.
    int host_few;
    const bool host_decided =
        FewLabelVote036(c.raw, c.x1000, c.pad, c.votes, FewPadDecide(c, i), c.none_in, c.tiebreak, c.lowest, host_few);
    few_differ += few[i] != (host_decided ? want : kFewUndecided);
    few_decided += host_decided;
  }
  EXPECT_EQ(plain_differ, 0);
  EXPECT_EQ(keys_differ, 0);
  EXPECT_EQ(few_differ, 0);
  EXPECT_GT(few_decided, n / 100);  // about 1.5 % of the generator's cases are one or two labels
}

}  // namespace
}  // namespace augmentd::cuda
