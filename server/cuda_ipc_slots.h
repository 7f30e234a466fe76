// server/cuda_ipc_slots.h — the CUDA side of delivery: CUDA_IPC output slots, client CUDA IPC input regions and
// the per-session CUDA workers (one CudaAugmenter + CUDA stream + pinned staging each, created once and reused).
//
// Output slots: cudaMalloc'd on the session's device, sizes rounded up to 2 MiB, exported once at OpenSession
// (CudaIpcRegion: cudaIpcGetMemHandle of the base pointer, the device UUID, and an interprocess event handle,
// cudaEventInterprocess | cudaEventDisableTiming). After the kernels wrote a batch into a slot the worker records
// the slot's event on its stream and then synchronises that stream — on the executor thread, never a gRPC
// thread — before the batch message is sent. So a client may use a slot as soon as the message arrives; waiting
// on the event (cudaStreamWaitEvent) is allowed and costs nothing.
//
// Input regions (OpenSessionRequest.cuda_ipc_regions, patch mode on a CUDA session): cudaIpcOpenMemHandle once at
// OpenSession (on the session's device), the real allocation size (cuMemGetAddressRange through the runtime's
// driver entry point) must cover byte_size; closed with the session. The client must not modify the buffer
// while an Augment call that references it runs.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<SlotBuffer> slot, CreateCudaIpcSlot(0, "GPU-...", 100 << 20));
//   ASSIGN_OR_RETURN(CudaWorkerPool::Lease w, pool.Acquire());
//   RETURN_IF_ERROR(w->RunIntoSlot(input, options, *slot, &batch));   // batch.image / targets name the slot
//
// Builds without CUDA (cuda_ipc_nocuda.cc) answer FAILED_PRECONDITION. Errors: RESOURCE_EXHAUSTED when device
// memory runs out, INVALID_ARGUMENT naming the field for bad handles / sizes, INTERNAL for other CUDA errors.
// Thread-safety: a CudaWorker is used by one thread at a time (the pool hands it out exclusively); the pool and
// the slots are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/cuda/engine.h"
#include "augment/dataset/batch_loader.h"
#include "augment/engine.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/session.pb.h"
#include "server/slot_ring.h"

namespace augmentd {

// Whether this build can serve CUDA IPC (the CUDA engine is built in).
bool CudaIpcBuilt();

// Slot sizes are multiples of this.
constexpr uint64_t kCudaSlotAlignment = uint64_t{2} << 20;

absl::StatusOr<std::unique_ptr<SlotBuffer>> CreateCudaIpcSlot(int device, const std::string& device_uuid,
                                                              uint64_t bytes);

// Page-locks a HOST_SHM slot of a CUDA session for `device` (cudaHostRegister of its mapping, once, undone when the
// slot goes), so host-shm input slots are copied to the device and outputs back at full PCIe speed without
// staging. A no-op for other slots and in builds without CUDA; INTERNAL when the registration fails.
absl::Status PinHostSlot(SlotBuffer& slot, int device);

// A client CUDA IPC region opened in this process.
class CudaInputRegion {
 public:
  static absl::StatusOr<std::unique_ptr<CudaInputRegion>> Open(const v1::CudaIpcRegion& region, int device,
                                                               const std::string& device_uuid,
                                                               const std::string& field);
  ~CudaInputRegion();
  CudaInputRegion(const CudaInputRegion&) = delete;
  CudaInputRegion& operator=(const CudaInputRegion&) = delete;
  const uint8_t* data() const { return static_cast<const uint8_t*>(ptr_); }
  uint64_t byte_size() const { return bytes_; }

 private:
  CudaInputRegion(void* ptr, uint64_t bytes, int device) : ptr_(ptr), bytes_(bytes), device_(device) {}
  void* const ptr_;
  const uint64_t bytes_;
  const int device_;
};

// One CudaAugmenter with its own stream, pinned staging and device input buffers.
class CudaWorker {
 public:
  static absl::StatusOr<std::unique_ptr<CudaWorker>> Create(const PipelineSpec& spec, int device);
  ~CudaWorker();
  CudaWorker(const CudaWorker&) = delete;
  CudaWorker& operator=(const CudaWorker&) = delete;

