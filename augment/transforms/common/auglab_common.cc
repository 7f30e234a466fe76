#include "augment/transforms/common/auglab_common.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/common/auglab_math.h"

namespace augmentd::auglab_internal {
namespace ju = json_util;

absl::StatusOr<std::vector<int64_t>> ChannelsFromConfig(const nlohmann::json& j, const std::string& where) {
  const std::string field = where + ".apply_to_channel";
  if (!j.contains("apply_to_channel")) return std::vector<int64_t>{0};
  auto v = ju::AsInts(j["apply_to_channel"], field);
  if (!v.ok()) return v.status();
  for (size_t i = 0; i < v->size(); ++i) {
    if ((*v)[i] < 0 || (*v)[i] >= 4096) return ju::Invalid(field, "channel indices must be in [0, 4096)");
    if (std::find(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(i), (*v)[i]) !=
        v->begin() + static_cast<std::ptrdiff_t>(i))
      return ju::Invalid(field, "duplicate channel");
  }
  return *v;
}

absl::Status CheckChannels(const std::vector<int64_t>& channels, int64_t sample_channels, const std::string& where) {
  for (int64_t c : channels) {
    if (c >= sample_channels) {
      return ju::Invalid(where + ".apply_to_channel",
                         absl::StrCat("channel ", c, " >= the sample's ", sample_channels, " channels"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ParamsChannels(const nlohmann::json& j, const std::vector<int64_t>& configured,
                                                    int64_t sample_channels) {
  std::vector<int64_t> channels = configured;
  if (j.contains("apply_to_channel")) {
    auto v = ChannelsFromConfig(j, "params");
    if (!v.ok()) return v.status();
    channels = std::move(*v);
  }
  if (absl::Status st = CheckChannels(channels, sample_channels, "params"); !st.ok()) return st;
  return channels;
}

absl::StatusOr<std::array<int32_t, 3>> Shape3(const std::vector<int64_t>& shape, const std::string& where) {
  if (shape.size() != 2 && shape.size() != 3) return ju::Invalid(where, "needs a 2D or 3D sample");
  std::array<int32_t, 3> s{1, 1, 1};
  const size_t off = 3 - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1 || shape[d] > (int64_t{1} << 30)) return ju::Invalid(where, "spatial size out of range");
    s[off + d] = static_cast<int32_t>(shape[d]);
  }
  return s;
}

void RetainStats(float* x, int64_t n, const kernels::ChannelStats& before) {
  namespace al = cuda::auglab;
  const kernels::ChannelStats after = kernels::ComputeStats(x, n, true);
  const al::RetainConsts c = al::MakeRetain(before.mean, before.std_unbiased, after.mean, after.std_unbiased);
  for (int64_t i = 0; i < n; ++i) x[i] = al::Retain(x[i], c);
}

}  // namespace augmentd::auglab_internal
