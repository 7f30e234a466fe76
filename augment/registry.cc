#include "augment/registry.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/transforms/histogram_equalization/histogram_equalization.h"
#include "augment/transforms/intensity_function/intensity_function.h"
#include "augment/transforms/random_convolution/random_convolution.h"
#include "augment/transforms/blank_rectangle/blank_rectangle.h"
#include "augment/transforms/brightness_additive/brightness_additive.h"
#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"
#include "augment/transforms/auglab_bias_field/auglab_bias_field.h"
#include "augment/transforms/auglab_low_resolution/auglab_low_resolution.h"
#include "augment/transforms/redistribute_seg/redistribute_seg.h"
#include "augment/transforms/anisotropy/anisotropy.h"
#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"
#include "augment/transforms/clamp/clamp.h"
#include "augment/transforms/contrast/contrast.h"
#include "augment/transforms/convert_segmentation_to_regions/convert_segmentation_to_regions.h"
#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"
#include "augment/transforms/elastic_deformation/elastic_deformation.h"
#include "augment/transforms/edge_convolution/edge_convolution.h"
#include "augment/transforms/gamma/gamma.h"
#include "augment/transforms/gaussian_blur/gaussian_blur.h"
#include "augment/transforms/gaussian_noise/gaussian_noise.h"
#include "augment/transforms/local_gamma/local_gamma.h"
#include "augment/transforms/mask_image/mask_image.h"
#include "augment/transforms/median_filter/median_filter.h"
#include "augment/transforms/bias_field/bias_field.h"
#include "augment/transforms/ghosting/ghosting.h"
#include "augment/transforms/motion/motion.h"
#include "augment/transforms/move_seg_as_one_hot_to_data/move_seg_as_one_hot_to_data.h"
#include "augment/transforms/shape_crop/shape_crop.h"
#include "augment/transforms/spike/spike.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/multiplicative_brightness/multiplicative_brightness.h"
#include "augment/transforms/remove_label/remove_label.h"
#include "augment/transforms/remove_random_connected_component/remove_random_connected_component.h"
#include "augment/transforms/rician_noise/rician_noise.h"
#include "augment/transforms/rot90/rot90.h"
#include "augment/transforms/sharpening/sharpening.h"
#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"
#include "augment/transforms/spatial/spatial.h"
#include "augment/transforms/swap/swap.h"
#include "augment/transforms/torchio_affine/torchio_affine.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"
#include "augment/transforms/unsharp_mask/unsharp_mask.h"
#include "augment/transforms/zscore_normalization/zscore_normalization.h"

