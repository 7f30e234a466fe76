#include "augment/transforms/median_filter/median_filter.h"

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
constexpr char kW[] = "median_filter";
constexpr int64_t kMaxSize = 64;

// scipy 'reflect' (half-sample symmetric) index for any j, period 2n.
int64_t Reflect(int64_t j, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * n;
  int64_t m = j % period;
  if (m < 0) m += period;
  return m < n ? m : period - 1 - m;
}

// scipy.ndimage.median_filter(x, size=k) on a 2D/3D channel (origin 0, mode 'reflect').
void MedianFilter(const float* x, float* out, const std::vector<int64_t>& shape, int64_t k) {
  const size_t nd = shape.size();
  const int64_t X = shape[0], Y = shape[1], Z = nd == 3 ? shape[2] : 1;
  const int64_t kz = nd == 3 ? k : 1;
  const int64_t before = k / 2;
  const int64_t before_z = nd == 3 ? before : 0;
  // Per-axis index tables (window position w of output i -> source index).
  auto table = [&](int64_t n, int64_t kk, int64_t b) {
    std::vector<int64_t> t(static_cast<size_t>(n * kk));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t w = 0; w < kk; ++w) t[i * kk + w] = Reflect(i - b + w, n);
    return t;
  };
  const auto tx = table(X, k, before), ty = table(Y, k, before), tz = table(Z, kz, before_z);
  const int64_t count = k * k * kz;
  const int64_t rank = count / 2;
  std::vector<float> win(static_cast<size_t>(count));
  for (int64_t i = 0; i < X; ++i)
    for (int64_t j = 0; j < Y; ++j)
      for (int64_t l = 0; l < Z; ++l) {
        int64_t m = 0;
        for (int64_t a = 0; a < k; ++a) {
          const int64_t xa = tx[i * k + a] * Y;
          for (int64_t b = 0; b < k; ++b) {
            const float* row = x + (xa + ty[j * k + b]) * Z;
            for (int64_t c = 0; c < kz; ++c) win[m++] = row[tz[l * kz + c]];
          }
        }
        std::nth_element(win.begin(), win.begin() + rank, win.end());
        out[(i * Y + j) * Z + l] = win[rank];
      }
}
}  // namespace

const ConfigSchema<MedianFilterConfig>& MedianFilterTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<MedianFilterConfig>("median_filter"))
           ->Custom(
               "filter_size", "int | [int, int]", "window size: fixed, or drawn from randint [lo, hi)",
               [](const nlohmann::json& j, MedianFilterConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("filter_size")) return ju::Invalid(w + ".filter_size", "required");
                 if (j["filter_size"].is_number_integer()) {
                   c.fixed_size = true;
                   c.filter_size = {j["filter_size"].get<int64_t>(), j["filter_size"].get<int64_t>()};
                   return absl::OkStatus();
                 }
                 ASSIGN_OR_RETURN(auto v, ju::AsInts(j["filter_size"], w + ".filter_size"));
                 if (v.size() != 2) return ju::Invalid(w + ".filter_size", "expected an int or [lo, hi]");
                 c.filter_size = {v[0], v[1]};
                 return absl::OkStatus();
               },
               [](const MedianFilterConfig& c) {
                 return c.fixed_size ? nlohmann::json(c.filter_size[0])
                                     : nlohmann::json({c.filter_size[0], c.filter_size[1]});
               },
               /*required=*/true)
           .Add("p_same_for_each_channel", &MedianFilterConfig::p_same_for_each_channel,
                "probability that all channels share one window size", Probability())
           .Add("p_per_channel", &MedianFilterConfig::p_per_channel, "probability that a channel is selected",
                Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> MedianFilterTransform::Create(const MedianFilterConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  if (c.fixed_size) {
    if (c.filter_size[0] < 1 || c.filter_size[0] > kMaxSize)
      return ju::Invalid(w + ".filter_size", absl::StrCat("must be in [1, ", kMaxSize, "]"));
  } else if (c.filter_size[0] < 1 || c.filter_size[0] >= c.filter_size[1] || c.filter_size[1] > kMaxSize + 1) {
    return ju::Invalid(w + ".filter_size", absl::StrCat("expected [lo, hi) with 1 <= lo < hi <= ", kMaxSize + 1,
                                                        " (numpy randint)"));
  }
  return std::shared_ptr<const Transform>(new MedianFilterTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MedianFilterTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(MedianFilterConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json MedianFilterTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> MedianFilterTransform::Draw(DrawContext& ctx,
                                                                             const SampleLayout& layout) const {
  const size_t C = static_cast<size_t>(layout.channels);
  auto p = std::make_unique<MedianFilterParams>();
  const bool use_same = ctx.rng.Uniform() < config_.p_same_for_each_channel;
  auto randint = [&] { return ctx.rng.UniformInt(config_.filter_size[0], config_.filter_size[1] - 1); };
  if (config_.fixed_size) {
    p->filter_sizes.assign(C, config_.filter_size[0]);
  } else if (use_same) {
    p->filter_sizes.assign(C, randint());
  } else {
    for (size_t c = 0; c < C; ++c) p->filter_sizes.push_back(randint());
  }
  for (size_t c = 0; c < C; ++c) p->apply_channel.push_back(ctx.rng.Uniform() < config_.p_per_channel);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status MedianFilterTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const MedianFilterParams* p, ParamsAs<MedianFilterParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  if (s.shape.size() != 2 && s.shape.size() != 3) return ju::Invalid(std::string(kW), "needs 2 or 3 spatial dims");
  const int64_t n = s.voxels();
  std::vector<float> tmp;
  for (int64_t c = 0; c < s.channels && c < static_cast<int64_t>(p->apply_channel.size()); ++c) {
    if (!p->apply_channel[c]) continue;
    const int64_t k = p->filter_sizes[c];
    if (k == 1) continue;  // identity
    float* x = s.image.data() + c * n;
    tmp.resize(static_cast<size_t>(n));
    MedianFilter(x, tmp.data(), s.shape, k);
    std::copy(tmp.begin(), tmp.end(), x);
  }
  return absl::OkStatus();
}

nlohmann::json MedianFilterTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const MedianFilterParams&>(params);
  return {{"filter_sizes", p.filter_sizes}, {"apply_channel", p.apply_channel}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> MedianFilterTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"filter_sizes", "apply_channel"}, "params"));
  auto p = std::make_unique<MedianFilterParams>();
  const size_t C = static_cast<size_t>(layout.channels);
  for (const char* key : {"filter_sizes", "apply_channel"}) {
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != C)
      return ju::Invalid(absl::StrCat("params.", key), absl::StrCat("needs ", C, " entries (one per channel)"));
  }
  ASSIGN_OR_RETURN(p->filter_sizes, ju::AsInts(j["filter_sizes"], "params.filter_sizes"));
  for (int64_t k : p->filter_sizes)
    if (k < 1 || k > kMaxSize) return ju::Invalid("params.filter_sizes", absl::StrCat("must be in [1, ", kMaxSize, "]"));
  ASSIGN_OR_RETURN(p->apply_channel, ju::AsBools(j["apply_channel"], "params.apply_channel"));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
