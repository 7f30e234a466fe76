#include "augment/dataset/sampler.h"

#include <map>
#include <set>

#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

// B - round(B * (1 - 0.33)) for B = 1..24, evaluated with Python 3.
constexpr int kForcedPerBatch[24] = {0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7, 8, 8};

TEST(OversamplingTest, PositionalRuleForBatchSizes1To24) {
  for (int64_t b = 1; b <= 24; ++b) {
    int forced = 0;
    for (int64_t j = 0; j < b; ++j) {
      const bool f = IsForcedForegroundSlot(j, b, 0.33);
      forced += f;
      // The forced slots are the last ones.
      EXPECT_EQ(f, j >= b - kForcedPerBatch[b - 1]) << "B=" << b << " j=" << j;
    }
    EXPECT_EQ(forced, kForcedPerBatch[b - 1]) << "B=" << b;
  }
  // Python's round() rounds half to even: B=150 → round(100.5) = 100; B=50 → 34 (33.5 after float error).
  EXPECT_FALSE(IsForcedForegroundSlot(99, 150, 0.33));
  EXPECT_TRUE(IsForcedForegroundSlot(100, 150, 0.33));
  EXPECT_FALSE(IsForcedForegroundSlot(33, 50, 0.33));
  EXPECT_TRUE(IsForcedForegroundSlot(34, 50, 0.33));
  EXPECT_FALSE(IsForcedForegroundSlot(0, 2, 0.0));
  EXPECT_TRUE(IsForcedForegroundSlot(0, 2, 1.0));
}

TEST(BoxRangeTest, HandComputedBounds) {
  // Large image, need_to_pad 77 (odd): lb = -77//2 = -39, ub = 300 + 38 + 1 - 205 = 134.
  BoxRange r = ComputeBoxRange({300, 300, 300}, {205, 205, 205}, {77, 77, 77});
  EXPECT_EQ(r.lb, (std::vector<int64_t>{-39, -39, -39}));
  EXPECT_EQ(r.ub, (std::vector<int64_t>{134, 134, 134}));
  // Image smaller than patch - need: need raised to 205 - 100 = 105 → lb = -53, ub = 100 + 52 + 1 - 205 = -52.
  r = ComputeBoxRange({100, 128, 205}, {205, 205, 205}, {77, 77, 77});
  EXPECT_EQ(r.need_to_pad, (std::vector<int64_t>{105, 77, 77}));
  EXPECT_EQ(r.lb, (std::vector<int64_t>{-53, -39, -39}));
  EXPECT_EQ(r.ub, (std::vector<int64_t>{-52, -38, 39}));
  // Even need_to_pad 16: lb = -8, ub = 50 + 8 - 64 = -6; validation (need 0): [0, shape - patch].
  r = ComputeBoxRange({50, 64, 80}, {64, 64, 64}, {16, 0, 0});
  EXPECT_EQ(r.lb, (std::vector<int64_t>{-8, 0, 0}));
  EXPECT_EQ(r.ub, (std::vector<int64_t>{-6, 0, 16}));
  // Validation crop of an image smaller than the patch: need = 64 - 41 = 23 → [-12, -11].
  r = ComputeBoxRange({41, 64, 64}, {64, 64, 64}, {0, 0, 0});
  EXPECT_EQ(r.lb[0], -12);
  EXPECT_EQ(r.ub[0], -11);
}

ClassLocations MakeLocations(std::vector<ClassKey> keys, std::vector<std::vector<int32_t>> coords) {
  ClassLocations l;
  l.keys = std::move(keys);
  l.spatial_rank = 3;
  l.coords = std::move(coords);
  for (const auto& c : l.coords) l.total_counts.push_back(static_cast<int64_t>(c.size() / 3));
  return l;
}

ClassKey Label(int l) { return ClassKey{{l}, false, false}; }
ClassKey Annotated() { return ClassKey{{-1, 0, 1, 2}, true, true}; }

absl::StatusOr<PatchSampler> Make(std::vector<int64_t> patch, std::vector<int64_t> final_patch, int64_t b,
                                  bool ignore = false, uint64_t seed = 7) {
  SamplerOptions o = SamplerOptions::ForTraining(final_patch, patch, b, ignore);
  return PatchSampler::Create(o, {"a", "b", "c"}, seed);
}

