// augment/transforms/common/one_hot_channels.h — the per-channel selection the cascade's one-hot perturbations share
// (apply_random_binary_operator, remove_random_connected_component): bgv2 shuffles `channel_idx`, flips one coin per
// shuffled channel with p_per_label, and indexes channels from the end when negative (nnU-Net passes range(-K, 0)).
//
//   RETURN_IF_ERROR(one_hot_channels::CheckChannelIdx(c.channel_idx, "apply_random_binary_operator"));
//   p->apply_to_channels = one_hot_channels::Draw(ctx.rng, config_.channel_idx, config_.p_per_label);
//   ASSIGN_OR_RETURN(p->apply_to_channels, one_hot_channels::ParseApplied(j, config_.channel_idx, layout.channels));
//   ASSIGN_OR_RETURN(int64_t a, one_hot_channels::Resolve(raw, s.channels, "params.apply_to_channels"));
//
// Errors: INVALID_ARGUMENT naming the field. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/rng.h"
#include "nlohmann/json.hpp"

namespace augmentd::one_hot_channels {

// An int or a list of ints (`field` names it in errors).
absl::StatusOr<std::vector<int64_t>> IntOrInts(const nlohmann::json& v, const std::string& field);

// Channel `c` (negative: from the end) of `channels`; INVALID_ARGUMENT naming `field` when outside.
absl::StatusOr<int64_t> Resolve(int64_t c, int64_t channels, const std::string& field);

// A configuration's channel_idx: not empty, every entry in [-4096, 4096) (errors name "<kind>.channel_idx").
absl::Status CheckChannelIdx(const std::vector<int64_t>& channel_idx, const std::string& kind);

// bgv2's draw: np.random.shuffle of channel_idx (Fisher–Yates), then one coin per shuffled channel; the channels
// whose coin is below p_per_label, in shuffled order.
std::vector<int64_t> Draw(RandomStream& rng, std::vector<int64_t> channel_idx, double p_per_label);

// Injected params' "apply_to_channels" (absent or null: none): each must be one of channel_idx and, when `channels`
// > 0, a channel of the sample.
absl::StatusOr<std::vector<int64_t>> ParseApplied(const nlohmann::json& params, const std::vector<int64_t>& channel_idx,
                                                  int64_t channels);

}  // namespace augmentd::one_hot_channels
