// Host-only tests of the GPU stage-test harness (stage_harness.h), so that its verdicts can fail: the tolerance
// rules, the batch builder (values, draws, skipped samples, 2D lift, the stage's view) and the comparisons' counts
// and failure messages. No GPU needed. ctest name: augment_stage_harness_test.
#include "augment/testing/stage_harness.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

using json = nlohmann::json;
using testing::Tolerance;

TEST(StageHarness, ToleranceRules) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tolerance rel = 1e-5f;
  EXPECT_TRUE(rel.Accepts(2.0f, 2.0f));
  EXPECT_TRUE(rel.Accepts(2.0f + 2.5e-5f, 2.0f));  // within 1e-5 · (1 + 2)
  EXPECT_FALSE(rel.Accepts(2.0f + 4e-5f, 2.0f));
  EXPECT_FALSE(rel.Accepts(nan, nan));
  EXPECT_FALSE(rel.Accepts(inf, inf));
  const Tolerance zero;  // relative 0: equal values
  EXPECT_TRUE(zero.Accepts(-0.0f, 0.0f));
  EXPECT_FALSE(zero.Accepts(std::nextafter(1.0f, 2.0f), 1.0f));
  EXPECT_TRUE(Tolerance::Equal().Accepts(-0.0f, 0.0f));
  EXPECT_TRUE(Tolerance::Equal().Accepts(inf, inf));
  EXPECT_FALSE(Tolerance::Equal().Accepts(nan, nan));
  EXPECT_FALSE(Tolerance::SameBits().Accepts(-0.0f, 0.0f));
  EXPECT_TRUE(Tolerance::SameBits().Accepts(nan, nan));
  EXPECT_EQ(Tolerance::BitsOrRelative(0).kind, Tolerance::Kind::kSameBits);
  EXPECT_EQ(Tolerance::BitsOrRelative(1e-6f).kind, Tolerance::Kind::kRelative);
  const Tolerance special = Tolerance(2e-4f).WithSpecials();
  EXPECT_TRUE(special.Accepts(nan, nan));
  EXPECT_TRUE(special.Accepts(inf, inf));
  // The ported tests' relative rule, kept as it was: against an infinite CPU value the bound rel · (1 + ∞) is
  // infinite, so any value but NaN passes (only redistribute_seg's inputs hold infinities).
  EXPECT_TRUE(special.Accepts(-inf, inf));
  EXPECT_TRUE(rel.Accepts(5.0f, inf));
  EXPECT_FALSE(rel.Accepts(nan, inf));
  EXPECT_FALSE(special.Accepts(nan, 1.0f));
  EXPECT_FALSE(special.Accepts(1.0f, nan));
}

