// blank_rectangle's CUDA stage on the generic chain (augment/cuda/stage.h; DA5's shared helpers in
// augment/cuda/stages_da5_internal.h, kernels in augment/kernels/cuda/da5_kernels.h). Registered in
// augment/cuda/backends.cc.
#include <algorithm>
#include <vector>

#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/da5_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/blank_rectangle/blank_rectangle.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace {
namespace da5 = cuda::da5;
using da5_stage_internal::Invalid;
using da5_stage_internal::ParamChannels;
using transforms_internal::ParamsAs;

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

CudaStageOrError MakeBlankRectangleStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(
      new BlankRectangleStage(static_cast<const BlankRectangleTransform&>(t).config(), index));
}

}  // namespace augmentd
