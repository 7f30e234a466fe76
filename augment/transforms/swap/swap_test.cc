#include "augment/transforms/swap/swap.h"

#include <random>

#include "augment/kernels/common/swap_math.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Swap, DrawsTorchioCornersDistinctAndInRange) {
  auto t = SwapTransform::FromJson({{"patch_size", {3, 4, 2}}, {"num_iterations", 50}});
  ASSERT_TRUE(t.ok()) << t.status();
  for (uint64_t sample = 0; sample < 20; ++sample) {
    auto p = testing::DrawFor(**t, {1, {8, 6, 3}, 0}, 5, sample);
    const auto& sp = static_cast<const SwapParams&>(*p);
    ASSERT_EQ(sp.locations.size(), 50u);
    for (const auto& l : sp.locations) {
      EXPECT_NE(l[0], l[1]);
      for (const auto& c : l) {
        // torch.randint(size − patch): the last corner size − patch is never drawn, an extent of 0 gives 0.
        EXPECT_TRUE(c[0] >= 0 && c[0] < 5) << c[0];
        EXPECT_TRUE(c[1] >= 0 && c[1] < 2) << c[1];
        EXPECT_TRUE(c[2] >= 0 && c[2] < 1) << c[2];
      }
    }
  }
}

TEST(Swap, SwapsDisjointPatchesInEveryChannelAndLeavesLabels) {
  SampleData s = testing::RandomSample(2, {6, 5, 4});
  const SampleData x = s;
  auto t = SwapTransform::FromJson({{"patch_size", {2, 2, 3}}, {"num_iterations", 1}});
  ASSERT_TRUE(t.ok());
  auto p = (*t)->ParamsFromJson({{"locations", {{{0, 0, 0}, {3, 2, 1}}}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  auto at = [](const SampleData& d, int64_t c, int64_t i, int64_t j, int64_t k) {
    return d.image[static_cast<size_t>(((c * 6 + i) * 5 + j) * 4 + k)];
  };
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          const bool in_a = i < 2 && j < 2 && k < 3, in_b = i >= 3 && i < 5 && j >= 2 && j < 4 && k >= 1;
          float want = at(x, c, i, j, k);
          if (in_a) want = at(x, c, i + 3, j + 2, k + 1);
          if (in_b) want = at(x, c, i - 3, j - 2, k - 1);
          EXPECT_EQ(at(s, c, i, j, k), want) << c << " " << i << " " << j << " " << k;
        }
  EXPECT_EQ(s.seg, x.seg);
}

TEST(Swap, OverlappingPatchesCopyInCOrder) {
  // 1-D row of 6 (shape 1×1×6), patch 4, first at 0, second at 1: second ← first element by element (so the copy
  // reads values it already wrote), then first ← second's values before the step.
  SampleData s;
  s.channels = 1;
  s.shape = {1, 1, 6};
  s.image = {0, 1, 2, 3, 4, 5};
  auto t = SwapTransform::FromJson({{"patch_size", {1, 1, 4}}, {"num_iterations", 1}});
  ASSERT_TRUE(t.ok());
  auto p = (*t)->ParamsFromJson({{"locations", {{{0, 0, 0}, {0, 0, 1}}}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  // after the first copy: 0 0 0 0 0 5; then [0, 4) ← old [1, 5) = 1 2 3 4
  EXPECT_EQ(s.image, (std::vector<float>{1, 2, 3, 4, 0, 5}));
}

TEST(Swap, RejectsPatchesThatDoNotFit) {
  auto t = SwapTransform::FromJson({{"patch_size", 15}});
  ASSERT_TRUE(t.ok());
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ((*t)->Draw(ctx, {1, {10, 20, 20}, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*t)->Draw(ctx, {1, {16, 16, 16}, 0}).status().code(), absl::StatusCode::kInvalidArgument);  // one place
  EXPECT_TRUE((*t)->Draw(ctx, {1, {17, 16, 16}, 0}).ok());
  EXPECT_EQ((*t)->ParamsFromJson({{"locations", {{{0, 0, 0}, {3, 0, 0}}}}}, {1, {17, 16, 16}, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SwapTransform::FromJson({{"num_iterations", -1}}).status().code(), absl::StatusCode::kInvalidArgument);
}

// The CUDA stage's per-voxel form (kernels/common/swap_math.h: snapshots of both patches, then every second-patch
// voxel from SecondSource, then the first patch from the second's snapshot) equals the CPU's sequential in-place copy
// on many overlapping swaps (small volumes, large patches, every relative direction), applied in order.
TEST(Swap, IndependentFormEqualsSequentialCopy) {
  std::mt19937 gen(7);
  int64_t overlapping = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::array<int64_t, 3> s{2 + trial % 5, 3 + trial % 4, 4 + trial % 7};
    SwapParams p;
    for (size_t a = 0; a < 3; ++a) p.patch_size[a] = 1 + static_cast<int64_t>(gen() % static_cast<uint32_t>(s[a]));
    for (int it = 0; it < 6; ++it) {
      std::array<std::array<int64_t, 3>, 2> l;
      for (auto& c : l)
        for (size_t a = 0; a < 3; ++a) c[a] = static_cast<int64_t>(gen() % (s[a] - p.patch_size[a] + 1));
      if (l[0] == l[1]) continue;
      p.locations.push_back(l);
    }
    const int64_t n = s[0] * s[1] * s[2];
    std::vector<float> want(static_cast<size_t>(2 * n));
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i);
    std::vector<float> got = want;
    SwapPatches(p, s, 2, want.data());

    const int32_t shape[3] = {static_cast<int32_t>(s[0]), static_cast<int32_t>(s[1]), static_cast<int32_t>(s[2])};
    const int32_t ext[3] = {static_cast<int32_t>(p.patch_size[0]), static_cast<int32_t>(p.patch_size[1]),
                            static_cast<int32_t>(p.patch_size[2])};
    const int64_t pv = p.patch_size[0] * p.patch_size[1] * p.patch_size[2];
    std::vector<float> first(static_cast<size_t>(pv)), second(first.size());
    for (const auto& l : p.locations) {
      int32_t f[3], g[3], d[3];
      bool overlap = true;
      for (int a = 0; a < 3; ++a) {
        f[a] = static_cast<int32_t>(l[0][a]);
        g[a] = static_cast<int32_t>(l[1][a]);
        d[a] = g[a] - f[a];
        overlap = overlap && (d[a] < ext[a] && -d[a] < ext[a]);
      }
      overlapping += overlap;
      const bool forward = swap_math::CornerAddress(f, shape) < swap_math::CornerAddress(g, shape);
      for (int64_t c = 0; c < 2; ++c) {
        float* x = got.data() + c * n;
        auto addr = [&](const int32_t* o, int64_t t) {
          const int64_t k = t % ext[2], j = (t / ext[2]) % ext[1], i = t / (int64_t{ext[2]} * ext[1]);
          return ((o[0] + i) * s[1] + o[1] + j) * s[2] + o[2] + k;
        };
        for (int64_t t = 0; t < pv; ++t) {
          first[t] = x[addr(f, t)];
          second[t] = x[addr(g, t)];
        }
        for (int64_t t = 0; t < pv; ++t) x[addr(g, t)] = first[swap_math::SecondSource(t, d, ext, forward)];
        for (int64_t t = 0; t < pv; ++t) x[addr(f, t)] = second[t];
      }
    }
    ASSERT_EQ(got, want) << "trial " << trial;
  }
  EXPECT_GT(overlapping, 300);  // the overlapping case is exercised, not only disjoint swaps
}

}  // namespace
}  // namespace augmentd
