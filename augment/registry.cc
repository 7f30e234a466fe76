#include "augment/registry.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/transforms/auglab_histogram_equalization.h"
#include "augment/transforms/auglab_intensity_function.h"
#include "augment/transforms/auglab_random_convolution.h"
#include "augment/transforms/blank_rectangle.h"
#include "augment/transforms/clamp/clamp.h"
#include "augment/transforms/brightness_additive.h"
#include "augment/transforms/brightness_gradient_additive.h"
#include "augment/transforms/contrast.h"
#include "augment/transforms/convert_segmentation_to_regions.h"
#include "augment/transforms/downsample_seg_for_ds.h"
#include "augment/transforms/edge_convolution/edge_convolution.h"
#include "augment/transforms/gamma.h"
#include "augment/transforms/gaussian_blur.h"
#include "augment/transforms/gaussian_noise.h"
#include "augment/transforms/local_gamma.h"
#include "augment/transforms/mask_image.h"
#include "augment/transforms/median_filter.h"
#include "augment/transforms/mri_bias_field.h"
#include "augment/transforms/mri_ghosting.h"
#include "augment/transforms/mri_motion.h"
#include "augment/transforms/mri_spike.h"
#include "augment/transforms/mirror.h"
#include "augment/transforms/multiplicative_brightness.h"
#include "augment/transforms/remove_label.h"
#include "augment/transforms/rician_noise.h"
#include "augment/transforms/rot90.h"
#include "augment/transforms/sharpening.h"
#include "augment/transforms/simulate_low_resolution.h"
#include "augment/transforms/unsharp_mask/unsharp_mask.h"
#include "augment/transforms/zscore_normalization/zscore_normalization.h"
#include "augment/transforms/spatial.h"
#include "augment/transforms/transpose_axes.h"

namespace augmentd {

namespace {
// The one explicit list (STYLE.md: no static registrars). Order = TransformKind order = pipeline order.
std::vector<TransformEntry> RegisterAll() {
  return {
      {"spatial", TransformKind::kSpatial, true, &SpatialTransform::FromJson},
      {"gaussian_noise", TransformKind::kGaussianNoise, true, &GaussianNoiseTransform::FromJson},
      {"gaussian_blur", TransformKind::kGaussianBlur, true, &GaussianBlurTransform::FromJson},
      {"multiplicative_brightness", TransformKind::kMultiplicativeBrightness, true,
       &MultiplicativeBrightnessTransform::FromJson},
      {"contrast", TransformKind::kContrast, true, &ContrastTransform::FromJson},
      {"simulate_low_resolution", TransformKind::kSimulateLowResolution, true,
       &SimulateLowResolutionTransform::FromJson},
      {"gamma", TransformKind::kGamma, true, &GammaTransform::FromJson},
      {"mirror", TransformKind::kMirror, true, &MirrorTransform::FromJson},
      {"mask_image", TransformKind::kMaskImage, true, &MaskImageTransform::FromJson},
      {"remove_label", TransformKind::kRemoveLabel, true, &RemoveLabelTransform::FromJson},
      {"convert_segmentation_to_regions", TransformKind::kConvertSegmentationToRegions, true,
       &ConvertSegmentationToRegionsTransform::FromJson},
      {"downsample_seg_for_ds", TransformKind::kDownsampleSegForDs, true, &DownsampleSegForDsTransform::FromJson},
      // nnUNetTrainerDA5 (reference §5.1).
      {"blank_rectangle", TransformKind::kBlankRectangle, true, &BlankRectangleTransform::FromJson},
      {"brightness_additive", TransformKind::kBrightnessAdditive, true, &BrightnessAdditiveTransform::FromJson},
      {"sharpening", TransformKind::kSharpening, true, &SharpeningTransform::FromJson},
      {"median_filter", TransformKind::kMedianFilter, true, &MedianFilterTransform::FromJson},
      {"brightness_gradient_additive", TransformKind::kBrightnessGradientAdditive, true,
       &BrightnessGradientAdditiveTransform::FromJson},
      {"local_gamma", TransformKind::kLocalGamma, true, &LocalGammaTransform::FromJson},
      {"rot90", TransformKind::kRot90, true, &Rot90Transform::FromJson},
      {"transpose_axes", TransformKind::kTransposeAxes, true, &TransposeAxesTransform::FromJson},
      {"rician_noise", TransformKind::kRicianNoise, true, &RicianNoiseTransform::FromJson},
      // MRI artefacts (TorchIO's definitions).
      {"bias_field", TransformKind::kBiasField, true, &BiasFieldTransform::FromJson},
      {"ghosting", TransformKind::kGhosting, true, &GhostingTransform::FromJson},
      {"spike", TransformKind::kSpike, true, &SpikeTransform::FromJson},
      {"motion", TransformKind::kMotion, true, &MotionTransform::FromJson},
      // AugLab's nnUNetTrainerDAExtGPU extras (augment/transforms/auglab_*.h).
      {"histogram_equalization", TransformKind::kHistogramEqualization, true,
       &HistogramEqualizationTransform::FromJson},
      {"random_convolution", TransformKind::kRandomConvolution, true, &RandomConvolutionTransform::FromJson},
      {"intensity_function", TransformKind::kIntensityFunction, true, &IntensityFunctionTransform::FromJson},
      {"zscore_normalization", TransformKind::kZscoreNormalization, true, &ZscoreNormalizationTransform::FromJson},
      {"clamp", TransformKind::kClamp, true, &ClampTransform::FromJson},
      {"edge_convolution", TransformKind::kEdgeConvolution, true, &EdgeConvolutionTransform::FromJson},
      {"unsharp_mask", TransformKind::kUnsharpMask, true, &UnsharpMaskTransform::FromJson},
  };
}
}  // namespace

const std::vector<TransformEntry>& RegisteredTransforms() {
  static const std::vector<TransformEntry>* const kEntries = new std::vector<TransformEntry>(RegisterAll());
  return *kEntries;
}

std::vector<std::string> RegisteredTransformNames() {
  std::vector<std::string> names;
  for (const TransformEntry& e : RegisteredTransforms()) names.emplace_back(e.name);
  return names;
}

absl::StatusOr<const TransformEntry*> FindTransform(std::string_view name) {
  for (const TransformEntry& e : RegisteredTransforms())
    if (e.name == name) return &e;
  return absl::InvalidArgumentError(absl::StrCat("transform.kind: unknown transform '", std::string(name), "'"));
}

const TransformEntry& FindTransform(TransformKind kind) { return RegisteredTransforms()[static_cast<size_t>(kind)]; }

absl::StatusOr<TransformKind> ParseTransformKind(std::string_view name) {
  auto e = FindTransform(name);
  if (!e.ok()) return e.status();
  return (*e)->kind;
}

absl::StatusOr<std::shared_ptr<const Transform>> TransformFromJson(std::string_view name,
                                                                   const nlohmann::json& config) {
  auto e = FindTransform(name);
  if (!e.ok()) return e.status();
  if (json_util::NestedDeeperThan(config, 32)) {
    return absl::InvalidArgumentError(std::string(name) + ".config: nested deeper than 32 levels");
  }
  if (config.is_null()) return (*e)->from_json(nlohmann::json::object());
  return (*e)->from_json(config);
}

}  // namespace augmentd
