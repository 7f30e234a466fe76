#include "augment/transforms/rician_noise/rician_noise.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/rng.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr char kW[] = "rician_noise";

struct Moments {
  double mean = 0, std = 0;  // std unbiased (torch.std)
};
Moments MeanStd(const float* x, int64_t n) {
  Moments m;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  m.mean = s / static_cast<double>(n);
  double q = 0;
  for (int64_t i = 0; i < n; ++i) q += (x[i] - m.mean) * (x[i] - m.mean);
  m.std = n > 1 ? std::sqrt(q / static_cast<double>(n - 1)) : std::nan("");
  return m;
}
}  // namespace

const ConfigSchema<RicianNoiseConfig>& RicianNoiseTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<RicianNoiseConfig>("rician_noise"))
           ->Custom(
               "noise_variance", "[double, double]", "noise sigma drawn from U(lo, hi), 0 <= lo <= hi",
               [](const nlohmann::json& j, RicianNoiseConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("noise_variance")) return absl::OkStatus();
                 ASSIGN_OR_RETURN(auto v, ju::AsDoubles(j["noise_variance"], w + ".noise_variance"));
                 if (v.size() != 2) return ju::Invalid(w + ".noise_variance", "expected [lo, hi]");
                 c.noise_variance = {v[0], v[1]};
                 return absl::OkStatus();
               },
               [](const RicianNoiseConfig& c) {
                 return nlohmann::json({c.noise_variance[0], c.noise_variance[1]});
               });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> RicianNoiseTransform::Create(const RicianNoiseConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const auto& v = c.noise_variance;
  if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || v[0] < 0 || v[0] > v[1])
    return ju::Invalid(std::string(kW) + ".noise_variance", "expected finite [lo, hi] with 0 <= lo <= hi");
  return std::shared_ptr<const Transform>(new RicianNoiseTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> RicianNoiseTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(RicianNoiseConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json RicianNoiseTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> RicianNoiseTransform::Draw(DrawContext& ctx,
                                                                            const SampleLayout& /*layout*/) const {
  auto p = std::make_unique<RicianNoiseParams>();
  // np.random.uniform(lo, hi): one draw (lo when equal).
  p->variance = ctx.rng.Uniform(config_.noise_variance[0], config_.noise_variance[1]);
  transforms_internal::SetNoiseKey(*p, ctx);
  return std::unique_ptr<TransformParams>(std::move(p));
}

void RicianNoiseTransform::CompleteInjected(TransformParams& params, const DrawContext& ctx) const {
  auto* p = dynamic_cast<RicianNoiseParams*>(&params);
  if (p == nullptr || p->key_given) return;
  transforms_internal::SetNoiseKey(*p, ctx);
}

absl::Status RicianNoiseTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const RicianNoiseParams* p, ParamsAs<RicianNoiseParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  const int64_t n = static_cast<int64_t>(s.image.size());
  float* x = s.image.data();
  const Moments in = MeanStd(x, n);
  const float mn = *std::min_element(x, x + n);
  const StreamKey kre = MakeStreamKey(p->seed, p->sample_index, p->transform_index, 1);
  const StreamKey kim = MakeStreamKey(p->seed, p->sample_index, p->transform_index, 2);
  const float v = static_cast<float>(p->variance);
  for (int64_t i = 0; i < n; ++i) {
    const float re = (x[i] - mn) + NormalAt(kre, static_cast<uint64_t>(i)) * v;
    const float im = NormalAt(kim, static_cast<uint64_t>(i)) * v;
    x[i] = std::sqrt(re * re + im * im) + mn;
  }
  const Moments r = MeanStd(x, n);
  if (r.std > 0) {
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>((static_cast<double>(x[i]) - r.mean) / r.std * in.std + in.mean);
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * 0.0 + in.mean);
  }
  return absl::OkStatus();
}

nlohmann::json RicianNoiseTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const RicianNoiseParams&>(params);
  return {{"variance", p.variance},
          {"noise_key", transforms_internal::NoiseKeyToJson(p)}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> RicianNoiseTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                      const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"variance", "noise_key"}, "params"));
  auto p = std::make_unique<RicianNoiseParams>();
  ASSIGN_OR_RETURN(p->variance, ju::GetDouble(j, "variance", std::nullopt, "params"));
  if (p->variance < 0) return ju::Invalid("params.variance", "must be >= 0");
  RETURN_IF_ERROR(transforms_internal::NoiseKeyFromJson(j, *p));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
