// auglab_low_resolution's CUDA stage on the generic chain (augment/cuda/stage.h), both modes as the CPU transform:
//   "lowres": every image and label plane of an applied sample is copied to stage scratch, then gathered back in one
//             pass — torch's legacy nearest down onto round(scale·S) and back up (sitk_math::TorchNearestIndex, the
//             CPU's index rule, composed), zero outside the kept box (auglab_lowres_internal::KeptBox).
//   "acq":    the channels of apply_to_channel are resized trilinear (align_corners=False) down into scratch and back
//             up, with the CPU's own taps (kernels::ComputeTaps) in the CPU's nested float order
//             (sitk_math::NestedTrilinear); labels untouched.
// 3D samples only, as the CPU (its Draw refuses 2D samples, so no 2D parameters reach the stage).
// Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <vector>

#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/kernels/cuda/torchio_kernels.h"
#include "augment/transforms/auglab_low_resolution/auglab_low_resolution.h"

namespace augmentd {
namespace {
namespace tk = cuda::torchio;
using stage_internal::NamedStage;
using Mode = AuglabLowResolutionConfig::Mode;

bool HasDuplicates(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) != v.end();
}

class AuglabLowResolutionStage final : public NamedStage {
 public:
  AuglabLowResolutionStage(const AuglabLowResolutionTransform& t, size_t index)
      : NamedStage(t, index), config_(t.config()) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    box_img_.clear();
    box_seg_.clear();
    down_.clear();
    up_.clear();
    taps_.clear();
    const int64_t v = t.voxels();
    const int64_t sh[3] = {t.shape[0], t.shape[1], t.shape[2]};
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto& p = static_cast<const AuglabLowResolutionParams&>(*params[b]);
      int32_t dn[3];
      std::array<std::array<int64_t, 2>, 3> box;
      for (int a = 0; a < 3; ++a) {
        dn[a] = static_cast<int32_t>(std::max<int64_t>(
            1, kernels::PyRoundToInt(static_cast<double>(p.scale[a]) * static_cast<double>(sh[a]))));
        box[a] = auglab_lowres_internal::KeptBox(p.crop[a], sh[a]);
      }
      if (config_.mode == Mode::kLowres) {
        tk::NearestBoxPlane r;
        for (int a = 0; a < 3; ++a) {
          r.shape[a] = t.shape[a];
          r.down[a] = dn[a];
          r.box_start[a] = static_cast<int32_t>(box[a][0]);
          r.box_keep[a] = static_cast<int32_t>(box[a][1]);
        }
        r.on = 1;
        for (int32_t c = 0; c < t.channels; ++c) {
          r.offset = (int64_t(b) * t.channels + c) * v;
          box_img_.push_back(r);
        }
        if (t.seg != nullptr)
          for (int32_t c = 0; c < t.seg_channels; ++c) {
            r.offset = (int64_t(b) * t.seg_channels + c) * v;
            box_seg_.push_back(r);
          }
        continue;
      }
      if (HasDuplicates(p.apply_to_channel)) return Invalid("params.apply_to_channel: duplicate channel");
      // acq: the CPU's taps, down (S → dn) and up (dn → S) per axis, appended once per sample.
      tk::LinearPlane d, u;
      for (int a = 0; a < 3; ++a) {
        d.in_shape[a] = u.out_shape[a] = t.shape[a];
        d.out_shape[a] = u.in_shape[a] = dn[a];
        d.taps[a] = AppendTaps(kernels::ComputeTaps(sh[a], dn[a]));
        u.taps[a] = AppendTaps(kernels::ComputeTaps(dn[a], sh[a]));
      }
      d.on = u.on = 1;
      for (int64_t c : p.apply_to_channel) {
        RETURN_IF_ERROR(CheckChannel(c, t));
        d.in_offset = d.out_offset = u.in_offset = u.out_offset = (int64_t(b) * t.channels + c) * v;
        down_.push_back(d);
        up_.push_back(u);
      }
    }
    box_img_off_ = arena.AppendArray(box_img_);
    box_seg_off_ = arena.AppendArray(box_seg_);
    down_off_ = arena.AppendArray(down_);
    up_off_ = arena.AppendArray(up_);
    taps_off_ = arena.AppendArray(taps_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t s) override {
    const int64_t v = t.voxels();
    if (!box_img_.empty()) {
      const size_t bytes = size_t(t.batch) * t.channels * v * sizeof(float);
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage, bytes));
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(tmp, t.image, bytes, cudaMemcpyDeviceToDevice, s),
                                 "auglab_low_resolution copy"));
      RETURN_IF_ERROR(CudaStatus(tk::LaunchNearestBox(static_cast<int32_t>(box_img_.size()), v,
                                                      arena.device_as<tk::NearestBoxPlane>(box_img_off_),
                                                      static_cast<const float*>(tmp), t.image, s),
                                 "auglab_low_resolution"));
    }
    if (!box_seg_.empty()) {
      const size_t bytes = size_t(t.batch) * t.seg_channels * v * sizeof(int16_t);
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage + 1, bytes));
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(tmp, t.seg, bytes, cudaMemcpyDeviceToDevice, s),
                                 "auglab_low_resolution labels copy"));
      RETURN_IF_ERROR(CudaStatus(tk::LaunchNearestBox(static_cast<int32_t>(box_seg_.size()), v,
                                                      arena.device_as<tk::NearestBoxPlane>(box_seg_off_),
                                                      static_cast<const int16_t*>(tmp), t.seg, s),
                                 "auglab_low_resolution labels"));
    }
    if (!down_.empty()) {
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage, size_t(t.batch) * t.channels * v * sizeof(float)));
      const int32_t n = static_cast<int32_t>(down_.size());
      const auto* taps = arena.device_as<tk::LinearTap>(taps_off_);
      RETURN_IF_ERROR(CudaStatus(tk::LaunchLinearResize(n, v, arena.device_as<tk::LinearPlane>(down_off_), taps, t.image,
                                                        static_cast<float*>(tmp), s),
                                 "auglab_low_resolution acq down"));
      RETURN_IF_ERROR(CudaStatus(tk::LaunchLinearResize(n, v, arena.device_as<tk::LinearPlane>(up_off_), taps,
                                                        static_cast<const float*>(tmp), t.image, s),
                                 "auglab_low_resolution acq up"));
    }
    return absl::OkStatus();
  }

 private:
  int32_t AppendTaps(const kernels::LinearTaps& taps) {
    const auto first = static_cast<int32_t>(taps_.size());
    for (size_t i = 0; i < taps.i0.size(); ++i)
      taps_.push_back(tk::LinearTap{static_cast<int32_t>(taps.i0[i]), static_cast<int32_t>(taps.i1[i]), taps.w0[i],
                                    taps.w1[i]});
    return first;
  }

  AuglabLowResolutionConfig config_;
  std::vector<tk::NearestBoxPlane> box_img_, box_seg_;
  std::vector<tk::LinearPlane> down_, up_;
  std::vector<tk::LinearTap> taps_;
  size_t box_img_off_ = 0, box_seg_off_ = 0, down_off_ = 0, up_off_ = 0, taps_off_ = 0;
};

}  // namespace

CudaStageOrError MakeAuglabLowResolutionStage(const Transform& t, size_t index) {
  const auto& lr = static_cast<const AuglabLowResolutionTransform&>(t);
  if (lr.config().mode == Mode::kAcq && HasDuplicates(lr.config().apply_to_channel))
    return stage_internal::NotCovered(t, index, "a channel listed twice in apply_to_channel");
  return std::unique_ptr<CudaStage>(new AuglabLowResolutionStage(lr, index));
}

}  // namespace augmentd
