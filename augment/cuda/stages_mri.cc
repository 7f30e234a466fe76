// The k-space MRI artefacts (augment/transforms/{ghosting,spike,motion}/, TorchIO's definitions) as CUDA chain stages
// (cuda/stage.h; registered in cuda/backends.cc; they share FftPlan and KSpaceStage, so they stay together here;
// bias_field's stage is augment/transforms/bias_field/bias_field_cuda.cc). Prepare packs each sample's drawn parameters (the CPU transform's own helpers compute plane
// factors, spike indices, motion affines and k-space segments, so both engines share the arithmetic of the parameters);
// Enqueue runs batch-wide kernels (augment/kernels/cuda/mri_kernels.h) and, for the k-space artefacts, one batched
// cuFFT C2C plan over all (sample, channel) slices: forward, modify, inverse, real part · 1/P for active samples. The
// plan is cached per (shape, slices) — one plan per stage, rebuilt only when the batch geometry changes — and spectra
// live in ChainWorkspace slots, so the steady state allocates nothing. Spectra are complex64 like TorchIO's torch.fft
// on float32 (the CPU reference computes in complex128). Without cuFFT (AUGMENTD_HAVE_CUFFT unset) the k-space
// artefacts answer UNIMPLEMENTED naming cuFFT; bias_field needs no FFT and is always available. 2D samples run as
// (1, X, Y) (cuda/chain_2d.h): bias_field, ghosting and spike on parameters lifted to that layout; motion in its planar
// mode (PlanarMotionParams: in-plane resampling affine, k-space segments along the unit axis).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/kernels/cuda/mri_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/ghosting/ghosting.h"
#include "augment/transforms/motion/motion.h"
#include "augment/transforms/spike/spike.h"

#if defined(AUGMENTD_HAVE_CUFFT)
#include <cufft.h>
#endif

namespace augmentd {
namespace {
namespace mk = cuda::mri;
using transforms_internal::ParamsAs;

#if defined(AUGMENTD_HAVE_CUFFT)

constexpr int kSlotSpectrum = ChainWorkspace::kSlotStage + 8;  // (slices, P) complex: the spectra being modified
constexpr int kSlotTemp = ChainWorkspace::kSlotStage + 9;      // motion: one moved image's spectrum
constexpr int kSlotReduce = ChainWorkspace::kSlotStage + 10;   // per-slice max / min keys

absl::Status Invalid(size_t index, std::string_view transform, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("pipeline entry ", index, " (", std::string(transform), "): ", std::string(problem)));
}

std::array<int64_t, 3> Shape3(const ChainTensors& t) { return {t.shape[0], t.shape[1], t.shape[2]}; }

// One batched 3D C2C plan over all slices of the scratch, rebuilt only when (shape, slices) changes.
class FftPlan {
 public:
  FftPlan() = default;
  ~FftPlan() {
    if (ok_) cufftDestroy(plan_);
  }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  absl::Status Ensure(const ChainTensors& t, cudaStream_t stream) {
    const int slices = t.batch * t.channels;
    if (!ok_ || slices != slices_ || !std::equal(t.shape, t.shape + 3, shape_)) {
      if (ok_) cufftDestroy(plan_);
      ok_ = false;
      // The DFT over a size-1 axis is the identity, so size-1 axes are left out of the plan: a 2D sample
      // (1, X, Y) gets a rank-2 (X, Y) plan — the CPU's 2D spectrum. Only an all-size-1 sample still gives a rank-1
      // plan of size 1 (not run on a GPU in the tests).
      int n[3] = {1, 1, 1};
      int rank = 0;
      for (int d = 0; d < 3; ++d)
        if (t.shape[d] > 1) n[rank++] = t.shape[d];
      rank = std::max(rank, 1);
      RETURN_IF_ERROR(Status(cufftPlanMany(&plan_, rank, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, slices),
                             "cufftPlanMany"));
      ok_ = true;
      slices_ = slices;
      std::copy(t.shape, t.shape + 3, shape_);
    }
    return Status(cufftSetStream(plan_, stream), "cufftSetStream");
  }
  absl::Status Exec(cuFloatComplex* in, cuFloatComplex* out, bool inverse) {
    return Status(cufftExecC2C(plan_, in, out, inverse ? CUFFT_INVERSE : CUFFT_FORWARD), "cufftExecC2C");
  }

