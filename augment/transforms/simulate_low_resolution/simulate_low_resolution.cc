#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ChannelIndicesFromJson;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;
using transforms_internal::SelectChannels;

absl::StatusOr<std::shared_ptr<const Transform>> SimulateLowResolutionTransform::Create(
    const SimulateLowResolutionConfig& c) {
  const std::string w = "simulate_low_resolution";
  RETURN_IF_ERROR(c.scale.Validate(w + ".scale"));
  if (c.scale.Min() <= 0 || c.scale.Max() > 1) return ju::Invalid(w + ".scale", "must be in (0, 1]");
  RETURN_IF_ERROR(ju::CheckProbability(c.p_per_channel, w + ".p_per_channel"));
  if (c.ignore_axes)
    for (int64_t a : *c.ignore_axes)
      if (a < 0 || a > 2) return ju::Invalid(w + ".ignore_axes", "axes must be in [0, 2]");
  if (c.allowed_channels)
    for (int64_t a : *c.allowed_channels)
      if (a < 0) return ju::Invalid(w + ".allowed_channels", "must be >= 0");
  return std::shared_ptr<const Transform>(new SimulateLowResolutionTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> SimulateLowResolutionTransform::FromJson(const nlohmann::json& j) {
  const std::string w = "simulate_low_resolution";
  RETURN_IF_ERROR(ju::CheckKeys(
      j, {"scale", "synchronize_channels", "synchronize_axes", "ignore_axes", "allowed_channels", "p_per_channel"}, w));
  SimulateLowResolutionConfig c;
  if (!j.contains("scale")) return ju::Invalid(w + ".scale", "required");
  ASSIGN_OR_RETURN(c.scale, RandomScalar::FromJson(j["scale"], w + ".scale"));
  ASSIGN_OR_RETURN(c.synchronize_channels, ju::GetBool(j, "synchronize_channels", std::nullopt, w));
  ASSIGN_OR_RETURN(c.synchronize_axes, ju::GetBool(j, "synchronize_axes", std::nullopt, w));
  if (j.contains("ignore_axes") && !j["ignore_axes"].is_null()) {
    ASSIGN_OR_RETURN(auto v, ju::AsInts(j["ignore_axes"], w + ".ignore_axes"));
    c.ignore_axes = v;
  }
  if (j.contains("allowed_channels") && !j["allowed_channels"].is_null()) {
    ASSIGN_OR_RETURN(auto v, ju::AsInts(j["allowed_channels"], w + ".allowed_channels"));
    c.allowed_channels = v;
  }
  ASSIGN_OR_RETURN(c.p_per_channel, ju::GetDouble(j, "p_per_channel", 1.0, w));
  return Create(c);
}

nlohmann::json SimulateLowResolutionTransform::ConfigToJson() const {
  nlohmann::json j = {{"scale", config_.scale.ToJson()},
                      {"synchronize_channels", config_.synchronize_channels},
                      {"synchronize_axes", config_.synchronize_axes},
                      {"p_per_channel", config_.p_per_channel}};
  j["ignore_axes"] = config_.ignore_axes ? nlohmann::json(*config_.ignore_axes) : nlohmann::json();
  j["allowed_channels"] = config_.allowed_channels ? nlohmann::json(*config_.allowed_channels) : nlohmann::json();
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> SimulateLowResolutionTransform::Draw(
    DrawContext& ctx, const SampleLayout& layout) const {
  auto p = std::make_unique<SimulateLowResolutionParams>();
  RandomStream& rng = ctx.rng;
  const int dims = static_cast<int>(layout.shape.size());
  if (!config_.allowed_channels) {
    p->apply_to_channel = SelectChannels(rng, layout.channels, config_.p_per_channel);
  } else {
    for (int64_t c : *config_.allowed_channels) {
      if (c >= layout.channels) return ju::Invalid("simulate_low_resolution.allowed_channels", "channel out of range");
      if (rng.Uniform() < config_.p_per_channel) p->apply_to_channel.push_back(c);
    }
  }
  const size_t n = p->apply_to_channel.size();
  auto draw_axes = [&]() {
    std::vector<float> s(dims);
    if (config_.synchronize_axes) {
      std::fill(s.begin(), s.end(), static_cast<float>(config_.scale.Sample(rng)));
    } else {
      for (int d = 0; d < dims; ++d) s[d] = static_cast<float>(config_.scale.Sample(rng));
    }
    return s;
  };
  if (config_.synchronize_channels) {
    if (n > 0) p->scales.assign(n, draw_axes());
  } else {
    for (size_t i = 0; i < n; ++i) p->scales.push_back(draw_axes());
  }
  if (config_.ignore_axes) {
    for (auto& s : p->scales)
      for (int64_t a : *config_.ignore_axes)
        if (a < dims) s[a] = 1.0f;
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status SimulateLowResolutionTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const SimulateLowResolutionParams* p,
                   ParamsAs<SimulateLowResolutionParams>(params, "simulate_low_resolution"));
  RETURN_IF_ERROR(RequireImage(s, "simulate_low_resolution"));
  const int nd = static_cast<int>(s.shape.size());
  const int64_t n = s.voxels();
  std::vector<float> low;
  for (size_t k = 0; k < p->apply_to_channel.size(); ++k) {
    const int64_t c = p->apply_to_channel[k];
    if (c < 0 || c >= s.channels) return ju::Invalid("params.apply_to_channel", "channel out of range");
    if (static_cast<int>(p->scales[k].size()) != nd)
      return ju::Invalid("params.scales", absl::StrCat("needs ", nd, " per channel"));
    int64_t new_shape[3];
    int64_t m = 1;
    for (int d = 0; d < nd; ++d) {
      new_shape[d] = kernels::PyRoundToInt(static_cast<double>(s.shape[d]) * static_cast<double>(p->scales[k][d]));
      if (new_shape[d] < 1) return ju::Invalid("params.scales", "scale rounds an axis to size 0");
      m *= new_shape[d];
    }
    low.resize(m);
    float* x = s.image.data() + c * n;
    kernels::NearestExactResize<float>(x, s.shape.data(), low.data(), new_shape, nd);
    kernels::LinearResize(low.data(), new_shape, x, s.shape.data(), nd);
  }
  return absl::OkStatus();
}

nlohmann::json SimulateLowResolutionTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const SimulateLowResolutionParams&>(params);
  return {{"apply_to_channel", p.apply_to_channel}, {"scales", p.scales}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> SimulateLowResolutionTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "scales"}, "params"));
  auto p = std::make_unique<SimulateLowResolutionParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, ChannelIndicesFromJson(j.value("apply_to_channel", nlohmann::json()),
                                                               layout.channels, "params.apply_to_channel"));
  const nlohmann::json sc = j.value("scales", nlohmann::json::array());
  if (!sc.is_array() || sc.size() != p->apply_to_channel.size()) {
    return ju::Invalid("params.scales", absl::StrCat("needs ", p->apply_to_channel.size(), " entries"));
  }
  for (const auto& row : sc) {
    ASSIGN_OR_RETURN(auto v, ju::AsDoubles(row, "params.scales"));
    if (v.size() != layout.shape.size())
      return ju::Invalid("params.scales", absl::StrCat("needs ", layout.shape.size(), " per channel"));
    std::vector<float> f;
    for (double x : v) {
      if (!(x > 0) || x > 1) return ju::Invalid("params.scales", "must be in (0, 1]");
      f.push_back(static_cast<float>(x));
    }
    p->scales.push_back(f);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
