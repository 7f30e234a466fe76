#include "augment/transforms/intensity_function/intensity_function.h"

#include "absl/strings/str_cat.h"
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

namespace {
constexpr const char* kFnNames[al::kNumFns] = {"log1p", "sqrt", "sin", "exp", "sigmoid", "square"};
}  // namespace

absl::StatusOr<int32_t> IntensityFnFromName(const std::string& name) {
  for (int32_t f = 0; f < al::kNumFns; ++f)
    if (name == kFnNames[f]) return f;
  return ju::Invalid("intensity_function.functions",
                     absl::StrCat("unknown function '", name, "' (log1p, sqrt, sin, exp, sigmoid, square)"));
}

size_t RegionSlots(const IntensityFunctionConfig& c, size_t channels) { return (c.functions.size() + 1) * channels; }

std::string IntensityFnName(int32_t fn) { return fn >= 0 && fn < al::kNumFns ? kFnNames[fn] : "unknown"; }

const ConfigSchema<IntensityFunctionConfig>& IntensityFunctionTransform::Schema() {
  static const ConfigSchema<IntensityFunctionConfig>* const s = [] {
    auto* s = new ConfigSchema<IntensityFunctionConfig>("intensity_function");
    s->Custom("apply_to_channel", "int[]", "channels the transform applies to (AugLab's default [0])",
              &IntensityFunctionConfig::apply_to_channel, auglab_internal::ChannelsFromConfig)
        .Custom(
            "functions", "string[]", "functions applied in order, each with p_function",
            [](const nlohmann::json& j, IntensityFunctionConfig& c, const std::string& w) -> absl::Status {
              if (!j.contains("functions")) return absl::OkStatus();
              if (!j["functions"].is_array()) return ju::Invalid(w + ".functions", "must be a list of names");
              c.functions.clear();
              for (const auto& f : j["functions"]) {
                if (!f.is_string()) return ju::Invalid(w + ".functions", "must be a list of names");
                ASSIGN_OR_RETURN(const int32_t code, IntensityFnFromName(f.get<std::string>()));
                c.functions.push_back(code);
              }
              return absl::OkStatus();
            },
            [](const IntensityFunctionConfig& c) {
              nlohmann::json names = nlohmann::json::array();
              for (int32_t f : c.functions) names.push_back(IntensityFnName(f));
              return names;
            })
        .Add("p_function", &IntensityFunctionConfig::p_function, "probability of applying each function", Probability())
        .Add("retain_stats", &IntensityFunctionConfig::retain_stats, "restore the channel's mean and std afterwards")
        .Add("p_inverse", &IntensityFunctionConfig::p_inverse, "probability of applying the inverse map instead",
             Probability())
        .Add("inverse_retain_stats", &IntensityFunctionConfig::inverse_retain_stats,
             "retain_stats for the inverse map");
    auglab_region::AddConfigFields(*s, &IntensityFunctionConfig::region);
    return s;
  }();
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> IntensityFunctionTransform::Create(const IntensityFunctionConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (c.functions.size() > 16) return ju::Invalid("intensity_function.functions", "at most 16 entries");
  for (int32_t f : c.functions)
    if (f < 0 || f >= al::kNumFns) return ju::Invalid("intensity_function.functions", "unknown function code");
  RETURN_IF_ERROR(auglab_region::Validate(c.region, "intensity_function"));
  return std::shared_ptr<const Transform>(new IntensityFunctionTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> IntensityFunctionTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(IntensityFunctionConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json IntensityFunctionTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> IntensityFunctionTransform::Draw(DrawContext& ctx,
                                                                                  const SampleLayout& layout) const {
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "intensity_function"));
  auto p = std::make_unique<IntensityFunctionParams>();
  p->apply_to_channel = config_.apply_to_channel;
  for (size_t i = 0; i < config_.functions.size(); ++i) p->functions.push_back(ctx.rng.Uniform() < config_.p_function);
  p->inverse = ctx.rng.Uniform() < config_.p_inverse;
  if (config_.region.enabled())
    p->region = auglab_region::Draw(config_.region, RegionSlots(config_, p->apply_to_channel.size()), ctx.rng);
  return std::unique_ptr<TransformParams>(std::move(p));
}

void ApplyIntensityStep(float* x, int64_t n, int32_t fn, bool retain_stats) {
  if (n == 0) return;
  const kernels::ChannelStats before = kernels::ComputeStats(x, n, retain_stats);
  if (fn >= 0) {
    for (int64_t i = 0; i < n; ++i) x[i] = al::ApplyIntensityFn(fn, al::NormalizeMinMax(x[i], before.min, before.max));
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = al::Inverse(x[i], before.max);
  }
  if (retain_stats) auglab_internal::RetainStats(x, n, before);
}

absl::Status IntensityFunctionTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const IntensityFunctionParams* p, ParamsAs<IntensityFunctionParams>(params, "intensity_function"));
  RETURN_IF_ERROR(RequireImage(s, "intensity_function"));
  RETURN_IF_ERROR(auglab_internal::CheckChannels(p->apply_to_channel, s.channels, "params"));
  RETURN_IF_ERROR(auglab_region::CheckSegChannel(config_.region, s.seg_channels, "intensity_function"));
  if (p->functions.size() != config_.functions.size())
    return ju::Invalid("params.functions", "needs one entry per configured function");
  const size_t channels = p->apply_to_channel.size(), nf = config_.functions.size();
  RETURN_IF_ERROR(auglab_region::CheckSlots(p->region, RegionSlots(config_, channels)));
  const int64_t n = s.voxels();
  std::vector<float> orig;
  for (size_t i = 0; i < channels; ++i) {
    float* x = s.image.data() + p->apply_to_channel[i] * n;
    for (size_t j = 0; j <= nf; ++j) {
      if (j < nf ? !p->functions[j] : !p->inverse) continue;
      const int32_t fn = j < nf ? config_.functions[j] : -1;
      const bool retain = j < nf ? config_.retain_stats : config_.inverse_retain_stats;
      RETURN_IF_ERROR(auglab_region::RunInRegion(x, n, s, config_.region,
                                                 auglab_region::At(p->region, j * channels + i), "intensity_function",
                                                 orig, [&] { ApplyIntensityStep(x, n, fn, retain); }));
    }
  }
  return absl::OkStatus();
}

nlohmann::json IntensityFunctionTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const IntensityFunctionParams&>(params);
  nlohmann::json j = {{"apply_to_channel", p.apply_to_channel}, {"functions", p.functions}, {"inverse", p.inverse}};
  auglab_region::ToParamsJson(p.region, j);
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> IntensityFunctionTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "functions", "inverse", "region", "region_labels"}, "params"));
  auto p = std::make_unique<IntensityFunctionParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, auglab_internal::ParamsChannels(j, config_.apply_to_channel, layout.channels));
  if (!j.contains("functions") || !j["functions"].is_array() || j["functions"].size() != config_.functions.size())
    return ju::Invalid("params.functions", absl::StrCat("needs ", config_.functions.size(), " bools"));
  ASSIGN_OR_RETURN(p->functions, ju::AsBools(j["functions"], "params.functions"));
  ASSIGN_OR_RETURN(p->inverse, ju::GetBool(j, "inverse", false, "params"));
  ASSIGN_OR_RETURN(p->region, auglab_region::FromParamsJson(j, RegionSlots(config_, p->apply_to_channel.size())));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
