// augment/cuda/fused_params.h — internal to the CUDA engine (cuda/engine.cc): which transforms of a PipelineSpec the fused
// kernels cover (CudaPlan), and the translation of one sample's drawn parameters (SampleRecord, the CPU engine's own
// draws) into the kernel layer's SampleParams. Includes CUDA headers: only built when CUDA is on.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "augment/batch.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/pipeline.h"

namespace augmentd {

struct RemoveLabelConfig;
class SpatialTransform;
class GaussianNoiseTransform;
class DownsampleSegForDsTransform;

// What the spec asks of the fused kernels (built once in Create).
struct CudaPlan {
  std::vector<int> stage;  // per transform index
  const SpatialTransform* spatial = nullptr;
  const GaussianNoiseTransform* noise = nullptr;
  const DownsampleSegForDsTransform* ds = nullptr;
  bool remove_minus_one = false;
  bool border_minus_one = true;
  bool pad_first = false;  // bgv2 0.3.6 seg resampling (SampleParams::pad_first)
  int32_t seg_tiebreak = 0;  // SampleParams::seg_tiebreak
  bool elastic = false;  // the spatial transform may deform elastically (fields generated on the device)
};

// Whether remove_label with config `c` is what the spatial kernel's remove_minus_one does (BatchShape): −1 → 0 on seg
// channel 0 (listed, or all channels). The fused plan and the generic chain's fold (cuda/chain.h) both ask this.
bool RemovesMinusOneOnChannel0(const RemoveLabelConfig& c);

// UNIMPLEMENTED naming the first transform (index, kind, option) the kernels do not cover, or the plan.
absl::StatusOr<CudaPlan> MakeCudaPlan(const PipelineSpec& spec);

// The plan of the generic chain's spatial step (cuda/chain.h): the spatial entry's checks and stage (any apply
// probability; a sample it is not applied to must already have the patch shape), every other entry -1 (TranslateSample
// then fills only the spatial part). UNIMPLEMENTED as MakeCudaPlan for the spatial options the kernel lacks.
absl::StatusOr<CudaPlan> MakeSpatialPlan(const PipelineSpec& spec);

// Fills `sp` from one sample's record (every transform drawn by DrawSampleParams) for batch shape `sh`.
// UNIMPLEMENTED for parameters the kernels cannot express (e.g. injected elastic offsets: the device regenerates the
// field from its recipe, SpatialParams::elastic), INVALID_ARGUMENT for
// malformed ones.
absl::Status TranslateSample(const PipelineSpec& spec, const CudaPlan& plan, const SampleRecord& rec,
                             const cuda::BatchShape& sh, cuda::SampleParams& sp);

}  // namespace augmentd
