// augment/cuda/engine.h — the CUDA path of the engine: AugmentBatch on a CUDA device (torch-free, and free of CUDA
// headers: streams are passed as the runtime's `CUstream_st*`, i.e. a cudaStream_t).
//
// Parameters are drawn on the host exactly as the CPU engine draws them (DrawSampleParams: same Philox streams,
// same samplers, injection honoured), translated into the kernel layer's per-sample SampleParams
// (augment/kernels/cuda/pipeline_cuda.h), uploaded on the stream, and the fused kernels run the batch. Results equal
// the CPU engine's for the same seed and sample indices within tolerance (labels identical except fp16 vote ties;
// floats within 1e-4 of the range; see cuda/engine_test.cc).
//
//   // Host in, host out (tests, tools): the same call as the CPU engine with a device.
//   augmentd::RunOptions opt; opt.seed = 7; opt.device = "cuda:0";
//   ASSIGN_OR_RETURN(augmentd::BatchResult r, augmentd::AugmentBatch(spec, input, opt));
//
//   // Device in, device out (the service): one CudaAugmenter per CUDA stream, outputs in caller buffers.
//   ASSIGN_OR_RETURN(auto aug, augmentd::CudaAugmenter::Create(spec, /*device=*/0));
//   ASSIGN_OR_RETURN(augmentd::CudaOutputLayout lay, aug->OutputLayout(image_shape, opt.image_dtype));
//   // ... cudaMalloc lay.image_bytes and lay.seg_bytes[k] (IPC slots) ...
//   RETURN_IF_ERROR(aug->Run(in, out, opt, stream, &records));   // enqueued on `stream`, returns at once
//
// Coverage. Two paths, chosen per spec in Create (and per batch where the fused kernels refuse drawn values):
//  * fused kernels (pipeline_cuda.h) for nnU-Net's default 3D chain in the fused order spatial (rotation, scaling
//    and elastic deformation) → gaussian_noise → gaussian_blur → multiplicative_brightness → contrast →
//    simulate_low_resolution → gamma (≤ 2) → mirror → mask_image → remove_label(−1→0) → downsample_seg_for_ds (any
//    sub-sequence of it), one seg channel, ≤ 8 image channels. Elastic deformation (bgv2 semantics) is generated on
//    the device from the drawn recipe (SpatialParams::elastic; patch axes ≤ 512), equal to the CPU engine's field
//    within float rounding.
//  * the generic chain (cuda/chain.h) for everything else the CPU engine runs: nnUNetTrainerDA5 (preset nnunet_da5:
//    rot90, transpose_axes, median_filter, brightness_additive, blank_rectangle, brightness_gradient_additive,
//    local_gamma, sharpening, rician_noise), MRI artefacts, AugLab extras, regions (bool targets,
//    CudaOutputLayout::seg_dtype), several or no seg channels, apply_probability < 1 anywhere but on regions / DS,
//    per-channel noise, contrast without preserve_range, any median window (above 15: a direct selection over the k³
//    window per voxel, ~17 passes — slow for large k, as on the CPU), any blur size, user orders (DS followed
//    by image-only entries too), pipelines without a spatial entry, with entries before it or with several spatial
//    entries (also after regions); through its generic spatial kernel (cuda/chain_spatial.h): dummy-2D, 2D samples
//    (B, C, X, Y) as (B, C, 1, X, Y), nearest modes, random_crop, any padding values, bg_style_seg_sampling, > 8
//    image channels, injected elastic offsets, elastic on axes > 512.
// INVALID_ARGUMENT, as the CPU engine, for what PipelineSpec::CheckLayoutStable refuses (regions / DS with
// apply_probability < 1 or in a OneOf group, label entries after DS).
// UNIMPLEMENTED (message naming the entry and option) for what neither covers: an entry without a CUDA stage (a
// kind added to the CPU engine only; every kind of today has one), more than 65535 batch × slice planes in the
// generic spatial kernel, and in builds without cuFFT ghosting / spike / motion. No fallback to the CPU: a service that
// wants one calls AugmentBatch with device "cpu" itself.
//
// Errors: absl::Status; INVALID_ARGUMENT naming the field; RESOURCE_EXHAUSTED when device/pinned memory runs
// out; INTERNAL for any other CUDA error (the CUDA error name is in the message); FAILED_PRECONDITION in builds
// without CUDA (cuda/engine_nocuda.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/batch.h"
#include "augment/cuda/io.h"
#include "augment/pipeline.h"
#include "augment/types.h"

