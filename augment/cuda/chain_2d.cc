// 2D samples on the generic CUDA chain (cuda/chain_2d.h): which stages take them and their parameters' 3D form.
#include "augment/cuda/chain_2d.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/backend.h"
#include "augment/status_macros.h"
#include "augment/transforms/blank_rectangle/blank_rectangle.h"
#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"
#include "augment/transforms/gaussian_blur/gaussian_blur.h"
#include "augment/transforms/local_gamma/local_gamma.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/bias_field/bias_field.h"
#include "augment/transforms/ghosting/ghosting.h"
#include "augment/transforms/spike/spike.h"
#include "augment/transforms/rot90/rot90.h"
#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"

namespace augmentd {

absl::Status CheckStage2D(TransformKind kind, size_t index) {
  const CudaBackend* backend = CudaBackendOf(kind);
  if (backend != nullptr && backend->runs_2d) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      "CUDA engine: transform ", index, " (", std::string(TransformKindName(kind)),
      "): 2D samples (its CUDA stage is 3D only: no 2D form verified against the CPU; run it on device \"cpu\")"));
}

namespace {
absl::Status Not2D(TransformKind kind, const std::string& field) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(TransformKindName(kind)), ": params.", field, ": expected 2D parameters"));
}

// Local-kernel specs of a 2D sample → 3D: the unit axis gets centre 0 and kUnitAxisLocalScale (factor 1.0f).
absl::Status LiftSpecs(TransformKind kind, std::vector<std::optional<LocalKernelSpec>>& specs) {
  for (auto& s : specs) {
    if (!s) continue;
    if (s->loc_px.size() != 2 || s->scale.size() != 2) return Not2D(kind, "kernel_params");
    s->loc_px.insert(s->loc_px.begin(), 0.0);
    s->scale.insert(s->scale.begin(), kUnitAxisLocalScale);
  }
  return absl::OkStatus();
}

// MRI artefacts: TorchIO's 2D form is (X, Y, 1); the scratch is (1, X, Y). Scratch axis g is CPU axis kCpuAxis[g].
constexpr int kCpuAxis[3] = {2, 0, 1};

// bias_field: the lifted coefficient of u^a'·x^b'·y^c' (u, x, y: the scratch's axes, TorchIO's loop order) is the
// CPU's coefficient of x^b'·y^c'·z^a' (its loop order over x, y, z). Terms with a' > 0 vanish on both sides (the
// unit axis' coordinate is 0), the others are the CPU's terms in the CPU's order.
absl::StatusOr<std::unique_ptr<TransformParams>> LiftBiasField(const BiasFieldParams& p) {
  const int k = p.order;
  if (k < 0 || k > 10 || static_cast<int64_t>(p.coefficients.size()) != BiasFieldNumCoefficients(k))
    return absl::InvalidArgumentError("bias_field: params.coefficients: count does not match order (0..10)");
  const auto at = [k](int a, int b, int c) { return static_cast<size_t>((a * (k + 1) + b) * (k + 1) + c); };
  std::vector<size_t> index(static_cast<size_t>((k + 1) * (k + 1) * (k + 1)));  // monomial (a, b, c) → loop index
  size_t t = 0;
  for (int a = 0; a <= k; ++a)
    for (int b = 0; b <= k - a; ++b)
      for (int c = 0; c <= k - a - b; ++c) index[at(a, b, c)] = t++;
  auto q = std::make_unique<BiasFieldParams>(p);
  t = 0;
  for (int a = 0; a <= k; ++a)
    for (int b = 0; b <= k - a; ++b)
      for (int c = 0; c <= k - a - b; ++c) q->coefficients[t++] = p.coefficients[index[at(b, c, a)]];
  return std::unique_ptr<TransformParams>(std::move(q));
}
}  // namespace

MotionAffine PlanarMotionAffine(const MotionAffine& a) {
  MotionAffine r;
  for (int g = 0; g < 3; ++g) {
    for (int h = 0; h < 3; ++h) r.m[g * 3 + h] = a.m[kCpuAxis[g] * 3 + kCpuAxis[h]];
    r.b[g] = a.b[kCpuAxis[g]];
  }
  return r;
}