 private:
  static absl::Status Status(cufftResult r, const char* what) {
    if (r == CUFFT_SUCCESS) return absl::OkStatus();
    if (r == CUFFT_ALLOC_FAILED) return absl::ResourceExhaustedError(absl::StrCat(what, ": cuFFT out of memory"));
    return absl::InternalError(absl::StrCat(what, " failed: cufftResult ", static_cast<int>(r)));
  }
  cufftHandle plan_ = 0;
  bool ok_ = false;
  int slices_ = 0;
  int32_t shape_[3] = {0, 0, 0};
};

// Shared frame of the k-space stages: active flags per sample, forward → Modify → inverse → real part.
class KSpaceStage : public CudaStage {
 public:
  explicit KSpaceStage(size_t index) : index_(index) {}
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) final {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    const int64_t p = t.voxels();
    ASSIGN_OR_RETURN(void* spec_v, ws.Scratch(kSlotSpectrum, static_cast<size_t>(slices) * p * sizeof(cuFloatComplex)));
    auto* spec = static_cast<cuFloatComplex*>(spec_v);
    RETURN_IF_ERROR(plan_.Ensure(t, stream));
    RETURN_IF_ERROR(Spectra(t, arena, ws, spec, stream));
    RETURN_IF_ERROR(plan_.Exec(spec, spec, true));
    return CudaStatus(mk::LaunchToReal(spec, t.image, arena.device_as<int32_t>(active_offset_), slices, t.channels, p,
                                  1.0f / static_cast<float>(p), stream),
                 "k-space read-back");
  }

 protected:
  // Fills `spec` with the modified spectra of the active samples (forward transform included).
  virtual absl::Status Spectra(const ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws,
                               cuFloatComplex* spec, cudaStream_t stream) = 0;
  absl::Status Forward(const ChainTensors& t, cuFloatComplex* spec, cudaStream_t stream) {
    RETURN_IF_ERROR(
        CudaStatus(mk::LaunchToComplex(t.image, spec, t.batch * t.channels, t.voxels(), stream), "to complex"));
    return plan_.Exec(spec, spec, false);
  }
  void PackActive(ParamArena& arena) {
    any_ = std::any_of(active_.begin(), active_.end(), [](int32_t a) { return a != 0; });
    if (any_) active_offset_ = arena.AppendArray(active_);
  }

  size_t index_;
  std::vector<int32_t> active_;
  bool any_ = false;
  size_t active_offset_ = 0;
  FftPlan plan_;
};

class GhostingStage final : public KSpaceStage {
 public:
  using KSpaceStage::KSpaceStage;
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    active_.assign(static_cast<size_t>(t.batch), 0);
    samples_.assign(static_cast<size_t>(t.batch), mk::GhostSample{-1, 0});
    factors_.clear();
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const GhostingParams* p, ParamsAs<GhostingParams>(*params[b], "ghosting"));
      if (p->axis < 0 || p->axis > 2) return Invalid(index_, "ghosting", "params.axis out of range");
      if (p->num_ghosts == 0 || p->intensity == 0) continue;  // the CPU transform returns the input unchanged
      const std::vector<float> f = GhostingPlaneFactors(*p, t.shape[p->axis]);
      samples_[b] = {p->axis, static_cast<int32_t>(factors_.size())};
      factors_.insert(factors_.end(), f.begin(), f.end());
      active_[b] = 1;
    }
    PackActive(arena);
    if (any_) {
      samples_offset_ = arena.AppendArray(samples_);
      factors_offset_ = arena.AppendArray(factors_);
    }
    return absl::OkStatus();
  }

 protected:
  absl::Status Spectra(const ChainTensors& t, const ParamArena& arena, ChainWorkspace&, cuFloatComplex* spec,
                       cudaStream_t stream) override {
    RETURN_IF_ERROR(Forward(t, spec, stream));
    return CudaStatus(mk::LaunchGhostPlanes(spec, arena.device_as<mk::GhostSample>(samples_offset_),
                                       arena.device_as<float>(factors_offset_), t.batch, t.channels, t.shape, stream),
                 "ghosting");
  }

 private:
  std::vector<mk::GhostSample> samples_;
  std::vector<float> factors_;
  size_t samples_offset_ = 0, factors_offset_ = 0;
};

