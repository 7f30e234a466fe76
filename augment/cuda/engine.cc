// CUDA engine (cuda/engine.h): host-side draws → kernel-layer SampleParams → RunPipeline.
//
// Why draws stay on the host: they are a few dozen Philox draws per sample (µs), and reusing the transforms' own
// samplers (DrawSampleParams) is what makes the CUDA path draw bit-identical parameters to the CPU engine. Only the
// per-voxel noise field is generated on the device, from the same (seed, sample, transform, 1 + channel) key.
//
// Which transforms are covered and how their parameters map onto SampleParams: fused_params.{h,cc}.
#include "augment/cuda/engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/cuda/chain.h"
#include "augment/cuda/fused_params.h"
#include "augment/cuda/stage.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_half.h"
#include "augment/kernels/cuda/graph_cache.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/status_macros.h"
#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"
#include "augment/transforms/spatial/spatial.h"

namespace augmentd {
namespace ju = json_util;

namespace {

// The one CUDA checking helper of the engine (cuda/stage.h): out of memory is its own case.

size_t Align256(size_t n) { return (n + 255) & ~size_t{255}; }

// Sets the device for a scope and restores the caller's current device.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    status_ = CudaStatus(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  const absl::Status& status() const { return status_; }

 private:
  int previous_ = -1;
  absl::Status status_;
};

// A fused batch in parts (cuda/engine.h "Two parts"): samples [first, first + shape.batch) with their own stage mask.
struct Part {
  cuda::BatchShape shape{};
  int64_t first = 0;
  uint32_t stages = 0;
};

// CUDA graphs of the fused path (cuda/engine.h "CUDA graphs"): keyed by what fixes the launch sequence and its
// arguments: the parts' stage masks, the batch shape, the number of parts and whether each part's image output is
// 16-byte aligned (vectorised final pass).
struct GraphKey {
  uint32_t stages[2] = {0, 0};
  cuda::BatchShape shape{};
  int parts = 1;
  unsigned aligned16 = 0;  // bit k: part k's image output is 16-byte aligned
  bool operator==(const GraphKey& o) const {
    return stages[0] == o.stages[0] && stages[1] == o.stages[1] && parts == o.parts && aligned16 == o.aligned16 &&
           std::memcmp(&shape, &o.shape, sizeof(shape)) == 0;
  }
};
constexpr size_t kMaxGraphs = 64;  // per augmenter (≈ 10 nodes each); the least recently used is destroyed beyond

// Graphs only with AUGMENTD_CUDA_GRAPHS=1 (read once): on the H200 they gained 0.3–0.8 % for every-transform-on
// batches and lost up to 3 % for default-probability ones (stage masks vary per batch: captures, cache misses);
// bench/results/2026-11-30-h200-cuda-kernels-s4.md. Eager launches are the default.
bool GraphsFromEnvironment() {
  static const bool on = [] {
    const char* e = std::getenv("AUGMENTD_CUDA_GRAPHS");
    return e != nullptr && std::string(e) == "1";
  }();
  return on;
}

// Where a graph batch's upload runs (read once): inside the graph (default: one launch per batch) or, with
// AUGMENTD_CUDA_GRAPH_UPLOAD=outside, as a copy + event record before a kernels-only graph (an A/B switch for the
// launch latency of graphs holding a host-to-device copy and an event node).
bool GraphUploadInside() {
  static const bool inside = [] {
    const char* e = std::getenv("AUGMENTD_CUDA_GRAPH_UPLOAD");
    return e == nullptr || std::string(e) != "outside";
  }();
  return inside;
}

// The split policy from AUGMENTD_CUDA_SPLIT (read once): "0" whole batches, "differ" two parts where their stage masks
// differ, "direct" where exactly one of them has no pass after the spatial kernel, unset / "1" / "always" two parts
// for every batch of B >= 2 (cuda/engine.h "Two parts"); any other value is named on stderr and taken as the default.
CudaSplitPolicy SplitFromEnvironment() {
  static const CudaSplitPolicy policy = [] {
    const char* e = std::getenv("AUGMENTD_CUDA_SPLIT");
    const std::string v = e == nullptr ? "" : e;
    if (v == "0") return CudaSplitPolicy::kWhole;
    if (v == "differ") return CudaSplitPolicy::kWhenMasksDiffer;
    if (v == "direct") return CudaSplitPolicy::kWhenOnePartDirect;
    if (!v.empty() && v != "1" && v != "always") {
      std::fprintf(stderr,
                   "augmentd: AUGMENTD_CUDA_SPLIT=%s is not 0, 1, always, differ or direct: two parts always\n",
                   v.c_str());
    }
    return CudaSplitPolicy::kAlways;
  }();
  return policy;
}

// Whether a batch whose two parts draw `first` and `second` (cuda::ActiveStages) runs in two parts under `policy`.
bool SplitsInTwo(CudaSplitPolicy policy, uint32_t first, uint32_t second) {
  switch (policy) {
    case CudaSplitPolicy::kWhole:
      return false;
    case CudaSplitPolicy::kWhenMasksDiffer:
      return first != second;
    case CudaSplitPolicy::kWhenOnePartDirect:
      return ((first & cuda::kStagesAfterSpatial) == 0) != ((second & cuda::kStagesAfterSpatial) == 0);
    case CudaSplitPolicy::kAlways:
      return true;
  }
  return true;
}

// Upload block of one fused batch, in pinned host memory and (same layout) on the device: each part's buffers, then
// the per-sample parameters. One copy moves all, so a captured graph replays for any buffers and parameters.
constexpr size_t kIoBytes = (sizeof(cuda::PipelineIO) + 255) & ~size_t{255};
constexpr int kMaxParts = 2;
size_t UploadBytes(int64_t batch) {
  return kMaxParts * kIoBytes + sizeof(cuda::SampleParams) * static_cast<size_t>(batch);
}

template <typename F>
absl::Status GuardStatus(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of host memory");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CUDA engine error: ", e.what()));
  }
}

