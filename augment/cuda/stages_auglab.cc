// AugLab's GPU extras as CUDA chain stages (cuda/stage.h): histogram_equalization, random_convolution,
// intensity_function (augment/transforms/{histogram_equalization,random_convolution,intensity_function}/). Prepare packs one AuglabSlice record per (sample, channel) — per
// step for intensity_function — from the CPU transform's own drawn params (plus the random kernels' weights); Enqueue
// launches a few batch-wide kernels (augment/kernels/cuda/auglab_kernels.h) with deterministic statistics. Region
// modes (in_seg / out_seg / mix_in_out, auglab_region.h): when a slice of the batch is restricted and the scratch has
// segmentation, the step keeps a copy of the image and LaunchRegionRestore puts the voxels outside the region back
// after the step (and its retain_stats), reading the chain's int16 seg channel `seg_channel`.
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/auglab_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/histogram_equalization/histogram_equalization.h"
#include "augment/transforms/intensity_function/intensity_function.h"
#include "augment/transforms/random_convolution/random_convolution.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace {
namespace al = cuda::auglab;
namespace da5 = cuda::da5;
using da5_stage_internal::EnqueueMoments;
using da5_stage_internal::Invalid;
using da5_stage_internal::kSlotMomentsA;
using da5_stage_internal::kSlotMomentsB;
using transforms_internal::ParamsAs;

// Workspace slots of these stages beyond the DA5 ones (contents live only during one Enqueue).
constexpr int kSlotCounts = ChainWorkspace::kSlotStage + 4;
constexpr int kSlotLuts = ChainWorkspace::kSlotStage + 5;

// The record of (b, c), or INVALID_ARGUMENT when c is not a channel of the scratch.
absl::StatusOr<al::AuglabSlice*> SliceOf(std::vector<al::AuglabSlice>& slices, const ChainTensors& t, int32_t b,
                                         int64_t c, size_t index, std::string_view name) {
  if (c < 0 || c >= t.channels)
    return Invalid(index, name, absl::StrCat("apply_to_channel ", c, " >= the sample's ", t.channels, " channels"));
  return &slices[static_cast<size_t>(b) * t.channels + static_cast<size_t>(c)];
}

// Copies slot i of `region` into the slice; true when it restricts the step.
bool SetRegion(al::AuglabSlice* s, const std::vector<AuglabRegion>& region, size_t i) {
  const AuglabRegion r = auglab_region::At(region, i);
  s->region = r.mode;
  s->keep = r.keep;
  return r.mode != al::kRegionAll;
}

// Whether a step applied to some slices (`applied`), some of them restricted (`restricted`), must restore: the
// scratch has segmentation (without, the CPU transform applies everywhere too). INVALID_ARGUMENT "<name>.seg_channel"
// (as the CPU transform's Apply) when the step is applied, regions are enabled and the scratch lacks that channel.
absl::StatusOr<bool> RegionActive(bool applied, bool restricted, const ChainTensors& t, const AuglabRegionConfig& c,
                                  std::string_view name) {
  if (!applied) return false;
  RETURN_IF_ERROR(auglab_region::CheckSegChannel(c, t.seg_channels, std::string(name)));
  return restricted && t.seg_channels > 0;
}

absl::Status EnqueueRestore(ChainTensors& t, const float* orig, const al::AuglabSlice* p, int64_t seg_channel,
                            cudaStream_t stream) {
  if (t.seg == nullptr) return absl::InternalError("auglab region: the chain scratch has no segmentation buffer");
  return CudaStatus(al::LaunchRegionRestore(t.image, orig, t.voxels(), t.batch * t.channels, t.channels, p, t.seg,
                                       t.seg_channels, static_cast<int>(seg_channel), stream),
               "auglab region");
}

// retain_stats of the slices with on && retain: statistics of the result, then the affine map.
absl::Status EnqueueRetain(ChainTensors& t, const al::AuglabSlice* p, const da5::SliceMoments* before,
                           ChainWorkspace& ws, cudaStream_t stream) {
  const int slices = t.batch * t.channels;
  ASSIGN_OR_RETURN(const da5::SliceMoments* after,
                   EnqueueMoments(t.image, t.voxels(), slices, kSlotMomentsB, ws, stream));
  return CudaStatus(al::LaunchRetain(t.image, t.voxels(), slices, p, before, after, stream), "retain_stats");
}