class SpikeStage final : public KSpaceStage {
 public:
  using KSpaceStage::KSpaceStage;
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    active_.assign(static_cast<size_t>(t.batch), 0);
    samples_.assign(static_cast<size_t>(t.batch), mk::SpikeSample{0, 0, 0.f});
    indices_.clear();
    max_spikes_ = 0;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const SpikeParams* p, ParamsAs<SpikeParams>(*params[b], "spike"));
      if (p->intensity == 0 || p->positions.empty()) continue;  // the CPU transform returns the input unchanged
      const std::vector<int64_t> idx = SpikeSpectrumIndices(*p, Shape3(t));
      samples_[b] = {static_cast<int32_t>(idx.size()), static_cast<int32_t>(indices_.size()),
                     static_cast<float>(p->intensity)};
      indices_.insert(indices_.end(), idx.begin(), idx.end());
      max_spikes_ = std::max(max_spikes_, static_cast<int>(idx.size()));
      active_[b] = 1;
    }
    PackActive(arena);
    if (any_) {
      samples_offset_ = arena.AppendArray(samples_);
      indices_offset_ = arena.AppendArray(indices_);
    }
    return absl::OkStatus();
  }

 protected:
  absl::Status Spectra(const ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cuFloatComplex* spec,
                       cudaStream_t stream) override {
    const int slices = t.batch * t.channels;
    RETURN_IF_ERROR(Forward(t, spec, stream));
    ASSIGN_OR_RETURN(void* max_v, ws.Scratch(kSlotReduce, static_cast<size_t>(slices) * sizeof(unsigned int)));
    auto* max_bits = static_cast<unsigned int*>(max_v);
    const auto* samples = arena.device_as<mk::SpikeSample>(samples_offset_);
    for (int k = 0; k < max_spikes_; ++k) {  // TorchIO: max|X| is re-read after each spike
      RETURN_IF_ERROR(CudaStatus(
          cudaMemsetAsync(max_bits, 0, static_cast<size_t>(slices) * sizeof(unsigned int), stream), "spike max reset"));
      RETURN_IF_ERROR(CudaStatus(mk::LaunchSpikeMax(spec, samples, k, slices, t.channels, t.voxels(), max_bits, stream),
                            "spike max"));
      RETURN_IF_ERROR(CudaStatus(mk::LaunchSpikeAdd(spec, samples, arena.device_as<int64_t>(indices_offset_), k, slices,
                                               t.channels, t.voxels(), max_bits, stream),
                            "spike add"));
    }
    return absl::OkStatus();
  }

 private:
  std::vector<mk::SpikeSample> samples_;
  std::vector<int64_t> indices_;
  int max_spikes_ = 0;
  size_t samples_offset_ = 0, indices_offset_ = 0;
};

