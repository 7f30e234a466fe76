// brightness_gradient_additive and local_gamma as CUDA chain stages. Their Gaussian bump is separable: the host
// builds the three 1D factors of each drawn kernel exactly as the CPU transform (LocalGaussianAxis), plus the
// product's min / range (ProductMinMax: no product volume), uploads them in the ParamArena, and the kernels form
// the outer product per voxel — so the GPU sees the CPU's kernel values bit for bit. 2D samples run as (1, X, Y)
// with specs lifted by cuda/chain_2d.h: the unit axis' factor is exactly 1.0f, so fl(fl(1·k1)·k2) is the 2D bump.
#include <algorithm>
#include <cmath>
#include <vector>

#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/da5_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/local_gamma/local_gamma.h"
#include "augment/transforms/common/local_kernel.h"

namespace augmentd::da5_stage_internal {
namespace {
namespace da5 = cuda::da5;
using transforms_internal::ParamsAs;

// Per-slice records + the float block (1D factors, dense kernels) they point into (byte offsets from its start).
struct LocalPack {
  std::vector<da5::LocalSlice> slices;
  std::vector<float> floats;
  bool any = false;
  size_t slices_offset = 0, floats_offset = 0;

  void Reset(const ChainTensors& t) {
    slices.assign(static_cast<size_t>(t.batch) * t.channels, da5::LocalSlice{});
    floats.clear();
    any = false;
  }
  // Mode 1: the factors of `spec`, their product's min and range (LocalGaussianKernel's normalisation); returns
  // the product's max.
  float AddGenerated(const LocalKernelSpec& spec, const ChainTensors& t, da5::LocalSlice& s) {
    s.mode = 1;
    s.axes_off = static_cast<int64_t>(floats.size() * sizeof(float));
    size_t at[3];
    for (int d = 0; d < 3; ++d) {
      at[d] = floats.size();
      const std::vector<float> k = transforms_internal::LocalGaussianAxis(t.shape[d], spec.loc_px[d], spec.scale[d]);
      floats.insert(floats.end(), k.begin(), k.end());
    }
    any = true;
    return da5::SetGeneratedRange(&floats[at[0]], t.shape[0], &floats[at[1]], t.shape[1], &floats[at[2]], t.shape[2],
                                  s);
  }
  // Mode 2: an injected dense kernel (checked against the patch size).
  bool AddDense(const std::vector<float>& k, const ChainTensors& t, da5::LocalSlice& s) {
    if (static_cast<int64_t>(k.size()) != t.voxels()) return false;
    s.mode = 2;
    s.dense_off = static_cast<int64_t>(floats.size() * sizeof(float));
    floats.insert(floats.end(), k.begin(), k.end());
    any = true;
    return true;
  }
  void Append(ParamArena& arena) {
    if (!any) return;
    slices_offset = arena.AppendArray(slices);
    floats_offset = arena.AppendArray(floats);
  }
  const da5::LocalSlice* device_slices(const ParamArena& arena) const {
    return arena.device_as<da5::LocalSlice>(slices_offset);
  }
  const char* device_block(const ParamArena& arena) const {
    return static_cast<const char*>(arena.device(floats_offset));
  }
};

std::vector<int64_t> Shape(const ChainTensors& t) { return {t.shape[0], t.shape[1], t.shape[2]}; }

absl::Status CheckSpec(const LocalKernelSpec& s, size_t index, std::string_view what) {
  if (s.loc_px.size() != 3 || s.scale.size() != 3) return Invalid(index, what, "params.kernel_params: 3 axes");
  return absl::OkStatus();
}

// brightness_gradient_additive: x + K / max|K| · strength per applied slice; clip_intensities clamps the applied
// slices to the sample's pre-transform [min, max] (the other channels are inside it already).
class GradientStage final : public CudaStage {
 public:
  GradientStage(const BrightnessGradientAdditiveConfig& c, size_t index) : config_(c), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    constexpr char kW[] = "brightness_gradient_additive";
    pack_.Reset(t);
    any_clip_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const BrightnessGradientAdditiveParams* p,
                       ParamsAs<BrightnessGradientAdditiveParams>(*params[b], kW));
      const int64_t n = std::min<int64_t>(t.channels, static_cast<int64_t>(p->specs.size()));
      for (int64_t c = 0; c < n; ++c) {
        da5::LocalSlice& s = pack_.slices[b * t.channels + c];
        if (c < static_cast<int64_t>(p->dense.size()) && p->dense[c] != nullptr) {
          if (!pack_.AddDense(*p->dense[c], t, s)) return Invalid(index_, kW, "params.kernels: shape != patch");
        } else if (p->specs[c]) {
          RETURN_IF_ERROR(CheckSpec(*p->specs[c], index_, kW));
          if (!Generated(*p->specs[c], t, s)) continue;
        } else {
          continue;
        }
        s.clip = config_.clip_intensities ? 1 : 0;
        any_clip_ |= config_.clip_intensities;
      }
    }
    pack_.Append(arena);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!pack_.any) return absl::OkStatus();
    const da5::SliceMoments* stats = nullptr;
    if (any_clip_) {
      ASSIGN_OR_RETURN(stats, EnqueueMoments(t.image, t.channels * t.voxels(), t.batch, kSlotMomentsA, ws, stream));
    }
    return CudaStatus(da5::LaunchGradientAdd(t.image, pack_.device_slices(arena), pack_.device_block(arena), stats,
                                        t.batch * t.channels, t.channels, t.shape, stream),
                 "brightness_gradient_additive");
  }

 private:
  // Mode 1 with max|K| and the mean (mean_centered) as the CPU transform computes them; false (slice untouched)
  // for its degenerate kernel (max|K| < 1e-8). K is monotone in the raw product, so max|K| is reached at the
  // product's min or max; the mean needs the kernel volume (host, only when mean_centered).
  bool Generated(const LocalKernelSpec& spec, const ChainTensors& t, da5::LocalSlice& s) {
    const size_t mark = pack_.floats.size();
    const bool was_any = pack_.any;
    const float raw_max = pack_.AddGenerated(spec, t, s);
    s.centered = config_.mean_centered ? 1 : 0;
    if (config_.mean_centered) {
      volume_.resize(static_cast<size_t>(t.voxels()));
      transforms_internal::LocalGaussianKernel(Shape(t), spec.loc_px, spec.scale, volume_.data());
      double sum = 0;
      for (float v : volume_) sum += v;
      s.mean = static_cast<float>(sum / static_cast<double>(volume_.size()));
    }
    s.max_abs = da5::GradientMaxAbs(s, raw_max);
    s.strength = static_cast<float>(spec.factor);
    if (static_cast<double>(s.max_abs) >= 1e-8) return true;
    pack_.floats.resize(mark);
    pack_.any = was_any;
    s = da5::LocalSlice{};
    return false;
  }

  BrightnessGradientAdditiveConfig config_;
  size_t index_;
  LocalPack pack_;
  bool any_clip_ = false;
  std::vector<float> volume_;  // host kernel volume (mean_centered only)
};