// The 3D forms of cuda/chain_2d.h, one per kind that carries spatial axes (registered in augment/cuda/backends.cc).
absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DGaussianBlur(const TransformParams& p) {
  auto q = std::make_unique<GaussianBlurParams>(static_cast<const GaussianBlurParams&>(p));
  for (auto& s : q->sigmas) {
    if (s.size() != 2) return Not2D(TransformKind::kGaussianBlur, "sigmas");
    s.insert(s.begin(), kUnitAxisSigma);
  }
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DSimulateLowResolution(const TransformParams& p) {
  auto q = std::make_unique<SimulateLowResolutionParams>(static_cast<const SimulateLowResolutionParams&>(p));
  for (auto& s : q->scales) {
    if (s.size() != 2) return Not2D(TransformKind::kSimulateLowResolution, "scales");
    s.insert(s.begin(), 1.0f);
  }
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DMirror(const TransformParams& p) {
  auto q = std::make_unique<MirrorParams>(static_cast<const MirrorParams&>(p));
  for (int64_t& a : q->axes) {
    if (a < 0 || a > 1) return Not2D(TransformKind::kMirror, "axes");
    a += 1;
  }
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DRot90(const TransformParams& p) {
  auto q = std::make_unique<Rot90Params>(static_cast<const Rot90Params&>(p));
  for (auto& ab : q->axis_combinations) {
    for (int64_t& a : ab) {
      if (a < 1 || a > 2) return Not2D(TransformKind::kRot90, "axis_combinations");
      a += 1;
    }
  }
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DTransposeAxes(const TransformParams& p) {
  auto q = std::make_unique<TransposeAxesParams>(static_cast<const TransposeAxesParams&>(p));
  if (q->axis_order.size() != 3 || q->axis_order[0] != 0) return Not2D(TransformKind::kTransposeAxes, "axis_order");
  q->axis_order = {0, 1, q->axis_order[1] + 1, q->axis_order[2] + 1};
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DSharpening(const TransformParams& p) {
  return std::unique_ptr<TransformParams>(new PlanarSharpeningParams(static_cast<const SharpeningParams&>(p)));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DBlankRectangle(const TransformParams& p) {
  auto q = std::make_unique<BlankRectangleParams>(static_cast<const BlankRectangleParams&>(p));
  for (auto& boxes : q->rectangles) {
    for (auto& box : boxes) {
      if (box.lb.size() != 2 || box.ub.size() != 2) return Not2D(TransformKind::kBlankRectangle, "rectangles");
      box.lb.insert(box.lb.begin(), 0);
      box.ub.insert(box.ub.begin(), 1);
    }
  }
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DBrightnessGradientAdditive(const TransformParams& p) {
  auto q = std::make_unique<BrightnessGradientAdditiveParams>(
      static_cast<const BrightnessGradientAdditiveParams&>(p));
  RETURN_IF_ERROR(LiftSpecs(TransformKind::kBrightnessGradientAdditive, q->specs));
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DLocalGamma(const TransformParams& p) {
  auto q = std::make_unique<LocalGammaParams>(static_cast<const LocalGammaParams&>(p));
  RETURN_IF_ERROR(LiftSpecs(TransformKind::kLocalGamma, q->specs));
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DBiasField(const TransformParams& p) {
  return LiftBiasField(static_cast<const BiasFieldParams&>(p));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DGhosting(const TransformParams& p) {
  auto q = std::make_unique<GhostingParams>(static_cast<const GhostingParams&>(p));
  if (q->axis < 0 || q->axis > 1) return Not2D(TransformKind::kGhosting, "axis");
  q->axis += 1;
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DSpike(const TransformParams& p) {
  auto q = std::make_unique<SpikeParams>(static_cast<const SpikeParams&>(p));
  for (auto& pos : q->positions) pos = {pos[kCpuAxis[0]], pos[kCpuAxis[1]], pos[kCpuAxis[2]]};
  return std::unique_ptr<TransformParams>(std::move(q));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DMotion(const TransformParams& p) {
  return std::unique_ptr<TransformParams>(new PlanarMotionParams(static_cast<const MotionParams&>(p)));
}

absl::StatusOr<std::unique_ptr<TransformParams>> LiftParams2D(TransformKind kind, const TransformParams& p) {
  const CudaBackend* backend = CudaBackendOf(kind);
  if (backend == nullptr || backend->lift_2d == nullptr) return std::unique_ptr<TransformParams>();
  return backend->lift_2d(p);
}

}  // namespace augmentd
