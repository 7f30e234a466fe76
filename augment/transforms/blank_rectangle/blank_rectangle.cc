#include "augment/transforms/blank_rectangle/blank_rectangle.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
constexpr char kW[] = "blank_rectangle";

// numpy randint(lo, hi): uniform integer in [lo, hi).
int64_t RandInt(RandomStream& rng, int64_t lo, int64_t hi) { return rng.UniformInt(lo, hi - 1); }

// Visits every voxel of box [lb, ub) of a C-ordered channel of `shape`.
template <typename F>
void ForBox(const std::vector<int64_t>& shape, const BlankRectangleParams::Box& b, F&& f) {
  const size_t nd = shape.size();
  const int64_t sy = nd == 3 ? shape[2] : 1;
  const int64_t sx = nd == 3 ? shape[1] * shape[2] : shape[1];
  const int64_t z0 = nd == 3 ? b.lb[2] : 0, z1 = nd == 3 ? b.ub[2] : 1;
  for (int64_t x = b.lb[0]; x < b.ub[0]; ++x)
    for (int64_t y = b.lb[1]; y < b.ub[1]; ++y) {
      const int64_t row = x * sx + y * sy;
      for (int64_t z = z0; z < z1; ++z) f(row + z);
    }
}
}  // namespace

const ConfigSchema<BlankRectangleConfig>& BlankRectangleTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<BlankRectangleConfig>("blank_rectangle"))
           ->Custom(
               "rectangle_size", "int | int[] | [int, int][]",
               "box size: one int for all axes, one per axis, or randint [lo, hi) per axis",
               [](const nlohmann::json& j, BlankRectangleConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("rectangle_size")) return ju::Invalid(w + ".rectangle_size", "required");
                 const nlohmann::json& rs = j["rectangle_size"];
                 if (rs.is_number_integer()) {
                   c.fixed_size = {rs.get<int64_t>()};
                   c.size_is_scalar = true;
                 } else if (rs.is_array() && !rs.empty() && rs[0].is_array()) {
                   for (const auto& r : rs) {
                     ASSIGN_OR_RETURN(auto v, ju::AsInts(r, w + ".rectangle_size"));
                     if (v.size() != 2) return ju::Invalid(w + ".rectangle_size", "expected [lo, hi] per axis");
                     c.rectangle_size.push_back({v[0], v[1]});
                   }
                 } else if (rs.is_array() && !rs.empty()) {
                   ASSIGN_OR_RETURN(c.fixed_size, ju::AsInts(rs, w + ".rectangle_size"));
                 } else {
                   return ju::Invalid(w + ".rectangle_size", "expected an int, [int per axis] or [[lo, hi] per axis]");
                 }
                 return absl::OkStatus();
               },
               [](const BlankRectangleConfig& c) {
                 if (!c.fixed_size.empty())
                   return c.size_is_scalar ? nlohmann::json(c.fixed_size[0]) : nlohmann::json(c.fixed_size);
                 nlohmann::json r = nlohmann::json::array();
                 for (const auto& a : c.rectangle_size) r.push_back({a[0], a[1]});
                 return r;
               },
               /*required=*/true)
           .Custom(
               "rectangle_value", "double | [double, double] | \"mean\"",
               "fill: a constant, U(lo, hi) per box, or the box's mean",
               [](const nlohmann::json& j, BlankRectangleConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("rectangle_value")) return ju::Invalid(w + ".rectangle_value", "required");
                 const nlohmann::json& rv = j["rectangle_value"];
                 if (rv.is_string() && rv.get<std::string>() == "mean") {
                   c.value_kind = BlankRectangleConfig::Value::kMean;
                 } else if (rv.is_number()) {
                   c.value_kind = BlankRectangleConfig::Value::kConstant;
                   c.value = rv.get<double>();
                 } else if (rv.is_array()) {
                   ASSIGN_OR_RETURN(auto v, ju::AsDoubles(rv, w + ".rectangle_value"));
                   if (v.size() != 2) return ju::Invalid(w + ".rectangle_value", "expected [lo, hi]");
                   c.value_kind = BlankRectangleConfig::Value::kUniform;
                   c.value_range = {v[0], v[1]};
                 } else {
                   return ju::Invalid(w + ".rectangle_value", "expected a number, [lo, hi] or \"mean\" (torch.mean)");
                 }
                 return absl::OkStatus();
               },
               [](const BlankRectangleConfig& c) {
                 switch (c.value_kind) {
                   case BlankRectangleConfig::Value::kConstant:
                     return nlohmann::json(c.value);
                   case BlankRectangleConfig::Value::kUniform:
                     return nlohmann::json({c.value_range[0], c.value_range[1]});
                   case BlankRectangleConfig::Value::kMean:
                     break;
                 }
                 return nlohmann::json("mean");
               },
               /*required=*/true)
           .Custom(
               "num_rectangles", "int | [int, int]", "boxes per channel: fixed, or randint [lo, hi)",
               [](const nlohmann::json& j, BlankRectangleConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("num_rectangles")) return ju::Invalid(w + ".num_rectangles", "required");
                 const nlohmann::json& nr = j["num_rectangles"];
                 if (nr.is_number_integer()) {
                   c.num_fixed = true;
                   c.num_rectangles = {nr.get<int64_t>(), nr.get<int64_t>()};
                   return absl::OkStatus();
                 }
                 ASSIGN_OR_RETURN(auto v, ju::AsInts(nr, w + ".num_rectangles"));
                 if (v.size() != 2) return ju::Invalid(w + ".num_rectangles", "expected an int or [lo, hi]");
                 c.num_rectangles = {v[0], v[1]};
                 return absl::OkStatus();
               },
               [](const BlankRectangleConfig& c) {
                 return c.num_fixed ? nlohmann::json(c.num_rectangles[0])
                                    : nlohmann::json({c.num_rectangles[0], c.num_rectangles[1]});
               },
               /*required=*/true)
           .Add("force_square", &BlankRectangleConfig::force_square, "use the first axis' size for every axis")
           .Add("p_per_channel", &BlankRectangleConfig::p_per_channel, "probability that a channel is selected",
                Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> BlankRectangleTransform::Create(const BlankRectangleConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  if (c.fixed_size.empty()) {
    if (c.rectangle_size.empty()) return ju::Invalid(w + ".rectangle_size", "required");
    for (const auto& r : c.rectangle_size)
      if (r[0] < 0 || r[0] >= r[1])
        return ju::Invalid(w + ".rectangle_size", absl::StrCat("range [", r[0], ", ", r[1], ") is empty (numpy randint)"));
  } else {
    for (int64_t v : c.fixed_size)
      if (v < 0) return ju::Invalid(w + ".rectangle_size", "sizes must be >= 0");
  }
  if (c.num_fixed) {
    if (c.num_rectangles[0] < 0) return ju::Invalid(w + ".num_rectangles", "must be >= 0");
  } else if (c.num_rectangles[0] < 0 || c.num_rectangles[0] >= c.num_rectangles[1] || c.num_rectangles[1] > 1000) {
    return ju::Invalid(w + ".num_rectangles", "expected [lo, hi) with 0 <= lo < hi <= 1000 (numpy randint)");
  }
  if (c.value_kind == BlankRectangleConfig::Value::kConstant && !std::isfinite(c.value))
    return ju::Invalid(w + ".rectangle_value", "must be finite");
  if (c.value_kind == BlankRectangleConfig::Value::kUniform &&
      !(std::isfinite(c.value_range[0]) && std::isfinite(c.value_range[1]) && c.value_range[0] <= c.value_range[1]))
    return ju::Invalid(w + ".rectangle_value", "range must be finite with lo <= hi");
  return std::shared_ptr<const Transform>(new BlankRectangleTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> BlankRectangleTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(BlankRectangleConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json BlankRectangleTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> BlankRectangleTransform::Draw(DrawContext& ctx,
                                                                               const SampleLayout& layout) const {
  const std::string w = kW;
  const int64_t C = layout.channels;
  const size_t nd = layout.shape.size();
  auto p = std::make_unique<BlankRectangleParams>();
  for (int64_t c = 0; c < C; ++c) p->apply_channel.push_back(ctx.rng.Uniform() < config_.p_per_channel);
  std::vector<int64_t> n(C, config_.num_rectangles[0]);
  if (!config_.num_fixed)
    for (int64_t c = 0; c < C; ++c) n[c] = RandInt(ctx.rng, config_.num_rectangles[0], config_.num_rectangles[1]);
  p->rectangles.resize(C);
  for (int64_t c = 0; c < C; ++c) {
    if (!p->apply_channel[c]) continue;
    for (int64_t r = 0; r < n[c]; ++r) {
      std::vector<int64_t> size(nd);
      if (!config_.fixed_size.empty()) {
        for (size_t d = 0; d < nd; ++d) {
          if (!config_.size_is_scalar && d >= config_.fixed_size.size())
            return ju::Invalid(w + ".rectangle_size", "fewer entries than spatial axes");
          size[d] = config_.size_is_scalar ? config_.fixed_size[0] : config_.fixed_size[d];
        }
      } else if (config_.force_square) {
        const int64_t v = RandInt(ctx.rng, config_.rectangle_size[0][0], config_.rectangle_size[0][1]);
        for (size_t d = 0; d < nd; ++d) size[d] = v;
      } else {
        if (config_.rectangle_size.size() < nd) return ju::Invalid(w + ".rectangle_size", "fewer ranges than spatial axes");
        for (size_t d = 0; d < nd; ++d) size[d] = RandInt(ctx.rng, config_.rectangle_size[d][0], config_.rectangle_size[d][1]);
      }
      BlankRectangleParams::Box b;
      for (size_t d = 0; d < nd; ++d) {
        if (size[d] > layout.shape[d])
          return ju::Invalid(w + ".rectangle_size", absl::StrCat("size ", size[d], " exceeds the image (axis ", d, ")"));
        b.lb.push_back(RandInt(ctx.rng, 0, layout.shape[d] - size[d] + 1));
        b.ub.push_back(b.lb.back() + size[d]);
      }
      p->rectangles[c].push_back(std::move(b));
    }
  }
  if (config_.value_kind == BlankRectangleConfig::Value::kUniform) {
    p->values.resize(C);
    for (int64_t c = 0; c < C; ++c)
      for (size_t r = 0; r < p->rectangles[c].size(); ++r)
        p->values[c].push_back(ctx.rng.Uniform(config_.value_range[0], config_.value_range[1]));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status BlankRectangleTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const BlankRectangleParams* p, ParamsAs<BlankRectangleParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  const int64_t n = s.voxels();
  for (int64_t c = 0; c < s.channels && c < static_cast<int64_t>(p->apply_channel.size()); ++c) {
    if (!p->apply_channel[c]) continue;
    float* x = s.image.data() + c * n;
    for (size_t r = 0; r < p->rectangles[c].size(); ++r) {
      const auto& box = p->rectangles[c][r];
      float v = 0;
      switch (config_.value_kind) {
        case BlankRectangleConfig::Value::kConstant:
          v = static_cast<float>(config_.value);
          break;
        case BlankRectangleConfig::Value::kUniform:
          v = static_cast<float>(p->values[c][r]);
          break;
        case BlankRectangleConfig::Value::kMean: {
          // torch.mean in float32 → Python float → stored as float32; a double sum is within float rounding.
          double sum = 0;
          int64_t cnt = 0;
          ForBox(s.shape, box, [&](int64_t i) {
            sum += x[i];
            ++cnt;
          });
          v = cnt > 0 ? static_cast<float>(sum / static_cast<double>(cnt)) : std::numeric_limits<float>::quiet_NaN();
          break;
        }
      }
      ForBox(s.shape, box, [&](int64_t i) { x[i] = v; });
    }
  }
  return absl::OkStatus();
}

nlohmann::json BlankRectangleTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const BlankRectangleParams&>(params);
  nlohmann::json j;
  j["apply_channel"] = p.apply_channel;
  nlohmann::json rects = nlohmann::json::array();
  for (const auto& ch : p.rectangles) {
    nlohmann::json l = nlohmann::json::array();
    for (const auto& b : ch) l.push_back({b.lb, b.ub});
    rects.push_back(l);
  }
  j["rectangles"] = rects;
  if (config_.value_kind == BlankRectangleConfig::Value::kUniform) j["values"] = p.values;
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> BlankRectangleTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_channel", "rectangles", "values"}, "params"));
  const int64_t C = layout.channels;
  const size_t nd = layout.shape.size();
  auto p = std::make_unique<BlankRectangleParams>();
  if (!j.contains("apply_channel")) return ju::Invalid("params.apply_channel", "required");
  ASSIGN_OR_RETURN(p->apply_channel, ju::AsBools(j["apply_channel"], "params.apply_channel"));
  if (static_cast<int64_t>(p->apply_channel.size()) != C)
    return ju::Invalid("params.apply_channel", absl::StrCat("needs ", C, " entries"));
  if (!j.contains("rectangles") || !j["rectangles"].is_array() || static_cast<int64_t>(j["rectangles"].size()) != C)
    return ju::Invalid("params.rectangles", absl::StrCat("needs one list per channel (", C, ")"));
  p->rectangles.resize(C);
  for (int64_t c = 0; c < C; ++c) {
    const auto& ch = j["rectangles"][c];
    if (!ch.is_array()) return ju::Invalid("params.rectangles", "expected a list of [lb, ub] per channel");
    if (ch.size() > 100000) return ju::Invalid("params.rectangles", "too many rectangles");
    for (const auto& r : ch) {
      if (!r.is_array() || r.size() != 2) return ju::Invalid("params.rectangles", "expected [lb, ub]");
      BlankRectangleParams::Box b;
      ASSIGN_OR_RETURN(b.lb, ju::AsInts(r[0], "params.rectangles.lb"));
      ASSIGN_OR_RETURN(b.ub, ju::AsInts(r[1], "params.rectangles.ub"));
      if (b.lb.size() != nd || b.ub.size() != nd) return ju::Invalid("params.rectangles", "lb/ub need one entry per axis");
      for (size_t d = 0; d < nd; ++d) {
        // Python slices clip to the array; bgv2's own boxes are always inside.
        b.lb[d] = std::clamp<int64_t>(b.lb[d], 0, layout.shape[d]);
        b.ub[d] = std::clamp<int64_t>(b.ub[d], b.lb[d], layout.shape[d]);
      }
      p->rectangles[c].push_back(std::move(b));
    }
  }
  if (config_.value_kind == BlankRectangleConfig::Value::kUniform) {
    if (!j.contains("values") || !j["values"].is_array() || static_cast<int64_t>(j["values"].size()) != C)
      return ju::Invalid("params.values", "needs one list of values per channel for a [lo, hi] rectangle_value");
    for (int64_t c = 0; c < C; ++c) {
      ASSIGN_OR_RETURN(auto v, ju::AsDoubles(j["values"][c], "params.values"));
      if (v.size() != p->rectangles[c].size()) return ju::Invalid("params.values", "one value per rectangle");
      p->values.push_back(v);
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