TEST(StageHarness, HostBatchHoldsInputsDrawsAndCpuResult) {
  auto t = TransformFromJson("clamp", json::object());
  ASSERT_TRUE(t.ok()) << t.status();
  testing::BatchSpec spec;
  spec.shape = {3, 5, 4};
  spec.batch = 4;
  spec.channels = 2;
  spec.seg_channels = 1;
  spec.seed = 7;
  const testing::HostBatch b = testing::MakeHostBatch(**t, spec, "clamp");
  ASSERT_TRUE(b.drawn);
  EXPECT_EQ(b.voxels, 60);
  ASSERT_EQ(b.image.size(), 4u * 2 * 60);
  ASSERT_EQ(b.seg.size(), 4u * 60);
  EXPECT_EQ(b.tensors.batch, 4);
  EXPECT_EQ(b.tensors.channels, 2);
  EXPECT_EQ(b.tensors.seg_channels, 1);
  EXPECT_EQ(b.tensors.seg_capacity, 1);
  EXPECT_EQ(b.tensors.image, nullptr);
  EXPECT_EQ(b.tensors.shape[0], 3);
  EXPECT_EQ(b.tensors.shape[2], 4);
  int changed_samples = 0;
  for (int s = 0; s < 4; ++s) {
    SampleData want = testing::RandomSample(2, {3, 5, 4}, 1, -1, 3, static_cast<uint32_t>(7 * 97 + s));
    EXPECT_EQ(std::vector<float>(b.image.begin() + s * 120, b.image.begin() + (s + 1) * 120), want.image) << s;
    EXPECT_EQ(std::vector<int16_t>(b.seg.begin() + s * 60, b.seg.begin() + (s + 1) * 60), want.seg) << s;
    if (s == 2) {  // every third sample: no params, the CPU result is the input
      EXPECT_EQ(b.params[s], nullptr);
    } else {
      ASSERT_NE(b.params[s], nullptr) << s;
      auto p = testing::DrawFor(**t, want.layout(), 7, static_cast<uint64_t>(s));
      ASSERT_NE(p, nullptr);
      ASSERT_TRUE((*t)->Apply(*p, want).ok());
    }
    const std::vector<float> got(b.want.begin() + s * 120, b.want.begin() + (s + 1) * 120);
    EXPECT_EQ(got, want.image) << s;
    changed_samples += got != std::vector<float>(b.image.begin() + s * 120, b.image.begin() + (s + 1) * 120);
  }
  EXPECT_GT(changed_samples, 0);  // clamp's default changes something: the comparison above is not vacuous

  // 2D samples run as (1, X, Y); labels kept for Draw but not handed to the stage.
  spec.shape = {5, 3};
  spec.upload_seg = false;
  spec.skip = [](int) { return false; };
  const testing::HostBatch flat = testing::MakeHostBatch(**t, spec, "clamp 2D");
  EXPECT_EQ(flat.shape3, (std::vector<int64_t>{1, 5, 3}));
  EXPECT_EQ(flat.tensors.shape[0], 1);
  EXPECT_EQ(flat.tensors.shape[1], 5);
  EXPECT_EQ(flat.tensors.seg_channels, 0);
  EXPECT_EQ(flat.seg.size(), 4u * 15);
  for (const TransformParams* p : flat.params) EXPECT_NE(p, nullptr);
}

TEST(StageHarness, ComparisonsCountAndReport) {
  auto t = TransformFromJson("clamp", json::object());
  ASSERT_TRUE(t.ok()) << t.status();
  testing::BatchSpec spec;
  spec.shape = {2, 3, 4};
  spec.batch = 2;
  spec.channels = 2;
  spec.seg_channels = 1;
  const testing::HostBatch b = testing::MakeHostBatch(**t, spec, "case");
  EXPECT_EQ(testing::CountImageMismatches(b.want, b, Tolerance::SameBits(), "case"), 0);
  std::vector<float> got = b.want;
  got[24 * 2 + 24 + 7] += 1.0f;  // sample 1, channel 1, voxel 7 = (0, 1, 3)
  int64_t bad = -1;
  EXPECT_NONFATAL_FAILURE(bad = testing::CountImageMismatches(got, b, 1e-5f, "case"),
                          "case: sample 1 channel 1 voxel 7 (0, 1, 3)");
  EXPECT_EQ(bad, 1);
  got.pop_back();
  EXPECT_NONFATAL_FAILURE(testing::CountImageMismatches(got, b, 1e-5f, "case"), "case");

  std::vector<int16_t> seg = b.want_seg;
  EXPECT_EQ(testing::CountLabelMismatches(seg, b.want_seg, b, testing::LabelCheck::kExact, "case"), 0);
  seg[30] = static_cast<int16_t>(seg[30] + 1);  // sample 1, seg channel 0, voxel 6
  EXPECT_NONFATAL_FAILURE(bad = testing::CountLabelMismatches(seg, b.want_seg, b, testing::LabelCheck::kExact, "case"),
                          "sample 1 seg channel 0 voxel 6");
  EXPECT_EQ(bad, 1);
  EXPECT_EQ(testing::CountLabelMismatches(seg, b.want_seg, b, testing::LabelCheck::kCount, "case"), 1);  // logged only
  EXPECT_EQ(testing::CountLabelMismatches(seg, b.want_seg, b, testing::LabelCheck::kIgnore, "case"), 0);
}

TEST(StageHarness, ShapeLabel) {
  EXPECT_EQ(testing::ShapeLabel({13, 11, 9}), " (13, 11, 9)");
  EXPECT_EQ(testing::ShapeLabel({37, 45}), " 2D (37, 45)");
}

}  // namespace
}  // namespace augmentd
