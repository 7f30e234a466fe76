// Build without CUDA: server/cuda_ipc_slots.h answers FAILED_PRECONDITION (no session can run on a GPU).
#include "server/cuda_ipc_slots.h"

namespace augmentd {
namespace {
absl::Status NoCuda() { return absl::FailedPreconditionError("this augmentd was built without CUDA"); }
}  // namespace

bool CudaIpcBuilt() { return false; }

absl::StatusOr<std::unique_ptr<SlotBuffer>> CreateCudaIpcSlot(int, const std::string&, uint64_t) { return NoCuda(); }
absl::Status PinHostSlot(SlotBuffer&, int) { return absl::OkStatus(); }
absl::Status CudaWorker::WaitForSlotWrites(SlotBuffer&) { return NoCuda(); }
absl::StatusOr<bool> CudaWorker::RunHostIntoHostSlot(const BatchInput&, const RunOptions&, std::optional<DType>,
                                                     SlotBuffer&, const std::string&, v1::Batch*,
                                                     std::vector<SampleRecord>*) {
  return NoCuda();
}

absl::StatusOr<std::unique_ptr<CudaInputRegion>> CudaInputRegion::Open(const v1::CudaIpcRegion&, int,
                                                                       const std::string&, const std::string&) {
  return NoCuda();
}
CudaInputRegion::~CudaInputRegion() = default;

struct CudaWorker::Impl {};
CudaWorker::CudaWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaWorker::~CudaWorker() = default;
absl::StatusOr<std::unique_ptr<CudaWorker>> CudaWorker::Create(const PipelineSpec&, int) { return NoCuda(); }
absl::StatusOr<BatchResult> CudaWorker::RunHost(const BatchInput&, const RunOptions&) { return NoCuda(); }
absl::StatusOr<BatchResult> CudaWorker::RunHostStaged(const BatchInput&, const RunOptions&) { return NoCuda(); }
absl::StatusOr<CudaBatchInput> CudaWorker::StageHostInput(const BatchInput&) { return NoCuda(); }
absl::Status CudaWorker::RunIntoSlot(const BatchInput&, const RunOptions&, SlotBuffer&, const std::string&,
                                     v1::Batch*, std::vector<SampleRecord>*) {
  return NoCuda();
}
absl::StatusOr<BatchResult> CudaWorker::RunDeviceInput(const CudaBatchInput&, const RunOptions&) { return NoCuda(); }
absl::Status CudaWorker::RunDeviceIntoSlot(const CudaBatchInput&, const RunOptions&, SlotBuffer&, const std::string&,
                                           v1::Batch*, std::vector<SampleRecord>*) {
  return NoCuda();
}
absl::StatusOr<dataset::DeviceBatch> CudaWorker::LoadDatasetBatch(const dataset::BatchLoader&, uint64_t, int64_t,
                                                                  CudaBatchInput*) {
  return NoCuda();
}

}  // namespace augmentd