// Whether `s` is being captured: empty for the legacy default stream (it cannot be) and when the query fails. The
// per-thread default stream is queried (a caller may capture it).
std::optional<bool> Capturing(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy) return std::nullopt;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return status != cudaStreamCaptureStatusNone;
}

// Whether the caller is capturing `s` itself.
bool CallerCapturing(cudaStream_t s) { return Capturing(s).value_or(false); }

// Streams a graph can be captured on: not the legacy or per-thread default stream, and not one already capturing
// (a caller's own capture then records the eager launches).
bool Capturable(cudaStream_t s) {
  if (s == cudaStreamPerThread) return false;
  const std::optional<bool> c = Capturing(s);
  return c.has_value() && !*c;
}

}  // namespace

bool CudaEngineBuilt() { return true; }

struct CudaAugmenter::Impl {
  PipelineSpec spec;
  CudaPlan plan;
  int device = 0;
  // The generic chain (cuda/chain.h): every batch when the fused kernels do not cover the spec (use_chain), else the
  // batches they refuse at run time (parameters drawn outside their range, several or no seg channels).
  std::unique_ptr<CudaChain> chain;
  bool use_chain = false;
  bool skippable = false;  // spec.HasSkippableEntry(): CheckBatchShape runs CheckLayoutStable per batch shape

  // Part k's workspace (ws[1] and the side stream for the second part; cuda/engine.h "Two parts").
  void* ws[kMaxParts] = {nullptr, nullptr};
  size_t ws_cap[kMaxParts] = {0, 0};
  cuda::BatchShape ws_shape[kMaxParts]{};
  bool ws_ready[kMaxParts] = {false, false};
  CudaSplitPolicy split_policy = SplitFromEnvironment();
  cudaStream_t side = nullptr;  // the second part's stream, forked from and joined to Run's
  cudaEvent_t fork = nullptr, join = nullptr;
  void* d_upload = nullptr;  // kMaxParts × kIoBytes of PipelineIO, then SampleParams[params_cap] (UploadBytes)
  void* h_upload = nullptr;  // pinned, same layout
  int params_cap = 0;
  // Graphs point at ws and d_upload: cleared whenever either is reallocated.
  cuda::GraphCache<GraphKey, cudaGraphExec_t> graphs{kMaxGraphs, [](cudaGraphExec_t e) { cudaGraphExecDestroy(e); }};
  bool graphs_enabled = GraphsFromEnvironment();
  CudaGraphCounters graph_counters;
  cudaEvent_t params_copied = nullptr;  // h_upload may be rewritten once this has passed
  cudaEvent_t done = nullptr;           // the last run's kernels (they read ws and d_upload)
  bool has_run = false;

  // RunHost only.
  cudaStream_t stream = nullptr;
  void* staging = nullptr;  // pinned
  size_t staging_cap = 0;
  void* d_in = nullptr;
  size_t d_in_cap = 0;
  void* d_out = nullptr;
  size_t d_out_cap = 0;

  ~Impl() {
    DeviceScope scope(device);
    if (done != nullptr) cudaEventSynchronize(done);
    graphs.Clear();
    chain.reset();  // its buffers, on this device
    for (void* p : {ws[0], ws[1], d_upload, d_in, d_out}) {
      if (p != nullptr) cudaFree(p);
    }
    for (void* p : {h_upload, staging}) {
      if (p != nullptr) cudaFreeHost(p);
    }
    if (params_copied != nullptr) cudaEventDestroy(params_copied);
    if (done != nullptr) cudaEventDestroy(done);
    for (cudaEvent_t e : {fork, join}) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (side != nullptr) cudaStreamDestroy(side);
    if (stream != nullptr) cudaStreamDestroy(stream);
    cudaGetLastError();
  }