class HistogramStage final : public CudaStage {
 public:
  HistogramStage(const HistogramEqualizationTransform& t, size_t index)
      : retain_(t.config().retain_stats), region_(t.config().region), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, al::AuglabSlice{});
    any_ = false;
    bool restricted = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const auto* p, ParamsAs<HistogramEqualizationParams>(*params[b], "histogram_equalization"));
      RETURN_IF_ERROR(auglab_region::CheckSlots(p->region, p->apply_to_channel.size()));
      for (size_t i = 0; i < p->apply_to_channel.size(); ++i) {
        ASSIGN_OR_RETURN(al::AuglabSlice * s,
                         SliceOf(slices_, t, b, p->apply_to_channel[i], index_, "histogram_equalization"));
        s->on = 1;
        s->retain = retain_ ? 1 : 0;
        restricted |= SetRegion(s, p->region, i);
        any_ = true;
      }
    }
    ASSIGN_OR_RETURN(regional_, RegionActive(any_, restricted, t, region_, "histogram_equalization"));
    if (any_) offset_ = arena.AppendArray(slices_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    const size_t bins = static_cast<size_t>(slices) * al::kHistBins;
    const auto* p = arena.device_as<al::AuglabSlice>(offset_);
    float* orig = nullptr;
    if (regional_) {
      ASSIGN_OR_RETURN(orig, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    }
    ASSIGN_OR_RETURN(const da5::SliceMoments* before,
                     EnqueueMoments(t.image, t.voxels(), slices, kSlotMomentsA, ws, stream));
    ASSIGN_OR_RETURN(void* counts, ws.Scratch(kSlotCounts, bins * sizeof(uint32_t)));
    ASSIGN_OR_RETURN(void* luts, ws.Scratch(kSlotLuts, bins * sizeof(float)));
    RETURN_IF_ERROR(
        CudaStatus(al::LaunchHistogramEqualize(t.image, t.voxels(), slices, p, before, static_cast<uint32_t*>(counts),
                                          static_cast<float*>(luts), stream),
              "histogram_equalization"));
    if (retain_) RETURN_IF_ERROR(EnqueueRetain(t, p, before, ws, stream));
    return regional_ ? EnqueueRestore(t, orig, p, region_.seg_channel, stream) : absl::OkStatus();
  }

 private:
  bool retain_;
  AuglabRegionConfig region_;
  size_t index_;
  std::vector<al::AuglabSlice> slices_;
  bool any_ = false, regional_ = false;
  size_t offset_ = 0;
};

class RandomConvolutionStage final : public CudaStage {
 public:
  RandomConvolutionStage(const RandomConvolutionTransform& t, size_t index)
      : retain_(t.config().retain_stats), region_(t.config().region), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, al::AuglabSlice{});
    weights_.clear();
    any_ = false;
    bool restricted = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const auto* p, ParamsAs<RandomConvolutionParams>(*params[b], "random_convolution"));
      const size_t n = p->apply_to_channel.size();
      if (p->kernel_size.size() != n || p->kernel.size() != n || p->mix.size() != n || p->alpha.size() != n)
        return Invalid(index_, "random_convolution", "params: one kernel_size / kernel / mix / alpha per channel");
      RETURN_IF_ERROR(auglab_region::CheckSlots(p->region, n));
      for (size_t i = 0; i < n; ++i) {
        const int32_t k = p->kernel_size[i];
        if (k < 1 || k > al::kMaxConvKernel || k % 2 == 0 || p->kernel[i].size() != static_cast<size_t>(k) * k * k)
          return Invalid(index_, "random_convolution", "params: kernel sizes must be odd, 1..15, with k³ weights");
        ASSIGN_OR_RETURN(al::AuglabSlice * s,
                         SliceOf(slices_, t, b, p->apply_to_channel[i], index_, "random_convolution"));
        s->on = 1;
        s->retain = retain_ ? 1 : 0;
        s->k = k;
        s->mix = p->mix[i] ? 1 : 0;
        s->alpha = p->alpha[i];
        s->w_off = static_cast<int64_t>(weights_.size());
        weights_.insert(weights_.end(), p->kernel[i].begin(), p->kernel[i].end());
        restricted |= SetRegion(s, p->region, i);
        any_ = true;
      }
    }
    ASSIGN_OR_RETURN(regional_, RegionActive(any_, restricted, t, region_, "random_convolution"));
    if (any_) {
      offset_ = arena.AppendArray(slices_);
      weights_offset_ = arena.AppendArray(weights_);
    }
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    const auto* p = arena.device_as<al::AuglabSlice>(offset_);
    ASSIGN_OR_RETURN(float* copy, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    const da5::SliceMoments* before = nullptr;
    if (retain_) {
      ASSIGN_OR_RETURN(before, EnqueueMoments(copy, t.voxels(), slices, kSlotMomentsA, ws, stream));
    }
    RETURN_IF_ERROR(CudaStatus(
        al::LaunchRandomConvolution(copy, t.image, t.shape, slices, p, arena.device_as<float>(weights_offset_), stream),
        "random_convolution"));
    if (retain_) RETURN_IF_ERROR(EnqueueRetain(t, p, before, ws, stream));
    return regional_ ? EnqueueRestore(t, copy, p, region_.seg_channel, stream) : absl::OkStatus();
  }

 private:
  bool retain_;
  AuglabRegionConfig region_;
  size_t index_;
  std::vector<al::AuglabSlice> slices_;
  std::vector<float> weights_;
  bool any_ = false, regional_ = false;
  size_t offset_ = 0, weights_offset_ = 0;
};

