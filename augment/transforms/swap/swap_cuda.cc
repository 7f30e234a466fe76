// swap's CUDA stage on the generic chain (augment/cuda/stage.h): the CPU transform's drawn swaps (SwapParams: patch
// extent, (first, second) corners in order) packed per sample into the arena, one launch per batch (swap_kernels.h
// LaunchSwap: one block per (sample, channel), the swaps in order, exact for overlapping patches). Samples without
// params (not applied) have no swaps. 2D samples: TorchIO reads (X, Y) as (X, Y, 1) and the scratch holds (1, X, Y);
// Lift2DSwap moves the unit axis first (patch (1, px, py), corners (0, i, j)), which keeps the CPU's C-order copy
// order voxel for voxel (the unit axis is the outermost in both). Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/swap/swap.h"
#include "augment/transforms/swap/swap_kernels.h"

namespace augmentd {
namespace {
namespace sw = cuda::swap;
using stage_internal::NamedStage;
using transforms_internal::ParamsAs;

class SwapStage final : public NamedStage {
 public:
  using NamedStage::NamedStage;

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    samples_.assign(static_cast<size_t>(t.batch), sw::SwapSample{});
    pairs_.clear();
    max_patch_ = 1;
    for (size_t b = 0; b < params.size() && b < samples_.size(); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const SwapParams* p, ParamsAs<SwapParams>(*params[b], "swap"));
      if (p->locations.empty()) continue;
      sw::SwapSample& s = samples_[b];
      int64_t pv = 1;
      for (int a = 0; a < 3; ++a) {
        if (p->patch_size[a] < 1 || p->patch_size[a] > t.shape[a])
          return Invalid(absl::StrCat("patch_size ", p->patch_size[a], " on axis ", a, " does not fit the extent ",
                                      t.shape[a]));
        s.extent[a] = static_cast<int32_t>(p->patch_size[a]);
        pv *= p->patch_size[a];
      }
      max_patch_ = std::max(max_patch_, pv);
      s.first = static_cast<int32_t>(pairs_.size());
      s.count = static_cast<int32_t>(p->locations.size());
      for (const auto& l : p->locations) {
        sw::SwapPair pr;
        for (int a = 0; a < 3; ++a) {
          for (int q = 0; q < 2; ++q)
            if (l[q][a] < 0 || l[q][a] > t.shape[a] - p->patch_size[a])
              return Invalid(absl::StrCat("locations: corner ", l[q][a], " on axis ", a, " puts the patch outside ",
                                          "the extent ", t.shape[a]));
          pr.f[a] = static_cast<int32_t>(l[0][a]);
          pr.g[a] = static_cast<int32_t>(l[1][a]);
        }
        pairs_.push_back(pr);
      }
    }
    any_ = !pairs_.empty();
    samples_offset_ = arena.AppendArray(samples_);
    pairs_offset_ = arena.AppendArray(pairs_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const size_t bytes = static_cast<size_t>(t.batch) * static_cast<size_t>(t.channels) * 2 *
                         static_cast<size_t>(max_patch_) * sizeof(float);
    ASSIGN_OR_RETURN(void* scratch, ws.Scratch(ChainWorkspace::kSlotStage, bytes));
    return CudaStatus(sw::LaunchSwap(t.image, t.batch, t.channels, t.shape, arena.device_as<sw::SwapSample>(
                                                                                samples_offset_),
                                     arena.device_as<sw::SwapPair>(pairs_offset_), max_patch_,
                                     static_cast<float*>(scratch), stream),
                      "swap");
  }

 private:
  std::vector<sw::SwapSample> samples_;
  std::vector<sw::SwapPair> pairs_;
  int64_t max_patch_ = 1;
  bool any_ = false;
  size_t samples_offset_ = 0, pairs_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeSwapStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new SwapStage(t, index));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DSwap(const TransformParams& tp) {
  ASSIGN_OR_RETURN(const SwapParams* p, ParamsAs<SwapParams>(tp, "swap"));
  if (p->patch_size[2] != 1)
    return absl::InvalidArgumentError("swap: params.patch_size: expected 2D parameters (third extent 1)");
  auto out = std::make_unique<SwapParams>();
  out->patch_size = {1, p->patch_size[0], p->patch_size[1]};
  out->locations.reserve(p->locations.size());
  for (const auto& l : p->locations) {
    if (l[0][2] != 0 || l[1][2] != 0)
      return absl::InvalidArgumentError("swap: params.locations: expected 2D parameters (third index 0)");
    out->locations.push_back({{{0, l[0][0], l[0][1]}, {0, l[1][0], l[1][1]}}});
  }
  return std::unique_ptr<TransformParams>(std::move(out));
}

}  // namespace augmentd
