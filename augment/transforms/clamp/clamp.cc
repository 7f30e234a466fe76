// ClampTransform. torch.quantile: rank = q·(n − 1) in float32, lower = ⌊rank⌋, upper = ⌈rank⌉, weight = rank − lower,
// lerp(a, b, w) = w < 0.5 ? a + w·(b − a) : b − (b − a)·(1 − w) (ATen's lerp), all float32; the order statistics
// come from nth_element (the same values as a sort).
#include "augment/transforms/clamp/clamp.h"

#include <algorithm>
#include <cmath>

#include "augment/json_util.h"
#include "augment/kernels/common/daext_math.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/auglab_common.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

const ConfigSchema<ClampConfig>& ClampTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<ClampConfig>("clamp"))
           ->Add("max_clamp_amount", &ClampConfig::max_clamp_amount,
                 "largest fraction of the intensity distribution clipped at either end", InRange(0, 0.5))
           .Custom(
               "apply_to_channel", "int[]", "channels the transform applies to",
               [](const nlohmann::json& j, ClampConfig& c, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(c.apply_to_channel, auglab_internal::ChannelsFromConfig(j, w));
                 return absl::OkStatus();
               },
               [](const ClampConfig& c) { return nlohmann::json(c.apply_to_channel); })
           .Add("retain_stats", &ClampConfig::retain_stats, "restore the channel's mean and std afterwards");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> ClampTransform::Create(const ClampConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  for (int64_t ch : c.apply_to_channel)
    if (ch < 0) return ju::Invalid("clamp.apply_to_channel", "channel indices must be >= 0");
  return std::shared_ptr<const Transform>(new ClampTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ClampTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ClampConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json ClampTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> ClampTransform::Draw(DrawContext& ctx,
                                                                      const SampleLayout& layout) const {
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "clamp"));
  auto p = std::make_unique<ClampParams>();
  p->apply_to_channel = config_.apply_to_channel;
  const float amount = static_cast<float>(config_.max_clamp_amount);
  for (size_t i = 0; i < p->apply_to_channel.size(); ++i) {
    const float u_lo = static_cast<float>(ctx.rng.Uniform()), u_hi = static_cast<float>(ctx.rng.Uniform());
    p->min_percentile.push_back(u_lo * amount);
    p->max_percentile.push_back(1.0f - u_hi * amount);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

float Quantile(std::vector<float>& v, float q) {
  const int64_t n = static_cast<int64_t>(v.size());
  int64_t lo = 0, hi = 0;
  float w = 0;
  cuda::daext::QuantileRank(q, n, lo, hi, w);  // shared with the CUDA stage (daext_math.h)
  std::nth_element(v.begin(), v.begin() + lo, v.end());
  const float a = v[lo];
  const float b = hi == lo ? a : *std::min_element(v.begin() + lo + 1, v.end());  // the next order statistic
  return cuda::daext::Lerp(a, b, w);
}

namespace {
void ClampChannel(float* x, int64_t n, float q_lo, float q_hi, bool retain_stats, std::vector<float>& scratch,
                  std::vector<float>& out) {
  if (n == 0) return;
  const kernels::ChannelStats before = kernels::ComputeStats(x, n, retain_stats);
  scratch.assign(x, x + n);
  const float lo = Quantile(scratch, q_lo);
  const float hi = Quantile(scratch, q_hi);
  out.resize(n);
  for (int64_t i = 0; i < n; ++i) out[i] = cuda::daext::ClampTo(x[i], lo, hi);  // torch.clamp(x, lo, hi)
  if (retain_stats) auglab_internal::RetainStats(out.data(), n, before);
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(out[i])) return;  // AugLab's guard: the channel stays as it was
  std::copy(out.begin(), out.end(), x);
}
}  // namespace

absl::Status ClampTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const ClampParams* p, ParamsAs<ClampParams>(params, "clamp"));
  RETURN_IF_ERROR(RequireImage(s, "clamp"));
  RETURN_IF_ERROR(auglab_internal::CheckChannels(p->apply_to_channel, s.channels, "params"));
  if (p->min_percentile.size() != p->apply_to_channel.size() || p->max_percentile.size() != p->apply_to_channel.size())
    return ju::Invalid("params.min_percentile", "needs one value per apply_to_channel entry (and max_percentile)");
  const int64_t n = s.voxels();
  std::vector<float> scratch, out;
  for (size_t i = 0; i < p->apply_to_channel.size(); ++i) {
    ClampChannel(s.image.data() + p->apply_to_channel[i] * n, n, p->min_percentile[i], p->max_percentile[i],
                 config_.retain_stats, scratch, out);
  }
  return absl::OkStatus();
}

nlohmann::json ClampTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const ClampParams&>(params);
  return {{"apply_to_channel", p.apply_to_channel},
          {"min_percentile", p.min_percentile},
          {"max_percentile", p.max_percentile}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> ClampTransform::ParamsFromJson(const nlohmann::json& j,
                                                                              const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "min_percentile", "max_percentile"}, "params"));
  auto p = std::make_unique<ClampParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, auglab_internal::ParamsChannels(j, config_.apply_to_channel, layout.channels));
  for (const char* key : {"min_percentile", "max_percentile"}) {
    if (!j.contains(key)) return ju::Invalid(std::string("params.") + key, "required");
    ASSIGN_OR_RETURN(std::vector<double> q, ju::AsDoubles(j[key], std::string("params.") + key));
    if (q.size() != p->apply_to_channel.size())
      return ju::Invalid(std::string("params.") + key, "needs one value per apply_to_channel entry");
    for (double v : q) {
      if (!(v >= 0 && v <= 1)) return ju::Invalid(std::string("params.") + key, "must be in [0, 1]");
      (std::string(key) == "min_percentile" ? p->min_percentile : p->max_percentile).push_back(static_cast<float>(v));
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
