#include "augment/transforms/elastic_deformation/elastic_deformation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "augment/json_util.h"
#include "augment/kernels/common/sitk_math.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/mri_common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace elastic_internal {
AxisWeights Weights(int64_t size, int64_t nodes, double dir) {
  const double h = (static_cast<double>(size) + 0.25) / static_cast<double>(nodes - 3);
  const double lo = dir < 0 ? -static_cast<double>(size - 1) : 0.0;  // smallest pixel-centre coordinate
  const double grid_origin = lo - 0.625 - h;
  AxisWeights a;
  for (int64_t i = 0; i < size; ++i) {
    const double p = dir * static_cast<double>(i);
    const double u = (p - grid_origin) / h;
    const int64_t s = static_cast<int64_t>(std::floor(u - 1.0));
    std::array<double, 4> w;
    for (int k = 0; k < 4; ++k) w[static_cast<size_t>(k)] = sitk_math::CubicBSpline(u - static_cast<double>(s + k));
    a.start.push_back(s);
    a.w.push_back(w);
  }
  return a;
}
}  // namespace elastic_internal

namespace {
using elastic_internal::AxisWeights;
using elastic_internal::Weights;
constexpr char kW[] = "elastic_deformation";
constexpr int64_t kMaxControlPoints = 64;

// Resamples every voxel v at its continuous index ci[v] (sitk_math.h's rules, shared with the CUDA stage); fill =
// the channel minimum.
template <typename T>
void Warp(const std::vector<std::array<double, 3>>& ci, const mri::Shape3& s, bool linear, T* x) {
  const int64_t n = mri::Voxels(s);
  const std::vector<T> in(x, x + n);
  const T fill = *std::min_element(in.begin(), in.end());
  for (int64_t v = 0; v < n; ++v) x[v] = sitk_math::Sample(in.data(), s.data(), ci[static_cast<size_t>(v)].data(), linear, fill);
}

absl::Status CheckGrid(const std::array<int64_t, 3>& n, const std::string& field) {
  for (int64_t v : n)
    if (v < 4 || v > kMaxControlPoints) return ju::Invalid(field, "each count must be in [4, 64]");
  return absl::OkStatus();
}

absl::StatusOr<std::array<int64_t, 3>> IntTriple(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_integer()) return std::array<int64_t, 3>{v.get<int64_t>(), v.get<int64_t>(), v.get<int64_t>()};
  ASSIGN_OR_RETURN(auto x, ju::AsInts(v, field));
  if (x.size() == 1) return std::array<int64_t, 3>{x[0], x[0], x[0]};
  if (x.size() != 3) return ju::Invalid(field, "expected 1 or 3 integers");
  return std::array<int64_t, 3>{x[0], x[1], x[2]};
}
}  // namespace