TEST(SamplerTest, RandomBoxesCoverTheRangeUniformly) {
  absl::StatusOr<PatchSampler> s = Make({20, 20, 20}, {16, 16, 16}, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  const BoxRange r = ComputeBoxRange({30, 25, 18}, s->patch_size(), s->need_to_pad());
  std::map<int64_t, int> hist0;
  std::map<int64_t, int> cases;
  for (uint64_t batch = 0; batch < 3000; ++batch) {
    cases[s->ChooseCase(batch, 0)]++;
    const BoxChoice c = s->ChooseBox(batch, 0, {30, 25, 18}, false, nullptr);
    for (size_t d = 0; d < 3; ++d) {
      ASSERT_GE(c.box.lb[d], r.lb[d]);
      ASSERT_LE(c.box.lb[d], r.ub[d]);
      ASSERT_EQ(c.box.ub[d] - c.box.lb[d], 20);
    }
    hist0[c.box.lb[0]]++;
  }
  EXPECT_EQ(hist0.begin()->first, r.lb[0]);
  EXPECT_EQ(hist0.rbegin()->first, r.ub[0]);
  const double expect = 3000.0 / static_cast<double>(r.ub[0] - r.lb[0] + 1);
  for (const auto& [v, n] : hist0) EXPECT_NEAR(n, expect, 5 * std::sqrt(expect)) << v;
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& [c, n] : cases) EXPECT_NEAR(n, 1000, 150) << c;
}

TEST(SamplerTest, DeterministicPerSeedBatchAndSlot) {
  absl::StatusOr<PatchSampler> a = Make({20, 20, 20}, {16, 16, 16}, 4, false, 11);
  absl::StatusOr<PatchSampler> b = Make({20, 20, 20}, {16, 16, 16}, 4, false, 11);
  absl::StatusOr<PatchSampler> c = Make({20, 20, 20}, {16, 16, 16}, 4, false, 12);
  int differ = 0;
  for (uint64_t batch = 0; batch < 20; ++batch) {
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(a->ChooseCase(batch, j), b->ChooseCase(batch, j));
      EXPECT_EQ(a->ChooseBox(batch, j, {40, 40, 40}, false, nullptr).box.lb,
                b->ChooseBox(batch, j, {40, 40, 40}, false, nullptr).box.lb);
      differ += a->ChooseBox(batch, j, {40, 40, 40}, false, nullptr).box.lb !=
                c->ChooseBox(batch, j, {40, 40, 40}, false, nullptr).box.lb;
    }
  }
  EXPECT_GT(differ, 70);
}

TEST(SamplerTest, ForcedBoxesCentreOnVoxelsWithoutUpperClamp) {
  absl::StatusOr<PatchSampler> s = Make({21, 21, 21}, {16, 16, 16}, 2);
  ASSERT_TRUE(s.ok());
  // One voxel at the far corner, one at the origin.
  ClassLocations far = MakeLocations({Label(1)}, {{29, 24, 17}});
  const BoxRange r = ComputeBoxRange({30, 25, 18}, s->patch_size(), s->need_to_pad());
  BoxChoice c = s->ChooseBox(0, 1, {30, 25, 18}, true, &far);
  EXPECT_EQ(c.key_index, 0);
  // lb = voxel - 21//2 = voxel - 10, even past ub.
  EXPECT_EQ(c.box.lb, (std::vector<int64_t>{19, 14, 7}));
  EXPECT_GT(c.box.lb[1], r.ub[1]);
  ClassLocations origin = MakeLocations({Label(1)}, {{0, 0, 0}});
  c = s->ChooseBox(0, 1, {30, 25, 18}, true, &origin);
  EXPECT_EQ(c.box.lb, r.lb);  // max(lb, -10) = lb = -(need//2 rounded up)
  EXPECT_EQ(c.box.ub[0] - c.box.lb[0], 21);
}

