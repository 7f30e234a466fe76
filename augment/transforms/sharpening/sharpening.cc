#include "augment/transforms/sharpening/sharpening.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr char kW[] = "sharpening";

// out = x + strength · (2·nd·x − Σ face neighbours), replicate border (neighbour index clamped).
void Sharpen(const float* x, float* out, const std::vector<int64_t>& shape, float strength) {
  const size_t nd = shape.size();
  const int64_t X = shape[0], Y = shape[1], Z = nd == 3 ? shape[2] : 1;
  const float centre = nd == 3 ? 6.0f : 4.0f;
  for (int64_t i = 0; i < X; ++i) {
    const int64_t im = std::max<int64_t>(i - 1, 0), ip = std::min(i + 1, X - 1);
    for (int64_t j = 0; j < Y; ++j) {
      const int64_t jm = std::max<int64_t>(j - 1, 0), jp = std::min(j + 1, Y - 1);
      for (int64_t k = 0; k < Z; ++k) {
        const int64_t o = (i * Y + j) * Z + k;
        float lap = centre * x[o] - x[(im * Y + j) * Z + k] - x[(ip * Y + j) * Z + k] - x[(i * Y + jm) * Z + k] -
                    x[(i * Y + jp) * Z + k];
        if (nd == 3) {
          const int64_t km = std::max<int64_t>(k - 1, 0), kp = std::min(k + 1, Z - 1);
          lap = lap - x[(i * Y + j) * Z + km] - x[(i * Y + j) * Z + kp];
        }
        out[o] = lap * strength + x[o];
      }
    }
  }
}
}  // namespace

const ConfigSchema<SharpeningConfig>& SharpeningTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<SharpeningConfig>("sharpening"))
           ->Add("strength", &SharpeningConfig::strength, "sharpening strength: a number or [lo, hi] (uniform)")
           .Add("p_same_for_each_channel", &SharpeningConfig::p_same_for_each_channel,
                "probability that all channels share one strength", Probability())
           .Add("p_per_channel", &SharpeningConfig::p_per_channel, "probability that a channel is selected",
                Probability())
           .Add("p_clamp_intensities", &SharpeningConfig::p_clamp_intensities,
                "probability of clipping to the channel's old [min, max]", Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> SharpeningTransform::Create(const SharpeningConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  if (c.strength.kind == RandomScalar::Kind::kBGContrast)
    return ju::Invalid(w + ".strength", "expected a number or [lo, hi]");
  return std::shared_ptr<const Transform>(new SharpeningTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> SharpeningTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(SharpeningConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json SharpeningTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> SharpeningTransform::Draw(DrawContext& ctx,
                                                                           const SampleLayout& layout) const {
  const size_t C = static_cast<size_t>(layout.channels);
  auto p = std::make_unique<SharpeningParams>();
  // bgv2 _sample_strength: a float is returned as is, a tuple is np.random.uniform(lo, hi) (one draw even if equal).
  auto strength = [&] {
    return config_.strength.kind == RandomScalar::Kind::kConstant
               ? config_.strength.lo
               : config_.strength.lo + (config_.strength.hi - config_.strength.lo) * ctx.rng.Uniform();
  };
  const bool use_same = ctx.rng.Uniform() < config_.p_same_for_each_channel;
  if (use_same) {
    p->strengths.assign(C, strength());
    p->clamp_intensities.assign(C, ctx.rng.Uniform() < config_.p_clamp_intensities);
  } else {
    for (size_t c = 0; c < C; ++c) p->strengths.push_back(strength());
    for (size_t c = 0; c < C; ++c) p->clamp_intensities.push_back(ctx.rng.Uniform() < config_.p_clamp_intensities);
  }
  for (size_t c = 0; c < C; ++c) p->apply_channel.push_back(ctx.rng.Uniform() < config_.p_per_channel);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status SharpeningTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const SharpeningParams* p, ParamsAs<SharpeningParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  if (s.shape.size() != 2 && s.shape.size() != 3) return ju::Invalid(std::string(kW), "needs 2 or 3 spatial dims");
  const int64_t n = s.voxels();
  std::vector<float> tmp;
  for (int64_t c = 0; c < s.channels && c < static_cast<int64_t>(p->apply_channel.size()); ++c) {
    if (!p->apply_channel[c]) continue;
    float* x = s.image.data() + c * n;
    float mn = 0, mx = 0;
    if (p->clamp_intensities[c]) {
      const auto [a, b] = std::minmax_element(x, x + n);
      mn = *a;
      mx = *b;
    }
    tmp.resize(static_cast<size_t>(n));
    Sharpen(x, tmp.data(), s.shape, static_cast<float>(p->strengths[c]));
    std::copy(tmp.begin(), tmp.end(), x);
    if (p->clamp_intensities[c])
      for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], mn), mx);
  }
  return absl::OkStatus();
}

nlohmann::json SharpeningTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const SharpeningParams&>(params);
  return {{"strengths", p.strengths}, {"clamp_intensities", p.clamp_intensities}, {"apply_channel", p.apply_channel}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> SharpeningTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                     const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"strengths", "clamp_intensities", "apply_channel"}, "params"));
  auto p = std::make_unique<SharpeningParams>();
  const size_t C = static_cast<size_t>(layout.channels);
  for (const char* key : {"strengths", "clamp_intensities", "apply_channel"}) {
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != C)
      return ju::Invalid(absl::StrCat("params.", key), absl::StrCat("needs ", C, " entries (one per channel)"));
  }
  ASSIGN_OR_RETURN(p->strengths, ju::AsDoubles(j["strengths"], "params.strengths"));
  ASSIGN_OR_RETURN(p->clamp_intensities, ju::AsBools(j["clamp_intensities"], "params.clamp_intensities"));
  ASSIGN_OR_RETURN(p->apply_channel, ju::AsBools(j["apply_channel"], "params.apply_channel"));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