const ConfigSchema<ElasticDeformationConfig>& ElasticDeformationTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<ElasticDeformationConfig>("elastic_deformation"))
           ->AddParsed("num_control_points", "int | int[1|3]", &ElasticDeformationConfig::num_control_points,
                       "B-spline control points per axis, each in [4, 64]",
                       [](const nlohmann::json& v, const std::string& f) { return IntTriple(v, f); })
           .AddParsed("max_displacement", "double | double[1|3]", &ElasticDeformationConfig::max_displacement,
                      "largest control-point displacement per axis in mm, each in [0, 1e4]",
                      [](const nlohmann::json& v, const std::string& f) -> absl::StatusOr<std::array<double, 3>> {
                        std::vector<double> d;
                        if (v.is_number()) {
                          d = {v.get<double>()};
                        } else {
                          ASSIGN_OR_RETURN(d, ju::AsDoubles(v, f));
                        }
                        if (d.size() == 1) d = {d[0], d[0], d[0]};
                        if (d.size() != 3) return ju::Invalid(f, "expected 1 or 3 values");
                        return std::array<double, 3>{d[0], d[1], d[2]};
                      })
           .Add("locked_borders", &ElasticDeformationConfig::locked_borders,
                "border control-point layers held at zero displacement (0, 1 or 2)", InRange(0, 2))
           .Custom(
               "image_interpolation", "string", "image interpolation: \"linear\" or \"nearest\"",
               [](const nlohmann::json& j, ElasticDeformationConfig& c, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(const std::string interp, ju::GetString(j, "image_interpolation", "linear", w));
                 if (interp != "linear" && interp != "nearest")
                   return ju::Invalid(w + ".image_interpolation", "supported: \"linear\", \"nearest\"");
                 c.linear = interp == "linear";
                 return absl::OkStatus();
               },
               [](const ElasticDeformationConfig& c) { return nlohmann::json(c.linear ? "linear" : "nearest"); })
           .Custom(
               "label_interpolation", "string", "label interpolation: only \"nearest\"",
               [](const nlohmann::json& j, ElasticDeformationConfig&, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(const std::string v, ju::GetString(j, "label_interpolation", "nearest", w));
                 if (v != "nearest") return ju::Invalid(w + ".label_interpolation", "supported: \"nearest\"");
                 return absl::OkStatus();
               },
               [](const ElasticDeformationConfig&) { return nlohmann::json("nearest"); });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> ElasticDeformationTransform::Create(
    const ElasticDeformationConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  RETURN_IF_ERROR(CheckGrid(c.num_control_points, "elastic_deformation.num_control_points"));
  for (double d : c.max_displacement)
    if (!(d >= 0) || !(d <= 1e4)) return ju::Invalid("elastic_deformation.max_displacement", "must be in [0, 1e4]");
  if (c.locked_borders == 2 && std::count(c.num_control_points.begin(), c.num_control_points.end(), 4) > 0)
    return ju::Invalid("elastic_deformation.locked_borders", "2 with 4 control points is the identity (TorchIO)");
  return std::shared_ptr<const Transform>(new ElasticDeformationTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ElasticDeformationTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ElasticDeformationConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json ElasticDeformationTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> ElasticDeformationTransform::Draw(DrawContext& ctx,
                                                                                   const SampleLayout&) const {
  auto p = std::make_unique<ElasticDeformationParams>();
  const auto& n = config_.num_control_points;
  p->num_control_points = n;
  p->control_points.resize(static_cast<size_t>(n[0] * n[1] * n[2] * 3));
  for (size_t e = 0; e < p->control_points.size(); ++e) {
    const float u = static_cast<float>(ctx.rng.Uniform());
    p->control_points[e] = (u - 0.5f) * 2.0f * static_cast<float>(config_.max_displacement[e % 3]);
  }
  for (int64_t i = 0; i < config_.locked_borders; ++i)
    for (int64_t x = 0; x < n[0]; ++x)
      for (int64_t y = 0; y < n[1]; ++y)
        for (int64_t z = 0; z < n[2]; ++z)
          if (x == i || x == n[0] - 1 - i || y == i || y == n[1] - 1 - i)
            for (int64_t d = 0; d < 3; ++d)
              p->control_points[static_cast<size_t>(((x * n[1] + y) * n[2] + z) * 3 + d)] = 0.0f;
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status ElasticDeformationTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const ElasticDeformationParams* p, ParamsAs<ElasticDeformationParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(const mri::Shape3 s3, mri::ToShape3(s.shape, kW));
  const auto& n = p->num_control_points;
  RETURN_IF_ERROR(CheckGrid(n, "params.num_control_points"));
  if (p->control_points.size() != static_cast<size_t>(n[0] * n[1] * n[2] * 3))
    return ju::Invalid("params.control_points", "needs n0·n1·n2·3 values");
  const bool is_2d = s.shape.size() == 2;
  const double dir[3] = {-1, -1, 1};
  AxisWeights w[3];
  for (size_t a = 0; a < 3; ++a) w[a] = Weights(s3[a], n[a], dir[a]);
  // Input continuous index of every voxel: i + D·displacement(D·i).
  std::vector<std::array<double, 3>> ci(static_cast<size_t>(mri::Voxels(s3)));
  for (int64_t i = 0; i < s3[0]; ++i)
    for (int64_t j = 0; j < s3[1]; ++j)
      for (int64_t k = 0; k < s3[2]; ++k) {
        const int64_t st[3] = {w[0].start[static_cast<size_t>(i)], w[1].start[static_cast<size_t>(j)],
                               w[2].start[static_cast<size_t>(k)]};
        sitk_math::BsplineIndex(i, j, k, st, w[0].w[static_cast<size_t>(i)].data(),
                                w[1].w[static_cast<size_t>(j)].data(), w[2].w[static_cast<size_t>(k)].data(),
                                p->control_points.data(), n.data(), is_2d,
                                ci[static_cast<size_t>((i * s3[1] + j) * s3[2] + k)].data());
      }
  s.Materialize();
  const int64_t v = mri::Voxels(s3);
  for (int64_t c = 0; c < s.channels; ++c) Warp(ci, s3, config_.linear, s.image.data() + c * v);
  for (int64_t c = 0; c < s.seg_channels && !s.seg.empty(); ++c) Warp(ci, s3, false, s.seg.data() + c * v);
  return absl::OkStatus();
}

nlohmann::json ElasticDeformationTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const ElasticDeformationParams&>(params);
  return {{"num_control_points", p.num_control_points}, {"control_points", p.control_points}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> ElasticDeformationTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"num_control_points", "control_points"}, "params"));
  auto p = std::make_unique<ElasticDeformationParams>();
  p->num_control_points = config_.num_control_points;
  if (j.contains("num_control_points")) {
    ASSIGN_OR_RETURN(p->num_control_points, IntTriple(j["num_control_points"], "params.num_control_points"));
  }
  RETURN_IF_ERROR(CheckGrid(p->num_control_points, "params.num_control_points"));
  const auto& n = p->num_control_points;
  if (!j.contains("control_points")) return ju::Invalid("params.control_points", "required");
  ASSIGN_OR_RETURN(auto v, ju::AsDoubles(j["control_points"], "params.control_points"));
  if (v.size() != static_cast<size_t>(n[0] * n[1] * n[2] * 3))
    return ju::Invalid("params.control_points", "needs n0·n1·n2·3 values (C order of (x, y, z, component))");
  for (double d : v) {
    if (!std::isfinite(d) || std::abs(d) > 1e4) return ju::Invalid("params.control_points", "must be finite, |d| <= 1e4");
    p->control_points.push_back(static_cast<float>(d));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
