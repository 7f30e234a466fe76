// augment/dataset/labels.h — nnU-Net's label configuration (the `labels` of dataset.json, as LabelManager
// reads it) and the keys under which foreground locations are collected.
//
//   ASSIGN_OR_RETURN(LabelInfo info, ParseLabels(dataset_json_text, "dataset.json"));
//   for (const ClassKey& k : info.LocationKeys()) ...   // 1, 2, ... or regions; plus (-1, 0, 1, ...) with ignore
//
// Rules (nnunetv2/utilities/label_handling): "background" must be 0; `all_labels` = the sorted unique label
// values of every entry except "ignore" (regions contribute each member); region training iff some value is a
// list of more than one label; regions = every non-"ignore" value that is not background, in dataset.json
// order; the ignore label must be max(all_labels)+1. Foreground location keys are the foreground labels
// (all_labels without 0) or the regions, plus — with an ignore label — the "annotated" key (-1, *all_labels).
// Thread-safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace augmentd::dataset {

// A key of nnU-Net's `class_locations`: one label, a region (tuple of labels) or the annotated-voxels key.
struct ClassKey {
  std::vector<int> labels;  // voxels whose label is any of these belong to the key
  bool is_region = false;   // written as a tuple in Python (a list in dataset.json, or the annotated key)
  bool annotated = false;   // the ignore-label key (-1, *all_labels)

  // Python-like rendering: "1", "(1, 2)", "(-1, 0, 1, 2)".
  std::string ToString() const;
  bool operator==(const ClassKey& o) const { return labels == o.labels && is_region == o.is_region; }
};

struct LabelInfo {
  std::vector<int> all_labels;         // sorted, unique, without the ignore label
  std::vector<int> foreground_labels;  // all_labels without 0
  bool has_regions = false;
  std::vector<ClassKey> regions;         // region training only
  std::vector<int> regions_class_order;  // dataset.json "regions_class_order" (may be empty)
  std::optional<int> ignore_label;

  // Keys for foreground sampling, in nnU-Net's order (labels or regions, then the annotated key).
  std::vector<ClassKey> LocationKeys() const;
  // The annotated-voxels key (-1, *all_labels); meaningful with an ignore label.
  ClassKey AnnotatedKey() const;
};

// Parses the "labels" (and "regions_class_order") of a dataset.json document. `name` is used in errors
// (INVALID_ARGUMENT "<name>: labels...: <problem>").
absl::StatusOr<LabelInfo> ParseLabels(const std::string& dataset_json_text, const std::string& name);

}  // namespace augmentd::dataset
