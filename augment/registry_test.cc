#include "augment/registry.h"

#include "augment/testing/example_configs.h"

#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(Registry, NamesAreExactlyTheDefaultTrainerTransforms) {
  EXPECT_EQ(RegisteredTransformNames(),
            (std::vector<std::string>{"spatial", "gaussian_noise", "gaussian_blur", "multiplicative_brightness",
                                      "contrast", "simulate_low_resolution", "gamma", "mirror", "mask_image",
                                      "remove_label", "convert_segmentation_to_regions", "downsample_seg_for_ds",
                                      "blank_rectangle", "brightness_additive", "sharpening", "median_filter",
                                      "brightness_gradient_additive", "local_gamma", "rot90", "transpose_axes",
                                      "rician_noise", "bias_field", "ghosting", "spike", "motion",
                                      "histogram_equalization", "random_convolution", "intensity_function",
                                      "zscore_normalization", "clamp", "edge_convolution",
                                      "unsharp_mask", "swap", "shape_crop", "anisotropy", "torchio_affine",
                                      "elastic_deformation", "move_seg_as_one_hot_to_data",
                                      "apply_random_binary_operator", "remove_random_connected_component",
                                      "auglab_low_resolution", "redistribute_seg", "auglab_bias_field"}));
}

TEST(Registry, EveryKindHasACpuImplementation) {
  ASSERT_EQ(RegisteredTransforms().size(), static_cast<size_t>(kNumTransformKinds));
  for (int k = 0; k < kNumTransformKinds; ++k) {
    const auto kind = static_cast<TransformKind>(k);
    const TransformEntry& e = FindTransform(kind);
    EXPECT_EQ(e.kind, kind);
    EXPECT_EQ(e.name, TransformKindName(kind));
    ASSERT_NE(e.from_json, nullptr);  // the CPU reference
    auto parsed = ParseTransformKind(e.name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
}

// The capability flags replace the per-kind switches of pipeline.cc: labels are used by exactly these kinds (AugLab's
// extras only with regions enabled), and only regions / DS change the output layout.
TEST(Registry, CapabilityFlags) {
  std::vector<std::string> labels, layout;
  for (const TransformEntry& e : RegisteredTransforms()) {
    if (e.caps & kCapUsesLabels) labels.emplace_back(e.name);
    if (e.caps & kCapChangesOutputLayout) layout.emplace_back(e.name);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"spatial", "mirror", "mask_image", "remove_label",
                                              "convert_segmentation_to_regions", "downsample_seg_for_ds", "rot90",
                                              "transpose_axes", "shape_crop", "torchio_affine",
                                              "elastic_deformation", "move_seg_as_one_hot_to_data",
                                              "redistribute_seg"}));
  EXPECT_EQ(layout, (std::vector<std::string>{"convert_segmentation_to_regions", "downsample_seg_for_ds",
                                              "move_seg_as_one_hot_to_data"}));
  auto he = TransformFromJson("histogram_equalization", nlohmann::json::object());
  ASSERT_TRUE(he.ok()) << he.status();
  EXPECT_FALSE((*he)->UsesLabels());
  auto he_regions = TransformFromJson("histogram_equalization", {{"in_seg", 0.5}});
  ASSERT_TRUE(he_regions.ok()) << he_regions.status();
  EXPECT_TRUE((*he_regions)->UsesLabels());
  auto gamma = TransformFromJson("gamma", {{"gamma", {0.7, 1.5}},
                                           {"p_invert_image", 0},
                                           {"synchronize_channels", false},
                                           {"p_per_channel", 1},
                                           {"p_retain_stats", 1}});
  ASSERT_TRUE(gamma.ok()) << gamma.status();
  EXPECT_FALSE((*gamma)->UsesLabels());
  EXPECT_EQ(TransformKindName(static_cast<TransformKind>(kNumTransformKinds)), "unknown");
}

TEST(Registry, BuildsEveryTransformFromJson) {
  const auto configs = testing::ExampleTransformConfigs();
  ASSERT_EQ(configs.size(), static_cast<size_t>(kNumTransformKinds));
  for (const auto& [name, cfg] : configs) {
    auto t = TransformFromJson(name, cfg);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    EXPECT_EQ((*t)->name(), name);
    // Round trip through ConfigToJson.
    auto again = TransformFromJson(name, (*t)->ConfigToJson());
    ASSERT_TRUE(again.ok()) << name << ": " << again.status();
    EXPECT_EQ((*again)->ConfigToJson(), (*t)->ConfigToJson());
  }
  EXPECT_EQ(TransformFromJson("rot180", {}).status().code(), absl::StatusCode::kInvalidArgument);
  auto typo = TransformFromJson("gamma", {{"gama", 1}});
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("gama"), std::string::npos);
}

}  // namespace
}  // namespace augmentd
