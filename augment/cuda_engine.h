// augment/cuda_engine.h — the CUDA path of the engine: AugmentBatch on a CUDA device (torch-free, and free of CUDA
// headers: streams are passed as the runtime's `CUstream_st*`, i.e. a cudaStream_t).
//
// Parameters are drawn on the host exactly as the CPU engine draws them (DrawSampleParams: same Philox streams,
// same samplers, injection honoured), translated into the kernel layer's per-sample SampleParams
// (augment/kernels/cuda/pipeline_cuda.h), uploaded on the stream, and the fused kernels run the batch. Results equal
// the CPU engine's for the same seed and sample indices within tolerance (labels identical except fp16 vote ties;
// floats within 1e-4 of the range; see cuda_engine_test.cc).
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
// Coverage: nnU-Net's default chain, 3D, in the fused order spatial (rotation, scaling and elastic deformation) →
// gaussian_noise → gaussian_blur → multiplicative_brightness → contrast → simulate_low_resolution → gamma (≤ 2) →
// mirror → mask_image → remove_label(−1→0) → downsample_seg_for_ds (any sub-sequence of it). Elastic deformation
// (bgv2 semantics: smoothed random displacement, magnitude, centring) is generated on the device from the drawn
// recipe (SpatialParams::elastic; patch axes ≤ 512), equal to the CPU engine's field within float rounding.
// Everything else is UNIMPLEMENTED with a message naming the transform and the option: nnUNetTrainerDA5's
// transforms (rot90, transpose_axes, median_filter, brightness_additive, blank_rectangle, brightness_gradient_additive,
// local_gamma, sharpening, rician_noise: preset nnunet_da5 runs on "cpu"), injected elastic offsets, dummy-2D and
// 2D samples, regions, random_crop, bg_style_seg_sampling, nearest modes, non-zero paddings other than the −1 seg
// border, contrast without preserve_range, noise on a subset of channels or with per-channel σ, blur kernels > 17
// taps, > 8 image channels, more than one seg channel, image-only batches, and user orders that differ from the
// fused order. No fallback to the CPU: a service that wants one calls AugmentBatch with device "cpu" itself.
//
// Errors: absl::Status; INVALID_ARGUMENT naming the field; RESOURCE_EXHAUSTED when device/pinned memory runs
// out; INTERNAL for any other CUDA error (the CUDA error name is in the message); FAILED_PRECONDITION in builds
// without CUDA (cuda_engine_nocuda.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augment/types.h"

struct CUstream_st;  // cudaStream_t == CUstream_st*

namespace augmentd {

// Parses RunOptions::device: "cpu" → -1, "cuda" → 0, "cuda:N" → N. INVALID_ARGUMENT naming `device` otherwise.
absl::StatusOr<int> ParseCudaOrdinal(std::string_view device);

// Whether this build has the CUDA engine (a GPU may still be absent).
bool CudaEngineBuilt();

// AugmentBatch for a CUDA `options.device` (called by AugmentBatch): host input copied to the device through pinned
// staging, outputs copied back into a BatchResult (same shapes/dtypes as the CPU engine). Creates a CudaAugmenter
// per call (allocates): for tests and tools; the service uses CudaAugmenter directly. Synchronous.
absl::StatusOr<BatchResult> AugmentBatchCuda(const PipelineSpec& spec, const BatchInput& input,
                                             const RunOptions& options);

// Device input of one batch (device pointers, C-contiguous).
struct CudaBatchInput {
  const float* image = nullptr;      // (B, C, S0, S1, S2) float32
  const int16_t* seg = nullptr;      // (B, 1, S0, S1, S2) int16 (required: the kernels resample labels)
  std::vector<int64_t> image_shape;  // {B, C, S0, S1, S2}
};

// Caller-provided device outputs (e.g. the service's IPC slots), laid out as OutputLayout says.
struct CudaBatchOutput {
  void* image = nullptr;      // (B, C, *P) in RunOptions::image_dtype
  std::vector<int16_t*> seg;  // one per label level (BatchResult::seg order), (B, 1, *level) int16
};

// Shapes and byte sizes of a batch's outputs.
struct CudaOutputLayout {
  std::vector<int64_t> image_shape;  // {B, C, *P}
  size_t image_bytes = 0;
  std::vector<std::vector<int64_t>> seg_shapes;  // per level {B, 1, *Q}
  std::vector<size_t> seg_bytes;
};

// The CUDA engine for one pipeline on one device. Owns the kernel workspace, the per-sample parameter buffers
// (device + pinned host) and, for RunHost, pinned staging; they grow when a larger batch shape arrives and are
// reused otherwise (no allocation in the steady state).
// Thread-safety: not thread-safe; use one CudaAugmenter per CUDA stream / worker. Run() may be called with different
// streams: each run waits (on the device) for the previous one, whose buffers it reuses.
class CudaAugmenter {
 public:
  // UNIMPLEMENTED naming the first transform (and option) the fused kernels do not cover; NOT_FOUND / INVALID_ARGUMENT
  // for a bad device ordinal.
  static absl::StatusOr<std::unique_ptr<CudaAugmenter>> Create(const PipelineSpec& spec, int device);
  ~CudaAugmenter();
  CudaAugmenter(const CudaAugmenter&) = delete;
  CudaAugmenter& operator=(const CudaAugmenter&) = delete;

  int device() const;

  // Output layout for an input image shape {B, C, S0, S1, S2}.
  absl::StatusOr<CudaOutputLayout> OutputLayout(const std::vector<int64_t>& image_shape, DType image_dtype) const;

  // Draws every sample's parameters (seed, first_sample_index, injected of `options`; num_threads unused), uploads
  // them and enqueues the fused kernels on `stream` (nullptr: the legacy default stream). Returns once enqueued; the
  // outputs are ready when `stream` reaches this point. `records` (optional) receives the per-sample parameters.
  // The inputs must stay valid and unmodified until then.
  absl::Status Run(const CudaBatchInput& input, const CudaBatchOutput& output, const RunOptions& options,
                   CUstream_st* stream, std::vector<SampleRecord>* records = nullptr);

  // Host input (float32/float16/bfloat16 image, int8/int16 seg) → BatchResult on the host, through pinned staging
  // and owned device buffers, on an internal stream. Synchronous.
  absl::StatusOr<BatchResult> RunHost(const BatchInput& input, const RunOptions& options);

 private:
  struct Impl;
  explicit CudaAugmenter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace augmentd
