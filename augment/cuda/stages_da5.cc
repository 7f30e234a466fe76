// nnUNetTrainerDA5's local transforms as CUDA chain stages (cuda/stage.h): median_filter, sharpening, rician_noise,
// blank_rectangle here; brightness_gradient_additive and local_gamma in stages_da5_local.cc. Each Prepare
// packs one small record per slice (sample, channel) — or per sample — from the CPU transform's own drawn params;
// each Enqueue launches a few batch-wide kernels (augment/kernels/cuda/da5_kernels.h). 2D samples arrive as
// (B, C, 1, X, Y) with their parameters lifted by cuda/chain_2d.h (which states why each result equals the CPU's).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/da5_kernels.h"
#include "augment/kernels/cuda/da5_median_large.h"
#include "augment/status_macros.h"
#include "augment/transforms/blank_rectangle.h"
#include "augment/transforms/common.h"
#include "augment/transforms/median_filter.h"
#include "augment/transforms/rician_noise.h"
#include "augment/transforms/sharpening.h"

namespace augmentd {
namespace da5_stage_internal {

absl::Status Invalid(size_t index, std::string_view transform, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("CUDA engine: transform ", index, " (", std::string(transform), "): ", std::string(problem)));
}

absl::StatusOr<const cuda::da5::SliceMoments*> EnqueueMoments(const float* x, int64_t len, int slices, int result_slot,
                                                              ChainWorkspace& ws, cudaStream_t stream) {
  namespace da5 = cuda::da5;
  const size_t n = static_cast<size_t>(slices);
  ASSIGN_OR_RETURN(void* partials,
                   ws.Scratch(kSlotPartials, n * da5::MomentsBlocks(len) * sizeof(da5::MomentsPartial)));
  ASSIGN_OR_RETURN(void* out, ws.Scratch(result_slot, n * sizeof(da5::SliceMoments)));
  auto* m = static_cast<da5::SliceMoments*>(out);
  RETURN_IF_ERROR(CudaStatus(
      da5::LaunchSliceMoments(x, len, slices, static_cast<da5::MomentsPartial*>(partials), m, stream), "moments"));
  return m;
}

absl::StatusOr<float*> EnqueueImageCopy(const ChainTensors& t, ChainWorkspace& ws, cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(t.batch) * t.channels * t.voxels() * sizeof(float);
  ASSIGN_OR_RETURN(void* copy, ws.Scratch(kSlotCopy, bytes));
  RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(copy, t.image, bytes, cudaMemcpyDeviceToDevice, stream), "image copy"));
  return static_cast<float*>(copy);
}

}  // namespace da5_stage_internal

namespace {
namespace da5 = cuda::da5;
using da5_stage_internal::Invalid;
using transforms_internal::ParamsAs;

// Channels of params that apply (the CPU transforms stop at the shorter of the image and the params).
int64_t ParamChannels(const ChainTensors& t, size_t n) {
  return std::min<int64_t>(t.channels, static_cast<int64_t>(n));
}

// median_filter: k per slice (0 = untouched; k = 1 is the identity), then one launch over all tiles of all slices
// (a batch drawing a window above kMaxMedianSize: one launch of the generic da5_median_large.h kernel instead).
class MedianStage final : public CudaStage {
 public:
  explicit MedianStage(size_t index) : index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    ks_.assign(static_cast<size_t>(t.batch) * t.channels, 0);
    max_k_ = 0;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const MedianFilterParams* p, ParamsAs<MedianFilterParams>(*params[b], "median_filter"));
      if (p->filter_sizes.size() < p->apply_channel.size())
        return Invalid(index_, "median_filter", "params.filter_sizes: one entry per channel");
      for (int64_t c = 0; c < ParamChannels(t, p->apply_channel.size()); ++c) {
        const int64_t k = p->filter_sizes[c];
        if (!p->apply_channel[c] || k < 2) continue;
        ks_[b * t.channels + c] = static_cast<int32_t>(k);
        max_k_ = std::max(max_k_, static_cast<int>(k));
      }
    }
    if (max_k_ >= 2) offset_ = arena.AppendArray(ks_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (max_k_ < 2) return absl::OkStatus();
    ASSIGN_OR_RETURN(float* copy, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    if (max_k_ > da5::kMaxMedianSize)  // a window above the shared-memory tiles: the generic kernel, any k
      return CudaStatus(da5::LaunchMedianLarge(copy, t.image, arena.device_as<int32_t>(offset_), t.batch * t.channels,
                                          t.shape, stream),
                   "median_filter");
    return CudaStatus(da5::LaunchMedian(copy, t.image, arena.device_as<int32_t>(offset_), t.batch * t.channels, t.shape,
                                   max_k_, stream),
                 "median_filter");
  }

 private:
  size_t index_;
  std::vector<int32_t> ks_;
  int max_k_ = 0;
  size_t offset_ = 0;
};

