#include "augment/transforms/common/one_hot_channels.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/status_macros.h"

namespace augmentd::one_hot_channels {
namespace ju = json_util;

absl::StatusOr<std::vector<int64_t>> IntOrInts(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_integer()) return std::vector<int64_t>{v.get<int64_t>()};
  return ju::AsInts(v, field);
}

absl::StatusOr<int64_t> Resolve(int64_t c, int64_t channels, const std::string& field) {
  const int64_t r = c < 0 ? c + channels : c;
  if (r < 0 || r >= channels) {
    return ju::Invalid(field, absl::StrCat("channel ", c, " out of range for ", channels, " channels"));
  }
  return r;
}

absl::Status CheckChannelIdx(const std::vector<int64_t>& channel_idx, const std::string& kind) {
  if (channel_idx.empty()) return ju::Invalid(kind + ".channel_idx", "must not be empty");
  for (int64_t v : channel_idx)
    if (v < -4096 || v >= 4096) return ju::Invalid(kind + ".channel_idx", "out of range");
  return absl::OkStatus();
}

std::vector<int64_t> Draw(RandomStream& rng, std::vector<int64_t> order, double p_per_label) {
  for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) std::swap(order[i], order[rng.UniformInt(0, i)]);
  std::vector<int64_t> applied;
  for (int64_t c : order)
    if (rng.Uniform() < p_per_label) applied.push_back(c);
  return applied;
}

absl::StatusOr<std::vector<int64_t>> ParseApplied(const nlohmann::json& j, const std::vector<int64_t>& channel_idx,
                                                  int64_t channels) {
  std::vector<int64_t> applied;
  if (j.contains("apply_to_channels") && !j["apply_to_channels"].is_null()) {
    ASSIGN_OR_RETURN(applied, IntOrInts(j["apply_to_channels"], "params.apply_to_channels"));
  }
  for (int64_t c : applied) {
    if (std::find(channel_idx.begin(), channel_idx.end(), c) == channel_idx.end())
      return ju::Invalid("params.apply_to_channels", absl::StrCat("channel ", c, " is not in channel_idx"));
    if (channels > 0) RETURN_IF_ERROR(Resolve(c, channels, "params.apply_to_channels").status());
  }
  return applied;
}

}  // namespace augmentd::one_hot_channels