  const cuda::SampleParams* DeviceParams() const {
    return reinterpret_cast<const cuda::SampleParams*>(static_cast<const char*>(d_upload) + kMaxParts * kIoBytes);
  }
  const cuda::PipelineIO* DeviceIo(int part) const {
    return reinterpret_cast<const cuda::PipelineIO*>(static_cast<const char*>(d_upload) + part * kIoBytes);
  }

  // Enqueues the batch's kernels: with two parts, part 1 on `side` between a fork from `s` and a join back to it, and
  // part 0 on `s` in between. from_device: the kernels read their buffers from d_upload (the graphs' form).
  cudaError_t EnqueueParts(const Part* parts, int n, const cuda::PipelineIO* io, cudaStream_t s, bool from_device) {
    const auto launch = [&](int k, cudaStream_t on) {
      const Part& p = parts[k];
      return from_device ? cuda::RunPipelineFromDevice(p.shape, DeviceParams() + p.first, p.stages, io[k],
                                                       DeviceIo(k), ws[k], on)
                         : cuda::RunPipeline(p.shape, DeviceParams() + p.first, p.stages, io[k], ws[k], on);
    };
    if (n == 1) return launch(0, s);
    cudaError_t e = cudaEventRecord(fork, s);
    if (e != cudaSuccess) return e;
    e = cudaStreamWaitEvent(side, fork, 0);
    if (e == cudaSuccess) e = launch(1, side);
    const cudaError_t e0 = e == cudaSuccess ? launch(0, s) : cudaSuccess;
    // Joined whatever happened, so that `s` never runs ahead of work enqueued on `side`; where the join itself fails,
    // the host waits for `side` instead.
    const cudaError_t rec = cudaEventRecord(join, side);
    const cudaError_t wait = rec == cudaSuccess ? cudaStreamWaitEvent(s, join, 0) : rec;
    if (wait != cudaSuccess) (void)cudaStreamSynchronize(side);
    for (const cudaError_t x : {e, e0, rec, wait})
      if (x != cudaSuccess) return x;
    return cudaSuccess;
  }

  // The second part's stream and the fork / join events, made on the first batch in two parts (current device: ours).
  absl::Status EnsureSide() {
    if (fork == nullptr) AUGMENTD_CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    if (join == nullptr) AUGMENTD_CUDA_OK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    if (side == nullptr) AUGMENTD_CUDA_OK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    return absl::OkStatus();
  }

  // Destroys the graphs (they point at ws and d_upload) once the last run, which may replay one, is done.
  absl::Status DropGraphs() {
    if (graphs.graphs() == 0) return absl::OkStatus();
    if (has_run) AUGMENTD_CUDA_OK(cudaEventSynchronize(done));
    graphs.Clear();
    return absl::OkStatus();
  }

