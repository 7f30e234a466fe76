// augment/kernels/cuda/pipeline_cuda.h — the CUDA kernel layer of augmentd: nnU-Net's default
// augmentation chain (batchgeneratorsv2 0.3.5 semantics) as batch-first fused kernels.
//
// Pure kernels: device pointers in, caller-provided device buffers out, an explicit stream, per-sample
// parameters in a device array, one launch per batch per stage, no allocation after setup. Torch-free
// and protobuf-free: the ops layer draws the parameters (augment/rng.h) and calls these functions.
//
//   augmentd::cuda::BatchShape shape;                    // B, C, input (enlarged) and patch sizes, DS levels
//   shape.batch = 2; shape.channels = 1; ...
//   size_t ws_bytes = augmentd::cuda::WorkspaceBytes(shape);
//   void* ws;  cudaMalloc(&ws, ws_bytes);                // once
//   augmentd::cuda::InitWorkspace(shape, ws, stream);    // once (zeroes the reduction counters)
//   std::vector<augmentd::cuda::SampleParams> p(B);      // filled by the ops layer on the host
//   cudaMemcpyAsync(d_params, p.data(), B * sizeof(p[0]), cudaMemcpyHostToDevice, stream);
//   augmentd::cuda::PipelineIO io{...};                  // device pointers (input patch, outputs)
//   augmentd::cuda::RunPipeline(shape, d_params, augmentd::cuda::ActiveStages(p.data(), shape), io, ws, stream);
//
// Layouts: image (B, C, S0, S1, S2) float32 contiguous; seg (B, 1, S0, S1, S2) int16; outputs
// (B, C, P0, P1, P2) in `out_dtype`, seg (B, 1, P...) int16, one (B, 1, Q_k...) int16 per DS level.
//
// Semantics (reference/nnunet_pipeline.md §3–§4), applied per sample in this order: spatial transform
// (affine pull map or integer centre crop; trilinear image with zero padding, align_corners=False;
// optional elastic displacement generated on the device; per-label linear seg vote with fp16 rounding and
// lowest-label ties; −1 border with bgv2's
// swapped-threshold quirk), Gaussian noise, Gaussian blur (reflect padding), multiplicative brightness,
// contrast (preserve range), low resolution (nearest-exact down, trilinear up), gamma slot 0, gamma
// slot 1, mirroring, image masking where seg < 0, seg −1 → 0, deep-supervision targets (nearest-exact).
//
// Thread-safety: functions are reentrant; a workspace must not be used by two batches in flight at
// once (use one workspace per stream). Everything is enqueued on `stream`; nothing synchronizes, nothing
// allocates. Errors are returned as cudaError_t (the ops layer maps them to absl::Status). Launch shapes
// are sized from the current device's SM count, read once per process.
//
// Performance (H200, bench/results/2026-11-30-h200-cuda-kernels-s4.md): B=2, 1 channel, 205³ -> 128³,
// every transform on: 0.30 ms per batch (17.9× a batched PyTorch port; target 0.2 ms missed, see
// augment/kernels/cuda/NOTES.md); default probabilities: 0.12 ms; every transform on plus elastic deformation:
// 1.16 ms with the earlier kernels (bench/results/2026-11-29-h200-cuda-coverage.md).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace augmentd::cuda {

inline constexpr int kMaxChannels = 8;    // image channels per sample supported by the kernels
inline constexpr int kMaxPermutedChannels = 4;  // with kStagePermute (the output brick is staged in shared memory)
inline constexpr int kMaxDsLevels = 8;    // deep-supervision levels (full resolution excluded)
inline constexpr int kMaxBlurRadius = 8;  // blur kernel size <= 17 (sigma <= ~2.75)
inline constexpr int kMaxElasticAxis = 512;  // elastic deformation: patch axes <= 512 (the smoothing tiles a line)

