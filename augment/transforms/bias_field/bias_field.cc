#include "augment/transforms/bias_field/bias_field.h"

#include <cmath>

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
constexpr char kW[] = "bias_field";
constexpr int kMaxOrder = 10;

// TorchIO: arange(-n/2, n/2) + 0.5, divided by its maximum when that is > 0.
std::vector<double> AxisCoordinates(int64_t n) {
  std::vector<double> c(static_cast<size_t>(n));
  const double max = (static_cast<double>(n) - 1.0) / 2.0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = (-static_cast<double>(n) / 2.0 + static_cast<double>(i)) + 0.5;
    c[static_cast<size_t>(i)] = max > 0 ? v / max : v;
  }
  return c;
}
}  // namespace

int64_t BiasFieldNumCoefficients(int order) {
  const int64_t k = order;
  return (k + 1) * (k + 2) * (k + 3) / 6;
}

std::vector<float> BiasFieldMultiplier(const BiasFieldParams& p, const std::array<int64_t, 3>& shape) {
  const int k = p.order;
  // pw[axis][power][i] = coordinate^power
  std::array<std::vector<std::vector<double>>, 3> pw;
  for (int a = 0; a < 3; ++a) {
    const std::vector<double> c = AxisCoordinates(shape[static_cast<size_t>(a)]);
    pw[static_cast<size_t>(a)].assign(static_cast<size_t>(k + 1), std::vector<double>(c.size(), 1.0));
    for (int e = 1; e <= k; ++e)
      for (size_t i = 0; i < c.size(); ++i)
        pw[static_cast<size_t>(a)][static_cast<size_t>(e)][i] = pw[static_cast<size_t>(a)][static_cast<size_t>(e - 1)][i] * c[i];
  }
  const int64_t n0 = shape[0], n1 = shape[1], n2 = shape[2];
  std::vector<double> field(static_cast<size_t>(n0 * n1 * n2), 0.0);
  size_t t = 0;
  for (int a = 0; a <= k; ++a)
    for (int b = 0; b <= k - a; ++b)
      for (int c = 0; c <= k - a - b; ++c, ++t) {
        const double coef = p.coefficients[t];
        const auto& px = pw[0][static_cast<size_t>(a)];
        const auto& py = pw[1][static_cast<size_t>(b)];
        const auto& pz = pw[2][static_cast<size_t>(c)];
        for (int64_t i = 0; i < n0; ++i)
          for (int64_t j = 0; j < n1; ++j) {
            const double cxy = coef * px[static_cast<size_t>(i)] * py[static_cast<size_t>(j)];
            double* row = field.data() + (i * n1 + j) * n2;
            for (int64_t l = 0; l < n2; ++l) row[l] += cxy * pz[static_cast<size_t>(l)];
          }
      }
  std::vector<float> out(field.size());
  for (size_t i = 0; i < field.size(); ++i) out[i] = static_cast<float>(std::exp(field[i]));
  return out;
}

const ConfigSchema<BiasFieldConfig>& BiasFieldTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<BiasFieldConfig>("bias_field"))
           ->AddParsed("coefficients", "double | [double, double]", &BiasFieldConfig::coefficients,
                       "polynomial coefficients drawn from U(lo, hi) (a number d: (-d, d))",
                       [](const nlohmann::json& v, const std::string& f) {
                         return mri::ParseRange(v, f, std::nullopt, std::nullopt, false);
                       })
           .Add("order", &BiasFieldConfig::order, "polynomial order", InRange(0, 10));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> BiasFieldTransform::Create(const BiasFieldConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (!std::isfinite(c.coefficients[0]) || !std::isfinite(c.coefficients[1]) || c.coefficients[0] > c.coefficients[1])
    return ju::Invalid(std::string(kW) + ".coefficients", "expected finite lo <= hi");
  return std::shared_ptr<const Transform>(new BiasFieldTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> BiasFieldTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(BiasFieldConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json BiasFieldTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> BiasFieldTransform::Draw(DrawContext& ctx,
                                                                          const SampleLayout& /*layout*/) const {
  auto p = std::make_unique<BiasFieldParams>();
  p->order = config_.order;
  const int64_t n = BiasFieldNumCoefficients(config_.order);
  p->coefficients.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)  // torch.FloatTensor(1).uniform_(lo, hi): float32 values
    p->coefficients.push_back(static_cast<float>(ctx.rng.Uniform(config_.coefficients[0], config_.coefficients[1])));
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status BiasFieldTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const BiasFieldParams* p, ParamsAs<BiasFieldParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(mri::Shape3 shape, mri::ToShape3(s.shape, kW));
  if (static_cast<int64_t>(p->coefficients.size()) != BiasFieldNumCoefficients(p->order))
    return ju::Invalid("params.coefficients", "count does not match order");
  const std::vector<float> m = BiasFieldMultiplier(*p, shape);
  const int64_t v = mri::Voxels(shape);
  for (int64_t c = 0; c < s.channels; ++c) {
    float* x = s.image.data() + c * v;
    for (int64_t i = 0; i < v; ++i) x[i] *= m[static_cast<size_t>(i)];
  }
  return absl::OkStatus();
}

nlohmann::json BiasFieldTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const BiasFieldParams&>(params);
  return {{"coefficients", p.coefficients}, {"order", p.order}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> BiasFieldTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                    const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"coefficients", "order"}, "params"));
  auto p = std::make_unique<BiasFieldParams>();
  ASSIGN_OR_RETURN(int64_t order, ju::GetInt(j, "order", config_.order, "params"));
  if (order < 0 || order > kMaxOrder) return ju::Invalid("params.order", "expected 0..10");
  p->order = static_cast<int>(order);
  if (!j.contains("coefficients")) return ju::Invalid("params.coefficients", "required");
  ASSIGN_OR_RETURN(p->coefficients, ju::AsDoubles(j["coefficients"], "params.coefficients"));
  if (static_cast<int64_t>(p->coefficients.size()) != BiasFieldNumCoefficients(p->order))
    return ju::Invalid("params.coefficients", "expected (order+1)(order+2)(order+3)/6 values");
  for (double c : p->coefficients)
    if (!std::isfinite(c)) return ju::Invalid("params.coefficients", "must be finite");
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