class MotionStage final : public KSpaceStage {
 public:
  using KSpaceStage::KSpaceStage;
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    active_.assign(static_cast<size_t>(t.batch), 0);
    samples_.assign(static_cast<size_t>(t.batch), mk::MotionSample{0, 0, 2});
    max_n_ = 0;
    std::vector<const MotionParams*> mp(static_cast<size_t>(t.batch), nullptr);
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(mp[b], ParamsAs<MotionParams>(*params[b], "motion"));
      if (mp[b]->degrees.size() != mp[b]->times.size() || mp[b]->translation.size() != mp[b]->times.size())
        return Invalid(index_, "motion", "params: degrees, translation and times differ in length");
      max_n_ = std::max(max_n_, static_cast<int>(mp[b]->times.size()));
    }
    affines_.assign(static_cast<size_t>(t.batch) * max_n_ * 12, 0.0);
    segments_.assign(static_cast<size_t>(t.batch) * (max_n_ + 1), mk::MotionSegmentDev{0, 0});
    for (int32_t b = 0; b < t.batch; ++b) {
      samples_[b].first_segment = b * (max_n_ + 1);
      if (mp[b] == nullptr) continue;
      const MotionParams& p = *mp[b];
      // A 2D sample: its CPU form (X, Y, 1) resamples with the affine of (i, j, 0) and segments the unit last axis;
      // here that sample is (1, X, Y), so the affine's axes are rotated onto it and the segments run along axis 0.
      const bool planar = dynamic_cast<const PlanarMotionParams*>(&p) != nullptr;
      if (planar && t.shape[0] != 1) return Invalid(index_, "motion", "2D parameters on a scratch with d0 != 1");
      for (size_t i = 0; i < p.times.size(); ++i) {
        MotionAffine a = MotionIndexAffine(p.degrees[i], p.translation[i]);
        if (planar) a = PlanarMotionAffine(a);
        double* dst = affines_.data() + (static_cast<size_t>(b) * max_n_ + i) * 12;
        std::copy(a.m, a.m + 9, dst);
        std::copy(a.b, a.b + 3, dst + 9);
      }
      samples_[b].seg_axis = planar ? 0 : 2;
      for (const MotionSegment& s : MotionSegments(p, t.shape[planar ? 0 : 2]))
        segments_[static_cast<size_t>(b) * (max_n_ + 1) + s.image] = {static_cast<int32_t>(s.lo),
                                                                      static_cast<int32_t>(s.hi)};
      samples_[b].active = 1;
      active_[b] = 1;
    }
    PackActive(arena);
    if (any_) {
      samples_offset_ = arena.AppendArray(samples_);
      affines_offset_ = arena.AppendArray(affines_);
      segments_offset_ = arena.AppendArray(segments_);
    }
    return absl::OkStatus();
  }

 protected:
  absl::Status Spectra(const ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cuFloatComplex* result,
                       cudaStream_t stream) override {
    const int slices = t.batch * t.channels;
    const int64_t p = t.voxels();
    ASSIGN_OR_RETURN(void* tmp_v, ws.Scratch(kSlotTemp, static_cast<size_t>(slices) * p * sizeof(cuFloatComplex)));
    ASSIGN_OR_RETURN(void* min_v, ws.Scratch(kSlotReduce, static_cast<size_t>(slices) * sizeof(unsigned int)));
    auto* tmp = static_cast<cuFloatComplex*>(tmp_v);
    auto* min_key = static_cast<unsigned int*>(min_v);
    RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(min_key, 0xff, static_cast<size_t>(slices) * sizeof(unsigned int), stream),
                   "motion min reset"));
    RETURN_IF_ERROR(CudaStatus(mk::LaunchSliceMin(t.image, slices, p, min_key, stream), "motion min"));
    const auto* samples = arena.device_as<mk::MotionSample>(samples_offset_);
    for (int img = 0; img <= max_n_; ++img) {
      RETURN_IF_ERROR(CudaStatus(mk::LaunchMotionImage(t.image, samples, arena.device_as<double>(affines_offset_),
                                                       max_n_, img, min_key, t.batch, t.channels, t.shape, tmp, stream),
                                 "motion resample"));
      RETURN_IF_ERROR(plan_.Exec(tmp, tmp, false));
      RETURN_IF_ERROR(CudaStatus(mk::LaunchMotionCopySegment(tmp, samples,
                                                        arena.device_as<mk::MotionSegmentDev>(segments_offset_), img,
                                                        t.batch, t.channels, t.shape, result, stream),
                            "motion segment"));
    }
    return absl::OkStatus();
  }

 private:
  std::vector<mk::MotionSample> samples_;
  std::vector<double> affines_;
  std::vector<mk::MotionSegmentDev> segments_;
  int max_n_ = 0;
  size_t samples_offset_ = 0, affines_offset_ = 0, segments_offset_ = 0;
};

#endif  // AUGMENTD_HAVE_CUFFT

}  // namespace

// The factories of the stages above (registered in augment/cuda/backends.cc). Without cuFFT the k-space stages answer
// UNIMPLEMENTED naming it.
#if defined(AUGMENTD_HAVE_CUFFT)
CudaStageOrError MakeGhostingStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new GhostingStage(index));
}
CudaStageOrError MakeSpikeStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new SpikeStage(index));
}
CudaStageOrError MakeMotionStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new MotionStage(index));
}
#else
namespace {
absl::Status NeedsCufft(const Transform& t, size_t index) {
  return absl::UnimplementedError(absl::StrCat("pipeline entry ", index, " (", std::string(t.name()),
                                               "): the CUDA chain needs cuFFT, which this build did not find"));
}
}  // namespace
CudaStageOrError MakeGhostingStage(const Transform& t, size_t index) { return NeedsCufft(t, index); }
CudaStageOrError MakeSpikeStage(const Transform& t, size_t index) { return NeedsCufft(t, index); }
CudaStageOrError MakeMotionStage(const Transform& t, size_t index) { return NeedsCufft(t, index); }
#endif

}  // namespace augmentd
