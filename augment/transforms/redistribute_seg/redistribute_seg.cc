// RedistributeSegTransform. Per-voxel arithmetic in float32 in AugLab's operation order; region statistics in
// double, rounded to float32 (torch reduces in float32).
#include "augment/transforms/redistribute_seg/redistribute_seg.h"

#include <algorithm>
#include <cmath>

#include "augment/json_util.h"
#include "augment/kernels/common/redistribute_seg_math.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/auglab_common.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
namespace rsm = redistribute_seg_math;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;
using transforms_internal::RequireSeg;

namespace redistribute_seg_internal {
std::vector<uint8_t> Dilate3(const std::vector<uint8_t>& mask, const int64_t* s) {
  std::vector<uint8_t> cur = mask, next(mask.size());
  const int64_t stride[3] = {s[1] * s[2], s[2], 1};
  for (int axis = 0; axis < 3; ++axis) {  // a box dilation is separable: radius 3 along each axis
    for (int64_t a = 0; a < s[0]; ++a)
      for (int64_t b = 0; b < s[1]; ++b)
        for (int64_t c = 0; c < s[2]; ++c) {
          const int64_t pos[3] = {a, b, c};
          const int64_t i = a * stride[0] + b * stride[1] + c;
          uint8_t v = 0;
          for (int64_t d = std::max<int64_t>(0, pos[axis] - 3); d <= std::min<int64_t>(s[axis] - 1, pos[axis] + 3) && !v;
               ++d)
            v = cur[i + (d - pos[axis]) * stride[axis]];
          next[i] = v;
        }
    std::swap(cur, next);
  }
  return cur;
}
}  // namespace redistribute_seg_internal

namespace {
struct Stats {
  float mean = 0, std = 0;
};
Stats MaskedStats(const float* x, const std::vector<uint8_t>& m, int64_t n) {
  double cnt = 0, sum = 0;
  for (int64_t i = 0; i < n; ++i)
    if (m[i]) {
      cnt += 1;
      sum += x[i];
    }
  cnt = std::max(cnt, 1.0);
  const float mean = static_cast<float>(sum / cnt);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i)
    if (m[i]) {
      const double d = static_cast<double>(x[i]) - mean;
      sq += d * d;
    }
  return {mean, static_cast<float>(std::sqrt(sq / cnt))};
}

Stats PopulationStats(const float* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  return {static_cast<float>(mean), static_cast<float>(std::sqrt(sq / static_cast<double>(n)))};
}

}  // namespace