struct CUstream_st;  // cudaStream_t == CUstream_st*

namespace augmentd {

// ParseCudaOrdinal (RunOptions::device → ordinal) is in augment/batch.h.

// Whether this build has the CUDA engine (a GPU may still be absent).
bool CudaEngineBuilt();

// AugmentBatch for a CUDA `options.device` (called by AugmentBatch): host input copied to the device through pinned
// staging, outputs copied back into a BatchResult (same shapes/dtypes as the CPU engine). Creates a CudaAugmenter
// per call (allocates): for tests and tools; the service uses CudaAugmenter directly. Synchronous.
absl::StatusOr<BatchResult> AugmentBatchCuda(const PipelineSpec& spec, const BatchInput& input,
                                             const RunOptions& options);

// The CUDA engine for one pipeline on one device. Owns the kernel workspace, the per-sample parameter buffers
// (device + pinned host) and, for RunHost, pinned staging; they grow when a larger batch shape arrives and are
// reused otherwise (no allocation in the steady state).
// Thread-safety: not thread-safe; use one CudaAugmenter per CUDA stream / worker. Run() may be called with different
// streams: each run waits (on the device) for the previous one, whose buffers it reuses.
//
// CUDA graphs (fused path): a batch's buffers (input, outputs) and per-sample parameters go to the device in one copy
// from a fixed pinned block into a fixed device block, and the kernels read the buffer pointers from there
// (cuda::RunPipelineFromDevice), so the whole batch — copy, kernels — is one graph per (parts and their stage masks,
// batch shape, 16-byte alignment of each part's image output) that replays for any buffers and parameters
// (AUGMENTD_CUDA_GRAPH_UPLOAD=outside:
// the copy runs before a kernels-only graph instead). The first batch of a key runs
// eagerly, the second captures it, later ones replay (at most 64 graphs, least recently used destroyed first;
// a graph launches into whatever stream Run gets). Outputs are bit-identical to the eager launches. Eager instead:
// the legacy / per-thread default stream (nullptr), a stream already being captured by the caller, a key whose
// capture failed, or graphs off — the default: set_graphs_enabled(true) or AUGMENTD_CUDA_GRAPHS=1 turns them on
// (measured: no gain; bench/results/2026-11-30-h200-cuda-kernels-s4.md). Graphs are dropped (after
// the last run completes) when the workspace or the parameter block must grow. The generic chain runs eagerly.
//
// Two parts (fused path): a batch of B >= 2 may run as two batches, its first ceil(B/2) samples on Run's stream and
// the rest on a stream of the augmenter's own (made on first use), forked from Run's stream after the upload and
// joined back before Run's stream goes on. Each part has its own workspace and stage mask (cuda::ActiveStages of its
// samples), so a part whose samples draw no intensity transform launches none of the passes after the spatial kernel,
// and one part's kernels run while the other's wait at a dependent pass's fixed part (launch, prologue, last-block
// reduction). CudaSplitPolicy picks when; on a stream the caller is capturing itself the batch runs whole. A sample's
// labels do not depend on the parts; its image may in the last bits, as it already did on which other samples of its
// batch run a pass (cuda::kStageSliceIdle, kStageGamma1Alone): a batch's outputs are a function of the batch, the
// same eager or replayed. Measured on an H100, bench/results/2026-12-06-s39-h100.md:
// - one batch at a time, through this class with nnU-Net's default spec (bench/cuda_chain_bench --default), two
//   parts always: default probabilities B=2 C=1 −7.5 %, B=8 −8 %, C=4 −6 %; every transform on B=2 C=1 unchanged,
//   B=8 −8 %, C=4 −7 %;
// - two streams at once (the server's two GPU workers; bench/cuda_pipeline_bench --streams 2 --split 1): two parts
//   gained 4-6 % a batch with default probabilities and cost every transform on B=2 C=1 +5 % (its halves' masks
//   are equal, so nothing is skipped, and the two workers already overlap the fixed parts).
// The policies through this class with nnU-Net's default spec (bench/cuda_chain_bench --policies; H100, session 40,
// bench/results/2026-12-06-s40-h100.md), one batch at a time and on two threads at once (the server's two workers),
// against kWhole in the same run, medians of three rounds:
// - default probabilities: kAlways −6.8 % one batch and −4.4 % on two workers at B=2 C=1, −6.6 / −2.9 % at B=8,
//   −9.4 / −5.9 % at C=4; kWhenMasksDiffer (splits 90-98 % of these batches) −6.1 / −2.1 % at B=2 C=1, −8.3 / −2.4 %
//   at B=8, −5.4 / −4.7 % at C=4; kWhenOnePartDirect (splits 5-42 %) 0.0 … −2.9 %;
// - every entry applied: kAlways −2.5 % one batch but +5.7 % on two workers at B=2 C=1 (kWhenMasksDiffer +6.0 %),
//   −6.6 / 0.0 % at B=8, −11.9 / −0.4 % at C=4; kWhenOnePartDirect never splits these batches.
// kAlways is the default: under nnU-Net's probabilities the best on two workers in every configuration (four calls);
// one batch at a time, kWhenMasksDiffer is ahead at B=8 (1.7 points) and in one call at C=4, within the rounds' spread
// of one-batch times. Its one loss is two workers on B=2 C=1 batches that apply every entry (+5.7 … +6.5 %).

// When a fused batch runs in two parts (above). AUGMENTD_CUDA_SPLIT=0 / differ / direct (read once) picks kWhole /
// kWhenMasksDiffer / kWhenOnePartDirect for every augmenter; set_split_policy for one.
enum class CudaSplitPolicy {
  kWhole,              // never
  kWhenMasksDiffer,    // B >= 2 and the two parts' stage masks differ (a part skips a pass, or its noise)
  kWhenOnePartDirect,  // B >= 2 and exactly one part launches no pass after the spatial kernel (direct path)
  kAlways,             // every batch of B >= 2: the default
};

class CudaAugmenter {
 public:
  // Uses the fused kernels when MakeCudaPlan covers the spec, else the generic chain (cuda/chain.h). UNIMPLEMENTED
  // naming the first entry (and option) neither covers; NOT_FOUND / INVALID_ARGUMENT for a bad device ordinal.
  static absl::StatusOr<std::unique_ptr<CudaAugmenter>> Create(const PipelineSpec& spec, int device);
  ~CudaAugmenter();
  CudaAugmenter(const CudaAugmenter&) = delete;
  CudaAugmenter& operator=(const CudaAugmenter&) = delete;