  // Captures one fused batch on `s` (the caller checked Capturable): the upload of h_upload (buffers + parameters)
  // and the external record of params_copied (unless GraphUploadInside() is false), and the parts' kernels reading the
  // buffers from d_upload (RunPipelineFromDevice; the second part's on `side`, which the capture follows). Nothing
  // runs; on failure the capture is discarded (the caller then runs eagerly).
  absl::StatusOr<cudaGraphExec_t> Capture(const cuda::BatchShape& sh, const Part* parts, int n,
                                          const cuda::PipelineIO* io, cudaStream_t s) {
    AUGMENTD_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaError_t e = cudaSuccess;
    if (GraphUploadInside()) {
      e = cudaMemcpyAsync(d_upload, h_upload, UploadBytes(sh.batch), cudaMemcpyHostToDevice, s);
      if (e == cudaSuccess) e = cudaEventRecordWithFlags(params_copied, s, cudaEventRecordExternal);
    }
    if (e == cudaSuccess) e = EnqueueParts(parts, n, io, s, /*from_device=*/true);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (e == cudaSuccess) e = end;
    cudaGraphExec_t exec = nullptr;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return CudaStatus(e, "CUDA graph capture");
    }
    return exec;
  }

  // Grows a device (or pinned host) buffer to `need` bytes; contents are not kept.
  absl::Status Grow(void** p, size_t* cap, size_t need, bool pinned) {
    if (need <= *cap && *p != nullptr) return absl::OkStatus();
    if (done != nullptr && has_run) AUGMENTD_CUDA_OK(cudaEventSynchronize(done));
    if (*p != nullptr) {
      AUGMENTD_CUDA_OK(pinned ? cudaFreeHost(*p) : cudaFree(*p));
      *p = nullptr;
      *cap = 0;
    }
    if (pinned) {
      AUGMENTD_CUDA_OK(cudaMallocHost(p, need));
    } else {
      AUGMENTD_CUDA_OK(cudaMalloc(p, need));
    }
    *cap = need;
    return absl::OkStatus();
  }

  absl::StatusOr<cuda::BatchShape> Shape(const std::vector<int64_t>& image_shape, DType image_dtype) const {
    if (image_shape.size() == 4) return absl::UnimplementedError("CUDA engine: 2D samples (the kernels are 3D)");
    if (image_shape.size() != 5)
      return ju::Invalid("image.shape", absl::StrCat("expected (B, C, X, Y, Z), got ", ShapeString(image_shape)));
    if (image_shape[0] < 1 || image_shape[0] > 4096) return ju::Invalid("image.shape", "batch not in [1, 4096]");
    if (image_shape[1] < 1 || image_shape[1] > cuda::kMaxChannels) {
      return absl::UnimplementedError(absl::StrCat("CUDA engine: ", image_shape[1],
                                                   " image channels (the kernels take 1..", cuda::kMaxChannels, ")"));
    }
    cuda::BatchShape sh;
    sh.batch = static_cast<int32_t>(image_shape[0]);
    sh.channels = static_cast<int32_t>(image_shape[1]);
    std::vector<int64_t> in(image_shape.begin() + 2, image_shape.end());
    for (int d = 0; d < 3; ++d) {
      if (in[d] < 1 || in[d] > 4096) return ju::Invalid("image.shape", "spatial size not in [1, 4096]");
      sh.in[d] = static_cast<int32_t>(in[d]);
      sh.out[d] = plan.spatial != nullptr ? static_cast<int32_t>(plan.spatial->config().patch_size[d]) : sh.in[d];
    }
    switch (image_dtype) {
      case DType::kFloat32:
        sh.out_dtype = cuda::OutDType::kFloat32;
        break;
      case DType::kFloat16:
        sh.out_dtype = cuda::OutDType::kFloat16;
        break;
      case DType::kBFloat16:
        sh.out_dtype = cuda::OutDType::kBFloat16;
        break;
      default:
        return ju::Invalid("image_dtype", "must be a float dtype");
    }
    sh.remove_minus_one = plan.remove_minus_one ? 1 : 0;
    sh.elastic = plan.elastic ? 1 : 0;
    sh.seg_pad_first = plan.pad_first ? 1 : 0;
    if (plan.ds != nullptr) {
      const std::vector<int64_t> full = {sh.out[0], sh.out[1], sh.out[2]};
      const size_t levels = plan.ds->config().ds_scales.size();
      for (size_t l = 1; l < levels; ++l) {
        const std::vector<int64_t> q = plan.ds->LevelShape(full, l);
        for (int d = 0; d < 3; ++d) {
          if (q[d] < 1) return ju::Invalid("downsample_seg_for_ds.ds_scales", "a scale rounds an axis to size 0");
          sh.ds[sh.num_ds][d] = static_cast<int32_t>(q[d]);
        }
        ++sh.num_ds;
      }
    }
    if (cuda::WorkspaceBytes(sh) == 0) {
      return ju::Invalid("image.shape", absl::StrCat("batch shape ", ShapeString(image_shape),
                                                     " is outside what the CUDA kernels accept"));
    }
    return sh;
  }

  static CudaOutputLayout Layout(const cuda::BatchShape& sh) {
    CudaOutputLayout lay;
    lay.image_shape = {sh.batch, sh.channels, sh.out[0], sh.out[1], sh.out[2]};
    lay.image_bytes =
        static_cast<size_t>(NumElements(lay.image_shape)) * (sh.out_dtype == cuda::OutDType::kFloat32 ? 4 : 2);
    lay.seg_shapes.push_back({sh.batch, 1, sh.out[0], sh.out[1], sh.out[2]});
    for (int l = 0; l < sh.num_ds; ++l) lay.seg_shapes.push_back({sh.batch, 1, sh.ds[l][0], sh.ds[l][1], sh.ds[l][2]});
    for (const auto& s : lay.seg_shapes) lay.seg_bytes.push_back(static_cast<size_t>(NumElements(s)) * 2);
    return lay;
  }
};

CudaAugmenter::CudaAugmenter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaAugmenter::~CudaAugmenter() = default;

int CudaAugmenter::device() const { return impl_->device; }

