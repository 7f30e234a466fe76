#include "augment/transforms/histogram_equalization/histogram_equalization.h"

#include "augment/json_util.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/kernels/common/auglab_math.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/auglab_common.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
namespace al = cuda::auglab;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

const ConfigSchema<HistogramEqualizationConfig>& HistogramEqualizationTransform::Schema() {
  static const ConfigSchema<HistogramEqualizationConfig>* const s = [] {
    auto* s = new ConfigSchema<HistogramEqualizationConfig>("histogram_equalization");
    s->Custom("apply_to_channel", "int[]", "channels the transform applies to (AugLab's default [0])",
              &HistogramEqualizationConfig::apply_to_channel, auglab_internal::ChannelsFromConfig)
        .Add("retain_stats", &HistogramEqualizationConfig::retain_stats,
             "restore the channel's mean and std afterwards");
    auglab_region::AddConfigFields(*s, &HistogramEqualizationConfig::region);
    return s;
  }();
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> HistogramEqualizationTransform::Create(
    const HistogramEqualizationConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  RETURN_IF_ERROR(auglab_region::Validate(c.region, "histogram_equalization"));
  return std::shared_ptr<const Transform>(new HistogramEqualizationTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> HistogramEqualizationTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(HistogramEqualizationConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json HistogramEqualizationTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> HistogramEqualizationTransform::Draw(
    DrawContext& ctx, const SampleLayout& layout) const {
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "histogram_equalization"));
  auto p = std::make_unique<HistogramEqualizationParams>();
  p->apply_to_channel = config_.apply_to_channel;
  if (config_.region.enabled()) p->region = auglab_region::Draw(config_.region, p->apply_to_channel.size(), ctx.rng);
  return std::unique_ptr<TransformParams>(std::move(p));
}

void EqualizeHistogram(float* x, int64_t n, bool retain_stats) {
  if (n == 0) return;
  const kernels::ChannelStats before = kernels::ComputeStats(x, n, retain_stats);
  const float mn = before.min, mx = before.max;
  if (!(mx > mn)) return;
  uint32_t counts[al::kHistBins] = {};
  for (int64_t i = 0; i < n; ++i) ++counts[al::HistcBin(x[i], mn, mx)];
  float lut[al::kHistBins];
  al::EqualizationLut(counts, mn, mx, lut);
  const float den = al::LookupDenominator(mn, mx);
  for (int64_t i = 0; i < n; ++i) x[i] = lut[al::LookupBin(x[i], mn, den)];
  if (retain_stats) auglab_internal::RetainStats(x, n, before);
}

absl::Status HistogramEqualizationTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const HistogramEqualizationParams* p,
                   ParamsAs<HistogramEqualizationParams>(params, "histogram_equalization"));
  RETURN_IF_ERROR(RequireImage(s, "histogram_equalization"));
  RETURN_IF_ERROR(auglab_internal::CheckChannels(p->apply_to_channel, s.channels, "params"));
  RETURN_IF_ERROR(auglab_region::CheckSegChannel(config_.region, s.seg_channels, "histogram_equalization"));
  RETURN_IF_ERROR(auglab_region::CheckSlots(p->region, p->apply_to_channel.size()));
  const int64_t n = s.voxels();
  std::vector<float> orig;
  for (size_t i = 0; i < p->apply_to_channel.size(); ++i) {
    float* x = s.image.data() + p->apply_to_channel[i] * n;
    RETURN_IF_ERROR(auglab_region::RunInRegion(x, n, s, config_.region, auglab_region::At(p->region, i),
                                               "histogram_equalization", orig,
                                               [&] { EqualizeHistogram(x, n, config_.retain_stats); }));
  }
  return absl::OkStatus();
}

nlohmann::json HistogramEqualizationTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const HistogramEqualizationParams&>(params);
  nlohmann::json j = {{"apply_to_channel", p.apply_to_channel}};
  auglab_region::ToParamsJson(p.region, j);
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> HistogramEqualizationTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "region", "region_labels"}, "params"));
  auto p = std::make_unique<HistogramEqualizationParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, auglab_internal::ParamsChannels(j, config_.apply_to_channel, layout.channels));
  ASSIGN_OR_RETURN(p->region, auglab_region::FromParamsJson(j, p->apply_to_channel.size()));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
