// augment/kernels/cuda/pipeline_cuda.cu — sequences the stage launches of one batch (pipeline_cuda.h).
//
// Launch plan (stages no sample uses are skipped; the host knows which from ActiveStages):
//   [lowest labels]  only for the zero-padding seg border
//   [elastic field]  taps, noise, 3 smoothing passes, stats (elastic.cu), only when a sample deforms
//   spatial          sample + noise + seg/mask; writes the final image directly when nothing follows (+ DS launch)
//                    (without kStageResample, a batch of centre crops: the build without the resampling path)
//   blur             one tiled separable pass, stats of the result (contrast input)
//   mid              trilinear up (low-res slices: samples gathered from V1 at the nearest-exact picks, brightness/
//                    contrast applied on the way) and stats of V3 (gamma input; other slices: stats only)
//   gamma stats      y0 stats; y1 stats (each only if its slot is used; V4's stats follow from y0's; without
//                    kStageGamma1Alone the y0 pass also reduces y1's in slot-0 terms and the y1 pass only converts)
//   final            pointwise rest, mirroring, mask, dtype; DS picks in extra blocks (own launch when direct)
// Every stage is one launch over the whole batch with per-sample parameters read on the device.
#include <algorithm>
#include <cmath>
#include <vector>

#include "augment/kernels/cuda/block_clocks.h"
#include "augment/kernels/cuda/common.cuh"
#include "augment/kernels/cuda/kernels.h"
#include "augment/kernels/cuda/pipeline_cuda.h"

#ifndef AUGMENTD_GAMMA_FUSION  // bench A/B only: -DAUGMENTD_GAMMA_FUSION=0 runs the gamma passes apart
#define AUGMENTD_GAMMA_FUSION 1
#endif
#ifndef AUGMENTD_SLICE_SHARE  // bench A/B only: -DAUGMENTD_SLICE_SHARE=0 keeps every slice's own blocks
#define AUGMENTD_SLICE_SHARE 1
#endif

namespace augmentd::cuda {
namespace internal {
int KernelSizeForHost(double sigma);
}  // namespace internal

using internal::ChainState;
using internal::Workspace;

// Batches of centre crops with low-res up to this many slices (B·C) launch the mid pass plainly when it follows the
// spatial kernel (RunPipelineFromDevice).
constexpr int kPlainMidMaxSlices = 2;

uint32_t ActiveStages(const SampleParams* h_params, const BatchShape& shape) {
  uint32_t st = 0;
  uint32_t passes_any = 0, passes_all = ~0u;  // slice passes some slice runs / every slice runs
  for (int b = 0; b < shape.batch; ++b) {
    const SampleParams& p = h_params[b];
    if (p.noise_sigma != 0.f) st |= kStageNoise;
    if (!p.seg_border_minus_one && !p.use_crop && !shape.seg_pad_first) st |= kStageLowestLabel;
    if (!p.use_crop) st |= kStageResample;
    if (p.elastic) st |= kStageElastic;
    if (p.out_axis[0] != 0 || p.out_axis[1] != 1 || p.out_axis[2] != 2) st |= kStagePermute;
    for (int c = 0; c < shape.channels; ++c) {
      const ChannelParams& cp = p.ch[c];
      if (cp.blur_sigma[0] != 0.f) st |= kStageBlur;
      if (cp.contrast != 0.f) st |= kStageContrast;
      if (cp.lowres_shape[0] != 0) st |= kStageLowRes;
      if (cp.gamma[0] != 0.f) st |= kStageGamma0;
      if (cp.gamma[1] != 0.f) st |= kStageGamma1;
      if (cp.gamma[1] != 0.f && cp.gamma_retain[1] && cp.gamma[0] == 0.f) st |= kStageGamma1Alone;
      if (cp.mask != 0) st |= kStageMask;
      const uint32_t passes = internal::SlicePasses(cp, shape.out);
      passes_any |= passes;
      passes_all &= passes;
    }
  }
  // A hint only batches with enough slices act on (left out below: it would only split graph keys).
  if (passes_any != passes_all && internal::SliceSharesApply(shape)) st |= kStageSliceIdle;
  return st;
}

static bool ValidShape(const BatchShape& s) {
  if (s.batch < 1 || s.channels < 1 || s.channels > kMaxChannels) return false;
  if (s.num_ds < 0 || s.num_ds > kMaxDsLevels) return false;
  for (int d = 0; d < 3; ++d) {
    if (s.in[d] < 1 || s.out[d] < 1) return false;
    if (s.elastic && s.out[d] > kMaxElasticAxis) return false;
  }
  if (internal::Prod(s.out) > (int64_t{1} << 30) || internal::Prod(s.in) >= (int64_t{1} << 31)) return false;
  if (!internal::SpatialGridFits(s)) return false;  // the spatial kernel's grid (spatial.cu); axes <= 2^30 here
  for (int l = 0; l < s.num_ds; ++l) {
    for (int d = 0; d < 3; ++d) {
      if (s.ds[l][d] < 1 || s.ds[l][d] > s.out[d]) return false;
    }
  }
  return true;
}

size_t WorkspaceBytes(const BatchShape& shape) {
  if (!ValidShape(shape)) return 0;
  return internal::CarveWorkspace(shape, nullptr).bytes;
}

cudaError_t InitWorkspace(const BatchShape& shape, void* workspace, cudaStream_t stream) {
  if (!ValidShape(shape) || workspace == nullptr) return cudaErrorInvalidValue;
  const Workspace ws = internal::CarveWorkspace(shape, workspace);
  const size_t slices = static_cast<size_t>(shape.batch) * shape.channels;
  for (int s = 0; s < internal::kNumSlots; ++s) {
    AUGMENTD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(ws.slot[s].counters, 0, slices * sizeof(unsigned int), stream));
  }
  return cudaSuccess;
}

