#include "augment/transforms/common/auglab_region.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/common/auglab_math.h"
#include "augment/status_macros.h"

namespace augmentd::auglab_region {
namespace ju = json_util;
namespace al = cuda::auglab;

namespace {
constexpr const char* kModeNames[3] = {"all", "in", "out"};
constexpr int64_t kMaxSegChannel = 4096;

absl::Status SegChannelMissing(int64_t seg_channel, int64_t seg_channels, const std::string& where) {
  return ju::Invalid(where + ".seg_channel", absl::StrCat("channel ", seg_channel, " >= the sample's ", seg_channels,
                                                          " segmentation channels"));
}
}  // namespace

std::vector<std::string> WithConfigKeys(std::vector<std::string> own) {
  for (const char* k : {"in_seg", "out_seg", "mix_in_out", "seg_channel"}) own.emplace_back(k);
  return own;
}

absl::Status Validate(const AuglabRegionConfig& c, const std::string& where) {
  RETURN_IF_ERROR(ju::CheckProbability(c.in_seg, where + ".in_seg"));
  RETURN_IF_ERROR(ju::CheckProbability(c.out_seg, where + ".out_seg"));
  if (c.seg_channel < 0 || c.seg_channel >= kMaxSegChannel)
    return ju::Invalid(where + ".seg_channel", absl::StrCat("must be in [0, ", kMaxSegChannel, ")"));
  return absl::OkStatus();
}

absl::StatusOr<AuglabRegionConfig> FromConfigJson(const nlohmann::json& j, const std::string& where) {
  AuglabRegionConfig c;
  ASSIGN_OR_RETURN(c.in_seg, ju::GetDouble(j, "in_seg", 0.0, where));
  ASSIGN_OR_RETURN(c.out_seg, ju::GetDouble(j, "out_seg", 0.0, where));
  ASSIGN_OR_RETURN(c.mix_in_out, ju::GetBool(j, "mix_in_out", false, where));
  ASSIGN_OR_RETURN(c.seg_channel, ju::GetInt(j, "seg_channel", 0, where));
  RETURN_IF_ERROR(Validate(c, where));
  return c;
}

void ToConfigJson(const AuglabRegionConfig& c, nlohmann::json& out) {
  const AuglabRegionConfig d;
  if (c.in_seg != d.in_seg) out["in_seg"] = c.in_seg;
  if (c.out_seg != d.out_seg) out["out_seg"] = c.out_seg;
  if (c.mix_in_out != d.mix_in_out) out["mix_in_out"] = c.mix_in_out;
  if (c.seg_channel != d.seg_channel) out["seg_channel"] = c.seg_channel;
}

absl::Status CheckSegChannel(const AuglabRegionConfig& c, int64_t seg_channels, const std::string& where) {
  if (!c.enabled() || seg_channels == 0 || c.seg_channel < seg_channels) return absl::OkStatus();
  return SegChannelMissing(c.seg_channel, seg_channels, where);
}

std::vector<AuglabRegion> Draw(const AuglabRegionConfig& c, size_t slots, RandomStream& rng) {
  std::vector<AuglabRegion> r(slots);
  for (AuglabRegion& s : r) {
    const bool in = rng.Uniform() < c.in_seg;
    const bool out = rng.Uniform() < c.out_seg;
    s.mode = al::RegionFromCoins(in, out);
    if (c.mix_in_out && s.mode != al::kRegionAll) {
      const uint64_t lo = rng.NextU32();
      s.keep = lo | (uint64_t{rng.NextU32()} << 32);
    }
  }
  return r;
}

void ToParamsJson(const std::vector<AuglabRegion>& r, nlohmann::json& out) {
  if (r.empty()) return;
  nlohmann::json modes = nlohmann::json::array(), keep = nlohmann::json::array();
  for (const AuglabRegion& s : r) {
    modes.push_back(kModeNames[s.mode]);
    keep.push_back(s.keep);
  }
  out["region"] = std::move(modes);
  out["region_labels"] = std::move(keep);
}

absl::StatusOr<std::vector<AuglabRegion>> FromParamsJson(const nlohmann::json& j, size_t slots) {
  std::vector<AuglabRegion> r;
  if (!j.contains("region")) {
    if (j.contains("region_labels")) return ju::Invalid("params.region_labels", "needs params.region");
    return r;
  }
  const nlohmann::json& modes = j["region"];
  if (!modes.is_array() || modes.size() != slots)
    return ju::Invalid("params.region", absl::StrCat("needs ", slots, " entries (\"all\", \"in\" or \"out\")"));
  const bool has_keep = j.contains("region_labels");
  if (has_keep && (!j["region_labels"].is_array() || j["region_labels"].size() != slots))
    return ju::Invalid("params.region_labels", absl::StrCat("needs ", slots, " unsigned 64-bit label masks"));
  r.resize(slots);
  for (size_t i = 0; i < slots; ++i) {
    const std::string name = modes[i].is_string() ? modes[i].get<std::string>() : "";
    int32_t m = -1;
    for (int32_t k = 0; k < 3; ++k)
      if (name == kModeNames[k]) m = k;
    if (m < 0) return ju::Invalid("params.region", "entries must be \"all\", \"in\" or \"out\"");
    r[i].mode = m;
    if (has_keep) {
      const nlohmann::json& k = j["region_labels"][i];
      if (!k.is_number_unsigned() && !(k.is_number_integer() && k.get<int64_t>() >= 0))
        return ju::Invalid("params.region_labels", "entries must be unsigned 64-bit label masks");
      r[i].keep = k.get<uint64_t>();
    }
  }
  return r;
}

absl::Status CheckSlots(const std::vector<AuglabRegion>& r, size_t slots) {
  if (r.empty() || r.size() == slots) return absl::OkStatus();
  return ju::Invalid("params.region", absl::StrCat("needs ", slots, " entries, has ", r.size()));
}

absl::Status RestoreOutside(float* x, const float* orig, const SampleData& s, const AuglabRegionConfig& c,
                            AuglabRegion r, const std::string& where) {
  if (r.mode == al::kRegionAll || s.seg_channels == 0) return absl::OkStatus();
  if (c.seg_channel >= s.seg_channels) return SegChannelMissing(c.seg_channel, s.seg_channels, where);
  const int64_t n = s.voxels();
  const int16_t* labels = s.seg_data() + c.seg_channel * n;
  for (int64_t v = 0; v < n; ++v)
    if (!al::TakesTransformed(labels[v], r.mode, r.keep)) x[v] = orig[v];
  return absl::OkStatus();
}

}  // namespace augmentd::auglab_region