  // Host in, host out (inline and HOST_SHM delivery): CudaAugmenter::RunHost (reuses its buffers).
  absl::StatusOr<BatchResult> RunHost(const BatchInput& input, const RunOptions& options);
  // Host in (float32 image, int16 seg), device out in `slot` (a CUDA IPC slot): pinned staging → device input on
  // the worker's stream, kernels write the slot, the slot's event is recorded, the stream synchronised. Sets
  // batch->image / batch->targets as cuda_ipc references into the slot (int16 labels). INVALID_ARGUMENT when the
  // batch does not fit the slot.
  absl::Status RunIntoSlot(const BatchInput& input, const RunOptions& options, SlotBuffer& slot,
                           const std::string& region, v1::Batch* batch, std::vector<SampleRecord>* records);
  // Host in, host out like RunHost, but float32 images / int16 labels are staged on several threads and the kernels
  // read the device copy (RunDeviceInput); other dtypes go through RunHost.
  absl::StatusOr<BatchResult> RunHostStaged(const BatchInput& input, const RunOptions& options);
  // Device in (a client's IPC region or LoadDatasetBatch's input: float32 image, int16 seg), host out.
  absl::StatusOr<BatchResult> RunDeviceInput(const CudaBatchInput& input, const RunOptions& options);
  // Host in, host out into a pinned HOST_SHM `slot` (PinHostSlot): the inputs go to the device straight from pinned
  // memory (a host-shm input slot; other host memory through the staging), the outputs straight into the slot (no
  // BatchResult, no second host copy), laid out as WriteHostSlot does; sets batch->image / targets as host_shm
  // references. Returns false, having done nothing, when this path does not apply (slot not pinned, inputs not
  // float32 / int16, `label_dtype` not the engine's): the caller takes RunHostStaged + WriteHostSlot.
  absl::StatusOr<bool> RunHostIntoHostSlot(const BatchInput& input, const RunOptions& options,
                                           std::optional<DType> label_dtype, SlotBuffer& slot,
                                           const std::string& region, v1::Batch* batch,
                                           std::vector<SampleRecord>* records);
  // Makes the worker's stream wait (cudaStreamWaitEvent) for the writer's last cudaEventRecord of a CUDA IPC input
  // slot's event (CudaIpcRegion.event_handle: a client records it after its copies instead of synchronising); a
  // never-recorded event, or a slot that is not a CUDA IPC slot, costs nothing. Call before the runs that read it.
  absl::Status WaitForSlotWrites(SlotBuffer& slot);
  // Device in, device out in `slot`: RunIntoSlot without the host staging.
  absl::Status RunDeviceIntoSlot(const CudaBatchInput& input, const RunOptions& options, SlotBuffer& slot,
                                 const std::string& region, v1::Batch* batch, std::vector<SampleRecord>* records);
  // Dataset mode with a GPU-resident case cache: plans batch `batch_index` and crops it into the worker's device
  // input buffers on its stream (dataset::BatchLoader::LoadBatchToDevice: resident cases are cropped by a kernel,
  // the others cropped on the host and copied). `*input` then names those buffers and stays valid until the next
  // call on this worker. `channels`: image channels of the dataset. FAILED_PRECONDITION when the loader's cache
  // has no device tier.
  absl::StatusOr<dataset::DeviceBatch> LoadDatasetBatch(const dataset::BatchLoader& loader, uint64_t batch_index,
                                                        int64_t channels, CudaBatchInput* input);

 private:
  struct Impl;
  explicit CudaWorker(std::unique_ptr<Impl> impl);
  // float32 image + int16 seg on the host → the worker's device input buffers (pinned staging filled on several
  // threads, one async copy on the worker's stream); the returned input names those buffers.
  absl::StatusOr<CudaBatchInput> StageHostInput(const BatchInput& input);
  std::unique_ptr<Impl> impl_;
};

// The workers of one session: Acquire hands out an idle one (creating it on first need); the lease returns it.
class CudaWorkerPool {
 public:
  CudaWorkerPool(PipelineSpec spec, int device) : spec_(std::move(spec)), device_(device) {}
  // Seeds the pool with an already created worker (OpenSession's coverage check).
  void Add(std::unique_ptr<CudaWorker> worker);
  class Lease {
   public:
    Lease(CudaWorkerPool* pool, std::unique_ptr<CudaWorker> w) : pool_(pool), worker_(std::move(w)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (worker_ != nullptr) pool_->Add(std::move(worker_));
    }
    CudaWorker* operator->() { return worker_.get(); }

   private:
    CudaWorkerPool* pool_;
    std::unique_ptr<CudaWorker> worker_;
  };
  absl::StatusOr<Lease> Acquire();
  int device() const { return device_; }
  size_t created() const;

 private:
  const PipelineSpec spec_;
  const int device_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<CudaWorker>> idle_;  // guarded by mu_
  size_t created_ = 0;                             // guarded by mu_
};

}  // namespace augmentd
