#include "augment/transforms/random_convolution/random_convolution.h"

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
bool ValidKernelSize(int64_t k) { return k >= 1 && k <= al::kMaxConvKernel && k % 2 == 1; }
}  // namespace

const ConfigSchema<RandomConvolutionConfig>& RandomConvolutionTransform::Schema() {
  static const ConfigSchema<RandomConvolutionConfig>* const s = [] {
    auto* s = new ConfigSchema<RandomConvolutionConfig>("random_convolution");
    s->Custom("apply_to_channel", "int[]", "channels the transform applies to (AugLab's default [0])",
              &RandomConvolutionConfig::apply_to_channel, auglab_internal::ChannelsFromConfig)
        .Add("kernel_sizes", &RandomConvolutionConfig::kernel_sizes, "odd kernel sizes (1..15) drawn from",
             InRange(1, 15))
        .Add("mix_prob", &RandomConvolutionConfig::mix_prob, "weight of the input in the output mix", Probability())
        .Add("retain_stats", &RandomConvolutionConfig::retain_stats, "restore the channel's mean and std afterwards");
    auglab_region::AddConfigFields(*s, &RandomConvolutionConfig::region);
    return s;
  }();
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> RandomConvolutionTransform::Create(const RandomConvolutionConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (c.kernel_sizes.empty()) return ju::Invalid("random_convolution.kernel_sizes", "must not be empty");
  for (int64_t k : c.kernel_sizes)
    if (!ValidKernelSize(k)) return ju::Invalid("random_convolution.kernel_sizes", "sizes must be odd, 1..15");
  RETURN_IF_ERROR(auglab_region::Validate(c.region, "random_convolution"));
  return std::shared_ptr<const Transform>(new RandomConvolutionTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> RandomConvolutionTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(RandomConvolutionConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json RandomConvolutionTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> RandomConvolutionTransform::Draw(DrawContext& ctx,
                                                                                  const SampleLayout& layout) const {
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "random_convolution"));
  auto p = std::make_unique<RandomConvolutionParams>();
  p->apply_to_channel = config_.apply_to_channel;
  const int64_t choices = static_cast<int64_t>(config_.kernel_sizes.size());
  for (size_t i = 0; i < p->apply_to_channel.size(); ++i) {
    const int32_t k = static_cast<int32_t>(config_.kernel_sizes[ctx.rng.UniformInt(0, choices - 1)]);
    std::vector<float> w(static_cast<size_t>(k) * k * k);
    const float scale = 1.0f / static_cast<float>(k);  // AugLab: std = 1/sqrt(k·k)
    for (float& v : w) v = static_cast<float>(ctx.rng.Normal()) * scale;
    const bool mix = ctx.rng.Uniform() < config_.mix_prob;
    p->kernel_size.push_back(k);
    p->kernel.push_back(std::move(w));
    p->mix.push_back(mix);
    p->alpha.push_back(mix ? static_cast<float>(ctx.rng.Uniform()) : 0.0f);
  }
  if (config_.region.enabled()) p->region = auglab_region::Draw(config_.region, p->apply_to_channel.size(), ctx.rng);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status RandomConvolutionTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const RandomConvolutionParams* p, ParamsAs<RandomConvolutionParams>(params, "random_convolution"));
  RETURN_IF_ERROR(RequireImage(s, "random_convolution"));
  RETURN_IF_ERROR(auglab_internal::CheckChannels(p->apply_to_channel, s.channels, "params"));
  RETURN_IF_ERROR(auglab_region::CheckSegChannel(config_.region, s.seg_channels, "random_convolution"));
  RETURN_IF_ERROR(auglab_region::CheckSlots(p->region, p->apply_to_channel.size()));
  ASSIGN_OR_RETURN(const auto shape, auglab_internal::Shape3(s.shape, "random_convolution"));
  const int64_t n = s.voxels();
  std::vector<float> src;
  for (size_t i = 0; i < p->apply_to_channel.size(); ++i) {
    float* x = s.image.data() + p->apply_to_channel[i] * n;
    src.assign(x, x + n);
    const kernels::ChannelStats before = kernels::ComputeStats(x, n, config_.retain_stats);
    const float* w = p->kernel[i].data();
    const int k = p->kernel_size[i];
    int64_t v = 0;
    for (int i0 = 0; i0 < shape[0]; ++i0)
      for (int i1 = 0; i1 < shape[1]; ++i1)
        for (int i2 = 0; i2 < shape[2]; ++i2, ++v) {
          const float y = al::ConvAt(src.data(), shape.data(), i0, i1, i2, w, k);
          x[v] = p->mix[i] ? al::MixConv(src[v], y, p->alpha[i]) : y;
        }
    if (config_.retain_stats) auglab_internal::RetainStats(x, n, before);
    RETURN_IF_ERROR(auglab_region::RestoreOutside(x, src.data(), s, config_.region, auglab_region::At(p->region, i),
                                                  "random_convolution"));
  }
  return absl::OkStatus();
}

nlohmann::json RandomConvolutionTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const RandomConvolutionParams&>(params);
  nlohmann::json j = {{"apply_to_channel", p.apply_to_channel},
                      {"kernel_size", p.kernel_size},
                      {"kernel", p.kernel},
                      {"mix", p.mix},
                      {"alpha", p.alpha}};
  auglab_region::ToParamsJson(p.region, j);
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> RandomConvolutionTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(
      j, {"apply_to_channel", "kernel_size", "kernel", "mix", "alpha", "region", "region_labels"}, "params"));
  auto p = std::make_unique<RandomConvolutionParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, auglab_internal::ParamsChannels(j, config_.apply_to_channel, layout.channels));
  const size_t n = p->apply_to_channel.size();
  for (const char* key : {"kernel_size", "kernel", "mix", "alpha"}) {
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != n)
      return ju::Invalid(absl::StrCat("params.", key), absl::StrCat("needs ", n, " entries (one per applied channel)"));
  }
  ASSIGN_OR_RETURN(const auto ks, ju::AsInts(j["kernel_size"], "params.kernel_size"));
  ASSIGN_OR_RETURN(p->mix, ju::AsBools(j["mix"], "params.mix"));
  ASSIGN_OR_RETURN(const auto alpha, ju::AsDoubles(j["alpha"], "params.alpha"));
  for (size_t i = 0; i < n; ++i) {
    if (!ValidKernelSize(ks[i])) return ju::Invalid("params.kernel_size", "sizes must be odd, 1..15");
    ASSIGN_OR_RETURN(const auto w, ju::AsDoubles(j["kernel"][i], "params.kernel"));
    if (static_cast<int64_t>(w.size()) != ks[i] * ks[i] * ks[i])
      return ju::Invalid("params.kernel", "each kernel needs kernel_size³ weights");
    if (alpha[i] < 0 || alpha[i] > 1) return ju::Invalid("params.alpha", "must be in [0, 1]");
    p->kernel_size.push_back(static_cast<int32_t>(ks[i]));
    p->kernel.emplace_back(w.begin(), w.end());
    p->alpha.push_back(static_cast<float>(alpha[i]));
  }
  ASSIGN_OR_RETURN(p->region, auglab_region::FromParamsJson(j, n));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