cudaError_t WorkspaceArmed(const BatchShape& shape, const void* workspace, bool* armed) {
  if (!ValidShape(shape) || workspace == nullptr || armed == nullptr) return cudaErrorInvalidValue;
  const Workspace ws = internal::CarveWorkspace(shape, const_cast<void*>(workspace));
  const size_t slices = static_cast<size_t>(shape.batch) * shape.channels;
  std::vector<unsigned int> h(slices);
  bool all_zero = true;
  for (int s = 0; s < internal::kNumSlots; ++s) {
    AUGMENTD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(h.data(), ws.slot[s].counters, slices * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    all_zero = all_zero && std::all_of(h.begin(), h.end(), [](unsigned int v) { return v == 0u; });
  }
  *armed = all_zero;
  return cudaSuccess;
}

cudaError_t ComputeLowestLabels(const BatchShape& shape, const int16_t* seg, int32_t* d_lowest, cudaStream_t stream) {
  if (!ValidShape(shape) || seg == nullptr || d_lowest == nullptr) return cudaErrorInvalidValue;
  return internal::LaunchLowestLabels(shape, seg, nullptr, d_lowest, stream);
}

cudaError_t RunPipeline(const BatchShape& shape, const SampleParams* d_params, uint32_t stages, const PipelineIO& io,
                        void* workspace, cudaStream_t stream) {
  return RunPipelineFromDevice(shape, d_params, stages, io, nullptr, workspace, stream);
}

// d_io == nullptr: the kernels take io's pointers by value (RunPipeline).
cudaError_t RunPipelineFromDevice(const BatchShape& shape, const SampleParams* d_params, uint32_t stages,
                                  const PipelineIO& io, const PipelineIO* d_io, void* workspace, cudaStream_t stream) {
  // Seg only (pipeline_cuda.h): both image pointers null, and nothing but the spatial kernel's direct path.
  const bool seg_only = io.image == nullptr && io.out_image == nullptr;
  if (!ValidShape(shape) || d_params == nullptr || workspace == nullptr || io.seg == nullptr ||
      io.out_seg == nullptr || (!seg_only && (io.image == nullptr || io.out_image == nullptr)) ||
      (seg_only && (stages & kStagesAfterSpatial) != 0)) {
    return cudaErrorInvalidValue;
  }
  for (int l = 0; l < shape.num_ds; ++l) {
    if (io.out_ds[l] == nullptr) return cudaErrorInvalidValue;
  }
  const Workspace ws = internal::CarveWorkspace(shape, workspace);
  const bool blur = stages & kStageBlur, contrast = stages & kStageContrast, lowres = stages & kStageLowRes;
  const bool g0 = stages & kStageGamma0, g1 = stages & kStageGamma1, mask = stages & kStageMask;
  const bool lowest = stages & kStageLowestLabel;
  const bool elastic = stages & kStageElastic;
  if (elastic && !shape.elastic) return cudaErrorInvalidValue;
  const bool direct = !(blur || contrast || lowres || g0 || g1);
  const bool permute = stages & kStagePermute;
  if (permute && (!direct || shape.channels > kMaxPermutedChannels)) return cudaErrorInvalidValue;

  if (lowest) AUGMENTD_CUDA_RETURN_IF_ERROR(internal::LaunchLowestLabels(shape, io.seg, d_io, ws.lowest, stream));
  if (elastic) AUGMENTD_CUDA_RETURN_IF_ERROR(internal::LaunchElasticField(shape, d_params, ws, stream));
  AUGMENTD_CUDA_RETURN_IF_ERROR(
      internal::LaunchSpatial(shape, d_params, io, d_io, ws,
                              {lowest, direct, mask, contrast, elastic, (stages & kStageNoise) != 0, permute,
                               (stages & kStageResample) == 0},
                              stream));
  if (direct) return cudaSuccess;

  ChainState st{blur, false, AUGMENTD_GAMMA_FUSION && g0 && g1 && (stages & kStageGamma1Alone) == 0,
                AUGMENTD_SLICE_SHARE && (stages & kStageSliceIdle) != 0 && internal::SliceSharesApply(shape)};
  // The mid pass launches plainly right after the spatial kernel's crops build in batches with low-res of at most
  // kPlainMidMaxSlices slices; every other pass chains (NOTES.md s43, H100, against chaining in the same call:
  // default probabilities B=2 C=1, the two such parameter sets −5.4 / −7.4 %; B=2 C=4, the one such set +1.1 %).
  const bool mid_plain = !blur && lowres && (stages & kStageResample) == 0 &&
                         shape.batch * shape.channels <= kPlainMidMaxSlices;
  if (blur) AUGMENTD_CUDA_RETURN_IF_ERROR(internal::LaunchBlur(shape, d_params, ws, contrast, stream));
  if (lowres || g0 || g1) {
    AUGMENTD_CUDA_RETURN_IF_ERROR(internal::LaunchMid(shape, d_params, ws, st, !mid_plain, stream));
    st.mid_done = true;
  }
  if (g0) AUGMENTD_CUDA_RETURN_IF_ERROR(internal::LaunchGammaStats(shape, d_params, ws, st, 0, stream));
  if (g1) AUGMENTD_CUDA_RETURN_IF_ERROR(internal::LaunchGammaStats(shape, d_params, ws, st, 2, stream));
  return internal::LaunchFinal(shape, d_params, io, d_io, ws, st, mask, stream);
}

int BlurKernelSize(double sigma) { return internal::KernelSizeForHost(sigma); }

int RoundHalfEven(double v) { return static_cast<int>(std::nearbyint(v)); }

// ---------------------------------------------------------------------------------------------------
// Block clocks (block_clocks.h).

const char* BlockClockKernelName(uint32_t kernel) {
  switch (kernel) {
    case kClockSpatial:
      return "spatial";
    case kClockBlur:
      return "blur";
    case kClockMid:
      return "mid";
    case kClockGamma0:
      return "gamma0";
    case kClockGamma2:
      return "gamma2";
    case kClockFinal:
      return "final";
    default:
      return "?";
  }
}

bool BlockClocksBuilt() { return AUGMENTD_BLOCK_CLOCKS != 0; }

#if AUGMENTD_BLOCK_CLOCKS
namespace internal {
namespace {
std::vector<BlockClockSetter>& BlockClockSetters() {
  static std::vector<BlockClockSetter> setters;
  return setters;
}
BlockClockLog* g_host_log = nullptr;  // the device log BlockClocksStart allocated (host-side handle)
}  // namespace

bool RegisterBlockClockSetter(BlockClockSetter set) {
  BlockClockSetters().push_back(set);
  return true;
}
}  // namespace internal

namespace {
// Points every file's copy of the log pointer at `log` (nullptr: no recording).
cudaError_t SetBlockClockLogs(internal::BlockClockLog* log) {
  for (internal::BlockClockSetter set : internal::BlockClockSetters()) {
    AUGMENTD_CUDA_RETURN_IF_ERROR(set(log));
  }
  return cudaSuccess;
}
}  // namespace

cudaError_t BlockClocksStop() {
  if (internal::g_host_log == nullptr) return cudaSuccess;
  AUGMENTD_CUDA_RETURN_IF_ERROR(SetBlockClockLogs(nullptr));
  const cudaError_t err = cudaFree(internal::g_host_log);
  internal::g_host_log = nullptr;
  return err;
}

cudaError_t BlockClocksStart(size_t capacity) {
  using internal::BlockClockLog;
  AUGMENTD_CUDA_RETURN_IF_ERROR(BlockClocksStop());
  void* p = nullptr;
  AUGMENTD_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, sizeof(BlockClockLog) + capacity * sizeof(BlockClock)));
  internal::g_host_log = static_cast<BlockClockLog*>(p);
  const BlockClockLog head{0, capacity};
  AUGMENTD_CUDA_RETURN_IF_ERROR(cudaMemcpy(p, &head, sizeof head, cudaMemcpyHostToDevice));
  return SetBlockClockLogs(internal::g_host_log);
}