  int device() const;

  // Output layout for an input image shape {B, C, S0, S1, S2} with `seg_channels` label channels (0: none).
  absl::StatusOr<CudaOutputLayout> OutputLayout(const std::vector<int64_t>& image_shape, DType image_dtype,
                                                int64_t seg_channels = 1) const;

  // Draws every sample's parameters (seed, first_sample_index, injected of `options`; num_threads unused), uploads
  // them and enqueues the fused kernels on `stream` (nullptr: the legacy default stream). Returns once enqueued; the
  // outputs are ready when `stream` reaches this point. `records` (optional) receives the per-sample parameters.
  // The inputs must stay valid and unmodified until then.
  absl::Status Run(const CudaBatchInput& input, const CudaBatchOutput& output, const RunOptions& options,
                   CUstream_st* stream, std::vector<SampleRecord>* records = nullptr);

  // Host input (float32/float16/bfloat16 image, int8/int16 seg) → BatchResult on the host, through pinned staging
  // and owned device buffers, on an internal stream. Synchronous.
  absl::StatusOr<BatchResult> RunHost(const BatchInput& input, const RunOptions& options);

  // CUDA graphs for later fused batches on, or off (eager launches; the default unless AUGMENTD_CUDA_GRAPHS=1).
  void set_graphs_enabled(bool on);
  CudaGraphCounters graph_counters() const;
  // When batches of B >= 2 run in two parts on two streams ("Two parts" above).
  void set_split_policy(CudaSplitPolicy policy);

 private:
  struct Impl;
  explicit CudaAugmenter(std::unique_ptr<Impl> impl);
  // PipelineSpec::CheckLayoutStable for this batch shape (B, C, spatial...) when an entry can be skipped (OK else).
  absl::Status CheckBatchShape(const std::vector<int64_t>& image_shape) const;
  // The fused kernels' path of Run (UNIMPLEMENTED, before enqueuing anything, for batches they do not cover).
  absl::Status RunFused(const CudaBatchInput& input, const CudaBatchOutput& output, const RunOptions& options,
                        CUstream_st* stream, std::vector<SampleRecord>* records);
  std::unique_ptr<Impl> impl_;
};

}  // namespace augmentd
