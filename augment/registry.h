// augment/registry.h — the table of transform kinds the engine implements.
//
// One explicit list (RegisterAll in registry.cc; no static registrars the linker could drop). Each entry
// names the kind and builds a transform from its configuration given as JSON with the batchgeneratorsv2
// constructor argument names (augment/capi.h lists them).
//
//   for (const std::string& n : augmentd::RegisteredTransformNames()) ...   // GetServerInfo
//   ASSIGN_OR_RETURN(auto t, augmentd::TransformFromJson("gamma", {{"gamma", {{"bg_contrast", {0.7, 1.5}}}}}));
//
// Thread-safety: all functions are safe to call concurrently (the table is immutable after first use).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd {

struct TransformEntry {
  std::string_view name;  // lower-case, e.g. "gaussian_blur"
  TransformKind kind;
  bool has_cpu_implementation;
  // Builds a transform from bgv2 constructor arguments; INVALID_ARGUMENT naming the field on bad values.
  absl::StatusOr<std::shared_ptr<const Transform>> (*from_json)(const nlohmann::json& config);
};

// Lower-case names of every registered transform, in pipeline order:
// spatial, gaussian_noise, gaussian_blur, multiplicative_brightness, contrast, simulate_low_resolution, gamma,
// mirror, mask_image, remove_label, convert_segmentation_to_regions, downsample_seg_for_ds, then DA5's
// (blank_rectangle, brightness_additive, sharpening, median_filter, ...).
std::vector<std::string> RegisteredTransformNames();

// All entries (one per TransformKind).
const std::vector<TransformEntry>& RegisteredTransforms();

// Entry by name or kind; NOT_FOUND / INVALID_ARGUMENT ("transform.kind: unknown ...") when absent.
absl::StatusOr<const TransformEntry*> FindTransform(std::string_view name);
const TransformEntry& FindTransform(TransformKind kind);

// Parses a kind name.
absl::StatusOr<TransformKind> ParseTransformKind(std::string_view name);

// Builds a transform of kind `name` from its JSON configuration.
absl::StatusOr<std::shared_ptr<const Transform>> TransformFromJson(std::string_view name, const nlohmann::json& config);

}  // namespace augmentd
