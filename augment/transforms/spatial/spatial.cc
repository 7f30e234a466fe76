// SpatialTransform: parameter draws in bgv2's order (rotation?, scale?, deform?, angles, scales, elastic, centre),
// then either the integer crop (nothing drawn) or the resampling kernels of augment/kernels/cpu_spatial.h.
#include "augment/transforms/spatial/spatial.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_spatial.h"
#include "augment/schema.h"
#include "augment/status_macros.h"

namespace augmentd {
namespace ju = json_util;

namespace {
constexpr int64_t kMaxPatchVoxels = int64_t{1} << 28;

absl::Status ValidateMode(const std::string& v, const std::vector<std::string>& allowed, const std::string& field) {
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    return ju::Invalid(field, absl::StrCat("unsupported value '", v, "'"));
  }
  return absl::OkStatus();
}
// Per seg channel of one sample: the lowest label and the number of distinct labels (bgv2 unique()), with
// `extra` (0.3.6's padding label when it votes) counted as present.
void ChannelLabelSets(const int16_t* seg, int64_t channels, int64_t n_in, std::optional<int16_t> extra,
                      int16_t* lowest, int64_t* num_labels) {
  std::vector<uint64_t> seen(65536 / 64);
  const auto mark = [&seen](int16_t v) {
    const uint16_t u = static_cast<uint16_t>(static_cast<int32_t>(v) + 32768);
    seen[u >> 6] |= uint64_t{1} << (u & 63);
  };
  for (int64_t ch = 0; ch < channels; ++ch) {
    const int16_t* src = seg + ch * n_in;
    std::fill(seen.begin(), seen.end(), 0);
    int16_t lo = src[0];
    for (int64_t i = 0; i < n_in; ++i) {
      mark(src[i]);
      lo = std::min(lo, src[i]);
    }
    if (extra) {
      mark(*extra);
      lo = std::min(lo, *extra);
    }
    int64_t count = 0;
    for (uint64_t word : seen) count += __builtin_popcountll(word);
    lowest[ch] = lo;
    num_labels[ch] = count;
  }
}

kernels::SegTiebreak TiebreakKind(const std::string& t) {
  if (t == "nearest") return kernels::SegTiebreak::kNearest;
  if (t == "highest") return kernels::SegTiebreak::kHighest;
  return kernels::SegTiebreak::kLowest;
}
}  // namespace

const std::vector<std::string>& SupportedBgv2Versions() {
  static const std::vector<std::string> kVersions = {"0.3.5", "0.3.6"};
  return kVersions;
}

bool SegPadFirst(const SpatialConfig& c) { return c.bgv2_version != "0.3.5"; }

std::string ResolvedSegTiebreak(const SpatialConfig& c) {
  if (!c.seg_tiebreak.empty()) return c.seg_tiebreak;
  return SegPadFirst(c) ? "nearest" : "lowest";
}

