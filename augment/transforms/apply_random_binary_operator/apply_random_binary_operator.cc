#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/one_hot_channels.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr const char* kName = "apply_random_binary_operator";
constexpr std::pair<BinaryOperator, const char*> kOperatorNames[] = {{BinaryOperator::kDilation, "dilation"},
                                                                     {BinaryOperator::kErosion, "erosion"},
                                                                     {BinaryOperator::kClosing, "closing"},
                                                                     {BinaryOperator::kOpening, "opening"}};
using one_hot_channels::IntOrInts;
}  // namespace

std::string_view BinaryOperatorName(BinaryOperator op) {
  for (const auto& [o, n] : kOperatorNames)
    if (o == op) return n;
  return "unknown";
}

absl::StatusOr<BinaryOperator> ParseBinaryOperator(const std::string& name, const std::string& field) {
  for (const auto& [o, n] : kOperatorNames)
    if (name == n) return o;
  return ju::Invalid(field, absl::StrCat("unknown operator '", name, "' (dilation, erosion, closing, opening)"));
}

namespace binary_operator_internal {

// Why this exact arithmetic: a fractional radius gives an off-centre grid (disk) or a grid of int(2r + 1) points
// (ball); the footprint is bgv2's only when the same float64 grid is rebuilt.
std::vector<double> AxisCosts(double r, int ndim) {
  std::vector<double> grid;
  if (ndim == 2) {
    // np.arange(-r, r + 1): ceil((stop − start) / 1) values start + i·delta, delta = (start + 1) − start.
    const double start = -r, stop = r + 1;
    const auto len = static_cast<int64_t>(std::ceil(stop - start));
    const double delta = (start + 1.0) - start;
    for (int64_t i = 0; i < len; ++i) grid.push_back(start + static_cast<double>(i) * delta);
  } else {
    // np.mgrid[-r:r:n*1j] with n = 2r + 1: int(n) points i·(2r / (int(n) − 1)) − r.
    const auto len = static_cast<int64_t>(2 * r + 1);
    const double step = len != 1 ? (r - (-r)) / static_cast<double>(len - 1) : 1.0;
    for (int64_t i = 0; i < len; ++i) grid.push_back(static_cast<double>(i) * step + -r);
  }
  std::vector<double> h(grid.size());
  for (size_t i = 0; i < grid.size(); ++i) h[i] = grid[i] * grid[i];
  return h;
}

std::vector<uint8_t> Footprint(double r, int ndim, std::vector<int64_t>& dims) {
  const std::vector<double> h = AxisCosts(r, ndim);
  const int64_t k = static_cast<int64_t>(h.size());
  dims.assign(ndim, k);
  std::vector<uint8_t> fp;
  const double r2 = r * r;
  if (ndim == 2) {
    fp.resize(static_cast<size_t>(k * k));
    for (int64_t i = 0; i < k; ++i)     // meshgrid(L, L): X varies along axis 1, Y along axis 0; s = X² + Y²
      for (int64_t j = 0; j < k; ++j) fp[i * k + j] = (h[j] + h[i]) <= r2;
  } else {
    fp.resize(static_cast<size_t>(k * k * k));
    for (int64_t a = 0; a < k; ++a)     // Z, Y, X = mgrid: Z along axis 0, X along axis 2; s = X² + Y² + Z²
      for (int64_t b = 0; b < k; ++b)
        for (int64_t c = 0; c < k; ++c) fp[(a * k + b) * k + c] = ((h[c] + h[b]) + h[a]) <= r2;
  }
  return fp;
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// The three min-plus passes, each out[i] = min over j ∈ [0, k) with q = i + (j − o)·e_axis inside the volume of
// in[q] + h[j] (o = floor((k − 1) / 2), +inf when none), written as loops over whole rows of the last axis (the
// minimum is exact, so any order gives the same bits).
// Last axis, from the 0/1 mask (in = 0 on the mask: 0 + h[j] = h[j]).
void RowPass(const std::vector<uint8_t>& m, const int64_t d[3], const std::vector<double>& h, std::vector<double>& out) {
  const int64_t k = static_cast<int64_t>(h.size()), o = (k - 1) / 2, len = d[2];
  out.assign(m.size(), kInf);
  for (int64_t row = 0; row < d[0] * d[1]; ++row) {
    const uint8_t* src = m.data() + row * len;
    double* dst = out.data() + row * len;
    for (int64_t j = 0; j < k; ++j) {  // dst[c] ← min(dst[c], h[j]) where src[c + j − o]
      const int64_t shift = j - o, c_lo = std::max<int64_t>(0, -shift), c_hi = std::min(len, len - shift);
      const double hj = h[j];
      for (int64_t c = c_lo; c < c_hi; ++c) dst[c] = src[c + shift] ? std::min(dst[c], hj) : dst[c];
    }
  }
}

// Axis 0 or 1 (`stride` = d1·d2 or d2 elements between neighbours, `len` = d0 or d1 of them).
void ColumnPass(const std::vector<double>& in, const int64_t d[3], int axis, const std::vector<double>& h,
                std::vector<double>& out) {
  const int64_t k = static_cast<int64_t>(h.size()), o = (k - 1) / 2, len = d[axis];
  const int64_t stride = axis == 1 ? d[2] : d[1] * d[2];
  out.assign(in.size(), kInf);
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b) {
      const int64_t pos = axis == 0 ? a : b, row = (a * d[1] + b) * d[2];
      double* dst = out.data() + row;
      for (int64_t j = std::max<int64_t>(0, o - pos); j < std::min(k, len + o - pos); ++j) {
        const double* src = in.data() + row + (j - o) * stride;
        const double hj = h[j];
        for (int64_t c = 0; c < d[2]; ++c) dst[c] = std::min(dst[c], src[c] + hj);
      }
    }
}

// Dilation of the 0/1 mask m (3D form d0 × d1 × d2; 2D = 1 × X × Y, whose leading axis is no footprint axis) by the
// footprint of AxisCosts `h`: [D ≤ r2], D = the min-plus passes, last axis first (ApplyOperator's comment).
std::vector<uint8_t> Dilate3(const std::vector<uint8_t>& m, const int64_t d[3], int ndim,
                             const std::vector<double>& h, double r2) {
  std::vector<double> x, y;
  RowPass(m, d, h, x);
  for (int axis = 1; axis >= 3 - ndim; --axis) {
    ColumnPass(x, d, axis, h, y);
    x.swap(y);
  }
  std::vector<uint8_t> out(m.size());
  for (size_t i = 0; i < m.size(); ++i) out[i] = x[i] <= r2;
  return out;
}

std::vector<uint8_t> Not(std::vector<uint8_t> m) {
  for (uint8_t& v : m) v = !v;
  return m;
}
}  // namespace

