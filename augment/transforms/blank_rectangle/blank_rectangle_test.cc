#include "augment/transforms/blank_rectangle/blank_rectangle.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

BlankRectangleConfig Da5Config() {
  BlankRectangleConfig c;
  c.rectangle_size = {{1, 4}, {1, 5}, {1, 6}};
  c.value_kind = BlankRectangleConfig::Value::kMean;
  c.num_rectangles = {1, 5};
  c.p_per_channel = 0.5;
  return c;
}

TEST(BlankRectangle, FillsBoxWithItsMeanAndLeavesTheRest) {
  SampleData s = testing::RandomSample(2, {6, 7, 8});
  const std::vector<float> x = s.image;
  auto t = BlankRectangleTransform::Create(Da5Config());
  ASSERT_TRUE(t.ok());
  BlankRectangleParams p;
  p.apply_channel = {false, true};
  p.rectangles = {{}, {{{1, 2, 3}, {3, 5, 4}}}};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const int64_t n = s.voxels();
  double sum = 0;
  for (int64_t a = 1; a < 3; ++a)
    for (int64_t b = 2; b < 5; ++b) sum += x[n + (a * 7 + b) * 8 + 3];
  const float mean = static_cast<float>(sum / 6);
  for (int64_t a = 0; a < 6; ++a)
    for (int64_t b = 0; b < 7; ++b)
      for (int64_t c = 0; c < 8; ++c) {
        const int64_t i = (a * 7 + b) * 8 + c;
        EXPECT_EQ(s.image[i], x[i]);
        const bool in = a >= 1 && a < 3 && b >= 2 && b < 5 && c == 3;
        EXPECT_EQ(s.image[n + i], in ? mean : x[n + i]);
      }
}

TEST(BlankRectangle, DrawsBoxesInsideTheImage) {
  auto t = BlankRectangleTransform::Create(Da5Config());
  ASSERT_TRUE(t.ok());
  int applied = 0, total = 0;
  for (uint64_t k = 0; k < 500; ++k) {
    auto p = testing::DrawFor(**t, {2, {5, 6, 7}, 1}, 9, k);
    const auto& b = static_cast<const BlankRectangleParams&>(*p);
    for (int c = 0; c < 2; ++c) {
      ++total;
      applied += b.apply_channel[c];
      if (!b.apply_channel[c]) {
        EXPECT_TRUE(b.rectangles[c].empty());
        continue;
      }
      EXPECT_GE(b.rectangles[c].size(), 1u);
      EXPECT_LE(b.rectangles[c].size(), 4u);
      for (const auto& r : b.rectangles[c])
        for (int d = 0; d < 3; ++d) {
          EXPECT_GE(r.lb[d], 0);
          EXPECT_LE(r.ub[d], 5 + d);
          EXPECT_GE(r.ub[d] - r.lb[d], 1);
          EXPECT_LE(r.ub[d] - r.lb[d], 3 + d);
        }
    }
  }
  EXPECT_NEAR(static_cast<double>(applied) / total, 0.5, 0.06);
  BlankRectangleConfig bad = Da5Config();
  bad.rectangle_size[0] = {2, 2};  // numpy randint(2, 2) raises
  EXPECT_EQ(BlankRectangleTransform::Create(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
