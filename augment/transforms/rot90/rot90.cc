#include "augment/transforms/rot90/rot90.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;

namespace {
constexpr char kW[] = "rot90";
constexpr int64_t kMaxCombinations = 64;

// torch.rot90 normalises k to k mod 4 (Python semantics for negative k).
int64_t Mod4(int64_t k) { return ((k % 4) + 4) % 4; }

absl::Status CheckCombination(int64_t k, const std::array<int64_t, 2>& dims, const std::vector<int64_t>& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t a = dims[0] - 1, b = dims[1] - 1;
  if (a < 0 || b < 0 || a >= nd || b >= nd || a == b)
    return ju::Invalid("params.axis_combinations", "expected two different spatial dims (1-based incl. channel)");
  if (Mod4(k) % 2 == 1 && shape[a] != shape[b])
    return ju::Invalid("params.axis_combinations",
                       absl::StrCat("rotating dims ", dims[0], ", ", dims[1], " of different sizes would change the "
                                                                           "sample shape"));
  return absl::OkStatus();
}
}  // namespace

const ConfigSchema<Rot90Config>& Rot90Transform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<Rot90Config>("rot90"))
           ->Add("num_axis_combinations", &Rot90Config::num_axis_combinations,
                 "rotations composed per sample (rounded), each about a random axis pair",
                 Required(InRange(0, kMaxCombinations)))
           .Add("num_rot_per_combination", &Rot90Config::num_rot_per_combination,
                "quarter turns each rotation draws from")
           .Add("allowed_axes", &Rot90Config::allowed_axes, "spatial axes the pairs are drawn from", InRange(0, 2));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> Rot90Transform::Create(const Rot90Config& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  Rot90Config n = c;
  if (n.num_rot_per_combination.empty()) return ju::Invalid(w + ".num_rot_per_combination", "must not be empty");
  std::sort(n.allowed_axes.begin(), n.allowed_axes.end());
  n.allowed_axes.erase(std::unique(n.allowed_axes.begin(), n.allowed_axes.end()), n.allowed_axes.end());
  if (n.allowed_axes.size() < 2 && n.num_axis_combinations.Max() >= 0.5)
    return ju::Invalid(w + ".allowed_axes", "needs at least two axes (np.random.choice(size=2, replace=False))");
  return std::shared_ptr<const Transform>(new Rot90Transform(n));
}

absl::StatusOr<std::shared_ptr<const Transform>> Rot90Transform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(Rot90Config c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json Rot90Transform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> Rot90Transform::Draw(DrawContext& ctx,
                                                                      const SampleLayout& layout) const {
  auto p = std::make_unique<Rot90Params>();
  // round(sample_scalar(...)): Python rounds half to even, as nearbyint in the default rounding mode.
  const int64_t n = static_cast<int64_t>(std::nearbyint(config_.num_axis_combinations.Sample(ctx.rng)));
  const int64_t m = static_cast<int64_t>(config_.allowed_axes.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = config_.num_rot_per_combination[ctx.rng.UniformInt(
        0, static_cast<int64_t>(config_.num_rot_per_combination.size()) - 1)];
    // choice(size=2, replace=False) then sorted: a uniform unordered pair.
    const int64_t x = ctx.rng.UniformInt(0, m - 1);
    int64_t y = ctx.rng.UniformInt(0, m - 2);
    if (y >= x) ++y;
    std::array<int64_t, 2> dims{config_.allowed_axes[std::min(x, y)] + 1, config_.allowed_axes[std::max(x, y)] + 1};
    RETURN_IF_ERROR(CheckCombination(k, dims, layout.shape));
    p->num_rot_per_combination.push_back(k);
    p->axis_combinations.push_back(dims);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status Rot90Transform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const Rot90Params* p, ParamsAs<Rot90Params>(params, kW));
  if (s.image.empty() && s.seg.empty()) return ju::Invalid(std::string(kW), "sample has no image or segmentation");
  if (p->num_rot_per_combination.size() != p->axis_combinations.size())
    return ju::Invalid("params.axis_combinations", "one entry per num_rot_per_combination entry");
  const size_t nd = s.shape.size();
  for (size_t i = 0; i < p->axis_combinations.size(); ++i) {
    const int64_t k = Mod4(p->num_rot_per_combination[i]);
    RETURN_IF_ERROR(CheckCombination(k, p->axis_combinations[i], s.shape));
    if (k == 0) continue;
    const int64_t a = p->axis_combinations[i][0] - 1, b = p->axis_combinations[i][1] - 1;
    std::vector<int64_t> perm(nd);
    for (size_t d = 0; d < nd; ++d) perm[d] = static_cast<int64_t>(d);
    std::vector<bool> flip(nd, false);
    // torch.rot90: k=1 flip(b)·transpose(a,b) → src[a] = o[b], src[b] = S−1−o[a]; k=3 → src[a] = S−1−o[b],
    // src[b] = o[a]; k=2 → both flipped.
    if (k == 2) {
      flip[a] = flip[b] = true;
    } else {
      perm[a] = b;
      perm[b] = a;
      flip[k == 1 ? b : a] = true;
    }
    PermuteFlipSpatial(s, perm, flip);
  }
  return absl::OkStatus();
}

nlohmann::json Rot90Transform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const Rot90Params&>(params);
  nlohmann::json ax = nlohmann::json::array();
  for (const auto& d : p.axis_combinations) ax.push_back({d[0], d[1]});
  return {{"num_rot_per_combination", p.num_rot_per_combination}, {"axis_combinations", ax}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> Rot90Transform::ParamsFromJson(const nlohmann::json& j,
                                                                                const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"num_rot_per_combination", "axis_combinations"}, "params"));
  auto p = std::make_unique<Rot90Params>();
  ASSIGN_OR_RETURN(p->num_rot_per_combination, ju::AsInts(j.value("num_rot_per_combination", nlohmann::json::array()),
                                                          "params.num_rot_per_combination"));
  const nlohmann::json ax = j.value("axis_combinations", nlohmann::json::array());
  if (!ax.is_array() || ax.size() != p->num_rot_per_combination.size() || ax.size() > kMaxCombinations)
    return ju::Invalid("params.axis_combinations", "one [a, b] per num_rot_per_combination entry");
  for (size_t i = 0; i < ax.size(); ++i) {
    ASSIGN_OR_RETURN(auto d, ju::AsInts(ax[i], "params.axis_combinations"));
    if (d.size() != 2) return ju::Invalid("params.axis_combinations", "expected [a, b]");
    p->axis_combinations.push_back({d[0], d[1]});
    RETURN_IF_ERROR(CheckCombination(p->num_rot_per_combination[i], p->axis_combinations.back(), layout.shape));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
