// CUDA engine parameter translation (cuda/fused_params.h). Translation rules (reference §4, bgv2 0.3.5):
//   spatial   A = Rz·Ry·Rx·diag(s) (float64 from SpatialTransform::AffineMatrix, rounded to float32 like
//             torch.Tensor(affine)); shift = float32(centre − S/2); use_crop when neither rotation, scale nor
//             deformation drawn; a drawn deformation passes its recipe (seed, σ, magnitude per component).
//   noise     σ and the key of GaussianNoiseParams (all channels, one σ: synchronize_channels, p_per_channel 1).
//   blur / brightness / contrast / gamma   per selected channel (the i-th gamma transform fills slot i).
//   low-res   shape_d = round_half_even(P_d · float32 scale_d), as SimulateLowResolutionTransform::Apply.
//   mirror    bit d per flipped axis; mask_image: per listed channel; remove_label(−1→0) and DS: batch-wide.
#include "augment/cuda/fused_params.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/kernels/cpu_spatial.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/status_macros.h"
#include "augment/transforms/contrast/contrast.h"
#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"
#include "augment/transforms/gamma/gamma.h"
#include "augment/transforms/gaussian_blur/gaussian_blur.h"
#include "augment/transforms/gaussian_noise/gaussian_noise.h"
#include "augment/transforms/mask_image/mask_image.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/multiplicative_brightness/multiplicative_brightness.h"
#include "augment/transforms/remove_label/remove_label.h"
#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"
#include "augment/transforms/spatial/spatial.h"