// sharpening: per slice strength / apply / clamp; the clamp range is the slice's pre-sharpening [min, max]. 2D
// samples (PlanarSharpeningParams, cuda/chain_2d.h) take the kernel's 4-neighbour form.
class SharpenStage final : public CudaStage {
 public:
  explicit SharpenStage(size_t index) : index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, da5::SharpenSlice{});
    any_ = any_clamp_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const SharpeningParams* p, ParamsAs<SharpeningParams>(*params[b], "sharpening"));
      if (p->strengths.size() < p->apply_channel.size() || p->clamp_intensities.size() < p->apply_channel.size())
        return Invalid(index_, "sharpening", "params: strengths / clamp_intensities need one entry per channel");
      for (int64_t c = 0; c < ParamChannels(t, p->apply_channel.size()); ++c) {
        if (!p->apply_channel[c]) continue;
        da5::SharpenSlice& s = slices_[b * t.channels + c];
        s.apply = 1;
        s.strength = static_cast<float>(p->strengths[c]);
        s.clamp = p->clamp_intensities[c] ? 1 : 0;
        s.planar = dynamic_cast<const PlanarSharpeningParams*>(p) != nullptr ? 1 : 0;  // a 2D sample
        any_ = true;
        any_clamp_ |= s.clamp != 0;
      }
    }
    if (any_) offset_ = arena.AppendArray(slices_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    ASSIGN_OR_RETURN(float* copy, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    const da5::SliceMoments* stats = nullptr;
    if (any_clamp_) {
      ASSIGN_OR_RETURN(stats, da5_stage_internal::EnqueueMoments(copy, t.voxels(), slices,
                                                                 da5_stage_internal::kSlotMomentsA, ws, stream));
    }
    return CudaStatus(
        da5::LaunchSharpen(copy, t.image, arena.device_as<da5::SharpenSlice>(offset_), stats, slices, t.shape, stream),
        "sharpening");
  }

 private:
  size_t index_;
  std::vector<da5::SharpenSlice> slices_;
  bool any_ = false, any_clamp_ = false;
  size_t offset_ = 0;
};

// rician_noise: per sample (all channels together): moments → noisy magnitude → moments → rescale.
class RicianStage final : public CudaStage {
 public:
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    samples_.assign(static_cast<size_t>(t.batch), da5::RicianSample{});
    any_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const RicianNoiseParams* p, ParamsAs<RicianNoiseParams>(*params[b], "rician_noise"));
      da5::RicianSample& s = samples_[b];
      s.re = MakeStreamKey(p->seed, p->sample_index, p->transform_index, 1);
      s.im = MakeStreamKey(p->seed, p->sample_index, p->transform_index, 2);
      s.sigma = static_cast<float>(p->variance);
      s.active = 1;
      any_ = true;
    }
    if (any_) offset_ = arena.AppendArray(samples_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    using da5_stage_internal::EnqueueMoments;
    const int64_t len = t.channels * t.voxels();
    const auto* p = arena.device_as<da5::RicianSample>(offset_);
    ASSIGN_OR_RETURN(const da5::SliceMoments* in,
                     EnqueueMoments(t.image, len, t.batch, da5_stage_internal::kSlotMomentsA, ws, stream));
    RETURN_IF_ERROR(CudaStatus(da5::LaunchRicianField(t.image, p, in, t.batch, len, stream), "rician_noise"));
    ASSIGN_OR_RETURN(const da5::SliceMoments* r,
                     EnqueueMoments(t.image, len, t.batch, da5_stage_internal::kSlotMomentsB, ws, stream));
    return CudaStatus(da5::LaunchRicianRescale(t.image, p, in, r, t.batch, len, stream), "rician_noise");
  }

 private:
  std::vector<da5::RicianSample> samples_;
  bool any_ = false;
  size_t offset_ = 0;
};

