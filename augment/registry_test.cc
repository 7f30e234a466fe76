#include "augment/registry.h"

#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(Registry, NamesAreExactlyTheDefaultTrainerTransforms) {
  EXPECT_EQ(RegisteredTransformNames(),
            (std::vector<std::string>{"spatial", "gaussian_noise", "gaussian_blur", "multiplicative_brightness",
                                      "contrast", "simulate_low_resolution", "gamma", "mirror", "mask_image",
                                      "remove_label", "convert_segmentation_to_regions", "downsample_seg_for_ds"}));
}

TEST(Registry, EveryKindHasACpuImplementation) {
  ASSERT_EQ(RegisteredTransforms().size(), static_cast<size_t>(kNumTransformKinds));
  for (int k = 0; k < kNumTransformKinds; ++k) {
    const auto kind = static_cast<TransformKind>(k);
    const TransformEntry& e = FindTransform(kind);
    EXPECT_EQ(e.kind, kind);
    EXPECT_EQ(e.name, TransformKindName(kind));
    EXPECT_TRUE(e.has_cpu_implementation);
    ASSERT_NE(e.from_json, nullptr);
    auto parsed = ParseTransformKind(e.name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
}

TEST(Registry, BuildsEveryTransformFromJson) {
  const std::vector<std::pair<std::string, nlohmann::json>> configs = {
      {"spatial", {{"patch_size", {8, 8, 8}}}},
      {"gaussian_noise", {{"noise_variance", {0, 0.1}}}},
      {"gaussian_blur", {{"blur_sigma", {0.5, 1.0}}}},
      {"multiplicative_brightness",
       {{"multiplier_range", {{"bg_contrast", {0.75, 1.25}}}}, {"synchronize_channels", false}}},
      {"contrast",
       {{"contrast_range", {{"bg_contrast", {0.75, 1.25}}}},
        {"preserve_range", true},
        {"synchronize_channels", false}}},
      {"simulate_low_resolution",
       {{"scale", {0.5, 1}}, {"synchronize_channels", false}, {"synchronize_axes", true}, {"ignore_axes", nullptr}}},
      {"gamma",
       {{"gamma", {{"bg_contrast", {0.7, 1.5}}}},
        {"p_invert_image", 0},
        {"synchronize_channels", false},
        {"p_per_channel", 1},
        {"p_retain_stats", 1}}},
      {"mirror", {{"allowed_axes", {0, 1, 2}}}},
      {"mask_image", {{"apply_to_channels", {0}}}},
      {"remove_label", {{"label_value", -1}, {"set_to", 0}}},
      {"convert_segmentation_to_regions", {{"regions", {{1, 2}, 2}}}},
      {"downsample_seg_for_ds", {{"ds_scales", {1, 0.5}}}},
  };
  for (const auto& [name, cfg] : configs) {
    auto t = TransformFromJson(name, cfg);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    EXPECT_EQ((*t)->name(), name);
    // Round trip through ConfigToJson.
    auto again = TransformFromJson(name, (*t)->ConfigToJson());
    ASSERT_TRUE(again.ok()) << name << ": " << again.status();
    EXPECT_EQ((*again)->ConfigToJson(), (*t)->ConfigToJson());
  }
  EXPECT_EQ(TransformFromJson("rot90", {}).status().code(), absl::StatusCode::kInvalidArgument);
  auto typo = TransformFromJson("gamma", {{"gama", 1}});
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("gama"), std::string::npos);
}

}  // namespace
}  // namespace augmentd