// local_gamma: per applied slice (gamma and a kernel) the blend of x^γ and x through the bump, on the slice's
// [min, max] range.
class LocalGammaStage final : public CudaStage {
 public:
  explicit LocalGammaStage(size_t index) : index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    constexpr char kW[] = "local_gamma";
    pack_.Reset(t);
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const LocalGammaParams* p, ParamsAs<LocalGammaParams>(*params[b], kW));
      const int64_t n = std::min<int64_t>(t.channels, static_cast<int64_t>(p->gammas.size()));
      for (int64_t c = 0; c < n; ++c) {
        if (!p->gammas[c]) continue;
        da5::LocalSlice& s = pack_.slices[b * t.channels + c];
        if (c < static_cast<int64_t>(p->dense.size()) && p->dense[c] != nullptr) {
          if (!pack_.AddDense(*p->dense[c], t, s)) return Invalid(index_, kW, "params.kernels: shape != patch");
        } else if (c < static_cast<int64_t>(p->specs.size()) && p->specs[c]) {
          RETURN_IF_ERROR(CheckSpec(*p->specs[c], index_, kW));
          pack_.AddGenerated(*p->specs[c], t, s);
        } else {
          continue;  // bgv2: kernel None → channel skipped
        }
        s.gamma = static_cast<float>(*p->gammas[c]);
      }
    }
    pack_.Append(arena);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!pack_.any) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    ASSIGN_OR_RETURN(const da5::SliceMoments* stats,
                     EnqueueMoments(t.image, t.voxels(), slices, kSlotMomentsA, ws, stream));
    return CudaStatus(da5::LaunchLocalGamma(t.image, pack_.device_slices(arena), pack_.device_block(arena), stats,
                                            slices, t.shape, stream),
                      "local_gamma");
  }

 private:
  size_t index_;
  LocalPack pack_;
};

}  // namespace

}  // namespace augmentd::da5_stage_internal

namespace augmentd {
// The factories of the stages above (registered in augment/cuda/backends.cc).
CudaStageOrError MakeBrightnessGradientAdditiveStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new da5_stage_internal::GradientStage(
      static_cast<const BrightnessGradientAdditiveTransform&>(t).config(), index));
}
CudaStageOrError MakeLocalGammaStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new da5_stage_internal::LocalGammaStage(index));
}
}  // namespace augmentd