namespace augmentd {

namespace {
constexpr uint32_t kLabels = kCapUsesLabels;
constexpr uint32_t kLayout = kCapChangesOutputLayout;

// The one explicit list (STYLE.md: no static registrars). Order = TransformKind order = pipeline order.
constexpr TransformEntry kEntries[] = {
    {"spatial", TransformKind::kSpatial, &SpatialTransform::FromJson, kLabels, &SchemaOf<SpatialTransform>},
    {"gaussian_noise", TransformKind::kGaussianNoise, &GaussianNoiseTransform::FromJson, kCapNone,
     &SchemaOf<GaussianNoiseTransform>},
    {"gaussian_blur", TransformKind::kGaussianBlur, &GaussianBlurTransform::FromJson, kCapNone,
     &SchemaOf<GaussianBlurTransform>},
    {"multiplicative_brightness", TransformKind::kMultiplicativeBrightness,
     &MultiplicativeBrightnessTransform::FromJson, kCapNone, &SchemaOf<MultiplicativeBrightnessTransform>},
    {"contrast", TransformKind::kContrast, &ContrastTransform::FromJson, kCapNone, &SchemaOf<ContrastTransform>},
    {"simulate_low_resolution", TransformKind::kSimulateLowResolution,
     &SimulateLowResolutionTransform::FromJson, kCapNone, &SchemaOf<SimulateLowResolutionTransform>},
    {"gamma", TransformKind::kGamma, &GammaTransform::FromJson, kCapNone, &SchemaOf<GammaTransform>},
    {"mirror", TransformKind::kMirror, &MirrorTransform::FromJson, kLabels, &SchemaOf<MirrorTransform>},
    {"mask_image", TransformKind::kMaskImage, &MaskImageTransform::FromJson, kLabels, &SchemaOf<MaskImageTransform>},
    {"remove_label", TransformKind::kRemoveLabel, &RemoveLabelTransform::FromJson, kLabels,
     &SchemaOf<RemoveLabelTransform>},
    {"convert_segmentation_to_regions", TransformKind::kConvertSegmentationToRegions,
     &ConvertSegmentationToRegionsTransform::FromJson, kLabels | kLayout,
     &SchemaOf<ConvertSegmentationToRegionsTransform>},
    {"downsample_seg_for_ds", TransformKind::kDownsampleSegForDs, &DownsampleSegForDsTransform::FromJson,
     kLabels | kLayout, &SchemaOf<DownsampleSegForDsTransform>},
    // nnUNetTrainerDA5 (reference §5.1).
    {"blank_rectangle", TransformKind::kBlankRectangle, &BlankRectangleTransform::FromJson, kCapNone,
     &SchemaOf<BlankRectangleTransform>},
    {"brightness_additive", TransformKind::kBrightnessAdditive, &BrightnessAdditiveTransform::FromJson, kCapNone,
     &SchemaOf<BrightnessAdditiveTransform>},
    {"sharpening", TransformKind::kSharpening, &SharpeningTransform::FromJson, kCapNone,
     &SchemaOf<SharpeningTransform>},
    {"median_filter", TransformKind::kMedianFilter, &MedianFilterTransform::FromJson, kCapNone,
     &SchemaOf<MedianFilterTransform>},
    {"brightness_gradient_additive", TransformKind::kBrightnessGradientAdditive,
     &BrightnessGradientAdditiveTransform::FromJson, kCapNone, &SchemaOf<BrightnessGradientAdditiveTransform>},
    {"local_gamma", TransformKind::kLocalGamma, &LocalGammaTransform::FromJson, kCapNone,
     &SchemaOf<LocalGammaTransform>},
    {"rot90", TransformKind::kRot90, &Rot90Transform::FromJson, kLabels, &SchemaOf<Rot90Transform>},
    {"transpose_axes", TransformKind::kTransposeAxes, &TransposeAxesTransform::FromJson, kLabels,
     &SchemaOf<TransposeAxesTransform>},
    {"rician_noise", TransformKind::kRicianNoise, &RicianNoiseTransform::FromJson, kCapNone,
     &SchemaOf<RicianNoiseTransform>},
    // MRI artefacts (TorchIO's definitions).
    {"bias_field", TransformKind::kBiasField, &BiasFieldTransform::FromJson, kCapNone, &SchemaOf<BiasFieldTransform>},
    {"ghosting", TransformKind::kGhosting, &GhostingTransform::FromJson, kCapNone, &SchemaOf<GhostingTransform>},
    {"spike", TransformKind::kSpike, &SpikeTransform::FromJson, kCapNone, &SchemaOf<SpikeTransform>},
    {"motion", TransformKind::kMotion, &MotionTransform::FromJson, kCapNone, &SchemaOf<MotionTransform>},
    // AugLab's nnUNetTrainerDAExtGPU extras (augment/transforms/<name>/); labels only with regions (UsesLabels).
    {"histogram_equalization", TransformKind::kHistogramEqualization,
     &HistogramEqualizationTransform::FromJson, kCapNone, &SchemaOf<HistogramEqualizationTransform>},
    {"random_convolution", TransformKind::kRandomConvolution, &RandomConvolutionTransform::FromJson, kCapNone,
     &SchemaOf<RandomConvolutionTransform>},
    {"intensity_function", TransformKind::kIntensityFunction, &IntensityFunctionTransform::FromJson, kCapNone,
     &SchemaOf<IntensityFunctionTransform>},
    // AugLab's RandomConvTransformGPU / normalisation extras (augment/transforms/<name>/), CPU only.
    {"zscore_normalization", TransformKind::kZscoreNormalization, &ZscoreNormalizationTransform::FromJson, kCapNone,
     &SchemaOf<ZscoreNormalizationTransform>},
    {"clamp", TransformKind::kClamp, &ClampTransform::FromJson, kCapNone, &SchemaOf<ClampTransform>},
    {"edge_convolution", TransformKind::kEdgeConvolution, &EdgeConvolutionTransform::FromJson, kCapNone,
     &SchemaOf<EdgeConvolutionTransform>},
    {"unsharp_mask", TransformKind::kUnsharpMask, &UnsharpMaskTransform::FromJson, kCapNone,
     &SchemaOf<UnsharpMaskTransform>},
    // nnUNetTrainerDAExt's CPU transforms (TorchIO definitions, AugLab's ShapeTransform), CPU only.
    {"swap", TransformKind::kSwap, &SwapTransform::FromJson, kCapNone, &SchemaOf<SwapTransform>},
    {"shape_crop", TransformKind::kShapeCrop, &ShapeCropTransform::FromJson, kLabels, &SchemaOf<ShapeCropTransform>},
    {"anisotropy", TransformKind::kAnisotropy, &AnisotropyTransform::FromJson, kCapNone,
     &SchemaOf<AnisotropyTransform>},
    {"torchio_affine", TransformKind::kTorchioAffine, &TorchioAffineTransform::FromJson, kLabels,
     &SchemaOf<TorchioAffineTransform>},
    {"elastic_deformation", TransformKind::kElasticDeformation, &ElasticDeformationTransform::FromJson, kLabels,
     &SchemaOf<ElasticDeformationTransform>},
    // nnU-Net's cascade (augment/transforms/<name>/): the seg channel becomes image channels, then two perturbations
    // of those channels (image-only, they never touch the labels).
    {"move_seg_as_one_hot_to_data", TransformKind::kMoveSegAsOneHotToData, &MoveSegAsOneHotToDataTransform::FromJson,
     kLabels | kLayout, &SchemaOf<MoveSegAsOneHotToDataTransform>},
    {"apply_random_binary_operator", TransformKind::kApplyRandomBinaryOperator,
     &ApplyRandomBinaryOperatorTransform::FromJson, kCapNone, &SchemaOf<ApplyRandomBinaryOperatorTransform>},
    {"remove_random_connected_component", TransformKind::kRemoveRandomConnectedComponent,
     &RemoveRandomConnectedComponentTransform::FromJson, kCapNone, &SchemaOf<RemoveRandomConnectedComponentTransform>},
    // AugLab DAExt GPU extras added in session 7 (augment/transforms/<name>/); labels per UsesLabels().
    {"auglab_low_resolution", TransformKind::kAuglabLowResolution, &AuglabLowResolutionTransform::FromJson, kCapNone,
     &SchemaOf<AuglabLowResolutionTransform>},
    {"redistribute_seg", TransformKind::kRedistributeSeg, &RedistributeSegTransform::FromJson, kLabels,
     &SchemaOf<RedistributeSegTransform>},
    {"auglab_bias_field", TransformKind::kAuglabBiasField, &AuglabBiasFieldTransform::FromJson, kCapNone,
     &SchemaOf<AuglabBiasFieldTransform>},
};

constexpr bool OneEntryPerKindInOrder() {
  if (sizeof(kEntries) / sizeof(kEntries[0]) != static_cast<size_t>(kNumTransformKinds)) return false;
  for (int k = 0; k < kNumTransformKinds; ++k)
    if (kEntries[k].kind != static_cast<TransformKind>(k) || kEntries[k].from_json == nullptr) return false;
  return true;
}
static_assert(OneEntryPerKindInOrder(), "registry.cc: kEntries needs one entry per TransformKind, in enum order");
}  // namespace

std::string_view TransformKindName(TransformKind kind) {
  if (static_cast<int>(kind) >= kNumTransformKinds) return "unknown";
  return kEntries[static_cast<size_t>(kind)].name;
}

bool Transform::UsesLabels() const { return (FindTransform(kind()).caps & kCapUsesLabels) != 0; }

const std::vector<TransformEntry>& RegisteredTransforms() {
  static const std::vector<TransformEntry>* const kTable =
      new std::vector<TransformEntry>(std::begin(kEntries), std::end(kEntries));
  return *kTable;
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

const TransformEntry& FindTransform(TransformKind kind) { return kEntries[static_cast<size_t>(kind)]; }

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