std::vector<uint8_t> ApplyOperator(BinaryOperator op, const std::vector<uint8_t>& m, const std::vector<int64_t>& shape,
                                   double r) {
  int64_t d[3] = {1, 1, 1};
  const size_t off = 3 - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) d[off + i] = shape[i];
  const int ndim = static_cast<int>(shape.size());
  const std::vector<double> h = AxisCosts(r, ndim);
  const double r2 = r * r;
  auto dilate = [&](const std::vector<uint8_t>& x) { return Dilate3(x, d, ndim, h, r2); };
  auto erode = [&](const std::vector<uint8_t>& x) { return Not(Dilate3(Not(x), d, ndim, h, r2)); };
  switch (op) {
    case BinaryOperator::kDilation: return dilate(m);
    case BinaryOperator::kErosion: return erode(m);
    case BinaryOperator::kOpening: return dilate(erode(m));
    case BinaryOperator::kClosing: return erode(dilate(m));
  }
  return m;
}

}  // namespace binary_operator_internal

const ConfigSchema<ApplyRandomBinaryOperatorConfig>& ApplyRandomBinaryOperatorTransform::Schema() {
  using C = ApplyRandomBinaryOperatorConfig;
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
           .Add("strel_size", &C::strel_size, "radius of the ball structuring element, drawn per applied channel",
                InRange(0, 32))
           .Add("p_per_label", &C::p_per_label, "probability that a listed channel is perturbed", Probability())
           .Custom(
               "any_of_these", "string[]", "operators drawn from: dilation, erosion, closing, opening",
               [](const nlohmann::json& j, C& c, const std::string& w) -> absl::Status {
                 if (!j.contains("any_of_these") || j["any_of_these"].is_null()) return absl::OkStatus();
                 const std::string f = w + ".any_of_these";
                 if (!j["any_of_these"].is_array()) return ju::Invalid(f, "must be a list");
                 c.any_of_these.clear();
                 for (const auto& v : j["any_of_these"]) {
                   if (!v.is_string()) return ju::Invalid(f, "names must be strings");
                   ASSIGN_OR_RETURN(BinaryOperator op, ParseBinaryOperator(v.get<std::string>(), f));
                   c.any_of_these.push_back(op);
                 }
                 return absl::OkStatus();
               },
               [](const C& c) {
                 nlohmann::json ops = nlohmann::json::array();
                 for (BinaryOperator o : c.any_of_these) ops.push_back(std::string(BinaryOperatorName(o)));
                 return ops;
               });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> ApplyRandomBinaryOperatorTransform::Create(
    const ApplyRandomBinaryOperatorConfig& c) {
  RETURN_IF_ERROR(one_hot_channels::CheckChannelIdx(c.channel_idx, kName));
  RETURN_IF_ERROR(Schema().Validate(c));  // strel_size, p_per_label
  if (c.any_of_these.empty()) return ju::Invalid("apply_random_binary_operator.any_of_these", "must not be empty");
  return std::shared_ptr<const Transform>(new ApplyRandomBinaryOperatorTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ApplyRandomBinaryOperatorTransform::FromJson(
    const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ApplyRandomBinaryOperatorConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json ApplyRandomBinaryOperatorTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> ApplyRandomBinaryOperatorTransform::Draw(
    DrawContext& ctx, const SampleLayout&) const {
  auto p = std::make_unique<ApplyRandomBinaryOperatorParams>();
  // np.random.shuffle (Fisher–Yates), then one torch.rand coin per shuffled channel.
  p->apply_to_channels = one_hot_channels::Draw(ctx.rng, config_.channel_idx, config_.p_per_label);
  const auto nops = static_cast<int64_t>(config_.any_of_these.size());
  for (size_t i = 0; i < p->apply_to_channels.size(); ++i)
    p->operators.push_back(config_.any_of_these[ctx.rng.UniformInt(0, nops - 1)]);
  for (size_t i = 0; i < p->apply_to_channels.size(); ++i) p->strel_size.push_back(config_.strel_size.Sample(ctx.rng));
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status ApplyRandomBinaryOperatorTransform::Apply(const TransformParams& params, SampleData& s) const {
  namespace bo = binary_operator_internal;
  ASSIGN_OR_RETURN(const auto* p, ParamsAs<ApplyRandomBinaryOperatorParams>(params, kName));
  RETURN_IF_ERROR(RequireImage(s, kName));
  if (s.shape.size() != 2 && s.shape.size() != 3) return ju::Invalid("image.shape", "needs 2 or 3 spatial dims");
  if (p->operators.size() != p->apply_to_channels.size() || p->strel_size.size() != p->apply_to_channels.size())
    return ju::Invalid("params", "operators and strel_size need one entry per applied channel");
  const int64_t n = s.voxels();
  std::vector<uint8_t> m(static_cast<size_t>(n));
  for (size_t k = 0; k < p->apply_to_channels.size(); ++k) {
    const int64_t raw = p->apply_to_channels[k];
    ASSIGN_OR_RETURN(const int64_t a, one_hot_channels::Resolve(raw, s.channels, "params.apply_to_channels"));
    float* x = s.image.data() + a * n;
    for (int64_t v = 0; v < n; ++v) m[v] = x[v] != 0.0f;
    const std::vector<uint8_t> r = bo::ApplyOperator(p->operators[k], m, s.shape, p->strel_size[k]);
    for (int64_t oc_raw : config_.channel_idx) {  // bgv2: other_ch = [i for i in channel_idx if i != a]
      if (oc_raw == raw) continue;
      ASSIGN_OR_RETURN(const int64_t oc, one_hot_channels::Resolve(oc_raw, s.channels, "apply_random_binary_operator.channel_idx"));
      float* y = s.image.data() + oc * n;
      for (int64_t v = 0; v < n; ++v)
        if (r[v] && !m[v]) y[v] = 0.0f;
    }
    for (int64_t v = 0; v < n; ++v) x[v] = r[v] ? 1.0f : 0.0f;
  }
  return absl::OkStatus();
}

nlohmann::json ApplyRandomBinaryOperatorTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const ApplyRandomBinaryOperatorParams&>(params);
  nlohmann::json ops = nlohmann::json::array();
  for (BinaryOperator o : p.operators) ops.push_back(std::string(BinaryOperatorName(o)));
  return {{"apply_to_channels", p.apply_to_channels}, {"operators", ops}, {"strel_size", p.strel_size}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> ApplyRandomBinaryOperatorTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channels", "operators", "strel_size"}, "params"));
  auto p = std::make_unique<ApplyRandomBinaryOperatorParams>();
  ASSIGN_OR_RETURN(p->apply_to_channels, one_hot_channels::ParseApplied(j, config_.channel_idx, layout.channels));
  const size_t n = p->apply_to_channels.size();
  if (n == 0) return std::unique_ptr<TransformParams>(std::move(p));
  for (const char* key : {"operators", "strel_size"}) {
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != n)
      return ju::Invalid(absl::StrCat("params.", key), absl::StrCat("needs ", n, " entries (one per applied channel)"));
  }
  for (const auto& v : j["operators"]) {
    if (!v.is_string()) return ju::Invalid("params.operators", "names must be strings");
    ASSIGN_OR_RETURN(auto op, ParseBinaryOperator(v.get<std::string>(), "params.operators"));
    p->operators.push_back(op);
  }
  ASSIGN_OR_RETURN(p->strel_size, ju::AsDoubles(j["strel_size"], "params.strel_size"));
  for (double r : p->strel_size)
    if (!(r >= 0 && r <= 32)) return ju::Invalid("params.strel_size", "must lie in [0, 32]");
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
