// augment/cuda/engine_nocuda.cc — the CUDA engine's entry points in builds without CUDA (cuda/engine.h): every
// CUDA request is FAILED_PRECONDITION; "cpu" keeps working through AugmentBatch.
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/cuda/engine.h"
#include "augment/registry.h"

namespace augmentd {
namespace {
absl::Status NotBuilt(std::string_view device) {
  return absl::FailedPreconditionError(absl::StrCat(
      "device '", std::string(device), "': this augmentd build has no CUDA engine (configured without nvcc)"));
}
}  // namespace

bool CudaEngineBuilt() { return false; }

// No CUDA backends in this build (augment/cuda/backends.cc registers them in CUDA builds).
const CudaBackend* CudaBackendOf(TransformKind) { return nullptr; }
bool HasCudaImplementation(TransformKind) { return false; }

absl::StatusOr<BatchResult> AugmentBatchCuda(const PipelineSpec&, const BatchInput&, const RunOptions& options) {
  auto ordinal = ParseCudaOrdinal(options.device);
  if (!ordinal.ok()) return ordinal.status();
  return NotBuilt(options.device);
}

struct CudaAugmenter::Impl {};

CudaAugmenter::CudaAugmenter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaAugmenter::~CudaAugmenter() = default;

absl::StatusOr<std::unique_ptr<CudaAugmenter>> CudaAugmenter::Create(const PipelineSpec&, int device) {
  return NotBuilt(absl::StrCat("cuda:", device));
}

int CudaAugmenter::device() const { return -1; }

absl::StatusOr<CudaOutputLayout> CudaAugmenter::OutputLayout(const std::vector<int64_t>&, DType, int64_t) const {
  return NotBuilt("cuda");
}

absl::Status CudaAugmenter::Run(const CudaBatchInput&, const CudaBatchOutput&, const RunOptions&, CUstream_st*,
                                std::vector<SampleRecord>*) {
  return NotBuilt("cuda");
}

absl::StatusOr<BatchResult> CudaAugmenter::RunHost(const BatchInput&, const RunOptions&) { return NotBuilt("cuda"); }

void CudaAugmenter::set_graphs_enabled(bool) {}

void CudaAugmenter::set_split_policy(CudaSplitPolicy) {}

CudaGraphCounters CudaAugmenter::graph_counters() const { return {}; }

}  // namespace augmentd