TEST(SamplerTest, KeyEligibilityAndAnnotatedKey) {
  absl::StatusOr<PatchSampler> s = Make({8, 8, 8}, {8, 8, 8}, 2);
  ASSERT_TRUE(s.ok());
  ClassLocations l = MakeLocations({Label(1), Label(2), Annotated()}, {{}, {5, 5, 5}, {1, 1, 1}});
  for (uint64_t batch = 0; batch < 50; ++batch) {
    EXPECT_EQ(s->ChooseBox(batch, 1, {20, 20, 20}, true, &l).key_index, 1);  // empty 1 skipped, annotated dropped
  }
  ClassLocations only_annotated = MakeLocations({Label(1), Annotated()}, {{}, {3, 3, 3}});
  EXPECT_EQ(s->ChooseBox(0, 1, {20, 20, 20}, true, &only_annotated).key_index, 1);
  ClassLocations none = MakeLocations({Label(1), Label(2)}, {{}, {}});
  EXPECT_EQ(s->ChooseBox(0, 1, {20, 20, 20}, true, &none).key_index, -1);  // random fallback
  // Both labels present: both get picked.
  ClassLocations both = MakeLocations({Label(1), Label(2)}, {{2, 2, 2}, {9, 9, 9}});
  std::set<int> seen;
  for (uint64_t batch = 0; batch < 50; ++batch)
    seen.insert(s->ChooseBox(batch, 1, {20, 20, 20}, true, &both).key_index);
  EXPECT_EQ(seen, (std::set<int>{0, 1}));
}

TEST(SamplerTest, IgnoreLabelCentresUnforcedBoxesOnAnnotatedVoxels) {
  absl::StatusOr<PatchSampler> s = Make({8, 8, 8}, {8, 8, 8}, 2, /*ignore=*/true);
  ASSERT_TRUE(s.ok());
  ClassLocations l = MakeLocations({Label(1), Annotated()}, {{12, 12, 12}, {6, 7, 8}});
  BoxChoice c = s->ChooseBox(0, 0, {20, 20, 20}, false, &l);
  EXPECT_EQ(c.key_index, 1);
  EXPECT_EQ(c.box.lb, (std::vector<int64_t>{2, 3, 4}));
  ClassLocations empty = MakeLocations({Label(1), Annotated()}, {{12, 12, 12}, {}});
  EXPECT_EQ(s->ChooseBox(0, 0, {20, 20, 20}, false, &empty).key_index, -1);
}

TEST(SamplerTest, TwoDimensionalPatchSamplesOneSlice) {
  SamplerOptions o = SamplerOptions::ForValidation({16, 16}, 4, false);
  absl::StatusOr<PatchSampler> s = PatchSampler::Create(o, {"a"}, 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->patch_was_2d());
  EXPECT_EQ(s->patch_size(), (std::vector<int64_t>{1, 16, 16}));
  std::set<int64_t> slices;
  for (uint64_t batch = 0; batch < 200; ++batch) {
    const BoxChoice c = s->ChooseBox(batch, 0, {5, 30, 30}, false, nullptr);
    EXPECT_EQ(c.box.ub[0] - c.box.lb[0], 1);
    slices.insert(c.box.lb[0]);
  }
  EXPECT_EQ(slices, (std::set<int64_t>{0, 1, 2, 3, 4}));
}

TEST(SamplerTest, ProbabilisticOversampling) {
  SamplerOptions o = SamplerOptions::ForTraining({8, 8, 8}, {8, 8, 8}, 2, false);
  o.probabilistic_oversampling = true;
  absl::StatusOr<PatchSampler> s = PatchSampler::Create(o, {"a"}, 3);
  ASSERT_TRUE(s.ok());
  int forced[2] = {0, 0};
  for (uint64_t batch = 0; batch < 3000; ++batch) {
    for (int j = 0; j < 2; ++j) forced[j] += s->ForceForeground(batch, j);
  }
  EXPECT_NEAR(forced[0], 990, 90);
  EXPECT_NEAR(forced[1], 990, 90);
}

TEST(SamplerTest, InvalidOptions) {
  EXPECT_EQ(Make({8, 8}, {8, 8, 8}, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Make({4, 8, 8}, {8, 8, 8}, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Make({8, 8, 8}, {8, 8, 8}, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PatchSampler::Create(SamplerOptions::ForValidation({8, 8, 8}, 2, false), {}, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd::dataset
