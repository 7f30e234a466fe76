// Region modes (AugLab 20260109 _choose_region_mode / _apply_region_mode): draws, JSON, and the CPU blend.
#include "augment/region_mode.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/status_macros.h"

namespace augmentd {
namespace ju = json_util;
namespace rm = region_mode;

absl::StatusOr<RegionModeConfig> RegionModeConfig::FromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return ju::Invalid(where, "expected an object {in_seg, out_seg, mix_in_out}");
  RETURN_IF_ERROR(ju::CheckKeys(j, {"in_seg", "out_seg", "mix_in_out", "per_sample_coins"}, where));
  RegionModeConfig c;
  ASSIGN_OR_RETURN(c.in_seg, ju::GetDouble(j, "in_seg", 0.0, where));
  ASSIGN_OR_RETURN(c.out_seg, ju::GetDouble(j, "out_seg", 0.0, where));
  ASSIGN_OR_RETURN(c.mix_in_out, ju::GetBool(j, "mix_in_out", false, where));
  ASSIGN_OR_RETURN(c.per_sample_coins, ju::GetBool(j, "per_sample_coins", false, where));
  RETURN_IF_ERROR(ju::CheckProbability(c.in_seg, where + ".in_seg"));
  RETURN_IF_ERROR(ju::CheckProbability(c.out_seg, where + ".out_seg"));
  return c;
}

nlohmann::json RegionModeConfig::ToJson() const {
  nlohmann::json j = {{"in_seg", in_seg}, {"out_seg", out_seg}, {"mix_in_out", mix_in_out}};
  if (per_sample_coins) j["per_sample_coins"] = true;
  return j;
}

RegionDraw DrawRegion(const RegionModeConfig& c, int64_t seg_channels, RandomStream& coins, RandomStream& mix) {
  RegionDraw r;
  r.seg_channels = static_cast<int32_t>(std::min<int64_t>(seg_channels, rm::kMaxSegChannels));
  const bool in = coins.Uniform() < c.in_seg;  // torch.rand(()) < p_in, then the out coin
  const bool out = coins.Uniform() < c.out_seg;
  r.mode = in && !out ? rm::kIn : (out && !in ? rm::kOut : rm::kAll);
  if (c.mix_in_out && r.mode != rm::kAll) {
    r.keep = 0;
    for (int32_t k = 0; k < r.seg_channels; ++k)
      if (mix.Uniform() < 0.5) r.keep |= uint64_t{1} << k;
  }
  return r;
}

nlohmann::json RegionDrawToJson(const RegionDraw& r) {
  static const char* const kNames[] = {"all", "in", "out"};
  nlohmann::json keep = nlohmann::json::array();
  for (int32_t k = 0; k < r.seg_channels; ++k) keep.push_back(((r.keep >> k) & 1u) != 0);
  return {{"mode", kNames[r.mode]}, {"keep", keep}};
}

absl::StatusOr<RegionDraw> RegionDrawFromJson(const nlohmann::json& j, int64_t seg_channels) {
  if (!j.is_object()) return ju::Invalid("region", "expected {\"mode\", \"keep\"}");
  RETURN_IF_ERROR(ju::CheckKeys(j, {"mode", "keep"}, "region"));
  ASSIGN_OR_RETURN(const std::string mode, ju::GetString(j, "mode", std::string("all"), "region"));
  RegionDraw r;
  r.seg_channels = static_cast<int32_t>(std::min<int64_t>(seg_channels, rm::kMaxSegChannels));
  if (mode == "all") {
    r.mode = rm::kAll;
  } else if (mode == "in") {
    r.mode = rm::kIn;
  } else if (mode == "out") {
    r.mode = rm::kOut;
  } else {
    return ju::Invalid("region.mode", absl::StrCat("'", mode, "' is not all, in or out"));
  }
  if (j.contains("keep")) {
    const nlohmann::json& k = j["keep"];
    if (!k.is_array() || static_cast<int64_t>(k.size()) != r.seg_channels)
      return ju::Invalid("region.keep", absl::StrCat("needs one bool per seg channel (", r.seg_channels, ")"));
    r.keep = 0;
    for (size_t i = 0; i < k.size(); ++i) {
      if (!k[i].is_boolean()) return ju::Invalid("region.keep", "must be booleans");
      if (k[i].get<bool>()) r.keep |= uint64_t{1} << i;
    }
  }
  return r;
}

absl::Status ApplyRegion(const RegionDraw& r, const std::vector<float>& orig, SampleData& sample) {
  if (r.mode == rm::kAll || sample.seg_channels == 0 || sample.seg.empty()) return absl::OkStatus();
  const int64_t n = sample.voxels();
  if (orig.size() != sample.image.size() || static_cast<int64_t>(sample.image.size()) != sample.channels * n)
    return ju::Invalid("region_mode", "the transform changed the image's size: region modes need an intensity kind");
  if (r.seg_channels != std::min<int64_t>(sample.seg_channels, rm::kMaxSegChannels))
    return ju::Invalid("region_mode", "the sample's seg channels changed since the draw");
  const int16_t* seg = sample.seg.data();
  for (int64_t c = 0; c < sample.channels; ++c) {
    float* t = sample.image.data() + c * n;
    const float* x = orig.data() + c * n;
    if (std::memcmp(t, x, static_cast<size_t>(n) * sizeof(float)) == 0) continue;  // the step left it alone
    const auto [xl, xh] = std::minmax_element(x, x + n);
    const auto [tl, th] = std::minmax_element(t, t + n);
    const rm::MinMax xs{*xl, *xh}, ts{*tl, *th};
    for (int64_t v = 0; v < n; ++v) {
      const float m = rm::RegionWeight(seg, v, n, r.seg_channels, r.mode, r.keep);
      t[v] = rm::RegionBlend(m, rm::RegionRescale(t[v], ts, xs), x[v]);
    }
  }
  return absl::OkStatus();
}

}  // namespace augmentd
