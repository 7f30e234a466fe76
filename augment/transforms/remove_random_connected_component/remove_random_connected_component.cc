#include "augment/transforms/remove_random_connected_component/remove_random_connected_component.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/status_macros.h"
#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/one_hot_channels.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr const char* kName = "remove_random_connected_component";

using one_hot_channels::IntOrInts;

int64_t Pick(double u, size_t n) { return std::min<int64_t>(static_cast<int64_t>(u * static_cast<double>(n)), n - 1); }
}  // namespace

namespace connected_components_internal {

namespace {
int32_t Find(std::vector<int32_t>& parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}
}  // namespace

// Two-pass union-find: every foreground voxel joins the foreground neighbours already visited (the half of the full
// neighbourhood that precedes it in raster order); the final relabel in raster order numbers components by their
// first voxel, which is skimage's numbering.
std::vector<int64_t> Label(const std::vector<uint8_t>& m, const std::vector<int64_t>& shape,
                           std::vector<int32_t>& labels) {
  int64_t d[3] = {1, 1, 1};
  const size_t off = 3 - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) d[off + i] = shape[i];
  const int64_t n = d[0] * d[1] * d[2];
  std::vector<int32_t> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b)
      for (int64_t c = 0; c < d[2]; ++c) {
        const int64_t i = (a * d[1] + b) * d[2] + c;
        if (!m[i]) continue;
        for (int64_t da = -1; da <= 0; ++da)
          for (int64_t db = -1; db <= 1; ++db)
            for (int64_t dc = -1; dc <= 1; ++dc) {
              if (da == 0 && (db > 0 || (db == 0 && dc >= 0))) continue;  // only neighbours before i
              const int64_t x = a + da, y = b + db, z = c + dc;
              if (x < 0 || y < 0 || z < 0 || y >= d[1] || z >= d[2]) continue;
              const int64_t j = (x * d[1] + y) * d[2] + z;
              if (!m[j]) continue;
              const int32_t ri = Find(parent, static_cast<int32_t>(i)), rj = Find(parent, static_cast<int32_t>(j));
              if (ri != rj) parent[std::max(ri, rj)] = std::min(ri, rj);
            }
      }
  labels.assign(static_cast<size_t>(n), 0);
  std::vector<int32_t> id_of_root(static_cast<size_t>(n), 0);
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < n; ++i) {
    if (!m[i]) continue;
    const int32_t r = Find(parent, static_cast<int32_t>(i));
    if (id_of_root[r] == 0) {
      sizes.push_back(0);
      id_of_root[r] = static_cast<int32_t>(sizes.size());
    }
    labels[i] = id_of_root[r];
    ++sizes[id_of_root[r] - 1];
  }
  return sizes;
}

}  // namespace connected_components_internal