cudaError_t BlockClocksTake(std::vector<BlockClock>* out, uint64_t* dropped) {
  using internal::BlockClockLog;
  *dropped = 0;
  if (internal::g_host_log == nullptr) return cudaSuccess;
  BlockClockLog head;
  AUGMENTD_CUDA_RETURN_IF_ERROR(cudaMemcpy(&head, internal::g_host_log, sizeof head, cudaMemcpyDeviceToHost));
  const size_t kept = static_cast<size_t>(std::min(head.n, head.capacity));
  const size_t first = out->size();
  out->resize(first + kept);
  AUGMENTD_CUDA_RETURN_IF_ERROR(cudaMemcpy(out->data() + first, internal::g_host_log + 1, kept * sizeof(BlockClock),
                                           cudaMemcpyDeviceToHost));
  *dropped = head.n - kept;
  const BlockClockLog empty{0, head.capacity};
  return cudaMemcpy(internal::g_host_log, &empty, sizeof empty, cudaMemcpyHostToDevice);
}
#else
cudaError_t BlockClocksStart(size_t) { return cudaErrorNotSupported; }
cudaError_t BlockClocksTake(std::vector<BlockClock>* out, uint64_t* dropped) {
  (void)out;
  *dropped = 0;
  return cudaErrorNotSupported;
}
cudaError_t BlockClocksStop() { return cudaErrorNotSupported; }
#endif

}  // namespace augmentd::cuda
