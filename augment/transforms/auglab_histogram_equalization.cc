#include "augment/transforms/auglab_histogram_equalization.h"

#include "augment/json_util.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/kernels/cuda/auglab_math.h"
#include "augment/status_macros.h"
#include "augment/transforms/auglab_common.h"
#include "augment/transforms/common.h"

namespace augmentd {
namespace ju = json_util;
namespace al = cuda::auglab;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

absl::StatusOr<std::shared_ptr<const Transform>> HistogramEqualizationTransform::Create(
    const HistogramEqualizationConfig& c) {
  return std::shared_ptr<const Transform>(new HistogramEqualizationTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> HistogramEqualizationTransform::FromJson(const nlohmann::json& j) {
  constexpr const char* kWhere = "histogram_equalization";
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "retain_stats"}, kWhere));
  HistogramEqualizationConfig c;
  ASSIGN_OR_RETURN(c.apply_to_channel, auglab_internal::ChannelsFromConfig(j, kWhere));
  ASSIGN_OR_RETURN(c.retain_stats, ju::GetBool(j, "retain_stats", false, kWhere));
  return Create(c);
}

nlohmann::json HistogramEqualizationTransform::ConfigToJson() const {
  return {{"apply_to_channel", config_.apply_to_channel}, {"retain_stats", config_.retain_stats}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> HistogramEqualizationTransform::Draw(
    DrawContext& /*ctx*/, const SampleLayout& layout) const {
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "histogram_equalization"));
  auto p = std::make_unique<HistogramEqualizationParams>();
  p->apply_to_channel = config_.apply_to_channel;
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
  const int64_t n = s.voxels();
  for (int64_t c : p->apply_to_channel) EqualizeHistogram(s.image.data() + c * n, n, config_.retain_stats);
  return absl::OkStatus();
}

nlohmann::json HistogramEqualizationTransform::ParamsToJson(const TransformParams& params) const {
  return {{"apply_to_channel", static_cast<const HistogramEqualizationParams&>(params).apply_to_channel}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> HistogramEqualizationTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel"}, "params"));
  auto p = std::make_unique<HistogramEqualizationParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, auglab_internal::ParamsChannels(j, config_.apply_to_channel, layout.channels));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
