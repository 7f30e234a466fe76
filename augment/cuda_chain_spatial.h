// augment/cuda_chain_spatial.h — internal to the generic CUDA chain (cuda_chain.h): the spatial entries the fused
// spatial kernel (pipeline_cuda.h) does not take, run on the generic spatial kernel (chain_kernels.h, "Generic
// spatial"): 2D samples (2D patch), dummy-2D (nnU-Net's anisotropic 3d_fullres: every slice along axis 0 transformed
// in 2D, the CPU's SpatialTransform with dummy_2d), nearest image/seg modes, random_crop, any padding values, elastic
// deformation of patch axes > cuda::kMaxElasticAxis.
//
// Semantics are the CPU transform's (augment/transforms/spatial.cc) by construction: the sampling grid of each
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
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/transforms/spatial.h"

namespace augmentd {

class ChainSpatial {
 public:
  // Whether `c` needs this path: the fused spatial kernel refuses it (MakeSpatialPlan) but this one covers it.
  static bool Needed(const SpatialConfig& c);
  // UNIMPLEMENTED naming entry `index` for what this kernel does not cover either (bg_style_seg_sampling).
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
  // parameters (as the CPU transform), UNIMPLEMENTED for a sample without the patch shape that skips the entry.
  absl::Status AddSample(const SpatialParams* p, const cuda::chain::SpatialGeom& g, std::vector<float>& grids,
                         cuda::chain::SpatialSampleRec& rec) const;

  size_t index() const { return index_; }
  const SpatialConfig& config() const { return t_.config(); }
  bool linear_seg() const { return t_.config().mode_seg != "nearest"; }

 private:
  ChainSpatial(const SpatialTransform& t, size_t index) : t_(t), index_(index) {}
  const SpatialTransform& t_;
  size_t index_;
};

}  // namespace augmentd
