// augment/cuda/chain_spatial.h — internal to the generic CUDA chain (cuda/chain.h): the spatial entries the fused
// spatial kernel (pipeline_cuda.h) does not take, run on the generic spatial kernel (chain_kernels.h, "Generic
// spatial"): 2D samples (2D patch), dummy-2D (nnU-Net's anisotropic 3d_fullres: every slice along axis 0 transformed
// in 2D, the CPU's SpatialTransform with dummy_2d), nearest image/seg modes, random_crop, any padding values, elastic
// deformation of patch axes > cuda::kMaxElasticAxis, bg_style_seg_sampling (bgv2's threshold label vote; the
// per-plane lowest label and distinct-label count come from LaunchLowestPerPlane).
//
// Semantics are the CPU transform's (augment/transforms/spatial/spatial.cc) by construction: the sampling grid of each
// sample is computed on the host by the CPU's own ComputeSamplingGrid (elastic offsets: SpatialTransform::
// ElasticOffsets), uploaded with the batch's parameters, and the kernel ports SampleImage / SampleLabels / the crop
// with the same float operations. Host cost: one grid per sample (patch voxels × ndim floats) — the price of
// coverage; the fused kernel stays the fast path for nnU-Net's 3D configurations.
//
//   if (ChainSpatial::Needed(cfg)) ASSIGN_OR_RETURN(auto s, ChainSpatial::Create(transform, index));
//   ASSIGN_OR_RETURN(cuda::chain::SpatialGeom g, s->Geometry(sample_shape, B, C, seg_channels));
//   for (b...) RETURN_IF_ERROR(s->AddSample(params_b_or_null, g, grids, recs[b]));
//
// Thread-safety: const after Create.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/cuda/stage.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/transforms/spatial/spatial.h"

namespace augmentd {

class ChainSpatial {
 public:
  // Whether `c` needs this path: the fused spatial kernel refuses it (MakeSpatialPlan) but this one covers it.
  static bool Needed(const SpatialConfig& c);
  // Every SpatialConfig the CPU transform accepts (no refusal today; StatusOr keeps the contract open).
  static absl::StatusOr<std::unique_ptr<ChainSpatial>> Create(const SpatialTransform& t, size_t index);

  // Working geometry for samples of spatial shape `sample` (2 or 3 dims). INVALID_ARGUMENT, as the CPU transform,
  // when the patch does not fit the sample's dimensionality; UNIMPLEMENTED above 65535 batch × fold planes.
  absl::StatusOr<cuda::chain::SpatialGeom> Geometry(const std::vector<int64_t>& sample, int64_t batch,
                                                    int64_t channels, int64_t seg_channels) const;
  // Spatial output shape for a sample of shape `sample` (the CPU transform's OutputShape).
  std::vector<int64_t> OutputShape(const std::vector<int64_t>& sample) const { return t_.OutputShape(sample); }

  // One sample's record: `p` its drawn parameters (nullptr: not applied, then the sample must already have the
  // patch shape and is copied). The grid path appends (out voxels × ndim) floats to `grids` and stores their
  // offset; nothing drawn → the integer crop at floor(centre) − patch // 2. INVALID_ARGUMENT for malformed
  // parameters (as the CPU transform) and for a sample without the patch shape that skips the entry (only injected
  // parameters get there: PipelineSpec::CheckLayoutStable refuses skippable shape changes).
  absl::Status AddSample(const SpatialParams* p, const cuda::chain::SpatialGeom& g, std::vector<float>& grids,
                         cuda::chain::SpatialSampleRec& rec) const;

  // Enqueues the batch on `stream`: src (geometry `g`, the records / grids already on the device) → out. The label
  // vote's per-plane statistics (lowest label; distinct labels for bg_style) go to workspace slot `temp_slot` when
  // any record has a grid (`any_grid`). `src_seg`/`out_seg` may be null when g.seg_channels == 0.
  absl::Status Enqueue(const cuda::chain::SpatialGeom& g, const cuda::chain::SpatialSampleRec* recs,
                       const float* grids, bool any_grid, const float* src_image, const int16_t* src_seg,
                       float* out_image, int16_t* out_seg, ChainWorkspace& ws, int temp_slot,
                       cudaStream_t stream) const;

  size_t index() const { return index_; }
  const SpatialConfig& config() const { return t_.config(); }
  bool linear_seg() const { return t_.config().mode_seg != "nearest"; }

 private:
  ChainSpatial(const SpatialTransform& t, size_t index) : t_(t), index_(index) {}
  const SpatialTransform& t_;
  size_t index_;
};

// A spatial entry as a CudaStage of a staged chain (CudaChain: several spatial entries, or one after
// convert_segmentation_to_regions), on the generic kernel. Prepare packs the batch's records and grids (the
// scratch `t` has the sample shape of this point of the chain; set_two_d says whether the batch holds 2D samples,
// which arrive as (1, X, Y)); Enqueue resamples `t` into this stage's own buffers (workspace slots `out_slot`,
// `out_slot` + 1: consecutive spatial stages must alternate slot pairs, as a stage reads its predecessor's) and
// points `t` at them with out_shape(). Labels stay int16 (0/1 after regions, whose bool flag is kept).
class ChainSpatialStage final : public CudaStage {
 public:
  ChainSpatialStage(std::unique_ptr<ChainSpatial> spatial, int out_slot, int temp_slot)
      : s_(std::move(spatial)), out_slot_(out_slot), temp_slot_(temp_slot) {}
  void set_two_d(bool two_d) { two_d_ = two_d; }
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override;
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override;
  // The chain's internal 3D shape after this entry (valid after Prepare).
  const int32_t* out_shape() const { return out_; }
  const ChainSpatial& spatial() const { return *s_; }

 private:
  std::unique_ptr<ChainSpatial> s_;
  int out_slot_, temp_slot_;
  bool two_d_ = false;
  cuda::chain::SpatialGeom geom_;
  std::vector<cuda::chain::SpatialSampleRec> recs_;
  std::vector<float> grids_;
  size_t recs_offset_ = 0, grids_offset_ = 0;
  bool any_grid_ = false;
  int32_t out_[3] = {0, 0, 0};
};

}  // namespace augmentd
