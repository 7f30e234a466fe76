// 2D samples on the generic CUDA chain (cuda_chain_2d.h): which stages take them and their parameters' 3D form.
#include "augment/cuda_chain_2d.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "augment/transforms/gaussian_blur.h"
#include "augment/transforms/mirror.h"
#include "augment/transforms/rot90.h"
#include "augment/transforms/simulate_low_resolution.h"
#include "augment/transforms/transpose_axes.h"

namespace augmentd {

absl::Status CheckStage2D(TransformKind kind, size_t index) {
  switch (kind) {
    case TransformKind::kSpatial:
    case TransformKind::kDownsampleSegForDs:
    case TransformKind::kGaussianNoise:
    case TransformKind::kMultiplicativeBrightness:
    case TransformKind::kBrightnessAdditive:
    case TransformKind::kContrast:
    case TransformKind::kGamma:
    case TransformKind::kMaskImage:
    case TransformKind::kRemoveLabel:
    case TransformKind::kConvertSegmentationToRegions:
    case TransformKind::kGaussianBlur:
    case TransformKind::kSimulateLowResolution:
    case TransformKind::kMirror:
    case TransformKind::kRot90:
    case TransformKind::kTransposeAxes:
      return absl::OkStatus();
    default:
      return absl::UnimplementedError(absl::StrCat(
          "CUDA engine: transform ", index, " (", std::string(TransformKindName(kind)),
          "): 2D samples (its CUDA stage is 3D only: no 2D form verified against the CPU; run it on device \"cpu\")"));
  }
}

namespace {
absl::Status Not2D(TransformKind kind, const std::string& field) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(TransformKindName(kind)), ": params.", field, ": expected 2D parameters"));
}
}  // namespace

absl::StatusOr<std::unique_ptr<TransformParams>> LiftParams2D(TransformKind kind, const TransformParams& p) {
  switch (kind) {
    case TransformKind::kGaussianBlur: {
      auto q = std::make_unique<GaussianBlurParams>(static_cast<const GaussianBlurParams&>(p));
      for (auto& s : q->sigmas) {
        if (s.size() != 2) return Not2D(kind, "sigmas");
        s.insert(s.begin(), kUnitAxisSigma);
      }
      return std::unique_ptr<TransformParams>(std::move(q));
    }
    case TransformKind::kSimulateLowResolution: {
      auto q = std::make_unique<SimulateLowResolutionParams>(static_cast<const SimulateLowResolutionParams&>(p));
      for (auto& s : q->scales) {
        if (s.size() != 2) return Not2D(kind, "scales");
        s.insert(s.begin(), 1.0f);
      }
      return std::unique_ptr<TransformParams>(std::move(q));
    }
    case TransformKind::kMirror: {
      auto q = std::make_unique<MirrorParams>(static_cast<const MirrorParams&>(p));
      for (int64_t& a : q->axes) {
        if (a < 0 || a > 1) return Not2D(kind, "axes");
        a += 1;
      }
      return std::unique_ptr<TransformParams>(std::move(q));
    }
    case TransformKind::kRot90: {
      auto q = std::make_unique<Rot90Params>(static_cast<const Rot90Params&>(p));
      for (auto& ab : q->axis_combinations) {
        for (int64_t& a : ab) {
          if (a < 1 || a > 2) return Not2D(kind, "axis_combinations");
          a += 1;
        }
      }
      return std::unique_ptr<TransformParams>(std::move(q));
    }
    case TransformKind::kTransposeAxes: {
      auto q = std::make_unique<TransposeAxesParams>(static_cast<const TransposeAxesParams&>(p));
      if (q->axis_order.size() != 3 || q->axis_order[0] != 0) return Not2D(kind, "axis_order");
      q->axis_order = {0, 1, q->axis_order[1] + 1, q->axis_order[2] + 1};
      return std::unique_ptr<TransformParams>(std::move(q));
    }
    default:
      return std::unique_ptr<TransformParams>();
  }
}

}  // namespace augmentd
