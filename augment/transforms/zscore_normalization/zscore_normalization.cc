// ZscoreNormalizationTransform: mean and population variance in double (torch reduces float32 pairwise; the two
// agree to float32 rounding), the division in float32 as torch does.
#include "augment/transforms/zscore_normalization/zscore_normalization.h"

#include <algorithm>
#include <cmath>

#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"

namespace augmentd {
namespace ju = json_util;

const ConfigSchema<ZscoreNormalizationConfig>& ZscoreNormalizationTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<ZscoreNormalizationConfig>("zscore_normalization"))
           ->Custom(
               "apply_to_channel", "int[]", "channels normalised to zero mean, unit std (an int or a list)",
               [](const nlohmann::json& j, ZscoreNormalizationConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("apply_to_channel") || j["apply_to_channel"].is_null()) return absl::OkStatus();
                 if (j["apply_to_channel"].is_number_integer()) {
                   c.apply_to_channel = {j["apply_to_channel"].get<int64_t>()};
                   return absl::OkStatus();
                 }
                 ASSIGN_OR_RETURN(c.apply_to_channel, ju::AsInts(j["apply_to_channel"], w + ".apply_to_channel"));
                 return absl::OkStatus();
               },
               [](const ZscoreNormalizationConfig& c) { return nlohmann::json(c.apply_to_channel); })
           .Add("unbiased", &ZscoreNormalizationConfig::unbiased,
                "std with n - 1 (torch.std's, AugLab's CPU ZscoreNormalization) instead of n", OmitDefault());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> ZscoreNormalizationTransform::Create(
    const ZscoreNormalizationConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  for (int64_t ch : c.apply_to_channel)
    if (ch < 0) return ju::Invalid("zscore_normalization.apply_to_channel", "channel indices must be >= 0");
  return std::shared_ptr<const Transform>(new ZscoreNormalizationTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ZscoreNormalizationTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ZscoreNormalizationConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json ZscoreNormalizationTransform::ConfigToJson() const { return Schema().ToJson(config_); }

namespace {
// (x − mean) / max(std, 1e-8) of one channel in place, unless the result would hold NaN / Inf.
void NormalizeChannel(float* x, int64_t n, bool unbiased) {
  if (n == 0) return;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float m = static_cast<float>(mean);
  const float sd = std::max(static_cast<float>(std::sqrt(sq / static_cast<double>(unbiased && n > 1 ? n - 1 : n))), 1e-8f);
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite((x[i] - m) / sd)) return;  // AugLab's guard: the channel stays as it was
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] - m) / sd;
}
}  // namespace

absl::Status ZscoreNormalizationTransform::Apply(const TransformParams&, SampleData& s) const {
  const int64_t n = s.voxels();
  for (int64_t ch : config_.apply_to_channel) {
    if (ch >= s.channels) continue;  // AugLab skips channel indices the sample does not have
    NormalizeChannel(s.image.data() + ch * n, n, config_.unbiased);
  }
  return absl::OkStatus();
}

}  // namespace augmentd