enum class OutDType : int32_t { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// Shapes of one batch. All samples share the input (enlarged patch) and output (patch) shapes.
struct BatchShape {
  int32_t batch = 0;                 // B >= 1
  int32_t channels = 1;              // C in [1, kMaxChannels]
  int32_t in[3] = {0, 0, 0};         // S: enlarged patch (initial_patch_size)
  int32_t out[3] = {0, 0, 0};        // P: final patch
  int32_t num_ds = 0;                // DS levels written besides full resolution (scale-1 levels dropped)
  int32_t ds[kMaxDsLevels][3] = {};  // Q_k = round_half_even(P * s_k), computed by the caller
  OutDType out_dtype = OutDType::kFloat32;
  int32_t remove_minus_one = 1;  // RemoveLabelTansform(-1 -> 0) on the seg outputs
  int32_t elastic = 0;           // 1: the workspace holds elastic displacement fields (some sample may deform)
  int32_t seg_pad_first = 0;     // 1: bgv2 0.3.6 seg resampling for the whole batch (SampleParams::pad_votes)
};

// Per-channel parameters of one sample. A transform that was not drawn for a channel is "off".
struct ChannelParams {
  float blur_sigma[3] = {0.f, 0.f, 0.f};  // per spatial axis; blur off when blur_sigma[0] == 0
  float brightness = 1.f;                 // multiplier (1 = off: x * 1 is exact)
  float contrast = 0.f;                   // factor; 0 = off. preserve_range is always on (nnU-Net)
  int32_t lowres_shape[3] = {0, 0, 0};    // round_half_even(P_d * s); 0 = off
  float gamma[2] = {0.f, 0.f};            // gamma slot k; 0 = off
  int32_t gamma_invert[2] = {0, 0};       // slot k inverts the image around the transform
  int32_t gamma_retain[2] = {1, 1};       // slot k retains mean and (unbiased) std
  int32_t mask = 0;                       // MaskImageTransform: set to 0 where seg < 0
};

// Everything random about one sample (the ops layer draws it; see reference §4).
struct SampleParams {
  // Spatial. Pull map of bgv2: for patch voxel j (pre-mirroring), u = A·(j − (P−1)/2) + shift is the
  // centred input coordinate; it is normalised by S/2 and unnormalised as grid_sample does
  // (x = ((u/(S/2) + 1)·S − 1)/2 ≈ u + (S−1)/2). A is row-major A[d][e]; shift is c − S/2 (0 in nnU-Net).
  float matrix[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  float shift[3] = {0.f, 0.f, 0.f};
  int32_t use_crop = 1;              // 1: no rotation/scale drawn -> integer crop at floor(S/2) − floor(P/2)
  int32_t mirror_mask = 0;           // bit d set: flip spatial axis d (MirrorTransform, folded into indexing)
  // Output axis of patch axis d (the identity, or a permutation whose exchanged axes have equal sizes): with
  // mirror_mask, patch voxel j is stored at o with o[out_axis[d]] = (bit d ? P_d − 1 − j_d : j_d) — a signed
  // permutation of the output (the chain folds the rot90 / transpose_axes / mirror entries that follow its spatial
  // entry into it). Not the identity: kStagePermute (ActiveStages), direct path only, ≤ 4 channels.
  int32_t out_axis[3] = {0, 1, 2};
  int32_t seg_border_minus_one = 1;  // 1: border_mode_seg='constant', padding -1 (nnU-Net >= 2.7)
  int32_t lowest_label = 0;          // lowest label in this sample's input seg (only read when the border
                                     // is not -1: see ComputeLowestLabels)
  // With BatchShape::seg_pad_first (bgv2 0.3.6, augment/kernels/cpu_spatial.h pad_first): the seg is padded with
  // the border label (−1 or 0) before the vote, no out-of-bounds fill. pad_votes: the padding label is a candidate
  // in this sample (bgv2's _may_reach_outside, exact for affine samples, always 1 for elastic ones: conservative,
  // differs only in fp16 rounding); seg_tiebreak 0 lowest, 1 nearest (the nearest neighbour's label among the
  // tied), 2 highest.
  int32_t pad_votes = 0;
  int32_t seg_tiebreak = 0;
  // Gaussian noise (synchronize_channels=True): one sigma, an independent field per channel:
  // value = sigma * NormalAt(MakeStreamKey(seed, sample_index, noise_transform_index, 1 + channel), voxel)
  // where voxel is the linear index in the (P0,P1,P2) patch before mirroring. sigma 0 = off.
  float noise_sigma = 0.f;
  uint32_t noise_transform_index = 0;
  uint64_t seed = 0;
  uint64_t sample_index = 0;
  // Elastic deformation (bgv2 SpatialTransform, augment/transforms/spatial/spatial.h ElasticRecipe), generated on the
  // device: component d = NormalAt(MakeStreamKey(seed, sample_index, elastic_transform_index, 1 + d), voxel) over the
  // patch, circularly smoothed with the periodic Gaussian of scipy's fourier_gaussian (σ = elastic_sigma[d] pixels,
  // along every axis), scaled so max|·| = elastic_magnitude[d] (max(m, 1e-8)); added to the centred patch coordinate
  // before A; with elastic_center the grid mean is subtracted. Needs BatchShape::elastic; use_crop must be 0.
  int32_t elastic = 0;
  int32_t elastic_center = 1;
  uint32_t elastic_transform_index = 0;
  double elastic_sigma[3] = {0, 0, 0};
  float elastic_magnitude[3] = {0.f, 0.f, 0.f};  // already max(m, 1e-8), as float32
  uint64_t elastic_seed = 0;
  uint64_t elastic_sample_index = 0;
  ChannelParams ch[kMaxChannels];
};

// Stages present in a batch (a stage that no sample uses is not launched).
enum StageBits : uint32_t {
  kStageNoise = 1u << 0,
  kStageBlur = 1u << 1,
  kStageContrast = 1u << 2,
  kStageLowRes = 1u << 3,
  kStageGamma0 = 1u << 4,
  kStageGamma1 = 1u << 5,
  kStageMask = 1u << 6,
  kStageLowestLabel = 1u << 7,  // some sample needs its lowest label computed on the device
  kStageElastic = 1u << 8,      // some sample deforms elastically (field generation before the spatial kernel)
  kStagePermute = 1u << 9,      // some sample's out_axis is not the identity (the spatial kernel's permuted store)
  // Some channel's gamma slot 1 retains its statistics without slot 0 on: the gamma statistics passes run unfused.
  // Without it slot 0's pass also reduces slot 1's statistics, and slot 1's own pass, a few blocks a slice, serves
  // only the slices where that did not hold (a slice with slot 1 alone among them: same values, slower there).
  kStageGamma1Alone = 1u << 10,
  // Some sample resamples (use_crop == 0: rotation, scaling or elastic). Without it every sample must be a centre
  // crop: the 1-channel and channel-split launches then run a build without the resampling path. A mask without it
  // for a batch where some sample resamples is outside the contract (whether that sample is cropped or resampled then
  // depends on the build the channel count selects).
  kStageResample = 1u << 11,
  // A hint: some slice (sample, channel) skips a slice pass that another slice of the batch runs (mid, a gamma
  // statistics pass; ActiveStages sets it only for batches of 3 or more slices). With it, such batches deal
  // all three passes' blocks out among the slices that run each (the others' blocks would idle; a pass every slice
  // runs then pays the one-row launch, ≈ 1 %); without it each slice keeps its own blocks. Either way the same work,
  // but the statistics' partial sums are cut differently: with the hint a slice's output depends, in rounding only,
  // on which other slices of its batch run the pass (deterministic for a given batch).
  kStageSliceIdle = 1u << 12,
  kStageAll = 0x1fffu,
};
// The stages that run after the spatial kernel (without them it writes the final outputs itself: the direct path).
inline constexpr uint32_t kStagesAfterSpatial =
    kStageBlur | kStageContrast | kStageLowRes | kStageGamma0 | kStageGamma1;

// Which stages the host-side parameters use (host function, reads h_params[0..B)).
uint32_t ActiveStages(const SampleParams* h_params, const BatchShape& shape);

// Device pointers of one batch. Outputs are caller-owned (e.g. the service's IPC slots).
struct PipelineIO {
  const float* image = nullptr;        // (B, C, S) float32
  const int16_t* seg = nullptr;        // (B, 1, S) int16
  void* out_image = nullptr;           // (B, C, P) in shape.out_dtype
  int16_t* out_seg = nullptr;          // (B, 1, P)
  int16_t* out_ds[kMaxDsLevels] = {};  // (B, 1, Q_k)
};

// Workspace for one batch shape (device memory, caller-allocated, 256-byte aligned): two scratch images, the
// mask and the per-slice reduction state. Its layout depends on the whole BatchShape:
// call InitWorkspace once after allocating it and again whenever the shape changes (a workspace sized for a
// larger shape may be re-initialised for a smaller one).
size_t WorkspaceBytes(const BatchShape& shape);
// Zeroes the reduction counters (enqueued on `stream`). The kernels re-arm them, so steady-state batches of
// the same shape need no further initialisation.
cudaError_t InitWorkspace(const BatchShape& shape, void* workspace, cudaStream_t stream);
// Whether every reduction counter of the workspace is at rest (zero), as InitWorkspace leaves them and every completed
// batch must: `*armed` is false if some kernel left one counting. Call it once the batches' stream is synchronized:
// it copies the counters to the host with cudaMemcpy (the legacy stream). `*armed` is written only on success. For
// tests.
cudaError_t WorkspaceArmed(const BatchShape& shape, const void* workspace, bool* armed);

// Runs the whole default pipeline on a batch. `d_params`: B SampleParams in device memory (read by the
// kernels while they run). `stages`: ActiveStages(...) of the same parameters (a superset is valid, only
// slower; without kStagePermute, out_axis is read as the identity; kStageResample must be there when some sample
// resamples; kStageSliceIdle, a hint, moves the statistics' rounding either way). Returns the first launch error
// (cudaErrorInvalidValue for a bad shape, or kStagePermute with a stage after the spatial kernel or more than 4
// channels). Asynchronous.
// Seg only: io.image == io.out_image == nullptr, with none of the stages after the spatial kernel (blur, contrast,
// low-res, gammas) in `stages`: the spatial kernel resamples only the seg (same labels, DS targets as usual; noise,
// brightness and mask touch nothing). The generic chain uses it for its second and later seg channels, whose image
// the first launch already wrote.
cudaError_t RunPipeline(const BatchShape& shape, const SampleParams* d_params, uint32_t stages, const PipelineIO& io,
                        void* workspace, cudaStream_t stream);

// RunPipeline with the batch's buffers read from device memory by the kernels when they run: `d_io` is one PipelineIO
// in device memory (it must stay valid, and hold the batch's pointers, until the kernels have run); `io` is the same
// struct on the host, read only for checks and launch-shape choices (the 16-byte alignment of io.out_image selects the
// vectorised final pass). A stream capture of this call is therefore a graph that can be replayed for any buffers of
// the same alignment by rewriting *d_io and *d_params before each replay (e.g. by a captured host-to-device copy).
// Results are bit-identical to RunPipeline with the same pointers.
cudaError_t RunPipelineFromDevice(const BatchShape& shape, const SampleParams* d_params, uint32_t stages,
                                  const PipelineIO& io, const PipelineIO* d_io, void* workspace, cudaStream_t stream);

// Lowest label per sample of the input seg (B int32 into d_lowest), for the zero-padding seg border
// (bgv2 before nnU-Net 2.7): there, voxels with no in-bounds corner take the lowest label of the patch.
// RunPipeline calls it itself when kStageLowestLabel is set.
cudaError_t ComputeLowestLabels(const BatchShape& shape, const int16_t* seg, int32_t* d_lowest, cudaStream_t stream);

// --- Host helpers with Python's exact rounding rules (for the ops layer and the tests). ---
// bgv2 `_build_kernel(sigma, truncate=6)` size: nearest odd of 6·sigma + 0.5 (banker's rounding).
int BlurKernelSize(double sigma);
// round(n · s) with Python's round-half-to-even (low-res and DS shapes).
int RoundHalfEven(double v);

}  // namespace augmentd::cuda
