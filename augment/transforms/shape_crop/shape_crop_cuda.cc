// shape_crop's CUDA stage on the generic chain (augment/cuda/stage.h): one CropBox per sample from the CPU
// transform's drawn new_shape (start_a = max(0, S_a/2 − new_a/2), end = start + new_a, as ShapeCropTransform::Apply),
// then one launch zeroing the image outside the box and one for the labels (every seg channel). 2D samples arrive as
// (1, X, Y) with 2D parameters: the unit axis keeps its one voxel, the two new_shape entries box axes 1 and 2.
// Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <memory>
#include <vector>

#include "augment/cuda/stages_daext_internal.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/shape_crop/shape_crop.h"

namespace augmentd {
namespace {
namespace dx = cuda::daext;
using transforms_internal::ParamsAs;

class ShapeCropStage final : public CudaStage {
 public:
  explicit ShapeCropStage(size_t index) : index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    boxes_.assign(static_cast<size_t>(t.batch), dx::CropBox{});
    any_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const auto* p, ParamsAs<ShapeCropParams>(*params[b], "shape_crop"));
      const size_t dims = p->new_shape.size();
      if (dims != 3 && !(dims == 2 && t.shape[0] == 1))
        return da5_stage_internal::Invalid(index_, "shape_crop", "params.new_shape: one entry per spatial axis");
      dx::CropBox& box = boxes_[static_cast<size_t>(b)];
      box.on = 1;
      box.lo[0] = 0;
      box.hi[0] = t.shape[0];  // a 2D sample's unit axis
      for (size_t k = 0; k < dims; ++k) {
        const size_t a = k + (3 - dims);
        const int64_t n = p->new_shape[k], extent = t.shape[a];
        if (n < 1 || n > extent)
          return da5_stage_internal::Invalid(index_, "shape_crop", "params.new_shape: must be in [1, extent]");
        box.lo[a] = static_cast<int32_t>(std::max<int64_t>(0, extent / 2 - n / 2));
        box.hi[a] = box.lo[a] + static_cast<int32_t>(n);
      }
      any_ = true;
    }
    if (any_) offset_ = arena.AppendArray(boxes_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace&, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const auto* boxes = arena.device_as<dx::CropBox>(offset_);
    RETURN_IF_ERROR(
        CudaStatus(dx::LaunchCropZeroImage(t.image, t.shape, t.batch, t.channels, boxes, stream), "shape_crop"));
    if (t.seg == nullptr || t.seg_channels == 0) return absl::OkStatus();
    return CudaStatus(dx::LaunchCropZeroSeg(t.seg, t.shape, t.batch, t.seg_channels, boxes, stream),
                      "shape_crop labels");
  }

 private:
  size_t index_;
  std::vector<dx::CropBox> boxes_;
  bool any_ = false;
  size_t offset_ = 0;
};

}  // namespace

CudaStageOrError MakeShapeCropStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new ShapeCropStage(index));
}

}  // namespace augmentd
