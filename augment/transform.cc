#include "augment/transform.h"

namespace augmentd {

std::string_view TransformKindName(TransformKind kind) {
  switch (kind) {
    case TransformKind::kSpatial:
      return "spatial";
    case TransformKind::kGaussianNoise:
      return "gaussian_noise";
    case TransformKind::kGaussianBlur:
      return "gaussian_blur";
    case TransformKind::kMultiplicativeBrightness:
      return "multiplicative_brightness";
    case TransformKind::kContrast:
      return "contrast";
    case TransformKind::kSimulateLowResolution:
      return "simulate_low_resolution";
    case TransformKind::kGamma:
      return "gamma";
    case TransformKind::kMirror:
      return "mirror";
    case TransformKind::kMaskImage:
      return "mask_image";
    case TransformKind::kRemoveLabel:
      return "remove_label";
    case TransformKind::kConvertSegmentationToRegions:
      return "convert_segmentation_to_regions";
    case TransformKind::kDownsampleSegForDs:
      return "downsample_seg_for_ds";
    case TransformKind::kBlankRectangle:
      return "blank_rectangle";
    case TransformKind::kBrightnessAdditive:
      return "brightness_additive";
    case TransformKind::kSharpening:
      return "sharpening";
    case TransformKind::kMedianFilter:
      return "median_filter";
    case TransformKind::kBrightnessGradientAdditive:
      return "brightness_gradient_additive";
    case TransformKind::kLocalGamma:
      return "local_gamma";
    case TransformKind::kRot90:
      return "rot90";
    case TransformKind::kTransposeAxes:
      return "transpose_axes";
    case TransformKind::kRicianNoise:
      return "rician_noise";
    case TransformKind::kBiasField:
      return "bias_field";
    case TransformKind::kGhosting:
      return "ghosting";
    case TransformKind::kSpike:
      return "spike";
    case TransformKind::kMotion:
      return "motion";
    case TransformKind::kHistogramEqualization:
      return "histogram_equalization";
    case TransformKind::kRandomConvolution:
      return "random_convolution";
    case TransformKind::kIntensityFunction:
      return "intensity_function";
    case TransformKind::kZscoreNormalization:
      return "zscore_normalization";
    case TransformKind::kClamp:
      return "clamp";
    case TransformKind::kEdgeConvolution:
      return "edge_convolution";
    case TransformKind::kUnsharpMask:
      return "unsharp_mask";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<TransformParams>> Transform::ParseParams(const nlohmann::json& j,
                                                                        const SampleLayout& layout) const {
  if (j.is_null()) return ParamsFromJson(nlohmann::json::object(), layout);
  if (!j.is_object()) return absl::InvalidArgumentError("params: expected an object (bgv2 get_parameters() dict)");
  return ParamsFromJson(j, layout);
}

void SampleData::Materialize() {
  if (external_image != nullptr) {
    image.assign(external_image, external_image + channels * voxels());
    external_image = nullptr;
  }
  if (external_seg != nullptr) {
    seg.assign(external_seg, external_seg + seg_channels * voxels());
    external_seg = nullptr;
  }
}

int64_t SampleData::voxels() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

}  // namespace augmentd
