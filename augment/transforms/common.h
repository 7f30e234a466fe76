// augment/transforms/common.h — helpers shared by the transform implementations (internal).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/rng.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd::transforms_internal {

// bgv2 `torch.rand(C) < p` → indices of the selected channels (one draw per channel, in order).
std::vector<int64_t> SelectChannels(RandomStream& rng, int64_t channels, double p);

// Reads a list of channel indices (ints, or a bool mask of length `channels`), each in [0, channels).
absl::StatusOr<std::vector<int64_t>> ChannelIndicesFromJson(const nlohmann::json& v, int64_t channels,
                                                            const std::string& field);

// Casts `params` to the transform's parameter type or returns INVALID_ARGUMENT.
template <typename P>
absl::StatusOr<const P*> ParamsAs(const TransformParams& params, std::string_view transform) {
  const auto* p = dynamic_cast<const P*>(&params);
  if (p == nullptr) return absl::InvalidArgumentError(std::string(transform) + ": wrong parameter type");
  return p;
}

// INVALID_ARGUMENT unless the sample has an image with `channels` > 0 and a non-empty shape.
absl::Status RequireImage(const SampleData& s, std::string_view transform);
absl::Status RequireSeg(const SampleData& s, std::string_view transform);

}  // namespace augmentd::transforms_internal
