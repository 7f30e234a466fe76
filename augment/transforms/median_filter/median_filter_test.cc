#include "augment/transforms/median_filter/median_filter.h"

#include <algorithm>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(MedianFilter, MatchesScipyOriginAndReflectIn1DLikeCase) {
  // scipy.ndimage.median_filter([5, 1, 9, 3, 7, 2], size=2) == [5, 5, 9, 9, 7, 7]; size=4 → [5, 5, 5, 7, 7, 3].
  auto t = MedianFilterTransform::Create({{2, 8}, false, 0, 1});
  ASSERT_TRUE(t.ok());
  for (auto [k, want] : std::vector<std::pair<int64_t, std::vector<float>>>{{2, {5, 5, 9, 9, 7, 7}},
                                                                             {4, {5, 5, 5, 7, 7, 3}}}) {
    SampleData s;
    s.channels = 1;
    s.shape = {6, 1};  // 2D (6, 1): the window along axis 1 only sees reflected copies of the same voxel
    s.image = {5, 1, 9, 3, 7, 2};
    MedianFilterParams p;
    p.filter_sizes = {k};
    p.apply_channel = {true};
    ASSERT_TRUE((*t)->Apply(p, s).ok());
    EXPECT_EQ(s.image, want) << "k=" << k;
  }
}

TEST(MedianFilter, OddWindowIsTheCentredMedian) {
  SampleData s = testing::RandomSample(1, {5, 6, 7});
  const std::vector<float> x = s.image;
  auto t = MedianFilterTransform::Create({{3, 4}, false, 0, 1});
  ASSERT_TRUE(t.ok());
  MedianFilterParams p;
  p.filter_sizes = {3};
  p.apply_channel = {true};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  std::vector<float> w;
  for (int a = -1; a <= 1; ++a)
    for (int b = -1; b <= 1; ++b)
      for (int c = -1; c <= 1; ++c) w.push_back(x[((2 + a) * 6 + 3 + b) * 7 + 3 + c]);
  std::sort(w.begin(), w.end());
  EXPECT_EQ(s.image[(2 * 6 + 3) * 7 + 3], w[13]);
}

TEST(MedianFilter, DrawsSizesInRangeAndRejectsEmptyRange) {
  auto t = MedianFilterTransform::Create({{2, 8}, false, 0, 0.5});
  ASSERT_TRUE(t.ok());
  std::vector<int> seen(9, 0);
  for (uint64_t k = 0; k < 700; ++k) {
    auto p = testing::DrawFor(**t, {2, {4, 4, 4}, 1}, 5, k);
    for (int64_t v : static_cast<const MedianFilterParams&>(*p).filter_sizes) {
      ASSERT_GE(v, 2);
      ASSERT_LE(v, 7);
      ++seen[v];
    }
  }
  for (int v = 2; v <= 7; ++v) EXPECT_GT(seen[v], 150);
  EXPECT_FALSE(MedianFilterTransform::Create({{3, 3}, false, 0, 1}).ok());
}

}  // namespace
}  // namespace augmentd
