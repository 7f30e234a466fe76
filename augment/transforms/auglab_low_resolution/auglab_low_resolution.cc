// AuglabLowResolutionTransform. Resampling: torch's legacy nearest (NearestIndex) for "lowres" on image and labels,
// kernels::LinearResize (torch's trilinear, align_corners=False, float32 weights) for "acq".
#include "augment/transforms/auglab_low_resolution/auglab_low_resolution.h"

#include <algorithm>
#include <cmath>

#include "augment/json_util.h"
#include "augment/kernels/common/sitk_math.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/auglab_common.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace auglab_lowres_internal {
int64_t NearestIndex(int64_t dst, int64_t in_size, int64_t out_size) {
  return sitk_math::TorchNearestIndex(dst, in_size, out_size);
}

std::array<int64_t, 2> KeptBox(float c, int64_t s) {
  const int64_t keep = std::max<int64_t>(1, kernels::PyRoundToInt(static_cast<double>(c) * static_cast<double>(s)));
  const int64_t room = std::max<int64_t>(0, s - keep);
  const int64_t start = room == 0 ? 0 : kernels::PyRoundToInt(static_cast<double>(c) * static_cast<double>(room));
  return {start, std::min(keep, s)};
}
}  // namespace auglab_lowres_internal

namespace {
using Mode = AuglabLowResolutionConfig::Mode;
using auglab_lowres_internal::KeptBox;
using auglab_lowres_internal::NearestIndex;

// [min, max] (AugLab's scale / crop ranges).
absl::StatusOr<std::array<double, 2>> MinMax(const nlohmann::json& j, const std::string& field) {
  ASSIGN_OR_RETURN(std::vector<double> v, ju::AsDoubles(j, field));
  if (v.size() != 2) return ju::Invalid(field, "needs [min, max]");
  return std::array<double, 2>{v[0], v[1]};
}

// Separable resample of one 3D channel S → D (nearest) and back; `T` float or int16.
template <typename T>
void NearestDownUp(T* x, const int64_t* s, const int64_t* d, std::vector<T>& small) {
  small.resize(static_cast<size_t>(d[0] * d[1] * d[2]));
  std::vector<int64_t> ix[3], ux[3];
  for (int a = 0; a < 3; ++a) {
    for (int64_t i = 0; i < d[a]; ++i) ix[a].push_back(NearestIndex(i, s[a], d[a]));
    for (int64_t i = 0; i < s[a]; ++i) ux[a].push_back(NearestIndex(i, d[a], s[a]));
  }
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b)
      for (int64_t c = 0; c < d[2]; ++c) small[(a * d[1] + b) * d[2] + c] = x[(ix[0][a] * s[1] + ix[1][b]) * s[2] + ix[2][c]];
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c) x[(a * s[1] + b) * s[2] + c] = small[(ux[0][a] * d[1] + ux[1][b]) * d[2] + ux[2][c]];
}

// Zero everything outside box [lo, lo + n) per axis.
template <typename T>
void ZeroOutside(T* x, const int64_t* s, const std::array<std::array<int64_t, 2>, 3>& box) {
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c) {
        const bool in = a >= box[0][0] && a < box[0][0] + box[0][1] && b >= box[1][0] && b < box[1][0] + box[1][1] &&
                        c >= box[2][0] && c < box[2][0] + box[2][1];
        if (!in) x[(a * s[1] + b) * s[2] + c] = T(0);
      }
}
}  // namespace