namespace augmentd {

namespace {

absl::Status Unimplemented(std::string_view transform, size_t index, std::string_view why) {
  return absl::UnimplementedError(absl::StrCat("CUDA engine: transform ", index, " (", std::string(transform),
                                               "): ", std::string(why), " (run it on device \"cpu\")"));
}

enum Stage : int {
  kStSpatial,
  kStNoise,
  kStBlur,
  kStBrightness,
  kStContrast,
  kStLowRes,
  kStGamma0,
  kStGamma1,
  kStMirror,
  kStMask,
  kStRemove,
  kStDs,
};

// The spatial entry's checks (everything but its apply probability) and its part of the plan.
absl::Status PlanSpatial(const TransformSpec& ts, size_t t, CudaPlan& plan) {
  const std::string_view name = TransformKindName(ts.kind);
  const Transform* tr = ts.transform.get();
  const auto* sp = dynamic_cast<const SpatialTransform*>(tr);
  if (sp == nullptr) return Unimplemented(name, t, "unknown implementation");
  const SpatialConfig& c = sp->config();
  if (c.dummy_2d) return Unimplemented(name, t, "dummy-2D augmentation");
  if (c.patch_size.size() != 3) return Unimplemented(name, t, "2D patch sizes (the kernels are 3D)");
  if (c.p_elastic_deform > 0) {
    for (int64_t v : c.patch_size) {
      if (v > cuda::kMaxElasticAxis)
        return Unimplemented(name, t,
                             absl::StrCat("elastic deformation of patch axes > ", cuda::kMaxElasticAxis));
    }
    plan.elastic = true;
  }
  if (c.random_crop) return Unimplemented(name, t, "random_crop");
  if (c.bg_style_seg_sampling && !SegPadFirst(c)) return Unimplemented(name, t, "bg_style_seg_sampling=True (0.3.5)");
  if (c.mode_seg != "bilinear" || c.mode_image != "bilinear")
    return Unimplemented(name, t, "mode_seg/mode_image other than bilinear");
  if (c.padding_mode_image == "constant" && c.padding_value_image != 0)
    return Unimplemented(name, t, "padding_value_image != 0");
  if (c.border_mode_seg == "constant" && c.padding_value_seg != 0) {
    if (c.padding_value_seg != -1) return Unimplemented(name, t, "padding_value_seg other than 0 or -1");
    plan.border_minus_one = true;
  } else {
    plan.border_minus_one = false;
  }
  plan.pad_first = SegPadFirst(c);
  const std::string tiebreak = ResolvedSegTiebreak(c);
  plan.seg_tiebreak = tiebreak == "nearest" ? 1 : (tiebreak == "highest" ? 2 : 0);
  plan.spatial = sp;
  return absl::OkStatus();
}

// bgv2 0.3.6 _may_reach_outside of an affine sample, from the corners of its output box (MayReachOutsideAffine).
bool AffineMayReachOutside(const cuda::SampleParams& sp, const cuda::BatchShape& sh) {
  kernels::GridSpec g;
  g.ndim = 3;
  g.has_affine = true;
  for (int d = 0; d < 3; ++d) {
    g.in_shape[d] = sh.in[d];
    g.out_shape[d] = sh.out[d];
    g.shift[d] = sp.shift[d];
    for (int e = 0; e < 3; ++e) g.affine[d][e] = sp.matrix[3 * d + e];
  }
  return kernels::MayReachOutsideAffine(g);
}

}  // namespace

absl::StatusOr<CudaPlan> MakeCudaPlan(const PipelineSpec& spec) {
  CudaPlan plan;
  int last = -1, gammas = 0;
  for (size_t t = 0; t < spec.transforms.size(); ++t) {
    const TransformSpec& ts = spec.transforms[t];
    const Transform* tr = ts.transform.get();
    const std::string_view name = TransformKindName(ts.kind);
    if (!ts.channels.empty()) return Unimplemented(name, t, "a channel selection (the generic chain runs it)");
    int st = -1;
    if (ts.region_mode.enabled()) return Unimplemented(name, t, "region_mode (the generic chain runs it)");
    switch (ts.kind) {
      case TransformKind::kSpatial: {
        RETURN_IF_ERROR(PlanSpatial(ts, t, plan));
        if (ts.apply_probability < 1) return Unimplemented(name, t, "apply_probability < 1");
        st = kStSpatial;
        break;
      }
      case TransformKind::kGaussianNoise: {
        const auto* n = dynamic_cast<const GaussianNoiseTransform*>(tr);
        if (n == nullptr) return Unimplemented(name, t, "unknown implementation");
        if (n->config().p_per_channel != 1) return Unimplemented(name, t, "p_per_channel != 1");
        plan.noise = n;
        st = kStNoise;
        break;
      }
      case TransformKind::kGaussianBlur:
        st = kStBlur;
        break;
      case TransformKind::kMultiplicativeBrightness:
        st = kStBrightness;
        break;
      case TransformKind::kContrast: {
        const auto* c = dynamic_cast<const ContrastTransform*>(tr);
        if (c == nullptr) return Unimplemented(name, t, "unknown implementation");
        if (!c->config().preserve_range) return Unimplemented(name, t, "preserve_range=False");
        st = kStContrast;
        break;
      }
      case TransformKind::kSimulateLowResolution:
        st = kStLowRes;
        break;
      case TransformKind::kGamma:
        if (gammas >= 2) return Unimplemented(name, t, "more than two gamma transforms");
        st = kStGamma0 + gammas++;
        break;
      case TransformKind::kMirror: {
        const auto* m = dynamic_cast<const MirrorTransform*>(tr);
        if (m == nullptr) return Unimplemented(name, t, "unknown implementation");
        for (int64_t a : m->config().allowed_axes)
          if (a < 0 || a > 2) return Unimplemented(name, t, "axes outside 0..2");
        st = kStMirror;
        break;
      }
      case TransformKind::kMaskImage: {
        const auto* m = dynamic_cast<const MaskImageTransform*>(tr);
        if (m == nullptr) return Unimplemented(name, t, "unknown implementation");
        if (m->config().channel_idx_in_seg != 0 || m->config().set_outside_to != 0)
          return Unimplemented(name, t, "channel_idx_in_seg != 0 or set_outside_to != 0");
        st = kStMask;
        break;
      }
      case TransformKind::kRemoveLabel: {
        const auto* r = dynamic_cast<const RemoveLabelTransform*>(tr);
        if (r == nullptr) return Unimplemented(name, t, "unknown implementation");
        if (!RemovesMinusOneOnChannel0(r->config()))
          return Unimplemented(name, t, "only label_value=-1 -> set_to=0 on seg channel 0");
        if (ts.apply_probability < 1) return Unimplemented(name, t, "apply_probability < 1");
        plan.remove_minus_one = true;
        st = kStRemove;
        break;
      }
      case TransformKind::kDownsampleSegForDs: {
        const auto* d = dynamic_cast<const DownsampleSegForDsTransform*>(tr);
        if (d == nullptr) return Unimplemented(name, t, "unknown implementation");
        if (ts.apply_probability < 1) return Unimplemented(name, t, "apply_probability < 1");
        const auto& scales = d->config().ds_scales;
        if (scales.empty() || static_cast<int>(scales.size()) - 1 > cuda::kMaxDsLevels)
          return Unimplemented(name, t, "needs 1..9 levels");
        for (size_t l = 0; l < scales.size(); ++l) {
          bool identity = true;
          for (double v : scales[l]) identity = identity && v == 1.0;
          if (identity != (l == 0)) return Unimplemented(name, t, "level 0 must be full resolution, no other level");
        }
        plan.ds = d;
        st = kStDs;
        break;
      }
      default:
        return Unimplemented(name, t, "not a stage of the fused kernels (the generic chain runs it)");
    }
    if (st <= last) {
      return Unimplemented(name, t,
                           "order differs from the fused order spatial, noise, blur, brightness, contrast, low-res, "
                           "gamma, gamma, mirror, mask, remove_label, ds");
    }
    last = st;
    plan.stage.push_back(st);
  }
  return plan;
}

bool RemovesMinusOneOnChannel0(const RemoveLabelConfig& c) {
  const bool channels_ok =
      !c.segmentation_channels || (c.segmentation_channels->size() == 1 && (*c.segmentation_channels)[0] == 0);
  return c.label_value == -1 && c.set_to == 0 && channels_ok;
}

absl::StatusOr<CudaPlan> MakeSpatialPlan(const PipelineSpec& spec) {
  CudaPlan plan;
  plan.stage.assign(spec.transforms.size(), -1);
  for (size_t t = 0; t < spec.transforms.size(); ++t) {
    if (spec.transforms[t].kind != TransformKind::kSpatial) continue;
    if (plan.spatial != nullptr) return Unimplemented("spatial", t, "more than one spatial transform");
    RETURN_IF_ERROR(PlanSpatial(spec.transforms[t], t, plan));
    plan.stage[t] = kStSpatial;
  }
  return plan;
}

// Fills one sample's kernel parameters from its drawn record.
absl::Status TranslateSample(const PipelineSpec& spec, const CudaPlan& plan, const SampleRecord& rec,
                             const cuda::BatchShape& sh, cuda::SampleParams& sp) {
  sp = cuda::SampleParams{};
  sp.seg_border_minus_one = plan.border_minus_one ? 1 : 0;
  sp.seg_tiebreak = plan.seg_tiebreak;
  const int C = sh.channels;
  auto channel_ok = [&](int64_t c) { return c >= 0 && c < C; };
  for (size_t t = 0; t < rec.transforms.size(); ++t) {
    const AppliedTransform& at = rec.transforms[t];
    const std::string_view name = TransformKindName(at.kind);
    if (!at.applied) {
      if (plan.stage[t] == kStSpatial) {
        for (int d = 0; d < 3; ++d)
          if (sh.in[d] != sh.out[d]) return Unimplemented(name, t, "not applied to a sample whose shape != patch");
      }
      continue;
    }
    const TransformParams& tp = *at.params;
    const auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("sample ", rec.sample_index, ", transform ", t, " (",
                                                     std::string(name), "): ", std::string(why)));
    };
    switch (plan.stage[t]) {
      case kStSpatial: {
        const auto& p = static_cast<const SpatialParams&>(tp);
        if (p.ndim != 3 || p.center_location_in_pixels.size() != 3) return bad("expected 3D parameters");
        if (p.elastic_offsets) return Unimplemented(name, t, "elastic offsets (injected)");
        if (p.elastic) {
          const SpatialParams::ElasticRecipe& r = *p.elastic;
          if (r.sigma.size() != 3 || r.magnitude.size() != 3) return bad("expected 3 elastic components");
          sp.elastic = 1;
          sp.elastic_center = plan.spatial->config().center_deformation ? 1 : 0;
          sp.elastic_seed = r.seed;
          sp.elastic_sample_index = r.sample_index;
          sp.elastic_transform_index = r.transform_index;
          for (int d = 0; d < 3; ++d) {
            if (!std::isfinite(r.sigma[d]) || !std::isfinite(r.magnitude[d])) return bad("elastic recipe not finite");
            sp.elastic_sigma[d] = r.sigma[d];
            sp.elastic_magnitude[d] = static_cast<float>(std::max(r.magnitude[d], 1e-8));  // as the CPU rescales
          }
        }
        if (p.affine && p.affine->size() != 9) return bad("affine must be 3x3");
        if (p.affine || p.elastic) {
          sp.use_crop = 0;  // identity A when only the deformation was drawn (1·p + 0·q is exact)
          for (int i = 0; p.affine && i < 9; ++i) sp.matrix[i] = static_cast<float>((*p.affine)[i]);
          for (int d = 0; d < 3; ++d) {
            sp.shift[d] = static_cast<float>(p.center_location_in_pixels[d] - static_cast<double>(sh.in[d]) / 2.0);
          }
          if (plan.pad_first) sp.pad_votes = p.elastic ? 1 : (AffineMayReachOutside(sp, sh) ? 1 : 0);
        } else {
          sp.use_crop = 1;
          for (int d = 0; d < 3; ++d) {
            if (std::floor(p.center_location_in_pixels[d]) != static_cast<double>(sh.in[d] / 2))
              return Unimplemented(name, t, "crop centre other than S/2 (injected)");
          }
        }
        break;
      }
      case kStNoise: {
        const auto& p = static_cast<const GaussianNoiseParams&>(tp);
        if (p.apply_idx.empty()) break;
        if (static_cast<int>(p.apply_idx.size()) != C)
          return Unimplemented(name, t, "noise on a subset of the channels");
        for (size_t k = 0; k < p.apply_idx.size(); ++k) {
          if (p.apply_idx[k] != static_cast<int64_t>(k)) return bad("apply_idx must list channels in order");
          if (p.sigmas[k] != p.sigmas[0])
            return Unimplemented(name, t, "per-channel sigma (synchronize_channels=False)");
        }
        sp.noise_sigma = p.sigmas[0];
        sp.seed = p.seed;
        sp.sample_index = p.sample_index;
        sp.noise_transform_index = p.transform_index;
        break;
      }
      case kStBlur: {
        const auto& p = static_cast<const GaussianBlurParams&>(tp);
        for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
          const int64_t c = p.apply_to_channel[k];
          if (!channel_ok(c) || k >= p.sigmas.size() || p.sigmas[k].size() != 3) return bad("bad blur parameters");
          for (int d = 0; d < 3; ++d) {
            const double s = p.sigmas[k][d];
            if (!(s > 0)) return Unimplemented(name, t, "sigma <= 0");
            if (cuda::BlurKernelSize(s) > 2 * cuda::kMaxBlurRadius + 1)
              return Unimplemented(name, t, absl::StrCat("sigma ", s, " needs more than 17 taps"));
            sp.ch[c].blur_sigma[d] = static_cast<float>(s);
          }
        }
        break;
      }
      case kStBrightness: {
        const auto& p = static_cast<const MultiplicativeBrightnessParams&>(tp);
        for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
          if (!channel_ok(p.apply_to_channel[k]) || k >= p.multipliers.size()) return bad("bad multipliers");
          sp.ch[p.apply_to_channel[k]].brightness = p.multipliers[k];
        }
        break;
      }
      case kStContrast: {
        const auto& p = static_cast<const ContrastParams&>(tp);
        for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
          if (!channel_ok(p.apply_to_channel[k]) || k >= p.multipliers.size()) return bad("bad multipliers");
          if (p.multipliers[k] == 0.f) return Unimplemented(name, t, "contrast multiplier 0");
          sp.ch[p.apply_to_channel[k]].contrast = p.multipliers[k];
        }
        break;
      }
      case kStLowRes: {
        const auto& p = static_cast<const SimulateLowResolutionParams&>(tp);
        for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
          const int64_t c = p.apply_to_channel[k];
          if (!channel_ok(c) || k >= p.scales.size() || p.scales[k].size() != 3) return bad("bad scales");
          for (int d = 0; d < 3; ++d) {
            const int64_t n =
                kernels::PyRoundToInt(static_cast<double>(sh.out[d]) * static_cast<double>(p.scales[k][d]));
            if (n < 1 || n > sh.out[d]) return Unimplemented(name, t, "low-res shape outside [1, patch]");
            sp.ch[c].lowres_shape[d] = static_cast<int32_t>(n);
          }
        }
        break;
      }
      case kStGamma0:
      case kStGamma1: {
        const int slot = plan.stage[t] - kStGamma0;
        const auto& p = static_cast<const GammaParams&>(tp);
        for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
          const int64_t c = p.apply_to_channel[k];
          if (!channel_ok(c) || k >= p.gamma.size() || k >= p.invert_image.size() || k >= p.retain_stats.size())
            return bad("bad gamma parameters");
          if (!(p.gamma[k] > 0.f)) return Unimplemented(name, t, "gamma <= 0");
          sp.ch[c].gamma[slot] = p.gamma[k];
          sp.ch[c].gamma_invert[slot] = p.invert_image[k] ? 1 : 0;
          sp.ch[c].gamma_retain[slot] = p.retain_stats[k] ? 1 : 0;
        }
        break;
      }
      case kStMirror: {
        const auto& p = static_cast<const MirrorParams&>(tp);
        for (int64_t a : p.axes) {
          if (a < 0 || a > 2) return bad("mirror axis outside 0..2");
          sp.mirror_mask |= 1 << a;
        }
        break;
      }
      case kStMask: {
        const auto* m = static_cast<const MaskImageTransform*>(spec.transforms[t].transform.get());
        for (int64_t c : m->config().apply_to_channels) {
          if (!channel_ok(c)) return bad("apply_to_channels outside the image channels");
          sp.ch[c].mask = 1;
        }
        break;
      }
      default:  // remove_label, DS: batch-wide (BatchShape)
        break;
    }
  }
  return absl::OkStatus();
}

}  // namespace augmentd
