// augment/kernels/cuda/kernels.h — internal launchers of the pipeline stages (one launch per batch per
// stage). Not a public API: RunPipeline (pipeline_cuda.h) sequences them. All enqueue on `stream`.
#pragma once

#include <cuda_runtime.h>

#include "augment/kernels/cuda/common.cuh"
#include "augment/kernels/cuda/pipeline_cuda.h"

namespace augmentd::cuda::internal {

// `d_io` (all launchers that touch the batch's buffers): null, or the same PipelineIO in device memory, which the
// kernels then read when they run instead of `io`'s pointers (RunPipelineFromDevice: graph replay).

// Spatial transform + noise epilogue + seg/mask.
struct SpatialFlags {
  bool use_lowest_buffer;  // lowest labels from ws.lowest (LaunchLowestLabels ran)
  bool direct;             // no later image stage: write the output (and launch the DS picks; else LaunchFinal does)
  bool with_mask;          // write ws.mask
  bool want_stats;         // statistics of the unblurred slices (contrast input)
  bool elastic;            // read the displacement fields of LaunchElasticField (samples with SampleParams::elastic)
  bool noise;              // some sample draws noise (false: the build without the noise epilogue)
  bool permute;            // some sample's out_axis is not the identity: the build storing through its brick (direct)
  bool crops_only;         // every sample is a centre crop (no kStageResample): the crops build where there is one
};
cudaError_t LaunchSpatial(const BatchShape& shape, const SampleParams* d_params, const PipelineIO& io,
                          const PipelineIO* d_io, const Workspace& ws, const SpatialFlags& flags, cudaStream_t stream);

// Elastic displacement fields of the deforming samples into ws.field (+ ws.estat), elastic.cu. Needs
// BatchShape::elastic and patch axes <= kMaxElasticAxis (cudaErrorInvalidValue otherwise).
cudaError_t LaunchElasticField(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                               cudaStream_t stream);
cudaError_t LaunchLowestLabels(const BatchShape& shape, const int16_t* seg, const PipelineIO* d_io, int32_t* d_lowest,
                               cudaStream_t stream);

// The passes below are chained launches (common.cuh LaunchChained): each may start while the kernel before it on
// `stream` drains, and reads d_params (and d_io) before it waits for that kernel. Precondition: whatever wrote
// d_params / d_io for this batch completed before the batch's first kernel (a copy or kernel before LaunchSpatial
// qualifies; a kernel launched between these passes does not). LaunchMid takes `chain`: false launches it plainly
// (RunPipelineFromDevice: right after the spatial kernel's crops build, with low-res, in batches of at most
// kPlainMidMaxSlices slices).

// Separable blur of the blurred slices, one tiled launch: x1 -> x2; stats of the result into slot V1.
cudaError_t LaunchBlur(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws, bool want_stats,
                       cudaStream_t stream);

// State of the intensity chain passed to the later passes.
struct ChainState {
  bool blur_active;  // blurred slices live in x2
  bool mid_done;     // the mid pass ran: low-res slices hold V3 beside their V1 (intensity.cu V3Buffer; others keep
                     // V1 and the later passes apply BC)
  bool gamma_fused;  // both gamma statistics passes run, fused (no kStageGamma1Alone: FusedY1, intensity.cu)
  bool slice_share;  // the slice passes deal their blocks out among the slices with work (kStageSliceIdle, > 2 slices)
};

// Mid pass, per slice: with low-res, V3 (trilinear up of the low-res image, whose samples it gathers from V1: BC(V1)
// at the nearest-exact picks) into the scratch buffer beside V1, and V3's statistics; without low-res but with
// a gamma slot, only V3 = BC(V1)'s statistics (cur keeps V1, the later passes apply BC through Chain::V3); with
// neither, nothing (that slice's kSlotV3 result stays stale: it is read only under gamma[k] != 0).
cudaError_t LaunchMid(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws, const ChainState& st,
                      bool chain, cudaStream_t stream);
// mode: 0 = stats of gamma-0 core output (slot Y0), 2 = stats of gamma-1 core output (slot Y1). The statistics
// of V4 (gamma-1 input) are derived from Y0's (intensity.cu GammaOutStats).
cudaError_t LaunchGammaStats(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                             const ChainState& st, int mode, cudaStream_t stream);
// Final pass (chain rest, mirroring, mask, dtype) plus the deep-supervision picks of the final seg.
cudaError_t LaunchFinal(const BatchShape& shape, const SampleParams* d_params, const PipelineIO& io,
                        const PipelineIO* d_io, const Workspace& ws, const ChainState& st, bool with_mask,
                        cudaStream_t stream);

}  // namespace augmentd::cuda::internal
