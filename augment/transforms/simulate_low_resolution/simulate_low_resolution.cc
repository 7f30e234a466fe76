#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ChannelIndicesFromJson;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;
using transforms_internal::SelectChannels;

const ConfigSchema<SimulateLowResolutionConfig>& SimulateLowResolutionTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<SimulateLowResolutionConfig>("simulate_low_resolution"))
           ->Add("scale", &SimulateLowResolutionConfig::scale, "downsampling factor per axis (1 = unchanged)",
                 Required(FieldRule{false, 0, 1, /*lo_open=*/true}))
           .Add("synchronize_channels", &SimulateLowResolutionConfig::synchronize_channels,
                "one scale for all selected channels", Required())
           .Add("synchronize_axes", &SimulateLowResolutionConfig::synchronize_axes, "one scale for all spatial axes",
                Required())
           .Add("ignore_axes", &SimulateLowResolutionConfig::ignore_axes, "spatial axes left at full resolution",
                InRange(0, 2))
           .Add("allowed_channels", &SimulateLowResolutionConfig::allowed_channels,
                "channels that may be selected (null: all)", AtLeast(0))
           .Add("p_per_channel", &SimulateLowResolutionConfig::p_per_channel, "probability that a channel is selected",
                Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> SimulateLowResolutionTransform::Create(
    const SimulateLowResolutionConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = "simulate_low_resolution";
  return std::shared_ptr<const Transform>(new SimulateLowResolutionTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> SimulateLowResolutionTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(SimulateLowResolutionConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json SimulateLowResolutionTransform::ConfigToJson() const { return Schema().ToJson(config_); }

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
