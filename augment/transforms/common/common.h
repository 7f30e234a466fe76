// augment/transforms/common/common.h — helpers shared by the transform implementations (internal).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/json_util.h"
#include "augment/random_scalar.h"
#include "augment/rng.h"
#include "augment/status_macros.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd::transforms_internal {

// bgv2 `torch.rand(C) < p` → indices of the selected channels (one draw per channel, in order).
std::vector<int64_t> SelectChannels(RandomStream& rng, int64_t channels, double p);

// One float32 value per selected channel (bgv2's `synchronize_channels`): a single draw of `r` repeated `n` times
// when `synchronize` (drawn even for n == 0), else `n` draws in channel order.
std::vector<float> SamplePerChannel(RandomStream& rng, const RandomScalar& r, size_t n, bool synchronize);

// Reads j[key] (absent or null = no values) as float32 values, exactly `n` of them (one per selected channel);
// errors name "params.<key>".
absl::StatusOr<std::vector<float>> PerChannelFloatsFromJson(const nlohmann::json& j, const std::string& key, size_t n);

// The Philox stream key of a noise transform's params `P` (members seed, sample_index, transform_index,
// key_given): taken from the draw context, so injected params without a key draw the noise a plain Draw would.
template <typename P>
void SetNoiseKey(P& p, const DrawContext& ctx) {
  p.seed = ctx.seed;
  p.sample_index = ctx.sample_index;
  p.transform_index = ctx.transform_index;
  p.key_given = true;
}

// {"seed", "sample_index", "transform_index"} of `p`, the params' "noise_key".
template <typename P>
nlohmann::json NoiseKeyToJson(const P& p) {
  return {{"seed", p.seed}, {"sample_index", p.sample_index}, {"transform_index", p.transform_index}};
}

// Reads an injected "noise_key" of `j` into `p` (left alone when absent).
template <typename P>
absl::Status NoiseKeyFromJson(const nlohmann::json& j, P& p) {
  if (!j.contains("noise_key")) return absl::OkStatus();
  const auto& k = j["noise_key"];
  ASSIGN_OR_RETURN(int64_t seed, json_util::GetInt(k, "seed", 0, "params.noise_key"));
  ASSIGN_OR_RETURN(int64_t si, json_util::GetInt(k, "sample_index", 0, "params.noise_key"));
  ASSIGN_OR_RETURN(int64_t ti, json_util::GetInt(k, "transform_index", 0, "params.noise_key"));
  p.seed = static_cast<uint64_t>(seed);
  p.sample_index = static_cast<uint64_t>(si);
  p.transform_index = static_cast<uint32_t>(ti);
  p.key_given = true;
  return absl::OkStatus();
}

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
