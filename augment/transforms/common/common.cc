#include "augment/transforms/common/common.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"

namespace augmentd::transforms_internal {

absl::StatusOr<std::vector<float>> PerChannelFloatsFromJson(const nlohmann::json& j, const std::string& key, size_t n) {
  const std::string field = "params." + key;
  std::vector<double> m;
  if (j.contains(key) && !j[key].is_null()) {
    auto v = json_util::AsDoubles(j[key], field);
    if (!v.ok()) return v.status();
    m = std::move(*v);
  }
  if (m.size() != n) return json_util::Invalid(field, absl::StrCat("needs ", n, " entries"));
  return std::vector<float>(m.begin(), m.end());
}

std::vector<float> SamplePerChannel(RandomStream& rng, const RandomScalar& r, size_t n, bool synchronize) {
  std::vector<float> v;
  if (synchronize) {
    v.assign(n, static_cast<float>(r.Sample(rng)));
  } else {
    for (size_t i = 0; i < n; ++i) v.push_back(static_cast<float>(r.Sample(rng)));
  }
  return v;
}

std::vector<int64_t> SelectChannels(RandomStream& rng, int64_t channels, double p) {
  std::vector<int64_t> idx;
  for (int64_t c = 0; c < channels; ++c)
    if (rng.Uniform() < p) idx.push_back(c);
  return idx;
}

absl::StatusOr<std::vector<int64_t>> ChannelIndicesFromJson(const nlohmann::json& v, int64_t channels,
                                                            const std::string& field) {
  std::vector<int64_t> out;
  if (v.is_null()) return out;
  if (!v.is_array()) return json_util::Invalid(field, "expected a list of channel indices");
  const bool is_mask = !v.empty() && v[0].is_boolean();
  if (is_mask) {
    if (static_cast<int64_t>(v.size()) != channels) {
      return json_util::Invalid(field, absl::StrCat("bool mask needs ", channels, " entries"));
    }
    for (int64_t c = 0; c < channels; ++c) {
      if (!v[c].is_boolean()) return json_util::Invalid(field, "mixed bool/int list");
      if (v[c].get<bool>()) out.push_back(c);
    }
    return out;
  }
  for (const auto& e : v) {
    if (!e.is_number_integer()) return json_util::Invalid(field, "expected integer channel indices");
    const int64_t c = e.get<int64_t>();
    if (c < 0 || c >= channels)
      return json_util::Invalid(field, absl::StrCat("channel ", c, " not in [0, ", channels, ")"));
    out.push_back(c);
  }
  return out;
}

absl::Status RequireImage(const SampleData& s, std::string_view transform) {
  if (s.channels <= 0 || s.shape.empty() || static_cast<int64_t>(s.image.size()) != s.channels * s.voxels()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(transform), ": sample has no image"));
  }
  return absl::OkStatus();
}

absl::Status RequireSeg(const SampleData& s, std::string_view transform) {
  if (s.seg_channels <= 0 || static_cast<int64_t>(s.seg.size()) != s.seg_channels * s.voxels()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(transform), ": sample has no segmentation"));
  }
  return absl::OkStatus();
}

}  // namespace augmentd::transforms_internal
