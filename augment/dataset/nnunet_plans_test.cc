#include "augment/dataset/nnunet_plans.h"

#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

constexpr char kPlans[] = R"({
  "plans_name": "nnUNetPlans", "transpose_forward": [0, 2, 1],
  "configurations": {
    "3d_fullres": {"data_identifier": "nnUNetPlans_3d_fullres", "batch_size": 2, "patch_size": [128, 128, 128],
                   "spacing": [1.0, 0.8, 0.8], "use_mask_for_norm": [true],
                   "architecture": {"arch_kwargs": {"strides": [[1,1,1],[2,2,2],[2,2,2],[2,2,2],[2,2,2],[1,2,2]]}}},
    "3d_bs4": {"inherits_from": "3d_fullres", "batch_size": 4},
    "loop_a": {"inherits_from": "loop_b"}, "loop_b": {"inherits_from": "loop_a"}
  }})";

TEST(PlansTest, ParsesAndInherits) {
  absl::StatusOr<PlansConfig> p = ParsePlans(kPlans, "3d_bs4", "p.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->batch_size, 4);
  EXPECT_EQ(p->data_identifier, "nnUNetPlans_3d_fullres");
  EXPECT_EQ(p->patch_size, (std::vector<int64_t>{128, 128, 128}));
  EXPECT_EQ(p->use_mask_for_norm, std::vector<bool>{true});
  EXPECT_EQ(p->strides.size(), 6u);
  EXPECT_EQ(p->transpose_forward, (std::vector<int64_t>{0, 2, 1}));
  const auto scales = DeepSupervisionScales(p->strides);
  ASSERT_EQ(scales.size(), 5u);
  EXPECT_EQ(scales[0], (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(scales[4], (std::vector<double>{0.0625, 0.0625, 0.0625}));
}

TEST(PlansTest, Errors) {
  absl::Status st = ParsePlans(kPlans, "2d", "p.json").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(st.message().find("3d_fullres"), std::string::npos);  // lists what exists
  EXPECT_EQ(ParsePlans(kPlans, "loop_a", "p.json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePlans("[]", "3d_fullres", "p.json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePlans(R"({"configurations": {"c": {"data_identifier": "x", "batch_size": 2,
            "patch_size": [0, 4, 4]}}})",
                       "c", "p.json")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// Values of nnU-Net's get_patch_size (reference §2.2 table).
TEST(PlansTest, InitialPatchSizeMatchesNnunet) {
  EXPECT_EQ(DefaultTrainerSettings({128, 128, 128}).initial_patch_size, (std::vector<int64_t>{205, 205, 205}));
  EXPECT_EQ(DefaultTrainerSettings({96, 160, 160}).initial_patch_size, (std::vector<int64_t>{191, 257, 219}));
  EXPECT_EQ(DefaultTrainerSettings({80, 192, 160}).initial_patch_size, (std::vector<int64_t>{194, 289, 210}));
  EXPECT_EQ(DefaultTrainerSettings({64, 192, 192}).initial_patch_size, (std::vector<int64_t>{178, 308, 233}));
  const TrainerDefaults d2 = DefaultTrainerSettings({20, 320, 256});
  EXPECT_TRUE(d2.do_dummy_2d_data_aug);
  EXPECT_EQ(d2.initial_patch_size, (std::vector<int64_t>{20, 376, 376}));
}

TEST(PlansTest, Splits) {
  absl::StatusOr<std::vector<Split>> s =
      ParseSplits(R"([{"train": ["a", "b"], "val": ["c"]}, {"train": ["c"], "val": ["a", "b"]}])", "s.json");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[1].val, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ParseSplits(R"([{"train": [1]}])", "s.json").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd::dataset
