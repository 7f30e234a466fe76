#include "augment/dataset/labels.h"

#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

TEST(LabelsTest, PlainLabels) {
  absl::StatusOr<LabelInfo> l = ParseLabels(R"({"labels": {"background": 0, "liver": 1, "tumor": 2}})", "d.json");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->all_labels, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(l->foreground_labels, (std::vector<int>{1, 2}));
  EXPECT_FALSE(l->has_regions);
  EXPECT_FALSE(l->ignore_label.has_value());
  const std::vector<ClassKey> keys = l->LocationKeys();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].ToString(), "1");
  EXPECT_EQ(keys[1].ToString(), "2");
}

TEST(LabelsTest, RegionsInFileOrderAndIgnoreLabel) {
  absl::StatusOr<LabelInfo> l = ParseLabels(
      R"({"labels": {"background": 0, "whole": [1, 2, 3], "core": [2, 3], "enh": 3, "ignore": 4},
          "regions_class_order": [1, 2, 3]})",
      "d.json");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(l->has_regions);
  EXPECT_EQ(l->all_labels, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(l->ignore_label, 4);
  const std::vector<ClassKey> keys = l->LocationKeys();
  ASSERT_EQ(keys.size(), 4u);
  EXPECT_EQ(keys[0].ToString(), "(1, 2, 3)");
  EXPECT_EQ(keys[1].ToString(), "(2, 3)");
  EXPECT_EQ(keys[2].ToString(), "3");
  EXPECT_EQ(keys[3].ToString(), "(-1, 0, 1, 2, 3)");
  EXPECT_TRUE(keys[3].annotated);
}

TEST(LabelsTest, Errors) {
  EXPECT_EQ(ParseLabels("{", "d.json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseLabels(R"({"labels": {"a": 1}})", "d.json").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseLabels(R"({"labels": {"background": 1}})", "d.json").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status st = ParseLabels(R"({"labels": {"background": 0, "a": 1, "ignore": 5}})", "d.json").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("ignore"), std::string::npos);
  EXPECT_EQ(ParseLabels(R"({"labels": {"background": 0, "r": [1, 2]}})", "d.json").status().code(),
            absl::StatusCode::kInvalidArgument);  // regions without regions_class_order
}

}  // namespace
}  // namespace augmentd::dataset