absl::StatusOr<std::unique_ptr<CudaAugmenter>> CudaAugmenter::Create(const PipelineSpec& spec, int device) {
  RETURN_IF_ERROR(spec.CheckLayoutStable());  // as the CPU engine
  // Coverage first (answerable without a GPU): the fused kernels, else the generic chain.
  absl::StatusOr<CudaPlan> plan = MakeCudaPlan(spec);
  absl::StatusOr<std::unique_ptr<CudaChain>> chain = CudaChain::Create(spec);
  if (!plan.ok() && !chain.ok()) return chain.status();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  if (device < 0 || device >= count) {
    return absl::NotFoundError(absl::StrCat("device cuda:", device, ": not present (", count, " CUDA devices)"));
  }
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  impl->use_chain = !plan.ok();
  impl->skippable = spec.HasSkippableEntry();
  if (plan.ok()) impl->plan = *std::move(plan);
  if (chain.ok()) impl->chain = *std::move(chain);
  impl->device = device;
  DeviceScope scope(device);
  RETURN_IF_ERROR(scope.status());
  AUGMENTD_CUDA_OK(cudaEventCreateWithFlags(&impl->params_copied, cudaEventDisableTiming));
  AUGMENTD_CUDA_OK(cudaEventCreateWithFlags(&impl->done, cudaEventDisableTiming));
  return std::unique_ptr<CudaAugmenter>(new CudaAugmenter(std::move(impl)));
}

absl::Status CudaAugmenter::CheckBatchShape(const std::vector<int64_t>& image_shape) const {
  // A skippable entry that changes this batch's shape: INVALID_ARGUMENT, as the CPU engine, before either path.
  if (!impl_->skippable || image_shape.size() < 3) return absl::OkStatus();
  return impl_->spec.CheckLayoutStable(std::vector<int64_t>(image_shape.begin() + 2, image_shape.end()));
}

absl::StatusOr<CudaOutputLayout> CudaAugmenter::OutputLayout(const std::vector<int64_t>& image_shape,
                                                             DType image_dtype, int64_t seg_channels) const {
  RETURN_IF_ERROR(CheckBatchShape(image_shape));
  // The chain where Run uses it: its specs, 2D samples, shapes the fused kernels refuse (e.g. > 8 channels).
  absl::StatusOr<cuda::BatchShape> sh = absl::UnimplementedError("generic chain");
  if (!impl_->use_chain && seg_channels == 1) sh = impl_->Shape(image_shape, image_dtype);
  if (absl::IsUnimplemented(sh.status())) {
    if (impl_->chain == nullptr) return CudaChain::Create(impl_->spec).status();  // says why
    return impl_->chain->OutputLayout(image_shape, image_dtype, seg_channels);
  }
  if (!sh.ok()) return sh.status();
  return Impl::Layout(*sh);
}

absl::Status CudaAugmenter::Run(const CudaBatchInput& input, const CudaBatchOutput& output, const RunOptions& options,
                                CUstream_st* stream, std::vector<SampleRecord>* records) {
  return GuardStatus([&]() -> absl::Status {
    Impl& m = *impl_;
    RETURN_IF_ERROR(CheckBatchShape(input.image_shape));
    if (!m.use_chain && input.seg != nullptr && input.seg_channels == 1) {
      // Every refusal of the fused path (UNIMPLEMENTED) comes before anything is enqueued: the chain may take over.
      absl::Status fused = RunFused(input, output, options, stream, records);
      if (!absl::IsUnimplemented(fused) || m.chain == nullptr) return fused;
    }
    if (m.chain == nullptr) return CudaChain::Create(m.spec).status();
    DeviceScope scope(m.device);
    RETURN_IF_ERROR(scope.status());
    if (m.has_run) AUGMENTD_CUDA_OK(cudaStreamWaitEvent(stream, m.done, 0));  // buffers of the previous run
    std::vector<SampleRecord> local;
    const absl::Status run = m.chain->Run(input, output, options, stream, records != nullptr ? *records : local);
    AUGMENTD_CUDA_OK(cudaEventRecord(m.done, stream));
    m.has_run = true;
    return run;
  });
}