// One step per configured function, then the inverse; each active step = moments, the pointwise map, [retain].
class IntensityFunctionStage final : public CudaStage {
 public:
  IntensityFunctionStage(const IntensityFunctionTransform& t, size_t index) : config_(t.config()), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    const size_t nf = config_.functions.size();
    steps_.assign(nf + 1, Step{});
    for (size_t j = 0; j <= nf; ++j)
      steps_[j].slices.assign(static_cast<size_t>(t.batch) * t.channels, al::AuglabSlice{});
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const auto* p, ParamsAs<IntensityFunctionParams>(*params[b], "intensity_function"));
      if (p->functions.size() != nf)
        return Invalid(index_, "intensity_function", "params.functions: one entry per configured function");
      const size_t channels = p->apply_to_channel.size();
      RETURN_IF_ERROR(auglab_region::CheckSlots(p->region, RegionSlots(config_, channels)));
      for (size_t j = 0; j <= nf; ++j) {
        if (j < nf ? !p->functions[j] : !p->inverse) continue;
        const bool retain = j < nf ? config_.retain_stats : config_.inverse_retain_stats;
        for (size_t i = 0; i < channels; ++i) {
          ASSIGN_OR_RETURN(al::AuglabSlice * s,
                           SliceOf(steps_[j].slices, t, b, p->apply_to_channel[i], index_, "intensity_function"));
          s->on = 1;
          s->fn = j < nf ? config_.functions[j] : -1;
          s->retain = retain ? 1 : 0;
          steps_[j].regional |= SetRegion(s, p->region, j * channels + i);
          steps_[j].any = true;
          steps_[j].retain |= retain;
        }
      }
    }
    for (Step& s : steps_) {
      ASSIGN_OR_RETURN(s.regional, RegionActive(s.any, s.regional, t, config_.region, "intensity_function"));
      if (s.any) s.offset = arena.AppendArray(s.slices);
    }
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    const int slices = t.batch * t.channels;
    for (const Step& s : steps_) {
      if (!s.any) continue;
      const auto* p = arena.device_as<al::AuglabSlice>(s.offset);
      float* orig = nullptr;
      if (s.regional) {
        ASSIGN_OR_RETURN(orig, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
      }
      ASSIGN_OR_RETURN(const da5::SliceMoments* before,
                       EnqueueMoments(t.image, t.voxels(), slices, kSlotMomentsA, ws, stream));
      RETURN_IF_ERROR(
          CudaStatus(al::LaunchIntensityStep(t.image, t.voxels(), slices, p, before, stream), "intensity_function"));
      if (s.retain) RETURN_IF_ERROR(EnqueueRetain(t, p, before, ws, stream));
      if (s.regional) RETURN_IF_ERROR(EnqueueRestore(t, orig, p, config_.region.seg_channel, stream));
    }
    return absl::OkStatus();
  }

 private:
  struct Step {
    std::vector<al::AuglabSlice> slices;
    bool any = false, retain = false, regional = false;
    size_t offset = 0;
  };
  IntensityFunctionConfig config_;
  size_t index_;
  std::vector<Step> steps_;
};

}  // namespace

// The factories of the stages above (registered in augment/cuda/backends.cc).
CudaStageOrError MakeHistogramEqualizationStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new HistogramStage(static_cast<const HistogramEqualizationTransform&>(t), index));
}
CudaStageOrError MakeRandomConvolutionStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(
      new RandomConvolutionStage(static_cast<const RandomConvolutionTransform&>(t), index));
}
CudaStageOrError MakeIntensityFunctionStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(
      new IntensityFunctionStage(static_cast<const IntensityFunctionTransform&>(t), index));
}

}  // namespace augmentd
