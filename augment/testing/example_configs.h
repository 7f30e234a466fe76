// augment/testing/example_configs.h — one valid engine JSON configuration per transform kind, in enum order
// (test-only, header-only). The registry test builds and round-trips every kind from it; the CUDA stage test builds
// every kind's stage from it. Kinds not listed below use their schema defaults ({}); a new kind whose defaults are not
// a valid configuration adds its line here (both tests fail otherwise).
//
//   for (const auto& [name, cfg] : testing::ExampleTransformConfigs()) { auto t = TransformFromJson(name, cfg); }
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "augment/registry.h"
#include "nlohmann/json.hpp"

namespace augmentd::testing {

inline std::vector<std::pair<std::string, nlohmann::json>> ExampleTransformConfigs() {
  const std::map<std::string, nlohmann::json> listed = {
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
        {"blank_rectangle",
         {{"rectangle_size", {{1, 4}, {1, 4}, {1, 4}}}, {"rectangle_value", "mean"}, {"num_rectangles", {1, 5}}}},
        {"brightness_additive", {{"mu", 0}, {"sigma", 0.5}, {"synchronize_channels", false}}},
        {"sharpening", {{"strength", {0.1, 1}}, {"p_per_channel", 0.5}}},
        {"median_filter", {{"filter_size", {2, 8}}, {"p_per_channel", 0.5}}},
        {"brightness_gradient_additive",
         {{"scale", {{"axis_size_log_uniform", {6, 1}}}},
          {"loc", {-0.5, 1.5}},
          {"max_strength",
           {{"mixture", {{{"weight", 0.5}, {"range", {-5, -1}}}, {{"weight", 0.5}, {"range", {1, 5}}}}}}},
          {"mean_centered", false},
          {"same_for_all_channels", false},
          {"p_per_channel", 0.5}}},
        {"local_gamma", {{"scale", {5, 15}}, {"gamma", {0.5, 1}}}},
        {"rot90", {{"num_axis_combinations", 1}, {"num_rot_per_combination", {0, 1, 2, 3}}, {"allowed_axes", {1, 2}}}},
        {"transpose_axes", {{"allowed_axes", {0, 1, 2}}}},
        {"rician_noise", {{"noise_variance", {0, 0.1}}}},
        {"bias_field", nlohmann::json::object()},
        {"ghosting", nlohmann::json::object()},
        {"spike", nlohmann::json::object()},
        {"motion", nlohmann::json::object()},
        {"histogram_equalization", nlohmann::json::object()},
        {"random_convolution", nlohmann::json::object()},
        {"intensity_function", nlohmann::json::object()},
        {"zscore_normalization", nlohmann::json::object()},
        {"clamp", nlohmann::json::object()},
        {"edge_convolution", nlohmann::json::object()},
        {"unsharp_mask", nlohmann::json::object()},
        {"swap", {{"patch_size", 2}, {"num_iterations", 3}}},
        {"shape_crop", {{"shape_min", 1}, {"ignore_axes", {1, 2}}}},
        {"anisotropy", {{"downsampling", 3}}},
        {"torchio_affine", nlohmann::json::object()},
        {"elastic_deformation", {{"num_control_points", 5}, {"max_displacement", 1.5}}},
        {"move_seg_as_one_hot_to_data", {{"source_channel_idx", 0}, {"all_labels", {1, 2}}}},
        {"apply_random_binary_operator", {{"channel_idx", {-1}}, {"strel_size", {1, 3}}, {"p_per_label", 0.5}}},
        {"remove_random_connected_component",
         {{"channel_idx", {-1}}, {"fill_with_other_class_p", 0}, {"dont_do_if_covers_more_than_x_percent", 0.15}}},
        {"auglab_low_resolution", {{"mode", "lowres"}, {"crop", {0.8, 1.0}}}},
        {"redistribute_seg", nlohmann::json::object()},
        {"auglab_bias_field", nlohmann::json::object()},
  };
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const std::string& name : RegisteredTransformNames()) {
    auto it = listed.find(name);
    out.emplace_back(name, it != listed.end() ? it->second : nlohmann::json::object());
  }
  return out;
}

}  // namespace augmentd::testing
