#include "augment/transforms/swap/swap.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/mri_common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr char kW[] = "swap";
constexpr int64_t kMaxIterations = 100000;
using Corner = std::array<int64_t, 3>;

absl::StatusOr<Corner> Triple(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_integer()) return Corner{v.get<int64_t>(), v.get<int64_t>(), v.get<int64_t>()};
  ASSIGN_OR_RETURN(auto x, ju::AsInts(v, field));
  if (x.size() == 1) return Corner{x[0], x[0], x[0]};
  if (x.size() != 3) return ju::Invalid(field, "expected an integer or 3 integers");
  return Corner{x[0], x[1], x[2]};
}

// The largest corner + 1 per axis (torch.randint's exclusive bound; 0 means the corner is 0).
absl::StatusOr<Corner> CornerBounds(const Corner& patch, const mri::Shape3& s) {
  Corner m;
  for (size_t a = 0; a < 3; ++a) {
    m[a] = s[a] - patch[a];
    if (m[a] < 0) return ju::Invalid("swap.patch_size", "larger than the image's spatial shape");
  }
  return m;
}
}  // namespace

void SwapPatches(const SwapParams& p, const std::array<int64_t, 3>& s, int64_t channels, float* image) {
  const Corner& ps = p.patch_size;
  const int64_t n = s[0] * s[1] * s[2];
  std::vector<float> second(static_cast<size_t>(ps[0] * ps[1] * ps[2]));
  for (const auto& loc : p.locations) {
    const Corner& f = loc[0];
    const Corner& g = loc[1];
    for (int64_t c = 0; c < channels; ++c) {
      float* x = image + c * n;
      auto at = [&](const Corner& o, int64_t i, int64_t j, int64_t k) -> float& {
        return x[((o[0] + i) * s[1] + o[1] + j) * s[2] + o[2] + k];
      };
      size_t t = 0;
      for (int64_t i = 0; i < ps[0]; ++i)
        for (int64_t j = 0; j < ps[1]; ++j)
          for (int64_t k = 0; k < ps[2]; ++k) second[t++] = at(g, i, j, k);
      for (int64_t i = 0; i < ps[0]; ++i)
        for (int64_t j = 0; j < ps[1]; ++j)
          for (int64_t k = 0; k < ps[2]; ++k) at(g, i, j, k) = at(f, i, j, k);
      t = 0;
      for (int64_t i = 0; i < ps[0]; ++i)
        for (int64_t j = 0; j < ps[1]; ++j)
          for (int64_t k = 0; k < ps[2]; ++k) at(f, i, j, k) = second[t++];
    }
  }
}

const ConfigSchema<SwapConfig>& SwapTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<SwapConfig>("swap"))
           ->AddParsed("patch_size", "int | int[3]", &SwapConfig::patch_size,
                       "patch extent per spatial axis (one integer: the same on every axis), each in [1, 4096]",
                       [](const nlohmann::json& v, const std::string& f) { return Triple(v, f); })
           .Add("num_iterations", &SwapConfig::num_iterations, "number of patch pairs swapped per sample",
                InRange(0, kMaxIterations));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> SwapTransform::Create(const SwapConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  for (int64_t v : c.patch_size)
    if (v < 1 || v > 4096) return ju::Invalid("swap.patch_size", "each extent must be in [1, 4096]");
  return std::shared_ptr<const Transform>(new SwapTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> SwapTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(SwapConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json SwapTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> SwapTransform::Draw(DrawContext& ctx,
                                                                     const SampleLayout& layout) const {
  ASSIGN_OR_RETURN(const mri::Shape3 s, mri::ToShape3(layout.shape, kW));
  ASSIGN_OR_RETURN(const Corner m, CornerBounds(config_.patch_size, s));
  auto p = std::make_unique<SwapParams>();
  p->patch_size = config_.patch_size;
  if (config_.num_iterations == 0) return std::unique_ptr<TransformParams>(std::move(p));
  if (m[0] <= 1 && m[1] <= 1 && m[2] <= 1)
    return ju::Invalid("swap.patch_size", "leaves a single possible patch position (no two distinct patches)");
  auto corner = [&] {
    Corner o;
    for (size_t a = 0; a < 3; ++a) o[a] = m[a] == 0 ? 0 : ctx.rng.UniformInt(0, m[a] - 1);
    return o;
  };
  for (int64_t it = 0; it < config_.num_iterations; ++it) {
    const Corner f = corner();
    Corner g = corner();
    while (g == f) g = corner();
    p->locations.push_back({f, g});
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status SwapTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const SwapParams* p, ParamsAs<SwapParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(const mri::Shape3 s3, mri::ToShape3(s.shape, kW));
  ASSIGN_OR_RETURN(const Corner m, CornerBounds(p->patch_size, s3));
  for (const auto& loc : p->locations)
    for (const Corner& o : loc)
      for (size_t a = 0; a < 3; ++a)
        if (o[a] < 0 || o[a] > m[a]) return ju::Invalid("params.locations", "patch outside the image");
  SwapPatches(*p, s3, s.channels, s.image.data());
  return absl::OkStatus();
}

nlohmann::json SwapTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const SwapParams&>(params);
  nlohmann::json locs = nlohmann::json::array();
  for (const auto& l : p.locations) locs.push_back({l[0], l[1]});
  return {{"patch_size", p.patch_size}, {"locations", locs}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> SwapTransform::ParamsFromJson(const nlohmann::json& j,
                                                                               const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"patch_size", "locations"}, "params"));
  auto p = std::make_unique<SwapParams>();
  p->patch_size = config_.patch_size;
  if (j.contains("patch_size")) {
    ASSIGN_OR_RETURN(p->patch_size, Triple(j["patch_size"], "params.patch_size"));
  }
  ASSIGN_OR_RETURN(const mri::Shape3 s, mri::ToShape3(layout.shape, kW));
  ASSIGN_OR_RETURN(const Corner m, CornerBounds(p->patch_size, s));
  if (!j.contains("locations") || !j["locations"].is_array())
    return ju::Invalid("params.locations", "required: [[[i, j, k], [i, j, k]], ...]");
  if (j["locations"].size() > static_cast<size_t>(kMaxIterations))
    return ju::Invalid("params.locations", "at most 100000 pairs");
  for (const auto& pair : j["locations"]) {
    if (!pair.is_array() || pair.size() != 2) return ju::Invalid("params.locations", "each entry is [first, second]");
    std::array<Corner, 2> l;
    for (size_t q = 0; q < 2; ++q) {
      ASSIGN_OR_RETURN(auto v, ju::AsInts(pair[q], "params.locations"));
      if (v.size() != 3) return ju::Invalid("params.locations", "each corner needs 3 indices");
      for (size_t a = 0; a < 3; ++a) {
        if (v[a] < 0 || v[a] > m[a]) return ju::Invalid("params.locations", "patch outside the image");
        l[q][a] = v[a];
      }
    }
    p->locations.push_back(l);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
