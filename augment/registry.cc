#include "augment/registry.h"

#include "absl/strings/str_cat.h"
#include "augment/transforms/contrast.h"
#include "augment/transforms/convert_segmentation_to_regions.h"
#include "augment/transforms/downsample_seg_for_ds.h"
#include "augment/transforms/gamma.h"
#include "augment/transforms/gaussian_blur.h"
#include "augment/transforms/gaussian_noise.h"
#include "augment/transforms/mask_image.h"
#include "augment/transforms/mirror.h"
#include "augment/transforms/multiplicative_brightness.h"
#include "augment/transforms/remove_label.h"
#include "augment/transforms/simulate_low_resolution.h"
#include "augment/transforms/spatial.h"

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
  return (*e)->from_json(config.is_null() ? nlohmann::json::object() : config);
}

}  // namespace augmentd
