// elastic_deformation's CUDA stage on the generic chain (augment/cuda/stage.h): per applied sample the host packs
// the CPU's per-axis B-spline tables (elastic_internal::Weights: first node and 4 weights per voxel index) and the
// drawn control grid; the kernel evaluates each voxel's displacement and input index with the CPU's own code
// (sitk_math::BsplineIndex, same node order and double rounding) and resamples the stage-scratch copy of each plane
// (sitk_math::Sample): image linear/nearest, labels nearest, fill = the plane's minimum (LaunchPlaneMin on the copy:
// exact), as TorchIO's component.min(). 2D samples: resample_cuda.h (the CPU's (X, Y, 1), no displacement along
// axis 2). Registered in augment/cuda/backends.cc.
#include <vector>

#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cuda/torchio_kernels.h"
#include "augment/transforms/common/resample_cuda.h"
#include "augment/transforms/elastic_deformation/elastic_deformation.h"

namespace augmentd {
namespace {
namespace tk = cuda::torchio;
using stage_internal::NamedStage;

class ElasticDeformationStage final : public NamedStage {
 public:
  ElasticDeformationStage(const ElasticDeformationTransform& t, size_t index)
      : NamedStage(t, index), config_(t.config()) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    img_.clear();
    seg_.clear();
    starts_.clear();
    weights_.clear();
    points_.clear();
    const int64_t v = t.voxels();
    const double dir[3] = {-1, -1, 1};  // LPS
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto& p = static_cast<const ElasticDeformationParams&>(*params[b]);
      const auto& n = p.num_control_points;
      for (int64_t c : n)
        if (c < 4 || c > 64) return Invalid("params.num_control_points: each count must be in [4, 64]");
      if (p.control_points.size() != static_cast<size_t>(n[0] * n[1] * n[2] * 3))
        return Invalid("params.control_points: needs n0·n1·n2·3 values");
      const std::array<int64_t, 3> s = resample_cuda::CpuShape(p, t);
      tk::BsplinePlane r;
      resample_cuda::SetShape(r.shape, s);
      resample_cuda::SetShape(r.nodes, n);
      for (size_t a = 0; a < 3; ++a) {
        const elastic_internal::AxisWeights w = elastic_internal::Weights(s[a], n[a], dir[a]);
        r.table[a] = static_cast<int32_t>(starts_.size());
        for (size_t i = 0; i < w.start.size(); ++i) {
          starts_.push_back(static_cast<int32_t>(w.start[i]));
          weights_.insert(weights_.end(), w.w[i].begin(), w.w[i].end());
        }
      }
      r.grid = static_cast<int32_t>(points_.size());
      points_.insert(points_.end(), p.control_points.begin(), p.control_points.end());
      r.on = 1;
      r.is_2d = resample_cuda::IsPlanar(p) ? 1 : 0;
      for (int32_t c = 0; c < t.channels; ++c) {
        const int64_t plane = int64_t(b) * t.channels + c;
        r.in_offset = r.out_offset = plane * v;
        r.linear = config_.linear ? 1 : 0;
        r.min_index = static_cast<int32_t>(plane);
        img_.push_back(r);
      }
      if (t.seg != nullptr)
        for (int32_t c = 0; c < t.seg_channels; ++c) {
          const int64_t plane = int64_t(b) * t.seg_channels + c;
          r.in_offset = r.out_offset = plane * v;
          r.linear = 0;
          r.min_index = static_cast<int32_t>(plane);
          seg_.push_back(r);
        }
    }
    img_off_ = arena.AppendArray(img_);
    seg_off_ = arena.AppendArray(seg_);
    starts_off_ = arena.AppendArray(starts_);
    weights_off_ = arena.AppendArray(weights_);
    points_off_ = arena.AppendArray(points_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t s) override {
    const int64_t v = t.voxels();
    const auto* starts = arena.device_as<int32_t>(starts_off_);
    const auto* weights = arena.device_as<double>(weights_off_);
    const auto* points = arena.device_as<float>(points_off_);
    if (!img_.empty()) {
      const int32_t planes = t.batch * t.channels;
      const size_t bytes = size_t(planes) * v * sizeof(float);
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage, bytes));
      ASSIGN_OR_RETURN(void* mins, ws.Scratch(ChainWorkspace::kSlotStage + 2, size_t(planes) * sizeof(float)));
      RETURN_IF_ERROR(
          CudaStatus(cudaMemcpyAsync(tmp, t.image, bytes, cudaMemcpyDeviceToDevice, s), "elastic_deformation copy"));
      RETURN_IF_ERROR(CudaStatus(
          tk::LaunchPlaneMin(planes, v, static_cast<const float*>(tmp), static_cast<float*>(mins), s),
          "elastic_deformation minimum"));
      RETURN_IF_ERROR(CudaStatus(
          tk::LaunchBsplineResample(static_cast<int32_t>(img_.size()), v, arena.device_as<tk::BsplinePlane>(img_off_),
                                    starts, weights, points, static_cast<const float*>(tmp), t.image,
                                    static_cast<const float*>(mins), s),
          "elastic_deformation"));
    }
    if (!seg_.empty()) {
      const int32_t planes = t.batch * t.seg_channels;
      const size_t bytes = size_t(planes) * v * sizeof(int16_t);
      ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage + 1, bytes));
      ASSIGN_OR_RETURN(void* mins, ws.Scratch(ChainWorkspace::kSlotStage + 3, size_t(planes) * sizeof(int16_t)));
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(tmp, t.seg, bytes, cudaMemcpyDeviceToDevice, s),
                                 "elastic_deformation labels copy"));
      RETURN_IF_ERROR(CudaStatus(
          tk::LaunchPlaneMin(planes, v, static_cast<const int16_t*>(tmp), static_cast<int16_t*>(mins), s),
          "elastic_deformation labels minimum"));
      RETURN_IF_ERROR(CudaStatus(
          tk::LaunchBsplineResample(static_cast<int32_t>(seg_.size()), v, arena.device_as<tk::BsplinePlane>(seg_off_),
                                    starts, weights, points, static_cast<const int16_t*>(tmp), t.seg,
                                    static_cast<const int16_t*>(mins), s),
          "elastic_deformation labels"));
    }
    return absl::OkStatus();
  }

 private:
  ElasticDeformationConfig config_;
  std::vector<tk::BsplinePlane> img_, seg_;
  std::vector<int32_t> starts_;
  std::vector<double> weights_;
  std::vector<float> points_;
  size_t img_off_ = 0, seg_off_ = 0, starts_off_ = 0, weights_off_ = 0, points_off_ = 0;
};

}  // namespace

CudaStageOrError MakeElasticDeformationStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(
      new ElasticDeformationStage(static_cast<const ElasticDeformationTransform&>(t), index));
}

absl::StatusOr<std::unique_ptr<TransformParams>> Lift2DElasticDeformation(const TransformParams& p) {
  return resample_cuda::LiftPlanar<ElasticDeformationParams>(p);
}

}  // namespace augmentd