const ConfigSchema<RedistributeSegConfig>& RedistributeSegTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<RedistributeSegConfig>("redistribute_seg"))
           ->Add("in_seg", &RedistributeSegConfig::in_seg,
                 "probability that a channel's Gaussians are added only inside the region", Probability())
           .Custom(
               "apply_to_channel", "int[]", "channels the transform applies to (AugLab's default [0])",
               [](const nlohmann::json& j, RedistributeSegConfig& c, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(c.apply_to_channel, auglab_internal::ChannelsFromConfig(j, w));
                 return absl::OkStatus();
               },
               [](const RedistributeSegConfig& c) { return nlohmann::json(c.apply_to_channel); })
           .Add("retain_stats", &RedistributeSegConfig::retain_stats,
                "restore the channel's mean and population std afterwards");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> RedistributeSegTransform::Create(const RedistributeSegConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  for (int64_t ch : c.apply_to_channel)
    if (ch < 0) return ju::Invalid("redistribute_seg.apply_to_channel", "channel indices must be >= 0");
  return std::shared_ptr<const Transform>(new RedistributeSegTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> RedistributeSegTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(RedistributeSegConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json RedistributeSegTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> RedistributeSegTransform::Draw(DrawContext& ctx,
                                                                                const SampleLayout& layout) const {
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "redistribute_seg"));
  if (layout.seg_channels < 1) return ju::Invalid("redistribute_seg", "needs a segmentation");
  auto p = std::make_unique<RedistributeSegParams>();
  p->apply_to_channel = config_.apply_to_channel;
  const int64_t r = layout.seg_channels;
  for (size_t i = 0; i < p->apply_to_channel.size(); ++i) {
    p->in_seg.push_back(static_cast<float>(ctx.rng.Uniform()) <= static_cast<float>(config_.in_seg));
    std::vector<float> jit, amp;
    for (int64_t k = 0; k < r; ++k) jit.push_back(static_cast<float>(ctx.rng.Uniform()) * 0.2f);
    for (int64_t k = 0; k < r; ++k) amp.push_back(2.0f * static_cast<float>(ctx.rng.Uniform()) - 1.0f);
    p->jitter.push_back(std::move(jit));
    p->amplitude.push_back(std::move(amp));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status RedistributeSegTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const RedistributeSegParams* p, ParamsAs<RedistributeSegParams>(params, "redistribute_seg"));
  RETURN_IF_ERROR(RequireImage(s, "redistribute_seg"));
  RETURN_IF_ERROR(RequireSeg(s, "redistribute_seg"));
  RETURN_IF_ERROR(auglab_internal::CheckChannels(p->apply_to_channel, s.channels, "params"));
  ASSIGN_OR_RETURN(const auto sh3, auglab_internal::Shape3(s.shape, "redistribute_seg"));
  const int64_t sh[3] = {sh3[0], sh3[1], sh3[2]};
  const int64_t n = s.voxels(), regions = s.seg_channels;
  for (size_t k = 0; k < p->apply_to_channel.size(); ++k)
    if (p->jitter[k].size() != static_cast<size_t>(regions) || p->amplitude[k].size() != static_cast<size_t>(regions))
      return ju::Invalid("params.jitter", "needs one value per segmentation channel (and amplitude)");
  bool any_fg = false;
  std::vector<std::vector<uint8_t>> masks(regions), rings(regions);
  for (int64_t r = 0; r < regions; ++r) {
    masks[r].resize(n);
    for (int64_t i = 0; i < n; ++i) {
      const int16_t l = s.seg[r * n + i];
      masks[r][i] = l != 0;
      any_fg |= l > 0;
    }
    rings[r] = redistribute_seg_internal::Dilate3(masks[r], sh);
    for (int64_t i = 0; i < n; ++i) rings[r][i] = rings[r][i] && !masks[r][i];
  }
  std::vector<float> x(n), add(n);
  for (size_t k = 0; k < p->apply_to_channel.size(); ++k) {
    float* ch = s.image.data() + p->apply_to_channel[k] * n;
    for (int64_t i = 0; i < n; ++i) x[i] = std::isfinite(ch[i]) ? ch[i] : 0.0f;  // nan_to_num(nan=0, ±inf=0)
    const Stats before = config_.retain_stats ? PopulationStats(x.data(), n) : Stats{};
    const auto [mn_it, mx_it] = std::minmax_element(x.begin(), x.end());
    const float mn = *mn_it, denom = rsm::Denominator(mn, *mx_it);
    for (int64_t i = 0; i < n; ++i) x[i] = rsm::Normalize(x[i], mn, denom);
    if (!any_fg) {
      std::copy(x.begin(), x.end(), ch);
      continue;
    }
    std::fill(add.begin(), add.end(), 0.0f);
    for (int64_t r = 0; r < regions; ++r) {
      const Stats in = MaskedStats(x.data(), masks[r], n), ring = MaskedStats(x.data(), rings[r], n);
      const float sigma = rsm::Sigma(p->jitter[k][r], in.mean, in.std, ring.mean, ring.std);
      const float a = p->amplitude[k][r];
      for (int64_t i = 0; i < n; ++i)
        if (!p->in_seg[k] || masks[r][i]) add[i] = RnAdd(add[i], RnMul(rsm::NormalPdf(x[i], in.mean, sigma), a));
    }
    const auto [tmin_it, tmax_it] = std::minmax_element(add.begin(), add.end());
    const float tmin = *tmin_it, tmax = *tmax_it;
    if (tmax - tmin > 1e-8f)
      for (int64_t i = 0; i < n; ++i) x[i] = rsm::Redistribute(x[i], add[i], tmin, tmax);
    if (config_.retain_stats) {
      const Stats now = PopulationStats(x.data(), n);
      const float sd = rsm::Max(now.std, 1e-7f);
      for (int64_t i = 0; i < n; ++i) x[i] = rsm::Retain(x[i], now.mean, sd, before.std, before.mean);
    }
    bool finite = true;
    for (int64_t i = 0; i < n && finite; ++i) finite = std::isfinite(x[i]);
    if (finite) std::copy(x.begin(), x.end(), ch);  // AugLab's guard: else the channel stays as it was
  }
  return absl::OkStatus();
}

nlohmann::json RedistributeSegTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const RedistributeSegParams&>(params);
  return {{"apply_to_channel", p.apply_to_channel},
          {"in_seg", p.in_seg},
          {"jitter", p.jitter},
          {"amplitude", p.amplitude}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> RedistributeSegTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "in_seg", "jitter", "amplitude"}, "params"));
  auto p = std::make_unique<RedistributeSegParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, auglab_internal::ParamsChannels(j, config_.apply_to_channel, layout.channels));
  const size_t nc = p->apply_to_channel.size();
  if (!j.contains("in_seg") || !j["in_seg"].is_array() || j["in_seg"].size() != nc)
    return ju::Invalid("params.in_seg", "needs one bool per apply_to_channel entry");
  for (const auto& v : j["in_seg"]) {
    if (!v.is_boolean()) return ju::Invalid("params.in_seg", "must be booleans");
    p->in_seg.push_back(v.get<bool>());
  }
  for (const char* key : {"jitter", "amplitude"}) {
    const std::string f = std::string("params.") + key;
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != nc)
      return ju::Invalid(f, "needs one list per apply_to_channel entry");
    for (const auto& row : j[key]) {
      ASSIGN_OR_RETURN(std::vector<double> v, ju::AsDoubles(row, f));
      if (layout.seg_channels > 0 && v.size() != static_cast<size_t>(layout.seg_channels))
        return ju::Invalid(f, "needs one value per segmentation channel");
      std::vector<float> fv;
      for (double d : v) {
        if (!std::isfinite(d)) return ju::Invalid(f, "must be finite");
        fv.push_back(static_cast<float>(d));
      }
      (std::string(key) == "jitter" ? p->jitter : p->amplitude).push_back(std::move(fv));
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
