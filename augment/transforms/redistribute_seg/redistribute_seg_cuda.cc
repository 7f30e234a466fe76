// redistribute_seg's CUDA stage on the generic chain (augment/cuda/stage.h): one Job per (sample, selected channel)
// from the CPU transform's drawn params (in_seg coin, jitter and amplitude per region = per seg channel of the
// scratch), packed into the arena; one launch sequence per batch (redistribute_seg_kernels.h). Samples without
// params (not applied) have no jobs and stay untouched. 2D samples run as drawn: the CPU reads (X, Y) as 1 × X × Y
// (auglab_common Shape3), the scratch's layout, and the dilation of a size-1 axis is the identity on both sides.
// Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/redistribute_seg/redistribute_seg.h"
#include "augment/transforms/redistribute_seg/redistribute_seg_kernels.h"

namespace augmentd {
namespace {
namespace rs = cuda::redistribute_seg;
using stage_internal::NamedStage;
using transforms_internal::ParamsAs;

constexpr int kSlotU8 = ChainWorkspace::kSlotStage;       // + 0, 1, 2: masks, dilation / rings
constexpr int kSlotF32 = ChainWorkspace::kSlotStage + 3;  // + 0, 1: the working channel, the Gaussian sum
constexpr int kSlotSmall = ChainWorkspace::kSlotStage + 5;

class RedistributeSegStage final : public NamedStage {
 public:
  RedistributeSegStage(const RedistributeSegTransform& t, size_t index)
      : NamedStage(t, index), retain_stats_(t.config().retain_stats) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    jobs_.clear();
    jitter_.clear();
    amplitude_.clear();
    for (size_t b = 0; b < params.size() && b < static_cast<size_t>(t.batch); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const RedistributeSegParams* p, ParamsAs<RedistributeSegParams>(*params[b], "redistribute_seg"));
      if (t.seg == nullptr || t.seg_channels < 1) return Invalid("needs a segmentation");
      const size_t n = p->apply_to_channel.size();
      if (p->in_seg.size() != n || p->jitter.size() != n || p->amplitude.size() != n)
        return Invalid("in_seg, jitter and amplitude need one entry per apply_to_channel entry");
      for (size_t k = 0; k < n; ++k) {
        const int64_t c = p->apply_to_channel[k];
        RETURN_IF_ERROR(CheckChannel(c, t));
        for (size_t q = 0; q < k; ++q)
          if (p->apply_to_channel[q] == c)
            return Invalid(absl::StrCat("apply_to_channel lists channel ", c, " twice"));
        if (p->jitter[k].size() != static_cast<size_t>(t.seg_channels) ||
            p->amplitude[k].size() != static_cast<size_t>(t.seg_channels))
          return Invalid(absl::StrCat("jitter and amplitude need one value per segmentation channel (",
                                      t.seg_channels, ")"));
        jobs_.push_back(rs::Job{static_cast<int32_t>(b), static_cast<int32_t>(c), p->in_seg[k] ? 1 : 0, 0});
        jitter_.insert(jitter_.end(), p->jitter[k].begin(), p->jitter[k].end());
        amplitude_.insert(amplitude_.end(), p->amplitude[k].begin(), p->amplitude[k].end());
      }
    }
    jobs_offset_ = arena.AppendArray(jobs_);
    jitter_offset_ = arena.AppendArray(jitter_);
    amplitude_offset_ = arena.AppendArray(amplitude_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (jobs_.empty()) return absl::OkStatus();
    if (t.seg == nullptr || t.seg_channels < 1) return Invalid("needs a segmentation");
    rs::Dims d;
    d.batch = t.batch;
    d.channels = t.channels;
    d.regions = t.seg_channels;
    for (int a = 0; a < 3; ++a) d.shape[a] = t.shape[a];
    const int32_t num_jobs = static_cast<int32_t>(jobs_.size());
    const rs::ScratchSizes sizes = rs::Scratch(d, num_jobs);
    rs::Scratches s;
    for (int i = 0; i < 3; ++i) {
      ASSIGN_OR_RETURN(void* p, ws.Scratch(kSlotU8 + i, sizes.bytes_u8));
      s.u8[i] = static_cast<uint8_t*>(p);
    }
    for (int i = 0; i < 2; ++i) {
      ASSIGN_OR_RETURN(void* p, ws.Scratch(kSlotF32 + i, sizes.bytes_f32));
      s.f32[i] = static_cast<float*>(p);
    }
    ASSIGN_OR_RETURN(s.small, ws.Scratch(kSlotSmall, sizes.bytes_small));
    return CudaStatus(rs::LaunchRedistributeSeg(t.image, t.seg, d, arena.device_as<rs::Job>(jobs_offset_), num_jobs,
                                                arena.device_as<float>(jitter_offset_),
                                                arena.device_as<float>(amplitude_offset_), retain_stats_, s, stream),
                      "redistribute_seg");
  }

 private:
  bool retain_stats_;
  std::vector<rs::Job> jobs_;
  std::vector<float> jitter_, amplitude_;
  size_t jobs_offset_ = 0, jitter_offset_ = 0, amplitude_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeRedistributeSegStage(const Transform& t, size_t index) {
  const auto* r = dynamic_cast<const RedistributeSegTransform*>(&t);
  if (r == nullptr) return absl::InternalError("MakeRedistributeSegStage: not a redistribute_seg transform");
  return std::unique_ptr<CudaStage>(new RedistributeSegStage(*r, index));
}

}  // namespace augmentd
