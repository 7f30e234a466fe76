// Pipeline specs and nnU-Net presets (nnUNetTrainer.py get_training_transforms / get_validation_transforms,
// compute_initial_patch_size.py get_patch_size).
#include "augment/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/registry.h"
#include "augment/status_macros.h"
#include "augment/types.h"
#include "augment/transforms/blank_rectangle/blank_rectangle.h"
#include "augment/transforms/brightness_additive/brightness_additive.h"
#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"
#include "augment/transforms/contrast/contrast.h"
#include "augment/transforms/convert_segmentation_to_regions/convert_segmentation_to_regions.h"
#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"
#include "augment/transforms/gamma/gamma.h"
#include "augment/transforms/gaussian_blur/gaussian_blur.h"
#include "augment/transforms/gaussian_noise/gaussian_noise.h"
#include "augment/transforms/local_gamma/local_gamma.h"
#include "augment/transforms/mask_image/mask_image.h"
#include "augment/transforms/median_filter/median_filter.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/multiplicative_brightness/multiplicative_brightness.h"
#include "augment/transforms/remove_label/remove_label.h"
#include "augment/transforms/rot90/rot90.h"
#include "augment/transforms/sharpening/sharpening.h"
#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"
#include "augment/transforms/spatial/spatial.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"

namespace augmentd {
namespace ju = json_util;

absl::StatusOr<TransformSpec> TransformSpec::Make(std::shared_ptr<const Transform> transform, double p) {
  if (transform == nullptr) return ju::Invalid("transform", "must not be null");
  RETURN_IF_ERROR(ju::CheckProbability(p, "apply_probability"));
  TransformSpec s;
  s.kind = transform->kind();
  s.apply_probability = p;
  s.transform = std::move(transform);
  return s;
}

namespace {
// Region modes blend a step's output with its input voxel by voxel over the labels: only for steps that keep the
// image's layout and leave the labels alone (redistribute_seg reads them only).
absl::Status CheckRegionModeKind(const Transform& t) {
  const std::vector<int64_t> probe = {7, 9, 11};
  int64_t c = 2, sc = 1;
  t.OutputChannels(c, sc);
  const bool reads_labels_only = t.kind() == TransformKind::kRedistributeSeg;
  if (t.kind() == TransformKind::kSpatial || ChangesOutputLayout(t.kind()) || t.OutputShape(probe) != probe ||
      c != 2 || sc != 1 || (t.UsesLabels() && !reads_labels_only)) {
    return ju::Invalid("transform.region_mode",
                       absl::StrCat("only intensity kinds take a region mode (", std::string(t.name()),
                                    " changes the layout or the labels)"));
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<TransformSpec> TransformSpec::FromJson(const nlohmann::json& j) {
  RETURN_IF_ERROR(ju::CheckDepth(j, "transform"));
  RETURN_IF_ERROR(
      ju::CheckKeys(j, {"kind", "apply_probability", "config", "one_of_group", "same_on_batch", "region_mode", "channels"},
                    "transform"));
  ASSIGN_OR_RETURN(std::string kind, ju::GetString(j, "kind", std::nullopt, "transform"));
  ASSIGN_OR_RETURN(double p, ju::GetDouble(j, "apply_probability", 1.0, "transform"));
  ASSIGN_OR_RETURN(int64_t group, ju::GetInt(j, "one_of_group", 0, "transform"));
  if (group < 0 || group > 0xFFFFF) return ju::Invalid("transform.one_of_group", "must be in [0, 2^20)");
  ASSIGN_OR_RETURN(auto t, TransformFromJson(kind, j.value("config", nlohmann::json::object())));
  ASSIGN_OR_RETURN(TransformSpec s, Make(std::move(t), p));
  s.one_of_group = static_cast<uint32_t>(group);
  if (j.contains("same_on_batch") && !j["same_on_batch"].is_null()) {
    const nlohmann::json& b = j["same_on_batch"];
    if (b.is_boolean()) {
      s.same_on_batch = b.get<bool>() ? BatchMode::kPerBatch : BatchMode::kPerSample;
    } else if (b.is_string() && b.get<std::string>() == "decision") {
      s.same_on_batch = BatchMode::kPerBatchDecision;
    } else {
      return ju::Invalid("transform.same_on_batch",
                         absl::StrCat("expected false, true or \"decision\", got ", b.dump()));
    }
  }
  if (j.contains("region_mode") && !j["region_mode"].is_null()) {
    ASSIGN_OR_RETURN(s.region_mode, RegionModeConfig::FromJson(j["region_mode"], "transform.region_mode"));
    if (s.region_mode.enabled()) RETURN_IF_ERROR(CheckRegionModeKind(*s.transform));
  }
  if (j.contains("channels") && !j["channels"].is_null()) {
    ASSIGN_OR_RETURN(s.channels, ju::AsInts(j["channels"], "transform.channels"));
    if (s.channels.empty()) return ju::Invalid("transform.channels", "must name at least one channel (omit: all)");
    for (size_t i = 0; i < s.channels.size(); ++i) {
      if (s.channels[i] < 0 || s.channels[i] > 4095)
        return ju::Invalid("transform.channels", absl::StrCat("channel ", s.channels[i], " outside [0, 4095]"));
      for (size_t k = 0; k < i; ++k)
        if (s.channels[k] == s.channels[i])
          return ju::Invalid("transform.channels", absl::StrCat("channel ", s.channels[i], " named twice"));
    }
    if (s.transform->UsesLabels() || ChangesOutputLayout(s.kind))
      return ju::Invalid("transform.channels", absl::StrCat(kind, ": a channel selection needs an image-only kind ",
                                                            "that keeps the layout"));
  }
  return s;
}

bool TransformSpec::SelectedFor(uint64_t seed, uint64_t sample_index) const {
  if (one_of_group == 0 || one_of_size <= 1) return true;
  RandomStream rng(seed, sample_index, kOneOfTransformIndex, one_of_group);
  return rng.UniformInt(0, one_of_size - 1) == one_of_index;
}

absl::Status PipelineSpec::ResolveOneOfGroups() {
  for (size_t i = 0; i < transforms.size();) {
    size_t e = i + 1;
    const uint32_t g = transforms[i].one_of_group;
    if (g != 0) {
      while (e < transforms.size() && transforms[e].one_of_group == g) ++e;
      for (size_t k = e; k < transforms.size(); ++k)
        if (transforms[k].one_of_group == g)
          return ju::Invalid(absl::StrCat("pipeline.transforms[", k, "].one_of_group"),
                             absl::StrCat("group ", g, " must be one run of consecutive entries"));
    }
    for (size_t k = i; k < e; ++k) {
      transforms[k].one_of_index = static_cast<int32_t>(k - i);
      transforms[k].one_of_size = static_cast<int32_t>(e - i);
    }
    i = e;
  }
  return absl::OkStatus();
}

bool ChangesOutputLayout(TransformKind k) { return (FindTransform(k).caps & kCapChangesOutputLayout) != 0; }

absl::Status PipelineSpec::CheckLayoutStable(const std::vector<int64_t>& input_shape) const {
  size_t ds = SIZE_MAX, regions = SIZE_MAX;  // the first downsample_seg_for_ds / convert_segmentation_to_regions
  std::vector<int64_t> shape = input_shape.empty() ? input_patch_size : input_shape;  // entering entry i; {}: unknown
  for (size_t i = 0; i < transforms.size(); ++i) {
    const TransformSpec& ts = transforms[i];
    // Built only for an error: both engines run this for every batch when an entry is skippable.
    const auto field = [i] { return absl::StrCat("pipeline.transforms[", i, "]"); };
    if (!shape.empty()) {
      std::vector<int64_t> out = ts.transform->OutputShape(shape);
      // (a rank change is a malformed entry — e.g. a 3D patch on 2D samples — that the transform itself reports)
      if (ts.Skippable() && out != shape && out.size() == shape.size()) {
        return ju::Invalid(field(), absl::StrCat("(", std::string(TransformKindName(ts.kind)),
                                               ") changes the sample's shape ", ShapeString(shape), " -> ",
                                               ShapeString(out),
                                               " but can be skipped (apply_probability < 1 or a one_of_group): the "
                                               "samples of one batch would disagree on their shape; give it "
                                               "apply_probability 1 (its own probabilities draw the augmentation), "
                                               "make its patch the input's shape, or remove it"));
      }
      shape = std::move(out);
    }
    if (ts.kind == TransformKind::kSpatial && regions != SIZE_MAX) {
      const nlohmann::json c = ts.transform->ConfigToJson();
      const bool constant = c.value("border_mode_seg", std::string("zeros")) == "constant";
      const double pad = constant ? c.value("padding_value_seg", 0.0) : 0.0;
      if (pad != 0 && pad != 1) {
        return ju::Invalid(field(), absl::StrCat("(spatial) after convert_segmentation_to_regions (transform ", regions,
                                               "): padding_value_seg is ", pad, " with border_mode_seg 'constant', "
                                               "but region channels are 0/1 and -1 would make every out-of-bounds "
                                               "voxel foreground: use a fill of 0 or 1, or border_mode_seg 'zeros'"));
      }
    }
    if (ts.kind == TransformKind::kConvertSegmentationToRegions && regions == SIZE_MAX) regions = i;
    if (ds != SIZE_MAX && (ts.transform->UsesLabels() || ts.region_mode.enabled())) {
      return ju::Invalid(field(), absl::StrCat("(", std::string(TransformKindName(ts.kind)),
                                             ") uses the labels after downsample_seg_for_ds (transform ", ds,
                                             "), whose label pyramid is final: move it before that entry"));
    }
    if (ts.kind == TransformKind::kDownsampleSegForDs && ds == SIZE_MAX) ds = i;
    if (!ChangesOutputLayout(ts.kind) || !ts.Skippable()) continue;
    return ju::Invalid(field(), absl::StrCat("(", std::string(TransformKindName(ts.kind)), ") changes the output layout",
                                             ts.apply_probability < 1 ? ": apply_probability must be 1"
                                                                      : ": it cannot be a member of a one_of_group"));
  }
  return absl::OkStatus();
}

bool PipelineSpec::HasSkippableEntry() const {
  return std::any_of(transforms.begin(), transforms.end(), [](const TransformSpec& ts) { return ts.Skippable(); });
}

nlohmann::json TransformSpec::ToJson() const {
  nlohmann::json j = {{"kind", std::string(TransformKindName(kind))},
                      {"apply_probability", apply_probability},
                      {"config", transform->ConfigToJson()}};
  if (one_of_group != 0) j["one_of_group"] = one_of_group;
  if (same_on_batch == BatchMode::kPerBatch) j["same_on_batch"] = true;
  if (same_on_batch == BatchMode::kPerBatchDecision) j["same_on_batch"] = "decision";
  if (region_mode.enabled()) j["region_mode"] = region_mode.ToJson();
  if (!channels.empty()) j["channels"] = channels;
  return j;
}

namespace {
// A spatial entry without its own "bgv2_version" gets the pipeline's (none: unchanged).
nlohmann::json WithBgv2Version(const nlohmann::json& entry, const std::string& version) {
  if (version.empty() || !entry.is_object() || entry.value("kind", "") != "spatial") return entry;
  nlohmann::json out = entry;
  if (!out.contains("config") || !out["config"].is_object()) out["config"] = nlohmann::json::object();
  if (!out["config"].contains("bgv2_version")) out["config"]["bgv2_version"] = version;
  return out;
}
}  // namespace

absl::StatusOr<PipelineSpec> PipelineSpec::FromJson(const nlohmann::json& j) {
  RETURN_IF_ERROR(ju::CheckDepth(j, "pipeline"));
  RETURN_IF_ERROR(ju::CheckKeys(j, {"name", "transforms", "input_patch_size", "bgv2_version"}, "pipeline"));
  ASSIGN_OR_RETURN(const std::string bgv2_version, ju::GetString(j, "bgv2_version", std::string(), "pipeline"));
  PipelineSpec p;
  ASSIGN_OR_RETURN(p.name, ju::GetString(j, "name", std::string("custom"), "pipeline"));
  if (j.contains("input_patch_size") && !j["input_patch_size"].is_null()) {
    ASSIGN_OR_RETURN(p.input_patch_size, ju::AsInts(j["input_patch_size"], "pipeline.input_patch_size"));
  }
  if (!j.contains("transforms") || !j["transforms"].is_array())
    return ju::Invalid("pipeline.transforms", "expected a list");
  if (j["transforms"].size() > 4000) return ju::Invalid("pipeline.transforms", "too many transforms");
  for (size_t i = 0; i < j["transforms"].size(); ++i) {
    auto t = TransformSpec::FromJson(WithBgv2Version(j["transforms"][i], bgv2_version));
    if (!t.ok()) {
      return absl::Status(t.status().code(), absl::StrCat("pipeline.transforms[", i, "].", t.status().message()));
    }
    p.transforms.push_back(std::move(*t));
  }
  RETURN_IF_ERROR(p.ResolveOneOfGroups());
  RETURN_IF_ERROR(p.CheckLayoutStable());
  return p;
}

nlohmann::json PipelineSpec::ToJson() const {
  nlohmann::json t = nlohmann::json::array();
  for (const TransformSpec& s : transforms) t.push_back(s.ToJson());
  return {{"name", name}, {"input_patch_size", input_patch_size}, {"transforms", t}};
}

std::vector<int64_t> PipelineSpec::OutputShape(const std::vector<int64_t>& in) const {
  std::vector<int64_t> s = in;
  for (const TransformSpec& t : transforms) s = t.transform->OutputShape(s);
  return s;
}

std::pair<int64_t, int64_t> PipelineSpec::OutputChannels(int64_t image_channels, int64_t seg_channels) const {
  for (const TransformSpec& t : transforms) t.transform->OutputChannels(image_channels, seg_channels);
  return {image_channels, seg_channels};
}

absl::StatusOr<TrainerConfig> TrainerConfig::FromJson(const nlohmann::json& j) {
  const std::string w = "trainer_config";
  RETURN_IF_ERROR(ju::CheckDepth(j, w));
  RETURN_IF_ERROR(
      ju::CheckKeys(j,
                    {"patch_size", "rotation_for_da", "mirror_axes", "do_dummy_2d_data_aug", "deep_supervision_scales",
                     "pool_op_kernel_sizes", "regions", "ignore_label", "use_mask_for_norm", "num_input_channels",
                     "bgv2_version"},
                    w));
  TrainerConfig c;
  if (!j.contains("patch_size")) return ju::Invalid(w + ".patch_size", "required");
  ASSIGN_OR_RETURN(c.patch_size, ju::AsInts(j["patch_size"], w + ".patch_size"));
  if (j.contains("rotation_for_da") && !j["rotation_for_da"].is_null()) {
    ASSIGN_OR_RETURN(auto r, ju::AsDoubles(j["rotation_for_da"], w + ".rotation_for_da"));
    if (r.size() != 2) return ju::Invalid(w + ".rotation_for_da", "expected [lo, hi]");
    c.rotation_for_da = std::make_pair(r[0], r[1]);
  }
  if (j.contains("mirror_axes") && !j["mirror_axes"].is_null()) {
    ASSIGN_OR_RETURN(auto m, ju::AsInts(j["mirror_axes"], w + ".mirror_axes"));
    c.mirror_axes = m;
  }
  if (j.contains("do_dummy_2d_data_aug") && !j["do_dummy_2d_data_aug"].is_null()) {
    ASSIGN_OR_RETURN(bool d, ju::GetBool(j, "do_dummy_2d_data_aug", std::nullopt, w));
    c.do_dummy_2d_data_aug = d;
  }
  if (j.contains("deep_supervision_scales") && !j["deep_supervision_scales"].is_null()) {
    std::vector<std::vector<double>> ds;
    if (!j["deep_supervision_scales"].is_array()) return ju::Invalid(w + ".deep_supervision_scales", "expected a list");
    for (const auto& s : j["deep_supervision_scales"]) {
      if (s.is_number()) {
        ds.push_back({s.get<double>()});
      } else {
        ASSIGN_OR_RETURN(auto v, ju::AsDoubles(s, w + ".deep_supervision_scales"));
        ds.push_back(v);
      }
    }
    c.deep_supervision_scales = ds;
  } else if (j.contains("pool_op_kernel_sizes") && !j["pool_op_kernel_sizes"].is_null()) {
    // nnU-Net _get_deep_supervision_scales: 1 / cumprod(strides, axis=0), last entry dropped.
    const auto& k = j["pool_op_kernel_sizes"];
    if (!k.is_array() || k.empty()) return ju::Invalid(w + ".pool_op_kernel_sizes", "expected a list of strides");
    std::vector<std::vector<double>> ds;
    std::vector<double> prod;
    for (const auto& s : k) {
      ASSIGN_OR_RETURN(auto v, ju::AsDoubles(s, w + ".pool_op_kernel_sizes"));
      if (prod.empty()) prod.assign(v.size(), 1.0);
      if (v.size() != prod.size()) return ju::Invalid(w + ".pool_op_kernel_sizes", "inconsistent lengths");
      std::vector<double> level(v.size());
      for (size_t d = 0; d < v.size(); ++d) {
        if (!(v[d] >= 1)) return ju::Invalid(w + ".pool_op_kernel_sizes", "strides must be >= 1");
        prod[d] *= v[d];
        level[d] = 1.0 / prod[d];
      }
      ds.push_back(level);
    }
    ds.pop_back();
    c.deep_supervision_scales = ds;
  }
  if (j.contains("regions") && !j["regions"].is_null()) {
    std::vector<std::vector<int64_t>> regions;
    if (!j["regions"].is_array()) return ju::Invalid(w + ".regions", "expected a list");
    for (const auto& r : j["regions"]) {
      if (r.is_number_integer()) {
        regions.push_back({r.get<int64_t>()});
      } else {
        ASSIGN_OR_RETURN(auto v, ju::AsInts(r, w + ".regions"));
        regions.push_back(v);
      }
    }
    c.regions = regions;
  }
  if (j.contains("ignore_label") && !j["ignore_label"].is_null()) {
    ASSIGN_OR_RETURN(int64_t v, ju::GetInt(j, "ignore_label", std::nullopt, w));
    c.ignore_label = v;
  }
  if (j.contains("use_mask_for_norm") && !j["use_mask_for_norm"].is_null()) {
    ASSIGN_OR_RETURN(c.use_mask_for_norm, ju::AsBools(j["use_mask_for_norm"], w + ".use_mask_for_norm"));
  }
  ASSIGN_OR_RETURN(
      c.num_input_channels,
      ju::GetInt(j, "num_input_channels", static_cast<int64_t>(std::max<size_t>(1, c.use_mask_for_norm.size())), w));
  ASSIGN_OR_RETURN(c.bgv2_version, ju::GetString(j, "bgv2_version", std::string("0.3.6"), w));
  return c;
}

nlohmann::json TrainerConfig::ToJson() const {
  nlohmann::json j;
  j["patch_size"] = patch_size;
  j["rotation_for_da"] =
      rotation_for_da ? nlohmann::json::array({rotation_for_da->first, rotation_for_da->second}) : nlohmann::json();
  j["mirror_axes"] = mirror_axes ? nlohmann::json(*mirror_axes) : nlohmann::json();
  j["do_dummy_2d_data_aug"] = do_dummy_2d_data_aug ? nlohmann::json(*do_dummy_2d_data_aug) : nlohmann::json();
  j["deep_supervision_scales"] = deep_supervision_scales ? nlohmann::json(*deep_supervision_scales) : nlohmann::json();
  j["regions"] = regions ? nlohmann::json(*regions) : nlohmann::json();
  j["ignore_label"] = ignore_label ? nlohmann::json(*ignore_label) : nlohmann::json();
  j["use_mask_for_norm"] = use_mask_for_norm;
  j["num_input_channels"] = num_input_channels;
  j["bgv2_version"] = bgv2_version;
  return j;
}

std::vector<int64_t> GetPatchSize(const std::vector<int64_t>& final_patch_size, double rot_x, double rot_y,
                                  double rot_z, std::pair<double, double> scale_range) {
  const double kMax = 90.0 / 360.0 * 2.0 * M_PI;
  rot_x = std::min(kMax, rot_x);
  rot_y = std::min(kMax, rot_y);
  rot_z = std::min(kMax, rot_z);
  const size_t n = final_patch_size.size();
  std::vector<double> coords(final_patch_size.begin(), final_patch_size.end());
  std::vector<double> out = coords;
  // Row vector times rotation matrix (batchgenerators rotate_coords_3d / rotate_coords_2d).
  auto apply = [&](const std::vector<double>& m) {
    for (size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (size_t i = 0; i < n; ++i) acc += coords[i] * m[i * n + j];
      out[j] = std::max(out[j], std::fabs(acc));
    }
  };
  if (n == 3) {
    const double cx = std::cos(rot_x), sx = std::sin(rot_x);
    apply({1, 0, 0, 0, cx, -sx, 0, sx, cx});
    const double cy = std::cos(rot_y), sy = std::sin(rot_y);
    apply({cy, 0, sy, 0, 1, 0, -sy, 0, cy});
    const double cz = std::cos(rot_z), sz = std::sin(rot_z);
    apply({cz, -sz, 0, sz, cz, 0, 0, 0, 1});
  } else if (n == 2) {
    const double c = std::cos(rot_x), s = std::sin(rot_x);
    apply({c, -s, s, c});
  }
  const double mn = std::min(scale_range.first, scale_range.second);
  std::vector<int64_t> result(n);
  for (size_t d = 0; d < n; ++d) result[d] = static_cast<int64_t>(out[d] / mn);  // astype(int) truncates
  return result;
}

absl::StatusOr<AugmentationGeometry> ConfigureGeometry(const TrainerConfig& c, std::pair<double, double> scale_range) {
  const std::string w = "trainer_config";
  const size_t dim = c.patch_size.size();
  if (dim != 2 && dim != 3) return ju::Invalid(w + ".patch_size", "must have 2 or 3 entries");
  for (int64_t p : c.patch_size)
    if (p < 1 || p > 2048)
      return ju::Invalid(w + ".patch_size", absl::StrCat("entry ", p, " not in [1, 2048] (patch larger than allowed)"));
  AugmentationGeometry g;
  const double mx = static_cast<double>(*std::max_element(c.patch_size.begin(), c.patch_size.end()));
  const double mnp = static_cast<double>(*std::min_element(c.patch_size.begin(), c.patch_size.end()));
  const double deg = 2.0 * M_PI / 360.0;
  if (dim == 2) {
    g.do_dummy_2d_data_aug = false;
    g.rotation_for_da =
        mx / mnp > 1.5 ? std::make_pair(-15.0 * deg, 15.0 * deg) : std::make_pair(-180.0 * deg, 180.0 * deg);
    g.mirror_axes = {0, 1};
  } else {
    g.do_dummy_2d_data_aug = mx / static_cast<double>(c.patch_size[0]) > 3.0;  // ANISO_THRESHOLD
    g.rotation_for_da =
        g.do_dummy_2d_data_aug ? std::make_pair(-180.0 * deg, 180.0 * deg) : std::make_pair(-30.0 * deg, 30.0 * deg);
    g.mirror_axes = {0, 1, 2};
  }
  if (c.do_dummy_2d_data_aug) {
    if (*c.do_dummy_2d_data_aug && dim != 3) return ju::Invalid(w + ".do_dummy_2d_data_aug", "needs a 3D patch_size");
    g.do_dummy_2d_data_aug = *c.do_dummy_2d_data_aug;
  }
  if (c.rotation_for_da) {
    if (!std::isfinite(c.rotation_for_da->first) || !std::isfinite(c.rotation_for_da->second) ||
        c.rotation_for_da->first > c.rotation_for_da->second) {
      return ju::Invalid(w + ".rotation_for_da", "must be finite with lo <= hi");
    }
    g.rotation_for_da = *c.rotation_for_da;
  }
  if (c.mirror_axes) {
    for (int64_t a : *c.mirror_axes)
      if (a < 0 || a >= static_cast<int64_t>(dim))
        return ju::Invalid(w + ".mirror_axes", absl::StrCat("axis ", a, " out of range"));
    g.mirror_axes = *c.mirror_axes;
  }
  const double r = std::max(std::fabs(g.rotation_for_da.first), std::fabs(g.rotation_for_da.second));
  g.initial_patch_size = GetPatchSize(c.patch_size, r, r, r, scale_range);
  if (g.do_dummy_2d_data_aug) g.initial_patch_size[0] = c.patch_size[0];
  return g;
}

namespace {

absl::Status Add(PipelineSpec& spec, absl::StatusOr<std::shared_ptr<const Transform>> t, double p) {
  if (!t.ok()) return t.status();
  ASSIGN_OR_RETURN(TransformSpec s, TransformSpec::Make(std::move(*t), p));
  spec.transforms.push_back(std::move(s));
  return absl::OkStatus();
}

absl::Status AddLabelTail(PipelineSpec& spec, const TrainerConfig& c) {
  RETURN_IF_ERROR(Add(spec, RemoveLabelTransform::Create({-1, 0, std::nullopt}), 1.0));
  if (c.regions) {
    ConvertSegmentationToRegionsConfig rc;
    rc.regions = *c.regions;
    if (c.ignore_label) rc.regions.push_back({*c.ignore_label});
    rc.channel_in_seg = 0;
    RETURN_IF_ERROR(Add(spec, ConvertSegmentationToRegionsTransform::Create(rc), 1.0));
  }
  if (c.deep_supervision_scales) {
    RETURN_IF_ERROR(Add(spec, DownsampleSegForDsTransform::Create({*c.deep_supervision_scales}), 1.0));
  }
  return absl::OkStatus();
}

absl::Status CheckChannels(const TrainerConfig& c) {
  if (c.num_input_channels < 1 || c.num_input_channels > 4096) {
    return ju::Invalid("trainer_config.num_input_channels", "must be in [1, 4096]");
  }
  if (!c.use_mask_for_norm.empty() && static_cast<int64_t>(c.use_mask_for_norm.size()) != c.num_input_channels) {
    return ju::Invalid("trainer_config.use_mask_for_norm", "needs one entry per input channel");
  }
  return absl::OkStatus();
}

// The spatial settings both training presets share; each preset then sets its rotation/scaling probabilities.
SpatialConfig BaseSpatialConfig(const TrainerConfig& c, const AugmentationGeometry& g) {
  SpatialConfig sc;
  sc.patch_size = c.patch_size;
  if (g.do_dummy_2d_data_aug) {
    sc.patch_size.erase(sc.patch_size.begin());
    sc.dummy_2d = true;
  }
  sc.patch_center_dist_from_border = {0};
  sc.random_crop = false;
  sc.p_elastic_deform = 0;
  sc.rotation = RandomScalar::Uniform(g.rotation_for_da.first, g.rotation_for_da.second);
  sc.bg_style_seg_sampling = false;
  sc.bgv2_version = c.bgv2_version;  // nnU-Net leaves seg_tiebreak at the release's default
  sc.border_mode_seg = "constant";
  sc.padding_value_seg = -1;
  return sc;
}

SimulateLowResolutionConfig LowResolutionConfig(const AugmentationGeometry& g, RandomScalar scale) {
  SimulateLowResolutionConfig lr;
  lr.scale = std::move(scale);
  lr.synchronize_channels = false;
  lr.synchronize_axes = true;
  if (g.do_dummy_2d_data_aug) lr.ignore_axes = std::vector<int64_t>{0};
  lr.allowed_channels = std::nullopt;
  lr.p_per_channel = 0.5;
  return lr;
}

// Masks the channels normalised with a foreground mask (nnU-Net's use_mask_for_norm), if any.
absl::Status AddNormMask(PipelineSpec& spec, const TrainerConfig& c) {
  std::vector<int64_t> masked;
  for (size_t i = 0; i < c.use_mask_for_norm.size(); ++i)
    if (c.use_mask_for_norm[i]) masked.push_back(static_cast<int64_t>(i));
  if (!masked.empty()) RETURN_IF_ERROR(Add(spec, MaskImageTransform::Create({masked, 0, 0.0}), 1.0));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PipelineSpec> NnunetDefaultPipeline(const TrainerConfig& c) {
  RETURN_IF_ERROR(CheckChannels(c));
  ASSIGN_OR_RETURN(AugmentationGeometry g, ConfigureGeometry(c));
  PipelineSpec spec;
  spec.name = "nnunet_default";
  spec.input_patch_size = g.initial_patch_size;

  SpatialConfig sc = BaseSpatialConfig(c, g);
  sc.p_rotation = 0.2;
  sc.p_scaling = 0.2;
  sc.scaling = RandomScalar::Uniform(0.7, 1.4);
  sc.p_synchronize_scaling_across_axes = 1;
  RETURN_IF_ERROR(Add(spec, SpatialTransform::Create(sc), 1.0));

  RETURN_IF_ERROR(Add(spec, GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, true}), 0.1));
  RETURN_IF_ERROR(
      Add(spec, GaussianBlurTransform::Create({RandomScalar::Uniform(0.5, 1.0), false, false, 0.5, true}), 0.2));
  RETURN_IF_ERROR(
      Add(spec, MultiplicativeBrightnessTransform::Create({RandomScalar::BGContrast(0.75, 1.25), false, 1}), 0.15));
  RETURN_IF_ERROR(Add(spec, ContrastTransform::Create({RandomScalar::BGContrast(0.75, 1.25), true, false, 1}), 0.15));
  RETURN_IF_ERROR(
      Add(spec, SimulateLowResolutionTransform::Create(LowResolutionConfig(g, RandomScalar::Uniform(0.5, 1))), 0.25));
  RETURN_IF_ERROR(Add(spec, GammaTransform::Create({RandomScalar::BGContrast(0.7, 1.5), 1, false, 1, 1}), 0.1));
  RETURN_IF_ERROR(Add(spec, GammaTransform::Create({RandomScalar::BGContrast(0.7, 1.5), 0, false, 1, 1}), 0.3));
  if (!g.mirror_axes.empty()) RETURN_IF_ERROR(Add(spec, MirrorTransform::Create({g.mirror_axes}), 1.0));
  RETURN_IF_ERROR(AddNormMask(spec, c));
  RETURN_IF_ERROR(AddLabelTail(spec, c));
  return spec;
}

absl::StatusOr<PipelineSpec> NnunetValidationPipeline(const TrainerConfig& c) {
  RETURN_IF_ERROR(CheckChannels(c));
  ASSIGN_OR_RETURN(AugmentationGeometry g, ConfigureGeometry(c));
  (void)g;
  PipelineSpec spec;
  spec.name = "nnunet_validation";
  spec.input_patch_size = c.patch_size;
  RETURN_IF_ERROR(AddLabelTail(spec, c));
  return spec;
}

absl::StatusOr<PipelineSpec> NnunetDa5Pipeline(const TrainerConfig& c) {
  RETURN_IF_ERROR(CheckChannels(c));
  ASSIGN_OR_RETURN(AugmentationGeometry g, ConfigureGeometry(c, {0.7, 1.43}));
  PipelineSpec spec;
  spec.name = "nnunet_da5";
  spec.input_patch_size = g.initial_patch_size;
  auto add_one_of = [&](absl::StatusOr<std::shared_ptr<const Transform>> t, double p, uint32_t group) {
    RETURN_IF_ERROR(Add(spec, std::move(t), p));
    spec.transforms.back().one_of_group = group;
    return absl::OkStatus();
  };

  SpatialConfig sc = BaseSpatialConfig(c, g);
  sc.p_rotation = 0.4;
  sc.p_rot_per_axis = 0.5;
  sc.p_scaling = 0.2;
  sc.scaling = RandomScalar::Uniform(0.7, 1.43);
  sc.p_synchronize_scaling_across_axes = 0;
  RETURN_IF_ERROR(Add(spec, SpatialTransform::Create(sc), 1.0));

  // Rot90 / transpose on the axes whose size occurs most often in the (full) patch size, if any repeats.
  const size_t nd = c.patch_size.size();
  std::vector<int64_t> matching(nd, 0);
  for (size_t i = 0; i < nd; ++i)
    for (size_t j = 0; j < nd; ++j) matching[i] += c.patch_size[i] == c.patch_size[j];
  const int64_t most = *std::max_element(matching.begin(), matching.end());
  std::vector<int64_t> valid_axes;
  for (size_t i = 0; i < nd; ++i)
    if (matching[i] == most) valid_axes.push_back(static_cast<int64_t>(i));
  if (most > 1) {
    RETURN_IF_ERROR(Add(spec, Rot90Transform::Create({RandomScalar::Constant(1), {0, 1, 2, 3}, valid_axes}), 0.5));
    RETURN_IF_ERROR(Add(spec, TransposeAxesTransform::Create({valid_axes}), 0.5));
  }

  RETURN_IF_ERROR(add_one_of(MedianFilterTransform::Create({{2, 8}, false, 0, 0.5}), 0.2, 1));
  RETURN_IF_ERROR(
      add_one_of(GaussianBlurTransform::Create({RandomScalar::Uniform(0.3, 1.5), false, true, 0.5, false}), 0.2, 1));
  RETURN_IF_ERROR(Add(spec, GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, true}), 0.1));
  RETURN_IF_ERROR(Add(spec, BrightnessAdditiveTransform::Create({0, 0.5, false, 0.5}), 0.1));
  RETURN_IF_ERROR(
      add_one_of(ContrastTransform::Create({RandomScalar::BGContrast(0.5, 2), true, false, 0.5}), 0.2, 2));
  RETURN_IF_ERROR(
      add_one_of(ContrastTransform::Create({RandomScalar::BGContrast(0.5, 2), false, false, 0.5}), 0.2, 2));
  RETURN_IF_ERROR(
      Add(spec, SimulateLowResolutionTransform::Create(LowResolutionConfig(g, RandomScalar::Uniform(0.25, 1))), 0.15));
  RETURN_IF_ERROR(Add(spec, GammaTransform::Create({RandomScalar::BGContrast(0.7, 1.5), 1, false, 1, 1}), 0.1));
  RETURN_IF_ERROR(Add(spec, GammaTransform::Create({RandomScalar::BGContrast(0.7, 1.5), 1, false, 1, 1}), 0.1));
  if (!g.mirror_axes.empty()) RETURN_IF_ERROR(Add(spec, MirrorTransform::Create({g.mirror_axes}), 1.0));

  BlankRectangleConfig br;
  for (int64_t p : c.patch_size) br.rectangle_size.push_back({std::max<int64_t>(1, p / 10), p / 3});
  br.value_kind = BlankRectangleConfig::Value::kMean;
  br.num_rectangles = {1, 5};
  br.force_square = false;
  br.p_per_channel = 0.5;
  RETURN_IF_ERROR(Add(spec, BlankRectangleTransform::Create(br), 0.4));
  using transforms_internal::LocalScalar;
  BrightnessGradientAdditiveConfig bg;
  bg.scale = LocalScalar::AxisSizeLogUniform(6, 1);  // _brightnessadditive_localgamma_transform_scale
  bg.loc = LocalScalar::Uniform(-0.5, 1.5);
  bg.max_strength = LocalScalar::Mixture({{0.5, -5, -1}, {0.5, 1, 5}});  // _brightness_gradient_additive_max_strength
  bg.mean_centered = false;
  bg.same_for_all_channels = false;
  bg.p_per_channel = 0.5;
  RETURN_IF_ERROR(Add(spec, BrightnessGradientAdditiveTransform::Create(bg), 0.3));
  LocalGammaConfig lg;
  lg.scale = LocalScalar::AxisSizeLogUniform(6, 1);
  lg.loc = LocalScalar::Uniform(-0.5, 1.5);
  lg.gamma = LocalScalar::Mixture({{0.5, 0.01, 0.8}, {0.5, 1.5, 4}});  // _local_gamma_gamma
  lg.same_for_all_channels = false;
  lg.p_per_channel = 0.5;
  RETURN_IF_ERROR(Add(spec, LocalGammaTransform::Create(lg), 0.3));
  RETURN_IF_ERROR(Add(spec, SharpeningTransform::Create({RandomScalar::Uniform(0.1, 1), 0, 0.5, 0}), 0.2));

  RETURN_IF_ERROR(AddNormMask(spec, c));
  RETURN_IF_ERROR(AddLabelTail(spec, c));
  RETURN_IF_ERROR(spec.ResolveOneOfGroups());
  return spec;
}

absl::StatusOr<PipelineSpec> PresetPipeline(std::string_view name, const TrainerConfig& c) {
  if (name == "nnunet_default") return NnunetDefaultPipeline(c);
  if (name == "nnunet_da5") return NnunetDa5Pipeline(c);
  if (name == "nnunet_validation") return NnunetValidationPipeline(c);
  return ju::Invalid("preset",
                     absl::StrCat("unknown preset '", std::string(name),
                                  "' (nnunet_default, nnunet_da5, nnunet_validation)"));
}

}  // namespace augmentd
