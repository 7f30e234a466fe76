// anisotropy's CUDA stage on the generic chain (augment/cuda/stage.h): each applied sample's planes (every image
// channel; the labels too when scalars_only is false) are resampled nearest down onto the low grid
// (anisotropy_internal::MapsOf, the CPU's own maps) into stage scratch, then back onto the patch grid with the
// configured interpolation (labels nearest), fill 0 — torchio_kernels.h's index-affine kernel, whose per-voxel code
// (sitk_math.h) is the CPU's. Two launches per tensor per batch. 2D samples: resample_cuda.h (the CPU's (X, Y, 1)).
// Registered in augment/cuda/backends.cc.
#include <vector>

#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cuda/torchio_kernels.h"
#include "augment/transforms/anisotropy/anisotropy.h"
#include "augment/transforms/common/resample_cuda.h"

namespace augmentd {
namespace {
namespace tk = cuda::torchio;
using stage_internal::NamedStage;

void SetAffine(tk::AffinePlane& r, const sitk::IndexAffine& a) {
  for (int i = 0; i < 9; ++i) r.m[i] = a.m[static_cast<size_t>(i)];
  for (int i = 0; i < 3; ++i) r.b[i] = a.b[static_cast<size_t>(i)];
}

class AnisotropyStage final : public NamedStage {
 public:
  AnisotropyStage(const AnisotropyTransform& t, size_t index) : NamedStage(t, index), config_(t.config()) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    down_img_.clear();
    up_img_.clear();
    down_seg_.clear();
    up_seg_.clear();
    const int64_t v = t.voxels();
    const bool labels = !config_.scalars_only && t.seg != nullptr && t.seg_channels > 0;
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto& p = static_cast<const AnisotropyParams&>(*params[b]);
      const bool planar = resample_cuda::IsPlanar(p);
      if (p.axis < 0 || p.axis >= (planar ? 2 : 3)) return Invalid("params.axis: not a spatial axis of the sample");
      if (!(p.downsampling >= 1) || !(p.downsampling <= 1e4)) return Invalid("params.downsampling: must be in [1, 10000]");
      const std::array<int64_t, 3> s = resample_cuda::CpuShape(p, t);
      const anisotropy_internal::DownUpMaps maps = anisotropy_internal::MapsOf(s, p.axis, p.downsampling);
      auto add = [&](int64_t plane, bool linear, std::vector<tk::AffinePlane>& down, std::vector<tk::AffinePlane>& up) {
        tk::AffinePlane d;
        SetAffine(d, maps.down);
        d.in_offset = d.out_offset = plane * v;
        resample_cuda::SetShape(d.in_shape, s);
        resample_cuda::SetShape(d.out_shape, maps.low_shape);
        d.on = 1;
        down.push_back(d);
        tk::AffinePlane u;
        SetAffine(u, maps.up);
        u.in_offset = u.out_offset = plane * v;
        resample_cuda::SetShape(u.in_shape, maps.low_shape);
        resample_cuda::SetShape(u.out_shape, s);
        u.on = 1;
        u.linear = linear ? 1 : 0;
        up.push_back(u);
      };
      for (int32_t c = 0; c < t.channels; ++c) add(int64_t(b) * t.channels + c, config_.linear, down_img_, up_img_);
      if (labels)
        for (int32_t c = 0; c < t.seg_channels; ++c) add(int64_t(b) * t.seg_channels + c, false, down_seg_, up_seg_);
    }
    down_img_off_ = arena.AppendArray(down_img_);
    up_img_off_ = arena.AppendArray(up_img_);
    down_seg_off_ = arena.AppendArray(down_seg_);
    up_seg_off_ = arena.AppendArray(up_seg_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t s) override {
    const int64_t v = t.voxels();
    if (!down_img_.empty()) {
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage, size_t(t.batch) * t.channels * v * sizeof(float)));
      const int32_t n = static_cast<int32_t>(down_img_.size());
      RETURN_IF_ERROR(CudaStatus(tk::LaunchAffineResample(n, v, arena.device_as<tk::AffinePlane>(down_img_off_), t.image,
                                                          static_cast<float*>(tmp), nullptr, s),
                                 "anisotropy down"));
      RETURN_IF_ERROR(CudaStatus(tk::LaunchAffineResample(n, v, arena.device_as<tk::AffinePlane>(up_img_off_),
                                                          static_cast<const float*>(tmp), t.image, nullptr, s),
                                 "anisotropy up"));
    }
    if (!down_seg_.empty()) {
      ASSIGN_OR_RETURN(void* tmp,
                       ws.Scratch(ChainWorkspace::kSlotStage + 1, size_t(t.batch) * t.seg_channels * v * sizeof(int16_t)));
      const int32_t n = static_cast<int32_t>(down_seg_.size());
      RETURN_IF_ERROR(CudaStatus(tk::LaunchAffineResample(n, v, arena.device_as<tk::AffinePlane>(down_seg_off_), t.seg,
                                                          static_cast<int16_t*>(tmp), nullptr, s),
                                 "anisotropy labels down"));
      RETURN_IF_ERROR(CudaStatus(tk::LaunchAffineResample(n, v, arena.device_as<tk::AffinePlane>(up_seg_off_),
                                                          static_cast<const int16_t*>(tmp), t.seg, nullptr, s),
                                 "anisotropy labels up"));
    }
    return absl::OkStatus();
  }

 private:
  AnisotropyConfig config_;
  std::vector<tk::AffinePlane> down_img_, up_img_, down_seg_, up_seg_;
  size_t down_img_off_ = 0, up_img_off_ = 0, down_seg_off_ = 0, up_seg_off_ = 0;
};

}  // namespace

CudaStageOrError MakeAnisotropyStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new AnisotropyStage(static_cast<const AnisotropyTransform&>(t), index));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DAnisotropy(const TransformParams& p) {
  return resample_cuda::LiftPlanar<AnisotropyParams>(p);
}

}  // namespace augmentd