const ConfigSchema<AuglabLowResolutionConfig>& AuglabLowResolutionTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<AuglabLowResolutionConfig>("auglab_low_resolution"))
           ->Custom(
               "mode", "string", "\"lowres\" (nearest down/up, RandomLowResTransformGPU) or \"acq\" (trilinear)",
               [](const nlohmann::json& j, AuglabLowResolutionConfig& c, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(const std::string mode, ju::GetString(j, "mode", "lowres", w));
                 if (mode == "lowres") {
                   c.mode = Mode::kLowres;
                 } else if (mode == "acq") {
                   c.mode = Mode::kAcq;
                 } else {
                   return ju::Invalid(w + ".mode", "must be \"lowres\" or \"acq\"");
                 }
                 return absl::OkStatus();
               },
               [](const AuglabLowResolutionConfig& c) {
                 return nlohmann::json(c.mode == Mode::kLowres ? "lowres" : "acq");
               })
           .AddParsed("scale", "[double, double]", &AuglabLowResolutionConfig::scale,
                      "downsampled fraction per axis drawn from U(min, max), 0 < min <= max <= 1", MinMax)
           .AddParsed("crop", "[double, double]", &AuglabLowResolutionConfig::crop,
                      "kept fraction per axis drawn from U(min, max), 0 <= min <= max <= 1", MinMax)
           .Add("scale_axes", &AuglabLowResolutionConfig::scale_axes, "spatial axes that are downsampled",
                InRange(0, 2))
           .Add("crop_axes", &AuglabLowResolutionConfig::crop_axes, "spatial axes that are cropped", InRange(0, 2))
           .Custom("apply_to_channel", "int[]", "channels resampled in mode \"acq\" (AugLab's default [0])",
                   &AuglabLowResolutionConfig::apply_to_channel, auglab_internal::ChannelsFromConfig);
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabLowResolutionTransform::Create(
    const AuglabLowResolutionConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = "auglab_low_resolution";
  if (!(c.scale[0] > 0 && c.scale[0] <= c.scale[1] && c.scale[1] <= 1))
    return ju::Invalid(w + ".scale", "needs 0 < min <= max <= 1");
  if (!(c.crop[0] >= 0 && c.crop[0] <= c.crop[1] && c.crop[1] <= 1))
    return ju::Invalid(w + ".crop", "needs 0 <= min <= max <= 1");
  for (int64_t ch : c.apply_to_channel)
    if (ch < 0) return ju::Invalid(w + ".apply_to_channel", "channel indices must be >= 0");
  if (c.mode == Mode::kAcq && !(c.crop[0] == 1 && c.crop[1] == 1) && !c.crop_axes.empty())
    return ju::Invalid(w + ".crop", "must be [1, 1] in mode \"acq\" (AugLab's RandomAcqTransformGPU raises for a crop < 1)");
  return std::shared_ptr<const Transform>(new AuglabLowResolutionTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabLowResolutionTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(AuglabLowResolutionConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json AuglabLowResolutionTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabLowResolutionTransform::Draw(
    DrawContext& ctx, const SampleLayout& layout) const {
  if (layout.shape.size() != 3) return ju::Invalid("auglab_low_resolution", "needs 3D samples (AugLab's 5D input)");
  if (config_.mode == Mode::kAcq)
    RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "auglab_low_resolution"));
  auto p = std::make_unique<AuglabLowResolutionParams>();
  p->apply_to_channel = config_.apply_to_channel;
  auto has = [](const std::vector<int64_t>& v, int64_t a) { return std::find(v.begin(), v.end(), a) != v.end(); };
  // AugLab's order: scale x, y, z then crop x, y, z; its x, y, z are augmentd axes 2, 1, 0. kornia's
  // UniformDistribution(lo, hi).rsample = lo + U·(hi − lo) in float32.
  for (int xyz = 0; xyz < 3; ++xyz) {
    const int axis = 2 - xyz;
    const float u = static_cast<float>(ctx.rng.Uniform());
    const bool on = has(config_.scale_axes, axis);
    const float lo = on ? static_cast<float>(config_.scale[0]) : 1.0f, hi = on ? static_cast<float>(config_.scale[1]) : 1.0f;
    p->scale[axis] = lo + u * (hi - lo);
  }
  for (int xyz = 0; xyz < 3; ++xyz) {
    const int axis = 2 - xyz;
    const float u = static_cast<float>(ctx.rng.Uniform());
    const bool on = has(config_.crop_axes, axis);
    const float lo = on ? static_cast<float>(config_.crop[0]) : 1.0f, hi = on ? static_cast<float>(config_.crop[1]) : 1.0f;
    p->crop[axis] = lo + u * (hi - lo);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status AuglabLowResolutionTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const AuglabLowResolutionParams* p, ParamsAs<AuglabLowResolutionParams>(params, "auglab_low_resolution"));
  RETURN_IF_ERROR(RequireImage(s, "auglab_low_resolution"));
  if (s.shape.size() != 3) return ju::Invalid("auglab_low_resolution", "needs 3D samples (AugLab's 5D input)");
  const int64_t sh[3] = {s.shape[0], s.shape[1], s.shape[2]};
  int64_t dn[3];
  std::array<std::array<int64_t, 2>, 3> box;
  for (int a = 0; a < 3; ++a) {
    dn[a] = std::max<int64_t>(1, kernels::PyRoundToInt(static_cast<double>(p->scale[a]) * static_cast<double>(sh[a])));
    box[a] = KeptBox(p->crop[a], sh[a]);
  }
  const int64_t n = s.voxels();
  if (config_.mode == Mode::kLowres) {
    std::vector<float> small;
    for (int64_t c = 0; c < s.channels; ++c) {
      NearestDownUp(s.image.data() + c * n, sh, dn, small);
      ZeroOutside(s.image.data() + c * n, sh, box);
    }
    if (!s.seg.empty()) {
      std::vector<int16_t> small_seg;
      for (int64_t c = 0; c < s.seg_channels; ++c) {
        NearestDownUp(s.seg.data() + c * n, sh, dn, small_seg);
        ZeroOutside(s.seg.data() + c * n, sh, box);
      }
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(auglab_internal::CheckChannels(p->apply_to_channel, s.channels, "params"));
  std::vector<float> small(static_cast<size_t>(dn[0] * dn[1] * dn[2])), up(static_cast<size_t>(n));
  for (int64_t c : p->apply_to_channel) {
    float* x = s.image.data() + c * n;
    kernels::LinearResize(x, sh, small.data(), dn, 3);
    kernels::LinearResize(small.data(), dn, up.data(), sh, 3);
    std::copy(up.begin(), up.end(), x);  // crop is 1 in acq: the kept box is the whole volume
  }
  return absl::OkStatus();
}

nlohmann::json AuglabLowResolutionTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const AuglabLowResolutionParams&>(params);
  return {{"scale", p.scale}, {"crop", p.crop}, {"apply_to_channel", p.apply_to_channel}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabLowResolutionTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"scale", "crop", "apply_to_channel"}, "params"));
  auto p = std::make_unique<AuglabLowResolutionParams>();
  if (config_.mode == Mode::kAcq) {
    ASSIGN_OR_RETURN(p->apply_to_channel,
                     auglab_internal::ParamsChannels(j, config_.apply_to_channel, layout.channels));
  } else {
    p->apply_to_channel = config_.apply_to_channel;
  }
  for (const char* key : {"scale", "crop"}) {
    const std::string f = std::string("params.") + key;
    if (!j.contains(key)) return ju::Invalid(f, "required");
    ASSIGN_OR_RETURN(std::vector<double> v, ju::AsDoubles(j[key], f));
    if (v.size() != 3) return ju::Invalid(f, "needs one value per spatial axis (3)");
    for (int a = 0; a < 3; ++a) {
      const bool is_scale = std::string(key) == "scale";
      if (!(v[a] >= 0 && v[a] <= 1) || (is_scale && !(v[a] > 0)))
        return ju::Invalid(f, is_scale ? "values must be in (0, 1]" : "values must be in [0, 1]");
      if (!is_scale && config_.mode == Mode::kAcq && v[a] != 1)
        return ju::Invalid(f, "must be 1 in mode \"acq\" (AugLab's RandomAcqTransformGPU raises for a crop < 1)");
      (is_scale ? p->scale : p->crop)[a] = static_cast<float>(v[a]);
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
