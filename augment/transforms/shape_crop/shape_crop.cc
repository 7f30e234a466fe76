#include "augment/transforms/shape_crop/shape_crop.h"

#include <algorithm>
#include <array>

#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/mri_common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;

namespace {
constexpr char kW[] = "shape_crop";

// Zeroes every voxel of the (channels, s0, s1, s2) volume outside [lo, hi) per axis.
template <typename T>
void ZeroOutside(T* x, int64_t channels, const mri::Shape3& s, const std::array<int64_t, 3>& lo,
                 const std::array<int64_t, 3>& hi) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < s[0]; ++i)
      for (int64_t j = 0; j < s[1]; ++j)
        for (int64_t k = 0; k < s[2]; ++k) {
          const bool in = i >= lo[0] && i < hi[0] && j >= lo[1] && j < hi[1] && k >= lo[2] && k < hi[2];
          if (!in) x[((c * s[0] + i) * s[1] + j) * s[2] + k] = T(0);
        }
}
}  // namespace

const ConfigSchema<ShapeCropConfig>& ShapeCropTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<ShapeCropConfig>("shape_crop"))
           ->Add("shape_min", &ShapeCropConfig::shape_min, "smallest kept extent per axis (drawn from [shape_min, S])",
                 AtLeast(1))
           .Add("ignore_axes", &ShapeCropConfig::ignore_axes, "spatial axes left uncropped (0, 1, 2; no repeats)",
                InRange(0, 2));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> ShapeCropTransform::Create(const ShapeCropConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  for (size_t a = 0; a < c.ignore_axes.size(); ++a)
    if (std::count(c.ignore_axes.begin(), c.ignore_axes.end(), c.ignore_axes[a]) > 1)
      return ju::Invalid("shape_crop.ignore_axes", "repeated axis");
  return std::shared_ptr<const Transform>(new ShapeCropTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ShapeCropTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ShapeCropConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json ShapeCropTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> ShapeCropTransform::Draw(DrawContext& ctx,
                                                                          const SampleLayout& layout) const {
  auto p = std::make_unique<ShapeCropParams>();
  for (size_t a = 0; a < layout.shape.size(); ++a) {
    const int64_t s = layout.shape[a];
    const bool ignored =
        std::find(config_.ignore_axes.begin(), config_.ignore_axes.end(), static_cast<int64_t>(a)) !=
        config_.ignore_axes.end();
    if (ignored) {
      p->new_shape.push_back(s);
      continue;
    }
    if (config_.shape_min > s) return ju::Invalid("shape_crop.shape_min", "larger than the sample's extent");
    p->new_shape.push_back(ctx.rng.UniformInt(config_.shape_min, s));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status ShapeCropTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const ShapeCropParams* p, ParamsAs<ShapeCropParams>(params, kW));
  ASSIGN_OR_RETURN(const mri::Shape3 s3, mri::ToShape3(s.shape, kW));
  if (p->new_shape.size() != s.shape.size()) return ju::Invalid("params.new_shape", "one entry per spatial axis");
  std::array<int64_t, 3> lo{0, 0, 0}, hi{s3[0], s3[1], s3[2]};
  for (size_t a = 0; a < s.shape.size(); ++a) {
    const int64_t n = p->new_shape[a];
    if (n < 1 || n > s.shape[a]) return ju::Invalid("params.new_shape", "must be in [1, extent]");
    lo[a] = std::max<int64_t>(0, s.shape[a] / 2 - n / 2);
    hi[a] = lo[a] + n;
  }
  s.Materialize();
  if (!s.image.empty()) ZeroOutside(s.image.data(), s.channels, s3, lo, hi);
  if (!s.seg.empty()) ZeroOutside(s.seg.data(), s.seg_channels, s3, lo, hi);
  return absl::OkStatus();
}

nlohmann::json ShapeCropTransform::ParamsToJson(const TransformParams& params) const {
  return {{"new_shape", static_cast<const ShapeCropParams&>(params).new_shape}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> ShapeCropTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"new_shape"}, "params"));
  if (!j.contains("new_shape")) return ju::Invalid("params.new_shape", "required");
  auto p = std::make_unique<ShapeCropParams>();
  ASSIGN_OR_RETURN(p->new_shape, ju::AsInts(j["new_shape"], "params.new_shape"));
  if (p->new_shape.size() != layout.shape.size()) return ju::Invalid("params.new_shape", "one entry per spatial axis");
  for (size_t a = 0; a < layout.shape.size(); ++a)
    if (p->new_shape[a] < 1 || p->new_shape[a] > layout.shape[a])
      return ju::Invalid("params.new_shape", "must be in [1, extent]");
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
