// augment/transforms/common/auglab_common.h — what the AugLab transforms (auglab_*.h) share: the `apply_to_channel`
// configuration (AugLab's default [0]), the spatial view of a sample as 3D, and retain_stats.
// Internal to augment/transforms.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd::auglab_internal {

// `apply_to_channel` of a config: a list of distinct channel indices >= 0 (absent: AugLab's default [0]).
absl::StatusOr<std::vector<int64_t>> ChannelsFromConfig(const nlohmann::json& j, const std::string& where);

// INVALID_ARGUMENT "<where>.apply_to_channel: channel c >= the sample's C channels" when a channel is missing
// (AugLab indexes input[:, c] and raises there).
absl::Status CheckChannels(const std::vector<int64_t>& channels, int64_t sample_channels, const std::string& where);

// `apply_to_channel` of injected params: the given list (checked against the sample's channels), or the
// configured one when absent.
absl::StatusOr<std::vector<int64_t>> ParamsChannels(const nlohmann::json& j, const std::vector<int64_t>& configured,
                                                    int64_t sample_channels);

// The spatial shape as 3 axes (a 2D shape reads as 1 × d0 × d1); INVALID_ARGUMENT for other ranks.
absl::StatusOr<std::array<int32_t, 3>> Shape3(const std::vector<int64_t>& shape, const std::string& where);

// retain_stats: x ← (x − mean(x)) / (std(x) + 1e-8) · before.std + before.mean (unbiased std, float32 maths of
// auglab_math.h). `before` needs std_unbiased (ComputeStats(..., true)).
void RetainStats(float* x, int64_t n, const kernels::ChannelStats& before);

}  // namespace augmentd::auglab_internal