absl::Status CudaAugmenter::RunFused(const CudaBatchInput& input, const CudaBatchOutput& output,
                                     const RunOptions& options, CUstream_st* stream,
                                     std::vector<SampleRecord>* records) {
  {
    Impl& m = *impl_;
    ASSIGN_OR_RETURN(const cuda::BatchShape sh, m.Shape(input.image_shape, options.image_dtype));
    if (input.image == nullptr) return ju::Invalid("image.data", "is null");
    if (input.seg == nullptr)
      return absl::UnimplementedError("CUDA engine: image-only batches (the kernels need a (B, 1, ...) seg)");
    if (output.image == nullptr) return ju::Invalid("output.image", "is null");
    if (static_cast<int>(output.seg.size()) != 1 + sh.num_ds)
      return ju::Invalid("output.seg", absl::StrCat("needs ", 1 + sh.num_ds, " label levels"));
    for (int16_t* p : output.seg)
      if (p == nullptr) return ju::Invalid("output.seg", "is null");
    const int64_t batch = sh.batch;
    if (options.injected != nullptr && static_cast<int64_t>(options.injected->size()) != batch) {
      return ju::Invalid(
          "params", absl::StrCat("injected parameters for ", options.injected->size(), " samples, batch has ", batch));
    }
    // Draw (exactly the CPU engine's draws) and translate.
    std::vector<SampleRecord> local;
    std::vector<SampleRecord>& recs = records != nullptr ? *records : local;
    recs.assign(batch, SampleRecord{});
    std::vector<cuda::SampleParams> params(batch);
    const SampleLayout layout{sh.channels, {sh.in[0], sh.in[1], sh.in[2]}, 1};
    for (int64_t b = 0; b < batch; ++b) {
      RETURN_IF_ERROR(DrawSampleParams(m.spec, options.seed, options.first_sample_index + b,
                                       options.injected ? &(*options.injected)[b] : nullptr, layout, recs[b],
                                       options.first_sample_index));
      RETURN_IF_ERROR(TranslateSample(m.spec, m.plan, recs[b], sh, params[b]));
    }
    DeviceScope scope(m.device);
    RETURN_IF_ERROR(scope.status());
    cudaStream_t s = stream;
    // The parts (cuda/engine.h "Two parts"): the first ceil(B/2) samples and the rest, each with its own stage mask,
    // or the whole batch. Whole on a stream the caller is capturing (the side stream would join the caller's capture
    // until it ends).
    Part parts[kMaxParts];
    int n_parts = 1;
    if (m.split_policy != CudaSplitPolicy::kWhole && batch >= 2 && !CallerCapturing(s)) {
      for (int k = 0; k < 2; ++k) {
        parts[k].shape = sh;
        parts[k].first = k == 0 ? 0 : (batch + 1) / 2;
        parts[k].shape.batch = static_cast<int32_t>(k == 0 ? (batch + 1) / 2 : batch / 2);
        parts[k].stages = cuda::ActiveStages(params.data() + parts[k].first, parts[k].shape);
      }
      n_parts = SplitsInTwo(m.split_policy, parts[0].stages, parts[1].stages) ? 2 : 1;
    }
    if (n_parts == 1) {
      parts[0] = Part{sh, 0, cuda::ActiveStages(params.data(), sh)};
      parts[1] = Part{};
    } else {
      RETURN_IF_ERROR(m.EnsureSide());
    }
    // Buffers (grow only when a larger batch arrives). The graphs point at them: dropped before any moves.
    size_t ws_bytes[kMaxParts] = {0, 0};
    bool grow = batch > m.params_cap;
    for (int k = 0; k < n_parts; ++k) {
      ws_bytes[k] = cuda::WorkspaceBytes(parts[k].shape);
      grow = grow || ws_bytes[k] > m.ws_cap[k];
    }
    if (grow) RETURN_IF_ERROR(m.DropGraphs());
    for (int k = 0; k < n_parts; ++k) {
      void* const old_ws = m.ws[k];
      RETURN_IF_ERROR(m.Grow(&m.ws[k], &m.ws_cap[k], ws_bytes[k], false));
      if (m.ws[k] != old_ws) m.ws_ready[k] = false;  // fresh memory: counters must be armed
    }
    if (batch > m.params_cap) {
      size_t cap_d = m.d_upload != nullptr ? UploadBytes(m.params_cap) : 0, cap_h = cap_d;
      RETURN_IF_ERROR(m.Grow(&m.d_upload, &cap_d, UploadBytes(batch), false));
      RETURN_IF_ERROR(m.Grow(&m.h_upload, &cap_h, UploadBytes(batch), true));
      m.params_cap = static_cast<int>(batch);
    }
    // The previous run (maybe on another stream) reads ws and the upload block until it is done.
    if (m.has_run) AUGMENTD_CUDA_OK(cudaStreamWaitEvent(s, m.done, 0));
    // Both workspaces armed on `s` (before the fork: the side stream's part is ordered after it).
    for (int k = 0; k < n_parts; ++k) {
      if (!m.ws_ready[k] || std::memcmp(&m.ws_shape[k], &parts[k].shape, sizeof(sh)) != 0) {
        AUGMENTD_CUDA_OK(cuda::InitWorkspace(parts[k].shape, m.ws[k], s));
        m.ws_shape[k] = parts[k].shape;
        m.ws_ready[k] = true;
      }
    }
    // Each part's buffers: the batch's, advanced by the samples before it.
    const size_t in_n = static_cast<size_t>(sh.in[0]) * sh.in[1] * sh.in[2];
    const size_t out_n = static_cast<size_t>(sh.out[0]) * sh.out[1] * sh.out[2];
    const size_t out_elem = sh.out_dtype == cuda::OutDType::kFloat32 ? 4 : 2;
    cuda::PipelineIO io[kMaxParts];
    for (int k = 0; k < n_parts; ++k) {
      const size_t b0 = static_cast<size_t>(parts[k].first);
      io[k].image = input.image + b0 * sh.channels * in_n;
      io[k].seg = input.seg + b0 * in_n;
      io[k].out_image = static_cast<char*>(output.image) + b0 * sh.channels * out_n * out_elem;
      io[k].out_seg = output.seg[0] + b0 * out_n;
      for (int l = 0; l < sh.num_ds; ++l)
        io[k].out_ds[l] = output.seg[1 + l] + b0 * static_cast<size_t>(sh.ds[l][0]) * sh.ds[l][1] * sh.ds[l][2];
    }
    // The pinned upload block is free once the previous upload has executed.
    if (m.has_run) AUGMENTD_CUDA_OK(cudaEventSynchronize(m.params_copied));
    for (int k = 0; k < n_parts; ++k) std::memcpy(static_cast<char*>(m.h_upload) + k * kIoBytes, &io[k], sizeof(io[k]));
    std::memcpy(static_cast<char*>(m.h_upload) + kMaxParts * kIoBytes, params.data(),
                sizeof(cuda::SampleParams) * batch);
    GraphKey key;
    key.shape = sh;
    key.parts = n_parts;
    for (int k = 0; k < n_parts; ++k) {
      key.stages[k] = parts[k].stages;
      if (reinterpret_cast<uintptr_t>(io[k].out_image) % 16 == 0) key.aligned16 |= 1u << k;
    }
    cudaGraphExec_t exec = nullptr;
    const cuda::GraphAction action =
        m.graphs_enabled && Capturable(s) ? m.graphs.Lookup(key, &exec) : cuda::GraphAction::kEager;
    if (action == cuda::GraphAction::kCapture) {
      absl::StatusOr<cudaGraphExec_t> captured = m.Capture(sh, parts, n_parts, io, s);
      if (captured.ok()) {
        exec = *captured;
        m.graphs.Store(key, exec);
        ++m.graph_counters.captures;
      } else {
        m.graphs.MarkFailed(key);  // eager from now on (the launches report their own errors there)
        ++m.graph_counters.capture_failures;
      }
    }
    absl::Status run;
    if (exec != nullptr) {
      if (!GraphUploadInside()) {
        AUGMENTD_CUDA_OK(cudaMemcpyAsync(m.d_upload, m.h_upload, UploadBytes(batch), cudaMemcpyHostToDevice, s));
        AUGMENTD_CUDA_OK(cudaEventRecord(m.params_copied, s));
      }
      run = CudaStatus(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
      ++m.graph_counters.replays;
    } else {
      AUGMENTD_CUDA_OK(cudaMemcpyAsync(m.d_upload, m.h_upload, UploadBytes(batch), cudaMemcpyHostToDevice, s));
      AUGMENTD_CUDA_OK(cudaEventRecord(m.params_copied, s));
      run = CudaStatus(m.EnqueueParts(parts, n_parts, io, s, /*from_device=*/false), "RunPipeline");
      ++m.graph_counters.eager;
    }
    if (run.ok() && n_parts == 2) ++m.graph_counters.split;
    // A launch that failed part-way may leave a workspace's counters un-armed: re-armed before the next batch.
    if (!run.ok())
      for (bool& ready : m.ws_ready) ready = false;
    AUGMENTD_CUDA_OK(cudaEventRecord(m.done, s));
    m.has_run = true;
    return run;
  }
}

void CudaAugmenter::set_graphs_enabled(bool on) { impl_->graphs_enabled = on; }

void CudaAugmenter::set_split_policy(CudaSplitPolicy policy) { impl_->split_policy = policy; }

CudaGraphCounters CudaAugmenter::graph_counters() const { return impl_->graph_counters; }

absl::StatusOr<BatchResult> CudaAugmenter::RunHost(const BatchInput& input, const RunOptions& options) {
  absl::StatusOr<BatchResult> out;
  absl::Status st = GuardStatus([&]() -> absl::Status {
    Impl& m = *impl_;
    const TensorView& image = input.image;
    const TensorView& seg = input.seg;
    if (image.data == nullptr) return ju::Invalid("image.data", "is null");
    if (!IsFloatingDType(image.dtype)) return ju::Invalid("image.dtype", "must be float32/float16/bfloat16");
    const bool has_seg = seg.data != nullptr;
    if (has_seg) {
      if (seg.dtype != DType::kInt8 && seg.dtype != DType::kInt16)
        return ju::Invalid("seg.dtype", "must be int8 or int16");
      if (seg.shape.size() != image.shape.size() || (image.shape.size() != 5 && image.shape.size() != 4) ||
          seg.shape[0] != image.shape[0] ||
          !std::equal(seg.shape.begin() + 2, seg.shape.end(), image.shape.begin() + 2)) {
        return ju::Invalid("seg.shape",
                           absl::StrCat(ShapeString(seg.shape), " does not match image ", ShapeString(image.shape)));
      }
    }
    const int64_t seg_channels = has_seg ? seg.shape[1] : 0;
    ASSIGN_OR_RETURN(const CudaOutputLayout lay, OutputLayout(image.shape, options.image_dtype, seg_channels));
    const int64_t n_img = image.numel(), n_seg = has_seg ? seg.numel() : 0;
    const size_t img_bytes = Align256(n_img * sizeof(float)), seg_bytes = Align256(n_seg * sizeof(int16_t));

    DeviceScope scope(m.device);
    RETURN_IF_ERROR(scope.status());
    if (m.stream == nullptr) AUGMENTD_CUDA_OK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
    RETURN_IF_ERROR(m.Grow(&m.staging, &m.staging_cap, img_bytes + seg_bytes, true));
    RETURN_IF_ERROR(m.Grow(&m.d_in, &m.d_in_cap, img_bytes + seg_bytes, false));
    // Host → pinned staging (converting to the kernels' float32 / int16), then one async copy.
    float* h_img = static_cast<float*>(m.staging);
    int16_t* h_seg = reinterpret_cast<int16_t*>(static_cast<char*>(m.staging) + img_bytes);
    if (image.dtype == DType::kFloat32) {
      std::memcpy(h_img, image.data, n_img * sizeof(float));
    } else {
      const auto* h = static_cast<const uint16_t*>(image.data);
      for (int64_t i = 0; i < n_img; ++i)
        h_img[i] = image.dtype == DType::kFloat16 ? kernels::HalfBitsToFloat(h[i]) : kernels::BFloat16BitsToFloat(h[i]);
    }
    if (has_seg && seg.dtype == DType::kInt16) {
      std::memcpy(h_seg, seg.data, n_seg * sizeof(int16_t));
    } else if (has_seg) {
      const auto* p = static_cast<const int8_t*>(seg.data);
      for (int64_t i = 0; i < n_seg; ++i) h_seg[i] = p[i];
    }
    AUGMENTD_CUDA_OK(cudaMemcpyAsync(m.d_in, m.staging, img_bytes + seg_bytes, cudaMemcpyHostToDevice, m.stream));

    size_t out_bytes = Align256(lay.image_bytes);
    for (size_t b : lay.seg_bytes) out_bytes += Align256(b);
    RETURN_IF_ERROR(m.Grow(&m.d_out, &m.d_out_cap, out_bytes, false));
    CudaBatchInput din;
    din.image = static_cast<const float*>(m.d_in);
    din.seg = has_seg ? reinterpret_cast<const int16_t*>(static_cast<const char*>(m.d_in) + img_bytes) : nullptr;
    din.image_shape = image.shape;
    din.seg_channels = seg_channels;
    CudaBatchOutput dout;
    char* o = static_cast<char*>(m.d_out);
    dout.image = o;
    o += Align256(lay.image_bytes);
    for (size_t b : lay.seg_bytes) {
      dout.seg.push_back(reinterpret_cast<int16_t*>(o));
      o += Align256(b);
    }
    BatchResult result;
    RETURN_IF_ERROR(Run(din, dout, options, m.stream, &result.samples));
    result.image = HostTensor::Empty(lay.image_shape, options.image_dtype);
    AUGMENTD_CUDA_OK(
        cudaMemcpyAsync(result.image.raw_data(), dout.image, lay.image_bytes, cudaMemcpyDeviceToHost, m.stream));
    for (size_t l = 0; l < lay.seg_shapes.size(); ++l) {
      result.seg.push_back(HostTensor::Empty(lay.seg_shapes[l], lay.seg_dtype));
      AUGMENTD_CUDA_OK(cudaMemcpyAsync(result.seg.back().raw_data(), dout.seg[l], lay.seg_bytes[l],
                                       cudaMemcpyDeviceToHost, m.stream));
    }
    AUGMENTD_CUDA_OK(cudaStreamSynchronize(m.stream));
    out = std::move(result);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<BatchResult> AugmentBatchCuda(const PipelineSpec& spec, const BatchInput& input,
                                             const RunOptions& options) {
  ASSIGN_OR_RETURN(int ordinal, ParseCudaOrdinal(options.device));
  if (ordinal < 0) return ju::Invalid("device", "AugmentBatchCuda needs a CUDA device");
  ASSIGN_OR_RETURN(std::unique_ptr<CudaAugmenter> aug, CudaAugmenter::Create(spec, ordinal));
  return aug->RunHost(input, options);
}

}  // namespace augmentd
