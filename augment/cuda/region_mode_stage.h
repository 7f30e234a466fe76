// augment/cuda/region_mode_stage.h — internal to the CUDA chain (cuda/chain.cc): a pipeline entry's region mode
// (augment/region_mode.h) around the entry's own stage. Prepare packs one RegionRec per sample (the CPU engine's
// draw, AppliedTransform::region, set by SetRegions before Prepare); Enqueue copies the image, runs the wrapped
// stage, then the blend post-step (kernels/cuda/region_mode.h) when some sample drew "in" / "out". Samples that
// drew "all" or were not applied keep the wrapped stage's output. Same thread-safety as every stage.
#pragma once

#include <memory>
#include <vector>

#include "augment/cuda/stage.h"
#include "augment/kernels/cuda/region_mode.h"
#include "augment/region_mode.h"

namespace augmentd {

class RegionModeStage final : public CudaStage {
 public:
  explicit RegionModeStage(std::unique_ptr<CudaStage> inner) : inner_(std::move(inner)) {}
  // regions[b]: sample b's draw (mode "all" where the entry was not applied). Call before Prepare, every batch.
  void SetRegions(std::vector<RegionDraw> regions) { regions_ = std::move(regions); }
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override;
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override;
  CudaStage* inner() const { return inner_.get(); }

  static constexpr int kSlotOrig = ChainWorkspace::kSlotStage + 40;  // the image before the wrapped stage
  static constexpr int kSlotKeys = ChainWorkspace::kSlotStage + 41;  // per-slice min / max keys

 private:
  std::unique_ptr<CudaStage> inner_;
  std::vector<RegionDraw> regions_;
  std::vector<cuda::region::RegionRec> recs_;
  bool any_ = false;
  size_t offset_ = 0;
};

}  // namespace augmentd
