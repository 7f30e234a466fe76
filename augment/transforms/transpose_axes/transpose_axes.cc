#include "augment/transforms/transpose_axes/transpose_axes.h"

#include <algorithm>

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
constexpr char kW[] = "transpose_axes";

template <typename T>
void Gather(std::vector<T>& data, int64_t channels, const std::vector<int64_t>& in_shape,
            const std::vector<int64_t>& out_shape, const std::vector<int64_t>& perm, const std::vector<bool>& flip) {
  const size_t nd = in_shape.size();
  std::vector<int64_t> in_stride(nd, 1);
  for (size_t d = nd - 1; d > 0; --d) in_stride[d - 1] = in_stride[d] * in_shape[d];
  // Per output axis j: the input offset of o[j] (sum over the input axes d it feeds).
  int64_t n = 1;
  for (int64_t s : out_shape) n *= s;
  std::vector<std::vector<int64_t>> off(nd);
  int64_t base = 0;
  for (size_t d = 0; d < nd; ++d) {
    const size_t j = static_cast<size_t>(perm[d]);
    off[j].resize(static_cast<size_t>(out_shape[j]));
    for (int64_t o = 0; o < out_shape[j]; ++o) off[j][o] = (flip[d] ? in_shape[d] - 1 - o : o) * in_stride[d];
  }
  (void)base;
  std::vector<T> out(data.size());
  const int64_t A = out_shape[0], B = out_shape[1], Z = nd == 3 ? out_shape[2] : 1;
  for (int64_t c = 0; c < channels; ++c) {
    const T* src = data.data() + c * n;
    T* dst = out.data() + c * n;
    for (int64_t a = 0; a < A; ++a)
      for (int64_t b = 0; b < B; ++b) {
        const int64_t ab = off[0][a] + off[1][b];
        T* row = dst + (a * B + b) * Z;
        if (nd == 3) {
          for (int64_t z = 0; z < Z; ++z) row[z] = src[ab + off[2][z]];
        } else {
          row[0] = src[ab];
        }
      }
  }
  data.swap(out);
}
}  // namespace

void PermuteFlipSpatial(SampleData& s, const std::vector<int64_t>& perm, const std::vector<bool>& flip) {
  std::vector<int64_t> out_shape(s.shape.size());
  for (size_t d = 0; d < s.shape.size(); ++d) out_shape[perm[d]] = s.shape[d];
  if (!s.image.empty()) Gather(s.image, s.channels, s.shape, out_shape, perm, flip);
  if (!s.seg.empty()) Gather(s.seg, s.seg_channels, s.shape, out_shape, perm, flip);
  s.shape = out_shape;
}

const ConfigSchema<TransposeAxesConfig>& TransposeAxesTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<TransposeAxesConfig>("transpose_axes"))
           ->Add("allowed_axes", &TransposeAxesConfig::allowed_axes,
                 "spatial axes permuted among themselves (equal sizes)", Required(InRange(0, 2)));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> TransposeAxesTransform::Create(const TransposeAxesConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  TransposeAxesConfig n = c;
  std::sort(n.allowed_axes.begin(), n.allowed_axes.end());
  n.allowed_axes.erase(std::unique(n.allowed_axes.begin(), n.allowed_axes.end()), n.allowed_axes.end());
  return std::shared_ptr<const Transform>(new TransposeAxesTransform(n));
}

absl::StatusOr<std::shared_ptr<const Transform>> TransposeAxesTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(TransposeAxesConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json TransposeAxesTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> TransposeAxesTransform::Draw(DrawContext& ctx,
                                                                              const SampleLayout& layout) const {
  const int64_t nd = static_cast<int64_t>(layout.shape.size());
  auto p = std::make_unique<TransposeAxesParams>();
  for (int64_t i = 0; i <= nd; ++i) p->axis_order.push_back(i);
  std::vector<int64_t> axes;
  for (int64_t a : config_.allowed_axes) {
    if (a >= nd) return ju::Invalid(std::string(kW) + ".allowed_axes", absl::StrCat("axis ", a, " >= ", nd, " dims"));
    axes.push_back(a + 1);
  }
  if (axes.size() < 2) return std::unique_ptr<TransformParams>(std::move(p));
  for (int64_t a : axes)
    if (layout.shape[a - 1] != layout.shape[axes[0] - 1])
      return ju::Invalid(std::string(kW) + ".allowed_axes", "axis sizes are not identical: cannot permute");
  // np.random.shuffle: a uniform permutation (Fisher–Yates from the back).
  for (size_t i = axes.size() - 1; i > 0; --i) {
    const size_t j = static_cast<size_t>(ctx.rng.UniformInt(0, static_cast<int64_t>(i)));
    std::swap(axes[i], axes[j]);
  }
  size_t k = 0;
  for (int64_t i = 0; i <= nd; ++i)
    if (std::find(config_.allowed_axes.begin(), config_.allowed_axes.end(), i - 1) != config_.allowed_axes.end())
      p->axis_order[i] = axes[k++];
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status TransposeAxesTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const TransposeAxesParams* p, ParamsAs<TransposeAxesParams>(params, kW));
  const size_t nd = s.shape.size();
  if (p->axis_order.size() != nd + 1 || p->axis_order[0] != 0)
    return ju::Invalid("params.axis_order", "expected a permutation of all dims with the channel dim first");
  std::vector<int64_t> perm(nd);
  std::vector<bool> seen(nd, false);
  for (size_t j = 0; j < nd; ++j) {
    const int64_t src = p->axis_order[j + 1] - 1;
    if (src < 0 || src >= static_cast<int64_t>(nd) || seen[src]) return ju::Invalid("params.axis_order", "not a permutation");
    seen[src] = true;
    perm[src] = static_cast<int64_t>(j);
  }
  if (s.image.empty() && s.seg.empty()) return ju::Invalid(std::string(kW), "sample has no image or segmentation");
  PermuteFlipSpatial(s, perm, std::vector<bool>(nd, false));
  return absl::OkStatus();
}

nlohmann::json TransposeAxesTransform::ParamsToJson(const TransformParams& params) const {
  return {{"axis_order", static_cast<const TransposeAxesParams&>(params).axis_order}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> TransposeAxesTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"axis_order"}, "params"));
  auto p = std::make_unique<TransposeAxesParams>();
  if (!j.contains("axis_order")) return ju::Invalid("params.axis_order", "required");
  ASSIGN_OR_RETURN(p->axis_order, ju::AsInts(j["axis_order"], "params.axis_order"));
  const size_t nd = layout.shape.size();
  if (p->axis_order.size() != nd + 1 || p->axis_order[0] != 0)
    return ju::Invalid("params.axis_order", "expected a permutation of all dims with the channel dim first");
  // Output shapes must not depend on the draw: only equal-size axes may be exchanged.
  for (size_t j = 1; j <= nd; ++j) {
    const int64_t src = p->axis_order[j];
    if (src < 1 || src > static_cast<int64_t>(nd)) return ju::Invalid("params.axis_order", "not a permutation");
    if (layout.shape[src - 1] != layout.shape[j - 1])
      return ju::Invalid("params.axis_order", "permutes axes of different sizes");
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