const ConfigSchema<RemoveRandomConnectedComponentConfig>& RemoveRandomConnectedComponentTransform::Schema() {
  using C = RemoveRandomConnectedComponentConfig;
  static const auto* const s =
      &(new ConfigSchema<C>(kName))
           ->Custom(
               "channel_idx", "int | int[]", "image channels to perturb (negative: from the end), one coin each",
               [](const nlohmann::json& j, C& c, const std::string& w) -> absl::Status {
                 if (!j.contains("channel_idx")) return ju::Invalid(w + ".channel_idx", "required");
                 ASSIGN_OR_RETURN(c.channel_idx, IntOrInts(j["channel_idx"], w + ".channel_idx"));
                 return absl::OkStatus();
               },
               [](const C& c) { return nlohmann::json(c.channel_idx); }, /*required=*/true)
           .Add("fill_with_other_class_p", &C::fill_with_other_class_p,
                "probability that the removed component takes another channel's class instead of 0", Probability())
           .Add("dont_do_if_covers_more_than_x_percent", &C::dont_do_if_covers_more_than_x_percent,
                "largest fraction of the volume a removable component may cover (a fraction, despite the name)",
                Probability())
           .Add("p_per_label", &C::p_per_label, "probability that a listed channel is perturbed", Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> RemoveRandomConnectedComponentTransform::Create(
    const RemoveRandomConnectedComponentConfig& c) {
  RETURN_IF_ERROR(one_hot_channels::CheckChannelIdx(c.channel_idx, kName));
  RETURN_IF_ERROR(Schema().Validate(c));  // the three probabilities
  return std::shared_ptr<const Transform>(new RemoveRandomConnectedComponentTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> RemoveRandomConnectedComponentTransform::FromJson(
    const nlohmann::json& j) {
  ASSIGN_OR_RETURN(RemoveRandomConnectedComponentConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json RemoveRandomConnectedComponentTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> RemoveRandomConnectedComponentTransform::Draw(
    DrawContext& ctx, const SampleLayout&) const {
  auto p = std::make_unique<RemoveRandomConnectedComponentParams>();
  p->apply_to_channels = one_hot_channels::Draw(ctx.rng, config_.channel_idx, config_.p_per_label);
  for (size_t i = 0; i < p->apply_to_channels.size(); ++i) {
    p->component_draw.push_back(ctx.rng.Uniform());
    p->fill_draw.push_back(ctx.rng.Uniform());
    p->other_class_draw.push_back(ctx.rng.Uniform());
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status RemoveRandomConnectedComponentTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const auto* p, ParamsAs<RemoveRandomConnectedComponentParams>(params, kName));
  RETURN_IF_ERROR(RequireImage(s, kName));
  if (s.shape.size() != 2 && s.shape.size() != 3) return ju::Invalid("image.shape", "needs 2 or 3 spatial dims");
  const size_t na = p->apply_to_channels.size();
  if (p->component_draw.size() != na || p->fill_draw.size() != na || p->other_class_draw.size() != na)
    return ju::Invalid("params", "component_draw, fill_draw and other_class_draw need one entry per applied channel");
  const int64_t n = s.voxels();
  std::vector<uint8_t> m(static_cast<size_t>(n));
  std::vector<int32_t> labels;
  for (size_t k = 0; k < na; ++k) {
    const int64_t raw = p->apply_to_channels[k];
    ASSIGN_OR_RETURN(const int64_t a, one_hot_channels::Resolve(raw, s.channels, "params.apply_to_channels"));
    float* x = s.image.data() + a * n;
    bool any = false;
    for (int64_t v = 0; v < n; ++v) any |= (m[v] = x[v] != 0.0f);
    if (!any) continue;
    const std::vector<int64_t> sizes = connected_components_internal::Label(m, s.shape, labels);
    std::vector<int32_t> valid;
    const double limit = static_cast<double>(n) * config_.dont_do_if_covers_more_than_x_percent;
    for (size_t c = 0; c < sizes.size(); ++c)
      if (static_cast<double>(sizes[c]) < limit) valid.push_back(static_cast<int32_t>(c + 1));
    if (valid.empty()) continue;
    const int32_t chosen = valid[Pick(p->component_draw[k], valid.size())];
    for (int64_t v = 0; v < n; ++v)
      if (labels[v] == chosen) x[v] = 0.0f;
    if (!(p->fill_draw[k] < config_.fill_with_other_class_p)) continue;
    std::vector<int64_t> other;
    for (int64_t c : config_.channel_idx)
      if (c != raw) other.push_back(c);
    if (other.empty()) continue;
    ASSIGN_OR_RETURN(const int64_t oc, one_hot_channels::Resolve(other[Pick(p->other_class_draw[k], other.size())], s.channels,
                                                      "remove_random_connected_component.channel_idx"));
    float* y = s.image.data() + oc * n;
    for (int64_t v = 0; v < n; ++v)
      if (labels[v] == chosen) y[v] = 1.0f;
  }
  return absl::OkStatus();
}

nlohmann::json RemoveRandomConnectedComponentTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const RemoveRandomConnectedComponentParams&>(params);
  return {{"apply_to_channels", p.apply_to_channels},
          {"component_draw", p.component_draw},
          {"fill_draw", p.fill_draw},
          {"other_class_draw", p.other_class_draw}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> RemoveRandomConnectedComponentTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(
      ju::CheckKeys(j, {"apply_to_channels", "component_draw", "fill_draw", "other_class_draw"}, "params"));
  auto p = std::make_unique<RemoveRandomConnectedComponentParams>();
  ASSIGN_OR_RETURN(p->apply_to_channels, one_hot_channels::ParseApplied(j, config_.channel_idx, layout.channels));
  const size_t n = p->apply_to_channels.size();
  if (n == 0) return std::unique_ptr<TransformParams>(std::move(p));
  std::vector<double>* dst[] = {&p->component_draw, &p->fill_draw, &p->other_class_draw};
  const char* keys[] = {"component_draw", "fill_draw", "other_class_draw"};
  for (int i = 0; i < 3; ++i) {
    const std::string field = absl::StrCat("params.", keys[i]);
    if (!j.contains(keys[i]) || !j[keys[i]].is_array() || j[keys[i]].size() != n)
      return ju::Invalid(field, absl::StrCat("needs ", n, " entries (one per applied channel)"));
    ASSIGN_OR_RETURN(*dst[i], ju::AsDoubles(j[keys[i]], field));
    for (double u : *dst[i])
      if (!(u >= 0 && u < 1)) return ju::Invalid(field, "must be in [0, 1)");
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
