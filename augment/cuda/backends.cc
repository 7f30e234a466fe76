// augment/cuda/backends.cc — the CUDA side of the registry: one line per TransformKind, in enum order (the CPU side
// is augment/registry.cc). Compiled only in CUDA builds; augment/cuda/engine_nocuda.cc answers nullptr otherwise.
//
// A line names the kind's chain stage factory (defined beside its stage class in the stage files), its 2D lift
// (cuda/chain_2d.cc; nullptr: 2D parameters are used as drawn) and whether 2D samples may run. spatial and
// downsample_seg_for_ds are run by the chain executor (no stage factory). A kind without a line is CPU-only
// (none today): CudaBackendOf answers nullptr, the CUDA engine refuses it (UNIMPLEMENTED) and GetServerInfo reports
// cuda=false. Lines are in strictly increasing enum order; the table may skip kinds.
#include <cstddef>
#include <memory>

#include "augment/cuda/backend.h"

namespace augmentd {

// Stage factories (augment/cuda/stages*.cc, augment/transforms/<name>/<name>_cuda.cc).
CudaStageOrError MakeGaussianNoiseStage(const Transform& t, size_t index);  // transforms/gaussian_noise/
CudaStageOrError MakeMultiplicativeBrightnessStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeBrightnessAdditiveStage(const Transform& t, size_t index);  // transforms/brightness_additive/
CudaStageOrError MakeContrastStage(const Transform& t, size_t index);  // transforms/contrast/
CudaStageOrError MakeGammaStage(const Transform& t, size_t index);  // transforms/gamma/
CudaStageOrError MakeGaussianBlurStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeLowResStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakePermuteStage(const Transform& t, size_t index);
CudaStageOrError MakeMaskImageStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeRemoveLabelStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeRegionsStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeMedianFilterStage(const Transform& t, size_t index);
CudaStageOrError MakeSharpeningStage(const Transform& t, size_t index);
CudaStageOrError MakeRicianNoiseStage(const Transform& t, size_t index);
CudaStageOrError MakeBlankRectangleStage(const Transform& t, size_t index);
CudaStageOrError MakeBrightnessGradientAdditiveStage(const Transform& t, size_t index);
CudaStageOrError MakeLocalGammaStage(const Transform& t, size_t index);
CudaStageOrError MakeBiasFieldStage(const Transform& t, size_t index);
CudaStageOrError MakeGhostingStage(const Transform& t, size_t index);
CudaStageOrError MakeSpikeStage(const Transform& t, size_t index);
CudaStageOrError MakeMotionStage(const Transform& t, size_t index);
CudaStageOrError MakeHistogramEqualizationStage(const Transform& t, size_t index);
CudaStageOrError MakeRandomConvolutionStage(const Transform& t, size_t index);
CudaStageOrError MakeIntensityFunctionStage(const Transform& t, size_t index);
CudaStageOrError MakeZscoreNormalizationStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeClampStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeEdgeConvolutionStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeUnsharpMaskStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeShapeCropStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeAuglabBiasFieldStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeMoveSegAsOneHotToDataStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeApplyRandomBinaryOperatorStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeRemoveRandomConnectedComponentStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeAnisotropyStage(const Transform& t, size_t index);  // transforms/anisotropy/
CudaStageOrError MakeTorchioAffineStage(const Transform& t, size_t index);  // transforms/torchio_affine/
CudaStageOrError MakeElasticDeformationStage(const Transform& t, size_t index);  // transforms/elastic_deformation/
CudaStageOrError MakeAuglabLowResolutionStage(const Transform& t, size_t index);  // transforms/auglab_low_resolution/
CudaStageOrError MakeSwapStage(const Transform& t, size_t index);  // transforms/<kind>/
CudaStageOrError MakeRedistributeSegStage(const Transform& t, size_t index);  // transforms/<kind>/

// 2D lifts (augment/cuda/chain_2d.cc).
using Lifted = absl::StatusOr<std::unique_ptr<TransformParams>>;
Lifted Lift2DGaussianBlur(const TransformParams& p);
Lifted Lift2DSimulateLowResolution(const TransformParams& p);
Lifted Lift2DMirror(const TransformParams& p);
Lifted Lift2DRot90(const TransformParams& p);
Lifted Lift2DTransposeAxes(const TransformParams& p);
Lifted Lift2DSharpening(const TransformParams& p);
Lifted Lift2DBlankRectangle(const TransformParams& p);
Lifted Lift2DBrightnessGradientAdditive(const TransformParams& p);
Lifted Lift2DLocalGamma(const TransformParams& p);
Lifted Lift2DBiasField(const TransformParams& p);
Lifted Lift2DGhosting(const TransformParams& p);
Lifted Lift2DSpike(const TransformParams& p);
Lifted Lift2DMotion(const TransformParams& p);
Lifted Lift2DAnisotropy(const TransformParams& p);  // transforms/anisotropy/anisotropy_cuda.cc
Lifted Lift2DTorchioAffine(const TransformParams& p);  // transforms/torchio_affine/torchio_affine_cuda.cc
Lifted Lift2DElasticDeformation(const TransformParams& p);  // transforms/elastic_deformation/elastic_deformation_cuda.cc
Lifted Lift2DSwap(const TransformParams& p);  // transforms/swap/swap_cuda.cc

namespace {
using K = TransformKind;
#if defined(AUGMENTD_HAVE_CUFFT)
constexpr bool kCufft = true;
#else
constexpr bool kCufft = false;  // the k-space stages answer UNIMPLEMENTED naming cuFFT
#endif

// A kind without a CUDA stage between registered ones (the table is a prefix of the enum): CudaBackendOf answers
// nullptr for it, as for the kinds after the table's last line.

constexpr CudaBackend kBackends[] = {
    {K::kSpatial, nullptr, nullptr, true},  // the chain executor (cuda/chain_spatial.h) / the fused kernels
    {K::kGaussianNoise, &MakeGaussianNoiseStage, nullptr, true},
    {K::kGaussianBlur, &MakeGaussianBlurStage, &Lift2DGaussianBlur, true},
    {K::kMultiplicativeBrightness, &MakeMultiplicativeBrightnessStage, nullptr, true},
    {K::kContrast, &MakeContrastStage, nullptr, true},
    {K::kSimulateLowResolution, &MakeLowResStage, &Lift2DSimulateLowResolution, true},
    {K::kGamma, &MakeGammaStage, nullptr, true},
    {K::kMirror, &MakePermuteStage, &Lift2DMirror, true},
    {K::kMaskImage, &MakeMaskImageStage, nullptr, true},
    {K::kRemoveLabel, &MakeRemoveLabelStage, nullptr, true},
    {K::kConvertSegmentationToRegions, &MakeRegionsStage, nullptr, true},
    {K::kDownsampleSegForDs, nullptr, nullptr, true},  // the chain executor's label pyramid
    {K::kBlankRectangle, &MakeBlankRectangleStage, &Lift2DBlankRectangle, true},
    {K::kBrightnessAdditive, &MakeBrightnessAdditiveStage, nullptr, true},
    {K::kSharpening, &MakeSharpeningStage, &Lift2DSharpening, true},
    {K::kMedianFilter, &MakeMedianFilterStage, nullptr, true},
    {K::kBrightnessGradientAdditive, &MakeBrightnessGradientAdditiveStage, &Lift2DBrightnessGradientAdditive, true},
    {K::kLocalGamma, &MakeLocalGammaStage, &Lift2DLocalGamma, true},
    {K::kRot90, &MakePermuteStage, &Lift2DRot90, true},
    {K::kTransposeAxes, &MakePermuteStage, &Lift2DTransposeAxes, true},
    {K::kRicianNoise, &MakeRicianNoiseStage, nullptr, true},
    {K::kBiasField, &MakeBiasFieldStage, &Lift2DBiasField, true},
    {K::kGhosting, &MakeGhostingStage, &Lift2DGhosting, true, kCufft},
    {K::kSpike, &MakeSpikeStage, &Lift2DSpike, true, kCufft},
    {K::kMotion, &MakeMotionStage, &Lift2DMotion, true, kCufft},
    {K::kHistogramEqualization, &MakeHistogramEqualizationStage, nullptr, true},
    {K::kRandomConvolution, &MakeRandomConvolutionStage, nullptr, true},
    {K::kIntensityFunction, &MakeIntensityFunctionStage, nullptr, true},
    // 2D samples run as drawn: pointwise (clamp, zscore), the unit axis boxed whole (shape_crop), the CPU's own
    // 1 × X × Y view of 2D samples (edge_convolution, unsharp_mask), the 2D polynomial read from the coefficient
    // count (auglab_bias_field).
    {K::kZscoreNormalization, &MakeZscoreNormalizationStage, nullptr, true},
    {K::kClamp, &MakeClampStage, nullptr, true},
    {K::kEdgeConvolution, &MakeEdgeConvolutionStage, nullptr, true},
    {K::kUnsharpMask, &MakeUnsharpMaskStage, nullptr, true},
    // 2D samples: TorchIO's (X, Y, 1) lifted to the scratch's (1, X, Y) (Lift2DSwap, cuda/chain_2d.h).
    {K::kSwap, &MakeSwapStage, &Lift2DSwap, true},
    {K::kShapeCrop, &MakeShapeCropStage, nullptr, true},
    {K::kAnisotropy, &MakeAnisotropyStage, &Lift2DAnisotropy, true},
    {K::kTorchioAffine, &MakeTorchioAffineStage, &Lift2DTorchioAffine, true},
    {K::kElasticDeformation, &MakeElasticDeformationStage, &Lift2DElasticDeformation, true},
    {K::kMoveSegAsOneHotToData, &MakeMoveSegAsOneHotToDataStage, nullptr, true},
    // 2D samples: the stage builds disk(r) from ChainTensors::two_d, as the CPU on a 2D sample.
    {K::kApplyRandomBinaryOperator, &MakeApplyRandomBinaryOperatorStage, nullptr, true},
    // 2D samples: on the unit leading axis the 26-neighbourhood is the CPU's 8-neighbourhood.
    {K::kRemoveRandomConnectedComponent, &MakeRemoveRandomConnectedComponentStage, nullptr, true},
    // 3D only on both engines: the CPU's Draw refuses 2D samples (AugLab's 5D input), so the chain reports that.
    {K::kAuglabLowResolution, &MakeAuglabLowResolutionStage, nullptr, true},
    // 2D samples run as drawn: the CPU's own 1 × X × Y view (the ring dilation of the unit axis is the identity).
    {K::kRedistributeSeg, &MakeRedistributeSegStage, nullptr, true},
    {K::kAuglabBiasField, &MakeAuglabBiasFieldStage, nullptr, true},
};

constexpr size_t kNumBackends = sizeof(kBackends) / sizeof(kBackends[0]);

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kNumBackends; ++i) {
    if (static_cast<int>(kBackends[i].kind) >= kNumTransformKinds) return false;
    if (i > 0 && !(kBackends[i - 1].kind < kBackends[i].kind)) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "backends.cc: kBackends lists kinds in strictly increasing TransformKind order");

// kind → its line in kBackends, or -1 (no CUDA backend).
struct BackendIndex {
  int line[kNumTransformKinds];
  constexpr BackendIndex() : line() {
    for (int k = 0; k < kNumTransformKinds; ++k) line[k] = -1;
    for (size_t i = 0; i < kNumBackends; ++i) line[static_cast<size_t>(kBackends[i].kind)] = static_cast<int>(i);
  }
};
constexpr BackendIndex kIndex;
}  // namespace

bool HasCudaImplementation(TransformKind kind) {
  const CudaBackend* b = CudaBackendOf(kind);
  return b != nullptr && b->available;
}

const CudaBackend* CudaBackendOf(TransformKind kind) {
  const size_t k = static_cast<size_t>(kind);
  if (k >= static_cast<size_t>(kNumTransformKinds) || kIndex.line[k] < 0) return nullptr;
  return &kBackends[kIndex.line[k]];
}

}  // namespace augmentd