const ConfigSchema<SpatialConfig>& SpatialTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<SpatialConfig>("spatial"))
           ->Add("patch_size", &SpatialConfig::patch_size, "output patch size (2 or 3 spatial dims)", Required())
           .AddParsed("patch_center_dist_from_border", "double | double[]",
                      &SpatialConfig::patch_center_dist_from_border,
                      "how far patch centres may lie from the border (one value or one per axis)",
                      [](const nlohmann::json& v, const std::string& f) -> absl::StatusOr<std::vector<double>> {
                        if (v.is_number()) return std::vector<double>{v.get<double>()};
                        return ju::AsDoubles(v, f);
                      })
           .Add("random_crop", &SpatialConfig::random_crop, "draw the patch centre uniformly (nnU-Net: false)")
           .Add("p_elastic_deform", &SpatialConfig::p_elastic_deform, "probability of an elastic deformation",
                Probability())
           .Add("elastic_deform_scale", &SpatialConfig::elastic_deform_scale,
                "deformation grid scale, as a fraction of the patch size", AtLeast(0))
           .Add("elastic_deform_magnitude", &SpatialConfig::elastic_deform_magnitude,
                "deformation magnitude, as a fraction of the grid scale")
           .Add("p_synchronize_def_scale_across_axes", &SpatialConfig::p_synchronize_def_scale_across_axes,
                "probability of one deformation scale for all axes", Probability())
           .Add("p_rotation", &SpatialConfig::p_rotation, "probability of a rotation", Probability())
           .Add("rotation", &SpatialConfig::rotation, "rotation angle in radians, drawn per axis")
           .Add("p_rot_per_axis", &SpatialConfig::p_rot_per_axis,
                "probability that each axis rotates (given a rotation)", Probability())
           .Add("p_scaling", &SpatialConfig::p_scaling, "probability of a scaling", Probability())
           .Add("scaling", &SpatialConfig::scaling, "scale factor drawn per axis (or once)", Above(0))
           .Add("p_synchronize_scaling_across_axes", &SpatialConfig::p_synchronize_scaling_across_axes,
                "probability of one scale factor for all axes", Probability())
           .Add("bgv2_version", &SpatialConfig::bgv2_version, "bgv2 release whose resampling is reproduced")
           .Custom(
               "seg_tiebreak", "string", "label kept on ties (0.3.6: nearest | lowest | highest; empty: the release's)",
               [](const nlohmann::json& j, SpatialConfig& c, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(c.seg_tiebreak, ju::GetString(j, "seg_tiebreak", std::string(), w));
                 return absl::OkStatus();
               },
               [](const SpatialConfig& c) { return nlohmann::json(ResolvedSegTiebreak(c)); })
           .Custom(
               "bg_style_seg_sampling", "bool",
               "bgv2's batchgenerators-style label resampling (default: the release's)",
               [](const nlohmann::json& j, SpatialConfig& c, const std::string& w) -> absl::Status {
                 // after bgv2_version: the constructor default of the chosen release (only 0.3.5 differs)
                 ASSIGN_OR_RETURN(c.bg_style_seg_sampling, ju::GetBool(j, "bg_style_seg_sampling", !SegPadFirst(c), w));
                 return absl::OkStatus();
               },
               [](const SpatialConfig& c) { return nlohmann::json(c.bg_style_seg_sampling); })
           .Add("mode_seg", &SpatialConfig::mode_seg, "label interpolation: bilinear (one-hot) or nearest")
           .Add("border_mode_seg", &SpatialConfig::border_mode_seg,
                "label padding outside the image: zeros or constant")
           .Add("center_deformation", &SpatialConfig::center_deformation,
                "centre the elastic field on the patch centre")
           .Add("mode_image", &SpatialConfig::mode_image, "image interpolation: bilinear or nearest")
           .Add("padding_mode_image", &SpatialConfig::padding_mode_image,
                "image padding outside the image: zeros or constant")
           .Add("padding_value_seg", &SpatialConfig::padding_value_seg, "label written outside the image (an int16)")
           .Add("padding_value_image", &SpatialConfig::padding_value_image, "value written outside the image")
           .Add("align_corners", &SpatialConfig::align_corners, "grid_sample align_corners (only false is supported)")
           .Add("dummy_2d", &SpatialConfig::dummy_2d,
                "augmentd: fold axis 0 into channels around this transform (2D patch_size)");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> SpatialTransform::Create(const SpatialConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = "spatial";
  if (c.patch_size.size() != 2 && c.patch_size.size() != 3)
    return ju::Invalid(w + ".patch_size", "must have 2 or 3 entries");
  int64_t vox = 1;
  for (int64_t p : c.patch_size) {
    if (p < 1 || p > 4096) return ju::Invalid(w + ".patch_size", absl::StrCat("entry ", p, " not in [1, 4096]"));
    vox *= p;
  }
  if (vox > kMaxPatchVoxels) return ju::Invalid(w + ".patch_size", "patch larger than allowed (2^28 voxels)");
  if (c.dummy_2d && c.patch_size.size() != 2) return ju::Invalid(w + ".patch_size", "dummy_2d needs a 2D patch_size");
  if (c.patch_center_dist_from_border.size() != 1 && c.patch_center_dist_from_border.size() != c.patch_size.size()) {
    return ju::Invalid(w + ".patch_center_dist_from_border", "needs 1 or len(patch_size) entries");
  }
  for (double d : c.patch_center_dist_from_border)
    if (!std::isfinite(d)) return ju::Invalid(w + ".patch_center_dist_from_border", "must be finite");
  RETURN_IF_ERROR(ValidateMode(c.mode_seg, {"bilinear", "nearest"}, w + ".mode_seg"));
  RETURN_IF_ERROR(ValidateMode(c.mode_image, {"bilinear", "nearest"}, w + ".mode_image"));
  RETURN_IF_ERROR(ValidateMode(c.border_mode_seg, {"zeros", "constant"}, w + ".border_mode_seg"));
  RETURN_IF_ERROR(ValidateMode(c.padding_mode_image, {"zeros", "constant"}, w + ".padding_mode_image"));
  if (!std::isfinite(c.padding_value_seg) || c.padding_value_seg != std::floor(c.padding_value_seg) ||
      c.padding_value_seg < -32768 || c.padding_value_seg > 32767) {
    return ju::Invalid(w + ".padding_value_seg", "must be an int16 value");
  }
  if (!std::isfinite(c.padding_value_image)) return ju::Invalid(w + ".padding_value_image", "must be finite");
  if (c.align_corners) return ju::Invalid(w + ".align_corners", "only false is supported");
  RETURN_IF_ERROR(ValidateMode(c.bgv2_version, SupportedBgv2Versions(), w + ".bgv2_version"));
  if (!c.seg_tiebreak.empty()) {
    RETURN_IF_ERROR(ValidateMode(c.seg_tiebreak, {"nearest", "lowest", "highest"}, w + ".seg_tiebreak"));
    if (!SegPadFirst(c) && c.seg_tiebreak != "lowest") {
      return ju::Invalid(w + ".seg_tiebreak", "needs bgv2_version 0.3.6 (0.3.5 always keeps the lowest label)");
    }
  }
  return std::shared_ptr<const Transform>(new SpatialTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> SpatialTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(SpatialConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json SpatialTransform::ConfigToJson() const { return Schema().ToJson(config_); }

std::vector<int64_t> SpatialTransform::OutputShape(const std::vector<int64_t>& in) const {
  if (config_.dummy_2d && in.size() == 3) return {in[0], config_.patch_size[0], config_.patch_size[1]};
  return config_.patch_size;
}

absl::Status SpatialTransform::WorkingLayout(const SampleLayout& layout, std::vector<int64_t>& shape,
                                             int64_t& fold) const {
  fold = 1;
  shape = layout.shape;
  if (config_.dummy_2d) {
    if (layout.shape.size() != 3) return ju::Invalid("spatial.dummy_2d", "needs a 3D sample");
    fold = layout.shape[0];
    shape = {layout.shape[1], layout.shape[2]};
  }
  if (shape.size() != config_.patch_size.size()) {
    return ju::Invalid("spatial.patch_size",
                       absl::StrCat("has ", config_.patch_size.size(), " dims but the sample has ", shape.size(),
                                    " spatial dims", config_.dummy_2d ? " (dummy-2D)" : ""));
  }
  return absl::OkStatus();
}

std::vector<double> SpatialTransform::AffineMatrix(const std::vector<double>& a, const std::vector<double>& s) {
  using M = std::vector<double>;
  auto mul = [](const M& x, const M& y, int n) {
    M r(n * n, 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int k = 0; k < n; ++k) acc += x[i * n + k] * y[k * n + j];
        r[i * n + j] = acc;
      }
    return r;
  };
  if (s.size() == 2) {
    const double c = std::cos(a.back()), sn = std::sin(a.back());
    M r = {c, -sn, sn, c};
    M sc = {s[0], 0, 0, s[1]};
    return mul(r, sc, 2);
  }
  const double c0 = std::cos(a[0]), s0 = std::sin(a[0]), c1 = std::cos(a[1]), s1 = std::sin(a[1]), c2 = std::cos(a[2]),
               s2 = std::sin(a[2]);
  M rx = {1, 0, 0, 0, c0, -s0, 0, s0, c0};
  M ry = {c1, 0, s1, 0, 1, 0, -s1, 0, c1};
  M rz = {c2, -s2, 0, s2, c2, 0, 0, 0, 1};
  M sc = {s[0], 0, 0, 0, s[1], 0, 0, 0, s[2]};
  return mul(mul(mul(rz, ry, 3), rx, 3), sc, 3);
}

absl::Status SpatialTransform::ValidateParams(const SpatialParams& p, int nd) {
  if (p.ndim != nd || static_cast<int>(p.center_location_in_pixels.size()) != nd) {
    return ju::Invalid("params.center_location_in_pixels", absl::StrCat("needs ", nd, " entries"));
  }
  // Bounds keep every coordinate far inside float/int64 range (values beyond them are meaningless anyway).
  for (double v : p.center_location_in_pixels) {
    if (!std::isfinite(v) || std::fabs(v) > 1e7)
      return ju::Invalid("params.center_location_in_pixels", "must be finite, |c| <= 1e7");
  }
  if (p.affine) {
    if (static_cast<int>(p.affine->size()) != nd * nd)
      return ju::Invalid("params.affine", absl::StrCat("expected ", nd, "x", nd));
    for (double v : *p.affine)
      if (!std::isfinite(v) || std::fabs(v) > 1e4)
        return ju::Invalid("params.affine", "entries must be finite, |a| <= 1e4");
  }
  if (p.elastic_offsets) {
    for (float v : *p.elastic_offsets)
      if (!std::isfinite(v) || std::fabs(v) > 1e5f)
        return ju::Invalid("params.elastic_offsets", "must be finite, |o| <= 1e5");
  }
  return absl::OkStatus();
}

std::vector<float> SpatialTransform::ElasticOffsets(const SpatialParams& p) const {
  if (p.elastic_offsets) return *p.elastic_offsets;
  if (!p.elastic) return {};
  const SpatialParams::ElasticRecipe& r = *p.elastic;
  const int dim = static_cast<int>(r.sigma.size());
  int64_t n = 1;
  for (int64_t s : config_.patch_size) n *= s;
  std::vector<float> field(n);
  std::vector<float> offsets(n * dim);
  for (int d = 0; d < dim; ++d) {
    // White noise from the counter-based generator (substream 1+d), so any device regenerates it.
    const StreamKey key = MakeStreamKey(r.seed, r.sample_index, r.transform_index, 1u + d);
    for (int64_t v = 0; v < n; ++v) field[v] = NormalAt(key, v);
    kernels::SmoothElasticComponent(field.data(), config_.patch_size.data(), dim, r.sigma[d], r.magnitude[d]);
    for (int64_t v = 0; v < n; ++v) offsets[v * dim + d] = field[v];
  }
  return offsets;
}

absl::StatusOr<std::unique_ptr<TransformParams>> SpatialTransform::Draw(DrawContext& ctx,
                                                                        const SampleLayout& layout) const {
  std::vector<int64_t> shape;
  int64_t fold;
  RETURN_IF_ERROR(WorkingLayout(layout, shape, fold));
  const SpatialConfig& c = config_;
  const int dim = static_cast<int>(shape.size());
  RandomStream& rng = ctx.rng;
  const bool do_rotation = rng.Uniform() < c.p_rotation;
  const bool do_scale = rng.Uniform() < c.p_scaling;
  const bool do_deform = rng.Uniform() < c.p_elastic_deform;
  std::vector<double> angles(dim, 0.0), scales(dim, 1.0);
  if (do_rotation) {
    for (int i = 0; i < dim; ++i) angles[i] = c.rotation.Sample(rng);
    if (c.p_rot_per_axis < 1) {
      for (int i = 0; i < dim; ++i)
        if (rng.Uniform() > c.p_rot_per_axis) angles[i] = 0;
    }
  }
  if (do_scale) {
    if (rng.Uniform() <= c.p_synchronize_scaling_across_axes) {
      const double s = c.scaling.Sample(rng);
      std::fill(scales.begin(), scales.end(), s);
    } else {
      for (int i = 0; i < dim; ++i) scales[i] = c.scaling.Sample(rng);
    }
  }
  auto p = std::make_unique<SpatialParams>();
  p->ndim = dim;
  if (do_scale || do_rotation) p->affine = AffineMatrix(angles, scales);
  if (do_deform) {
    std::vector<double> def_scales(dim);
    if (rng.Uniform() <= c.p_synchronize_def_scale_across_axes) {
      std::fill(def_scales.begin(), def_scales.end(), c.elastic_deform_scale.Sample(rng));
    } else {
      for (int i = 0; i < dim; ++i) def_scales[i] = c.elastic_deform_scale.Sample(rng);
    }
    std::vector<double> magnitude(dim);
    for (int i = 0; i < dim; ++i) magnitude[i] = c.elastic_deform_magnitude.Sample(rng);
    SpatialParams::ElasticRecipe r;
    r.seed = ctx.seed;
    r.sample_index = ctx.sample_index;
    r.transform_index = ctx.transform_index;
    for (int d = 0; d < dim; ++d) r.sigma.push_back(def_scales[d] * static_cast<double>(c.patch_size[d]));
    r.magnitude = std::move(magnitude);
    p->elastic = std::move(r);  // the field itself: ElasticOffsets (on demand)
  }
  p->center_location_in_pixels.resize(dim);
  for (int d = 0; d < dim; ++d) {
    const double sd = static_cast<double>(shape[d]);
    if (!c.random_crop) {
      p->center_location_in_pixels[d] = sd / 2;
    } else {
      const double dist = c.patch_center_dist_from_border.size() == 1 ? c.patch_center_dist_from_border[0]
                                                                      : c.patch_center_dist_from_border[d];
      const double mn = dist, mx = sd - dist;
      p->center_location_in_pixels[d] = mx < mn ? sd / 2 : rng.Uniform(mn, mx);
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status SpatialTransform::Apply(const TransformParams& params, SampleData& sample) const {
  const auto* p = dynamic_cast<const SpatialParams*>(&params);
  if (p == nullptr) return absl::InvalidArgumentError("spatial: wrong parameter type");
  std::vector<int64_t> shape;
  int64_t fold;
  RETURN_IF_ERROR(WorkingLayout(sample.layout(), shape, fold));
  const SpatialConfig& c = config_;
  const int nd = static_cast<int>(shape.size());
  RETURN_IF_ERROR(ValidateParams(*p, nd));
  const int64_t channels = sample.channels * fold;
  const int64_t seg_channels = sample.seg_channels * fold;
  int64_t n_out = 1, n_in = 1;
  for (int d = 0; d < nd; ++d) {
    n_out *= c.patch_size[d];
    n_in *= shape[d];
  }
  if ((channels + seg_channels) * n_out > (int64_t{1} << 31)) {
    return ju::Invalid("spatial.patch_size", "output larger than allowed (2^31 elements per sample)");
  }
  std::vector<float> image_out(static_cast<size_t>(channels * n_out));
  std::vector<int16_t> seg_out(static_cast<size_t>(seg_channels * n_out));
  const bool has_seg = sample.seg_channels > 0 && sample.seg_data() != nullptr;
  const float* in_image = sample.image_data();
  const int16_t* in_seg = sample.seg_data();

  const std::vector<float> recipe_offsets =
      p->elastic_offsets || !p->elastic ? std::vector<float>{} : ElasticOffsets(*p);
  const bool elastic = p->elastic_offsets || !recipe_offsets.empty();
  if (!p->affine && !elastic) {
    // Integer crop at floor(centre) − p//2 (bgv2 crop_tensor), padded with the constant of each mode.
    int64_t start[3];
    for (int d = 0; d < nd; ++d) {
      start[d] = static_cast<int64_t>(std::floor(p->center_location_in_pixels[d])) - c.patch_size[d] / 2;
    }
    const float img_pad = c.padding_mode_image == "constant" ? static_cast<float>(c.padding_value_image) : 0.0f;
    const int16_t seg_pad = c.border_mode_seg == "constant" ? static_cast<int16_t>(c.padding_value_seg) : 0;
    kernels::CropImage(in_image, channels, shape.data(), c.patch_size.data(), start, nd, img_pad, image_out.data());
    if (has_seg) {
      kernels::CropLabels(in_seg, seg_channels, shape.data(), c.patch_size.data(), start, nd, seg_pad, seg_out.data());
    }
  } else {
    kernels::GridSpec g;
    g.ndim = nd;
    for (int d = 0; d < nd; ++d) {
      g.in_shape[d] = shape[d];
      g.out_shape[d] = c.patch_size[d];
      // torch.Tensor([c - s/2]) -> float32
      g.shift[d] = static_cast<float>(p->center_location_in_pixels[d] - static_cast<double>(shape[d]) / 2.0);
    }
    if (p->affine) {
      g.has_affine = true;
      for (int r = 0; r < nd; ++r)
        for (int k = 0; k < nd; ++k) g.affine[r][k] = static_cast<float>((*p->affine)[r * nd + k]);
    }
    const float* offsets = recipe_offsets.empty() ? nullptr : recipe_offsets.data();
    if (p->elastic_offsets) {
      if (static_cast<int64_t>(p->elastic_offsets->size()) != n_out * nd) {
        return ju::Invalid("params.elastic_offsets", "must have shape (*patch_size, ndim)");
      }
      offsets = p->elastic_offsets->data();
    }
    std::vector<float> grid(static_cast<size_t>(n_out * nd));
    kernels::ComputeSamplingGrid(g, offsets, c.center_deformation && offsets != nullptr, grid.data());
    const bool pad_first = SegPadFirst(c);
    // 0.3.5 fills out-of-bounds image voxels with the constant; 0.3.6 resamples (image − v) and adds v back.
    const bool img_fill = !pad_first && c.padding_mode_image == "constant" && c.padding_value_image != 0;
    const bool img_shift = pad_first && c.padding_mode_image == "constant" && c.padding_value_image != 0;
    const kernels::InterpMode img_mode =
        c.mode_image == "nearest" ? kernels::InterpMode::kNearest : kernels::InterpMode::kLinear;
    kernels::LabelSampleOptions opt;
    opt.mode = c.mode_seg == "nearest" ? kernels::InterpMode::kNearest : kernels::InterpMode::kLinear;
    opt.bg_style = c.bg_style_seg_sampling;
    opt.fill_out_of_bounds = !pad_first && c.border_mode_seg == "constant" && c.padding_value_seg != 0;
    opt.fill_value = static_cast<int16_t>(c.padding_value_seg);
    opt.pad_first = pad_first;
    opt.pad_label = c.border_mode_seg == "constant" ? static_cast<int16_t>(c.padding_value_seg) : int16_t{0};
    opt.tiebreak = TiebreakKind(ResolvedSegTiebreak(c));
    // 0.3.6: the padding label is one of the labels only where some sampling point may reach outside.
    opt.pad_votes = pad_first && has_seg && opt.mode == kernels::InterpMode::kLinear &&
                    kernels::MayReachOutside(g, grid.data());
    // Per seg channel: the lowest label present and the number of distinct labels (bgv2 unique()).
    std::vector<int16_t> lowest(has_seg ? seg_channels : 0);
    std::vector<int64_t> num_labels(has_seg ? seg_channels : 0);
    if (has_seg) {
      ChannelLabelSets(in_seg, seg_channels, n_in, opt.pad_votes ? std::optional<int16_t>(opt.pad_label) : std::nullopt,
                       lowest.data(), num_labels.data());
    }
    if (has_seg && !img_fill && !img_shift && img_mode == kernels::InterpMode::kLinear &&
        opt.mode == kernels::InterpMode::kLinear) {
      kernels::SampleImageAndLabels(g, in_image, channels, in_seg, seg_channels, lowest.data(), num_labels.data(),
                                    grid.data(), opt, image_out.data(), seg_out.data());
    } else {
      if (img_shift) {
        kernels::SampleImageShifted(g, in_image, channels, grid.data(), img_mode,
                                    static_cast<float>(c.padding_value_image), image_out.data());
      } else {
        kernels::SampleImage(g, in_image, channels, grid.data(), img_mode, img_fill,
                             static_cast<float>(c.padding_value_image), image_out.data());
      }
      for (int64_t ch = 0; has_seg && ch < seg_channels; ++ch) {
        kernels::SampleLabels(g, in_seg + ch * n_in, grid.data(), lowest[ch], num_labels[ch], opt,
                              seg_out.data() + ch * n_out);
      }
    }
  }
  sample.image = std::move(image_out);
  sample.external_image = nullptr;
  if (has_seg) sample.seg = std::move(seg_out);
  sample.external_seg = nullptr;
  sample.shape = OutputShape(sample.shape);
  return absl::OkStatus();
}

nlohmann::json SpatialTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const SpatialParams&>(params);
  nlohmann::json j;
  const int nd = p.ndim;
  if (p.affine) {
    nlohmann::json a = nlohmann::json::array();
    for (int r = 0; r < nd; ++r) {
      nlohmann::json row = nlohmann::json::array();
      for (int k = 0; k < nd; ++k) row.push_back((*p.affine)[r * nd + k]);
      a.push_back(row);
    }
    j["affine"] = a;
  } else {
    j["affine"] = nullptr;
  }
  const std::vector<float> offsets = ElasticOffsets(p);
  if (!offsets.empty()) {
    // Nested lists of shape (*patch_size, ndim).
    std::vector<int64_t> dims(config_.patch_size.begin(), config_.patch_size.end());
    dims.push_back(nd);
    std::function<nlohmann::json(size_t, int64_t)> build = [&](size_t level, int64_t base) -> nlohmann::json {
      nlohmann::json arr = nlohmann::json::array();
      int64_t stride = 1;
      for (size_t l = level + 1; l < dims.size(); ++l) stride *= dims[l];
      for (int64_t i = 0; i < dims[level]; ++i) {
        if (level + 1 == dims.size()) {
          arr.push_back(offsets[base + i]);
        } else {
          arr.push_back(build(level + 1, base + i * stride));
        }
      }
      return arr;
    };
    j["elastic_offsets"] = build(0, 0);
  } else {
    j["elastic_offsets"] = nullptr;
  }
  j["center_location_in_pixels"] = p.center_location_in_pixels;
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> SpatialTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                  const SampleLayout& layout) const {
  std::vector<int64_t> shape;
  int64_t fold;
  RETURN_IF_ERROR(WorkingLayout(layout, shape, fold));
  RETURN_IF_ERROR(ju::CheckKeys(j, {"affine", "elastic_offsets", "center_location_in_pixels", "grid"}, "params"));
  const int nd = static_cast<int>(shape.size());
  auto p = std::make_unique<SpatialParams>();
  p->ndim = nd;
  if (j.contains("affine") && !j["affine"].is_null()) {
    const auto& a = j["affine"];
    if (!a.is_array() || static_cast<int>(a.size()) != nd)
      return ju::Invalid("params.affine", absl::StrCat("expected ", nd, "x", nd));
    std::vector<double> m;
    for (const auto& row : a) {
      ASSIGN_OR_RETURN(auto r, ju::AsDoubles(row, "params.affine"));
      if (static_cast<int>(r.size()) != nd) return ju::Invalid("params.affine", absl::StrCat("expected ", nd, "x", nd));
      m.insert(m.end(), r.begin(), r.end());
    }
    p->affine = std::move(m);
  }
  if (j.contains("elastic_offsets") && !j["elastic_offsets"].is_null()) {
    std::vector<float> flat;
    // Nested lists of depth ndim + 1 exactly (deeper input is rejected before it can exhaust the stack).
    std::function<absl::Status(const nlohmann::json&, int)> walk = [&](const nlohmann::json& v,
                                                                       int depth) -> absl::Status {
      if (v.is_array()) {
        if (depth >= nd + 1) return ju::Invalid("params.elastic_offsets", "must have shape (*patch_size, ndim)");
        for (const auto& e : v) RETURN_IF_ERROR(walk(e, depth + 1));
        return absl::OkStatus();
      }
      if (!v.is_number() || !std::isfinite(v.get<double>()))
        return ju::Invalid("params.elastic_offsets", "must be finite numbers");
      flat.push_back(static_cast<float>(v.get<double>()));
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(walk(j["elastic_offsets"], 0));
    int64_t n = nd;
    for (int64_t s : config_.patch_size) n *= s;
    if (static_cast<int64_t>(flat.size()) != n)
      return ju::Invalid("params.elastic_offsets", "must have shape (*patch_size, ndim)");
    p->elastic_offsets = std::move(flat);
  }
  if (!j.contains("center_location_in_pixels")) {
    p->center_location_in_pixels.resize(nd);
    for (int d = 0; d < nd; ++d) p->center_location_in_pixels[d] = static_cast<double>(shape[d]) / 2;
  } else {
    ASSIGN_OR_RETURN(p->center_location_in_pixels,
                     ju::AsDoubles(j["center_location_in_pixels"], "params.center_location_in_pixels"));
    if (static_cast<int>(p->center_location_in_pixels.size()) != nd) {
      return ju::Invalid("params.center_location_in_pixels", absl::StrCat("needs ", nd, " entries"));
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
