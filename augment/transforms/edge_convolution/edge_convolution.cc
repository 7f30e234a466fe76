// EdgeConvolutionTransform on the AugLab convolution helper (auglab_math.h ConvAt: reflect index, products summed in
// the kernel's C order, float32).
#include "augment/transforms/edge_convolution/edge_convolution.h"

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
using transforms_internal::RequireImage;

namespace {
// AugLab's kernels, C order [axis 0][axis 1][axis 2] (daext_math.h EdgeKernels, shared with the CUDA stage).
std::vector<std::vector<float>> Kernels(const std::string& type) {
  float k[3][27];
  const int count = cuda::daext::EdgeKernels(type == "scharr", k);
  std::vector<std::vector<float>> out;
  for (int i = 0; i < count; ++i) out.emplace_back(k[i], k[i] + 27);
  return out;
}
}  // namespace

const ConfigSchema<EdgeConvolutionConfig>& EdgeConvolutionTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<EdgeConvolutionConfig>("edge_convolution"))
           ->Add("kernel_type", &EdgeConvolutionConfig::kernel_type, "edge kernel: 'laplace' or 'scharr'")
           .Add("absolute", &EdgeConvolutionConfig::absolute, "scharr: sum of the absolute axis responses")
           .Custom("apply_to_channel", "int[]", "channels the transform applies to (AugLab's default [0])",
                   &EdgeConvolutionConfig::apply_to_channel, auglab_internal::ChannelsFromConfig)
           .Add("retain_stats", &EdgeConvolutionConfig::retain_stats, "restore the channel's mean and std afterwards");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> EdgeConvolutionTransform::Create(const EdgeConvolutionConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (c.kernel_type != "laplace" && c.kernel_type != "scharr")
    return ju::Invalid("edge_convolution.kernel_type", "must be 'laplace' or 'scharr'");
  for (int64_t ch : c.apply_to_channel)
    if (ch < 0) return ju::Invalid("edge_convolution.apply_to_channel", "channel indices must be >= 0");
  return std::shared_ptr<const Transform>(new EdgeConvolutionTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> EdgeConvolutionTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(EdgeConvolutionConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json EdgeConvolutionTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::Status EdgeConvolutionTransform::Apply(const TransformParams&, SampleData& s) const {
  RETURN_IF_ERROR(RequireImage(s, "edge_convolution"));
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, s.channels, "edge_convolution"));
  ASSIGN_OR_RETURN(const auto shape, auglab_internal::Shape3(s.shape, "edge_convolution"));
  const std::vector<std::vector<float>> kernels = Kernels(config_.kernel_type);
  const int64_t n = s.voxels();
  std::vector<float> src, y;
  for (int64_t ch : config_.apply_to_channel) {
    float* x = s.image.data() + ch * n;
    src.assign(x, x + n);
    const kernels::ChannelStats before = kernels::ComputeStats(x, n, config_.retain_stats);
    y.assign(n, 0.0f);
    for (const std::vector<float>& k : kernels) {  // scharr: tot += [abs](conv), AugLab's order
      int64_t v = 0;
      for (int i0 = 0; i0 < shape[0]; ++i0)
        for (int i1 = 0; i1 < shape[1]; ++i1)
          for (int i2 = 0; i2 < shape[2]; ++i2, ++v) {
            const float r = al::ConvAt(src.data(), shape.data(), i0, i1, i2, k.data(), 3);
            y[v] = kernels.size() == 1 ? r : cuda::daext::EdgeAccumulate(y[v], r, config_.absolute);
          }
    }
    if (config_.retain_stats) auglab_internal::RetainStats(y.data(), n, before);
    bool finite = true;
    for (int64_t v = 0; v < n && finite; ++v) finite = std::isfinite(y[v]);
    if (finite) std::copy(y.begin(), y.end(), x);  // else AugLab's guard: the channel stays as it was
  }
  return absl::OkStatus();
}

}  // namespace augmentd
