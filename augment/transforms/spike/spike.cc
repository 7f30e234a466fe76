#include "augment/transforms/spike/spike.h"

#include <cmath>

#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/mri_common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr char kW[] = "spike";
constexpr int64_t kMaxSpikes = 1024;
}  // namespace

std::vector<int64_t> SpikeSpectrumIndices(const SpikeParams& p, const std::array<int64_t, 3>& shape) {
  std::vector<int64_t> out;
  for (const auto& pos : p.positions) {
    int64_t u[3];
    for (int a = 0; a < 3; ++a) {
      const int64_t n = shape[static_cast<size_t>(a)];
      const auto s = static_cast<int64_t>(std::floor(pos[static_cast<size_t>(a)] * static_cast<double>(n)));
      u[a] = mri::Unshift(s, n);
    }
    out.push_back((u[0] * shape[1] + u[1]) * shape[2] + u[2]);
  }
  return out;
}

const ConfigSchema<SpikeConfig>& SpikeTransform::Schema() {
  static const auto* const s = &(new ConfigSchema<SpikeConfig>("spike"))
                                    ->AddParsed("num_spikes", "int | [int, int]", &SpikeConfig::num_spikes,
                                                "number of k-space spikes drawn from randint [lo, hi]",
                                                [](const nlohmann::json& v, const std::string& f) {
                                                  return mri::ParseRange(v, f, 0.0, std::nullopt, true);
                                                })
                                    .AddParsed("intensity", "double | [double, double]", &SpikeConfig::intensity,
                                               "spike intensity drawn from U(lo, hi) (a number d: (-d, d))",
                                               [](const nlohmann::json& v, const std::string& f) {
                                                 return mri::ParseRange(v, f, std::nullopt, std::nullopt, false);
                                               });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> SpikeTransform::Create(const SpikeConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  if (c.num_spikes[0] < 0 || c.num_spikes[0] > c.num_spikes[1] || c.num_spikes[1] > kMaxSpikes)
    return ju::Invalid(w + ".num_spikes", "expected 0 <= lo <= hi <= 1024");
  if (!(c.intensity[0] <= c.intensity[1])) return ju::Invalid(w + ".intensity", "expected lo <= hi");
  return std::shared_ptr<const Transform>(new SpikeTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> SpikeTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(SpikeConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json SpikeTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> SpikeTransform::Draw(DrawContext& ctx,
                                                                      const SampleLayout& /*layout*/) const {
  auto p = std::make_unique<SpikeParams>();
  const int64_t n = ctx.rng.UniformInt(static_cast<int64_t>(config_.num_spikes[0]),
                                       static_cast<int64_t>(config_.num_spikes[1]));
  p->intensity = static_cast<float>(ctx.rng.Uniform(config_.intensity[0], config_.intensity[1]));
  for (int64_t i = 0; i < n; ++i) {  // torch.rand(n, 3): float32 in [0, 1)
    std::array<double, 3> pos;
    for (double& v : pos) {
      const float f = static_cast<float>(ctx.rng.Uniform());
      v = f < 1.0f ? f : 0.99999994f;  // rounding to float32 must not reach 1
    }
    p->positions.push_back(pos);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status SpikeTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const SpikeParams* p, ParamsAs<SpikeParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(mri::Shape3 shape, mri::ToShape3(s.shape, kW));
  if (p->intensity == 0 || p->positions.empty()) return absl::OkStatus();
  const std::vector<int64_t> idx = SpikeSpectrumIndices(*p, shape);
  const int64_t v = mri::Voxels(shape);
  for (int64_t c = 0; c < s.channels; ++c) {
    float* x = s.image.data() + c * v;
    std::vector<fft::Complex> spec = mri::Spectrum(x, shape);
    for (int64_t i : idx) {
      double max_abs = 0;
      for (const fft::Complex& z : spec) max_abs = std::max(max_abs, std::abs(z));
      spec[static_cast<size_t>(i)] += max_abs * p->intensity;
    }
    mri::RealInverse(spec, shape, x);
  }
  return absl::OkStatus();
}

nlohmann::json SpikeTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const SpikeParams&>(params);
  nlohmann::json pos = nlohmann::json::array();
  for (const auto& q : p.positions) pos.push_back({q[0], q[1], q[2]});
  return {{"spikes_positions", pos}, {"intensity", p.intensity}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> SpikeTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"spikes_positions", "intensity"}, "params"));
  auto p = std::make_unique<SpikeParams>();
  ASSIGN_OR_RETURN(p->intensity, ju::GetDouble(j, "intensity", std::nullopt, "params"));
  if (!std::isfinite(p->intensity)) return ju::Invalid("params.intensity", "must be finite");
  if (!j.contains("spikes_positions") || !j["spikes_positions"].is_array())
    return ju::Invalid("params.spikes_positions", "expected [[p0, p1, p2], ...]");
  if (j["spikes_positions"].size() > static_cast<size_t>(kMaxSpikes))
    return ju::Invalid("params.spikes_positions", "more than 1024 spikes");
  for (const auto& q : j["spikes_positions"]) {
    ASSIGN_OR_RETURN(auto v, ju::AsDoubles(q, "params.spikes_positions"));
    if (v.size() != 3) return ju::Invalid("params.spikes_positions", "each position needs 3 values");
    for (double x : v)
      if (!(x >= 0 && x < 1)) return ju::Invalid("params.spikes_positions", "values must be in [0, 1)");
    p->positions.push_back({v[0], v[1], v[2]});
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
