// torchio_affine's CUDA stage on the generic chain (augment/cuda/stage.h): each applied sample's index affine is
// the CPU's (TorchioAffineIndexMap); its image planes are copied to stage scratch and resampled back with the
// configured interpolation, fill = pad_value or the plane's minimum (torchio_kernels.h LaunchPlaneMin on the copy:
// exact), its label planes nearest with fill default_pad_label — torchio_kernels.h's index-affine kernel, whose
// per-voxel code (sitk_math.h) is the CPU's. 2D samples: resample_cuda.h (the CPU's (X, Y, 1), only θ2 used).
// Registered in augment/cuda/backends.cc.
#include <vector>

#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cuda/torchio_kernels.h"
#include "augment/transforms/common/resample_cuda.h"
#include "augment/transforms/torchio_affine/torchio_affine.h"

namespace augmentd {
namespace {
namespace tk = cuda::torchio;
using stage_internal::NamedStage;

class TorchioAffineStage final : public NamedStage {
 public:
  TorchioAffineStage(const TorchioAffineTransform& t, size_t index) : NamedStage(t, index), config_(t.config()) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    img_.clear();
    seg_.clear();
    const int64_t v = t.voxels();
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto& p = static_cast<const TorchioAffineParams&>(*params[b]);
      for (double s : p.scales)
        if (!(s > 0) || !(s <= 100)) return Invalid("params.scales: must be in (0, 100]");
      const bool planar = resample_cuda::IsPlanar(p);
      const std::array<int64_t, 3> s = resample_cuda::CpuShape(p, t);
      const sitk::IndexAffine a = TorchioAffineIndexMap(p, s, config_.center_image, planar);
      tk::AffinePlane r;
      for (int i = 0; i < 9; ++i) r.m[i] = a.m[static_cast<size_t>(i)];
      for (int i = 0; i < 3; ++i) r.b[i] = a.b[static_cast<size_t>(i)];
      resample_cuda::SetShape(r.in_shape, s);
      resample_cuda::SetShape(r.out_shape, s);
      r.on = 1;
      for (int32_t c = 0; c < t.channels; ++c) {
        const int64_t plane = int64_t(b) * t.channels + c;
        r.in_offset = r.out_offset = plane * v;
        r.linear = config_.linear ? 1 : 0;
        r.min_index = config_.pad_value.has_value() ? -1 : static_cast<int32_t>(plane);
        r.fill = config_.pad_value.has_value() ? static_cast<float>(*config_.pad_value) : 0.f;
        img_.push_back(r);
      }
      if (t.seg != nullptr)
        for (int32_t c = 0; c < t.seg_channels; ++c) {
          r.in_offset = r.out_offset = (int64_t(b) * t.seg_channels + c) * v;
          r.linear = 0;
          r.min_index = -1;
          r.fill = static_cast<float>(static_cast<int16_t>(config_.pad_label));  // exact in float
          seg_.push_back(r);
        }
    }
    img_off_ = arena.AppendArray(img_);
    seg_off_ = arena.AppendArray(seg_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t s) override {
    const int64_t v = t.voxels();
    if (!img_.empty()) {
      const int32_t planes = t.batch * t.channels;
      const size_t bytes = size_t(planes) * v * sizeof(float);
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage, bytes));
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(tmp, t.image, bytes, cudaMemcpyDeviceToDevice, s), "torchio_affine copy"));
      float* mins = nullptr;
      if (!config_.pad_value.has_value()) {
        ASSIGN_OR_RETURN(void* m, ws.Scratch(ChainWorkspace::kSlotStage + 2, size_t(planes) * sizeof(float)));
        mins = static_cast<float*>(m);
        RETURN_IF_ERROR(CudaStatus(tk::LaunchPlaneMin(planes, v, static_cast<const float*>(tmp), mins, s),
                                   "torchio_affine minimum"));
      }
      RETURN_IF_ERROR(CudaStatus(tk::LaunchAffineResample(static_cast<int32_t>(img_.size()), v,
                                                          arena.device_as<tk::AffinePlane>(img_off_),
                                                          static_cast<const float*>(tmp), t.image, mins, s),
                                 "torchio_affine"));
    }
    if (!seg_.empty()) {
      const size_t bytes = size_t(t.batch) * t.seg_channels * v * sizeof(int16_t);
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage + 1, bytes));
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(tmp, t.seg, bytes, cudaMemcpyDeviceToDevice, s),
                                 "torchio_affine labels copy"));
      RETURN_IF_ERROR(CudaStatus(tk::LaunchAffineResample(static_cast<int32_t>(seg_.size()), v,
                                                          arena.device_as<tk::AffinePlane>(seg_off_),
                                                          static_cast<const int16_t*>(tmp), t.seg, nullptr, s),
                                 "torchio_affine labels"));
    }
    return absl::OkStatus();
  }

 private:
  TorchioAffineConfig config_;
  std::vector<tk::AffinePlane> img_, seg_;
  size_t img_off_ = 0, seg_off_ = 0;
};

}  // namespace

CudaStageOrError MakeTorchioAffineStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new TorchioAffineStage(static_cast<const TorchioAffineTransform&>(t), index));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DTorchioAffine(const TransformParams& p) {
  return resample_cuda::LiftPlanar<TorchioAffineParams>(p);
}

}  // namespace augmentd
