// UnsharpMaskTransform: the kernel in float32 as AugLab builds it (pdf, /sum per axis, outer product, /sum), the
// correlation with auglab_math.h ConvAt, the sharpening x + a·(x − blur) in float32.
#include "augment/transforms/unsharp_mask/unsharp_mask.h"

#include <cmath>

#include "augment/json_util.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/kernels/common/auglab_math.h"
#include "augment/kernels/common/daext_math.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/auglab_common.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
namespace al = cuda::auglab;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

const ConfigSchema<UnsharpMaskConfig>& UnsharpMaskTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<UnsharpMaskConfig>("unsharp_mask"))
           ->Add("sigma", &UnsharpMaskConfig::sigma, "blur sigma drawn from U(0, sigma)", InRange(0, 100))
           .Add("unsharp_amount", &UnsharpMaskConfig::unsharp_amount, "weight a of x + a (x - blur(x))")
           .Custom("apply_to_channel", "int[]", "channels the transform applies to (AugLab's default [0])",
                   &UnsharpMaskConfig::apply_to_channel, auglab_internal::ChannelsFromConfig)
           .Add("retain_stats", &UnsharpMaskConfig::retain_stats, "restore the channel's mean and std afterwards");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> UnsharpMaskTransform::Create(const UnsharpMaskConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (!std::isfinite(c.unsharp_amount)) return ju::Invalid("unsharp_mask.unsharp_amount", "must be finite");
  for (int64_t ch : c.apply_to_channel)
    if (ch < 0) return ju::Invalid("unsharp_mask.apply_to_channel", "channel indices must be >= 0");
  return std::shared_ptr<const Transform>(new UnsharpMaskTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> UnsharpMaskTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(UnsharpMaskConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json UnsharpMaskTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> UnsharpMaskTransform::Draw(DrawContext& ctx,
                                                                            const SampleLayout& layout) const {
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "unsharp_mask"));
  auto p = std::make_unique<UnsharpMaskParams>();
  for (float& s : p->sigma) s = static_cast<float>(ctx.rng.Uniform()) * static_cast<float>(config_.sigma);
  return std::unique_ptr<TransformParams>(std::move(p));
}

namespace {
// AugLab get_gaussian_kernel3d(3, sigma), C order [axis 0][axis 1][axis 2] (daext_math.h, shared with the CUDA stage).
std::vector<float> Kernel(const std::array<float, 3>& sigma) {
  std::vector<float> k(27);
  cuda::daext::UnsharpKernel(sigma.data(), k.data());
  return k;
}
}  // namespace

absl::Status UnsharpMaskTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const UnsharpMaskParams* p, ParamsAs<UnsharpMaskParams>(params, "unsharp_mask"));
  RETURN_IF_ERROR(RequireImage(s, "unsharp_mask"));
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, s.channels, "unsharp_mask"));
  ASSIGN_OR_RETURN(const auto shape, auglab_internal::Shape3(s.shape, "unsharp_mask"));
  const std::vector<float> k = Kernel(p->sigma);
  const float amount = static_cast<float>(config_.unsharp_amount);
  const int64_t n = s.voxels();
  std::vector<float> src, y(n);
  for (int64_t ch : config_.apply_to_channel) {
    float* x = s.image.data() + ch * n;
    src.assign(x, x + n);
    const kernels::ChannelStats before = kernels::ComputeStats(x, n, config_.retain_stats);
    int64_t v = 0;
    for (int i0 = 0; i0 < shape[0]; ++i0)
      for (int i1 = 0; i1 < shape[1]; ++i1)
        for (int i2 = 0; i2 < shape[2]; ++i2, ++v) {
          const float blurred = al::ConvAt(src.data(), shape.data(), i0, i1, i2, k.data(), 3);
          y[v] = cuda::daext::Unsharp(src[v], blurred, amount);
        }
    if (config_.retain_stats) auglab_internal::RetainStats(y.data(), n, before);
    bool finite = true;
    for (int64_t i = 0; i < n && finite; ++i) finite = std::isfinite(y[i]);
    if (finite) std::copy(y.begin(), y.end(), x);  // else AugLab's guard: the channel stays as it was
  }
  return absl::OkStatus();
}

nlohmann::json UnsharpMaskTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const UnsharpMaskParams&>(params);
  return {{"sigma", {p.sigma[0], p.sigma[1], p.sigma[2]}}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> UnsharpMaskTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                    const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"sigma"}, "params"));
  if (!j.contains("sigma")) return ju::Invalid("params.sigma", "required");
  ASSIGN_OR_RETURN(std::vector<double> sg, ju::AsDoubles(j["sigma"], "params.sigma"));
  if (sg.size() != 3) return ju::Invalid("params.sigma", "needs 3 values (axes 0, 1, 2)");
  auto p = std::make_unique<UnsharpMaskParams>();
  for (int d = 0; d < 3; ++d) {
    if (!(sg[d] >= 0 && std::isfinite(sg[d]))) return ju::Invalid("params.sigma", "must be finite and >= 0");
    p->sigma[d] = static_cast<float>(sg[d]);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