// blank_rectangle: the boxes of every slice with their fill (constant, drawn value or "mean"), one block per slice
// walks them in order (inherently sequential within a slice: a box's mean sees the earlier fills).
class BlankRectangleStage final : public CudaStage {
 public:
  BlankRectangleStage(const BlankRectangleConfig& config, size_t index) : config_(config), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    using Value = BlankRectangleConfig::Value;
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, da5::RectSlice{});
    rects_.clear();
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const BlankRectangleParams* p, ParamsAs<BlankRectangleParams>(*params[b], "blank_rectangle"));
      for (int64_t c = 0; c < ParamChannels(t, p->apply_channel.size()); ++c) {
        if (!p->apply_channel[c] || static_cast<size_t>(c) >= p->rectangles.size()) continue;
        da5::RectSlice& s = slices_[b * t.channels + c];
        s.begin = static_cast<int32_t>(rects_.size());
        const auto& boxes = p->rectangles[c];
        for (size_t r = 0; r < boxes.size(); ++r) {
          if (boxes[r].lb.size() != 3 || boxes[r].ub.size() != 3)
            return Invalid(index_, "blank_rectangle", "params.rectangles: the CUDA chain is 3D");
          da5::Rect box;
          for (int d = 0; d < 3; ++d) {
            box.lb[d] = static_cast<int32_t>(std::clamp<int64_t>(boxes[r].lb[d], 0, t.shape[d]));
            box.ub[d] = static_cast<int32_t>(std::clamp<int64_t>(boxes[r].ub[d], box.lb[d], t.shape[d]));
          }
          box.use_mean = config_.value_kind == Value::kMean ? 1 : 0;
          if (config_.value_kind == Value::kConstant) box.value = static_cast<float>(config_.value);
          if (config_.value_kind == Value::kUniform) {
            if (static_cast<size_t>(c) >= p->values.size() || r >= p->values[c].size())
              return Invalid(index_, "blank_rectangle", "params.values: one value per rectangle");
            box.value = static_cast<float>(p->values[c][r]);
          }
          rects_.push_back(box);
        }
        s.count = static_cast<int32_t>(rects_.size()) - s.begin;
      }
    }
    if (!rects_.empty()) {
      slices_offset_ = arena.AppendArray(slices_);
      rects_offset_ = arena.AppendArray(rects_);
    }
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace&, cudaStream_t stream) override {
    if (rects_.empty()) return absl::OkStatus();
    return CudaStatus(
        da5::LaunchBlankRectangles(t.image, arena.device_as<da5::RectSlice>(slices_offset_),
                                   arena.device_as<da5::Rect>(rects_offset_), t.batch * t.channels, t.shape, stream),
        "blank_rectangle");
  }

 private:
  BlankRectangleConfig config_;
  size_t index_;
  std::vector<da5::RectSlice> slices_;
  std::vector<da5::Rect> rects_;
  size_t slices_offset_ = 0, rects_offset_ = 0;
};

}  // namespace

// The factories of the stages above (registered in augment/cuda/backends.cc).
// median_filter: any size (k > kMaxMedianSize runs LaunchMedianLarge).
CudaStageOrError MakeMedianFilterStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new MedianStage(index));
}
CudaStageOrError MakeSharpeningStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new SharpenStage(index));
}
CudaStageOrError MakeRicianNoiseStage(const Transform&, size_t) {
  return std::unique_ptr<CudaStage>(new RicianStage());
}
CudaStageOrError MakeBlankRectangleStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(
      new BlankRectangleStage(static_cast<const BlankRectangleTransform&>(t).config(), index));
}

}  // namespace augmentd
