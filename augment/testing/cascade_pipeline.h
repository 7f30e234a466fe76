// augment/testing/cascade_pipeline.h — nnU-Net 2.8.1's 3d_cascade_fullres training pipeline for tests (test-only,
// header-only): get_training_transforms(is_cascaded=True) = the default pipeline (NnunetDefaultPipeline) with, after
// RemoveLabel(−1 → 0) and before regions / deep supervision,
//   MoveSegAsOneHotToData(source_channel_idx=1, all_labels=foreground_labels, remove_channel_from_source=True),
//   RandomTransform(ApplyRandomBinaryOperator(channel_idx=range(−K, 0), strel_size=(1, 8), p_per_label=1), p=0.4),
//   RandomTransform(RemoveRandomConnectedComponentFromOneHotEncoding(channel_idx=range(−K, 0),
//                   fill_with_other_class_p=0, dont_do_if_covers_more_than_x_percent=0.15, p_per_label=1), p=0.2).
// The input batch then has 2 seg channels (the labels and the previous stage's prediction).
//
//   PipelineSpec s = testing::NnunetCascadePipeline(tc, {1, 2, 3});
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "augment/pipeline.h"
#include "nlohmann/json.hpp"

namespace augmentd::testing {

// `p_binary` / `p_component`: the two perturbations' apply_probability (nnU-Net: 0.4, 0.2; tests force them to 1).
inline absl::StatusOr<PipelineSpec> NnunetCascadePipeline(const TrainerConfig& tc,
                                                          const std::vector<int64_t>& foreground_labels,
                                                          double p_binary = 0.4, double p_component = 0.2) {
  absl::StatusOr<PipelineSpec> base = NnunetDefaultPipeline(tc);
  if (!base.ok()) return base.status();
  nlohmann::json j = base->ToJson();
  std::vector<int64_t> channels;
  for (int64_t i = -static_cast<int64_t>(foreground_labels.size()); i < 0; ++i) channels.push_back(i);
  const nlohmann::json cascade = nlohmann::json::array({
      {{"kind", "move_seg_as_one_hot_to_data"},
       {"apply_probability", 1.0},
       {"config",
        {{"source_channel_idx", 1}, {"all_labels", foreground_labels}, {"remove_channel_from_source", true}}}},
      {{"kind", "apply_random_binary_operator"},
       {"apply_probability", p_binary},
       {"config", {{"channel_idx", channels}, {"strel_size", {1, 8}}, {"p_per_label", 1.0}}}},
      {{"kind", "remove_random_connected_component"},
       {"apply_probability", p_component},
       {"config",
        {{"channel_idx", channels},
         {"fill_with_other_class_p", 0.0},
         {"dont_do_if_covers_more_than_x_percent", 0.15},
         {"p_per_label", 1.0}}}},
  });
  nlohmann::json& ts = j["transforms"];
  size_t at = ts.size();
  for (size_t i = 0; i < ts.size(); ++i) {
    const std::string k = ts[i]["kind"].get<std::string>();
    if (k == "convert_segmentation_to_regions" || k == "downsample_seg_for_ds") {
      at = i;
      break;
    }
  }
  ts.insert(ts.begin() + static_cast<std::ptrdiff_t>(at), cascade.begin(), cascade.end());
  j["name"] = "nnunet_cascade";
  return PipelineSpec::FromJson(j);
}

}  // namespace augmentd::testing
