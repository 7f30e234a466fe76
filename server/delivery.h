// server/delivery.h — how batches reach clients and patches reach the server, beyond inline bytes:
//   * output slot rings (HOST_SHM on any device, CUDA_IPC on CUDA devices), sized for one batch of the session
//     and admitted against max_session_memory_bytes and the server-wide --device_memory_budget_bytes;
//   * writing a host batch into a HOST_SHM slot (image in the session dtype, every deep-supervision target in
//     the session label dtype; 256-byte aligned, offsets in the tensors' host_shm references);
//   * the client input regions of patch mode (OpenSessionRequest.host_shm_regions / cuda_ipc_regions) and the
//     resolution of AugmentRequest tensors that reference them.
//
// Unary Augment always answers inline; slot delivery applies to StreamBatches (dataset mode).
// Errors: INVALID_ARGUMENT naming the field ("image.host_shm.region: ...", "host_shm_regions[1].byte_size"),
// RESOURCE_EXHAUSTED naming the limit (max_session_memory_bytes, device_memory_budget_bytes),
// PERMISSION_DENIED naming --allow_client_shm when client regions are disabled.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/device.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/session.pb.h"
#include "server/cuda_ipc_slots.h"
#include "server/options.h"
#include "server/shm_region.h"
#include "server/slot_ring.h"

namespace augmentd {

// The region name of output slot `slot` (OutputSlot.*.name, the tensors' references).
std::string SlotRegionName(uint32_t slot);

// Bytes one batch needs in a slot: the image (B, C, *out) in `image_dtype` and every label level (B, L, *level)
// in `label_bytes`-byte elements, each 256-byte aligned. `input_patch` is the spatial input size.
uint64_t BatchSlotBytes(const PipelineSpec& pipeline, const std::vector<int64_t>& input_patch, int64_t batch,
                        int64_t image_channels, int64_t label_channels, DType image_dtype, size_t label_bytes);

// What a ring needs to know about its session.
struct SlotRingRequest {
  v1::DeliveryKind kind = v1::DELIVERY_KIND_HOST_SHM;
  std::string session_id;
  uint32_t count = 2;            // prefetch_depth
  uint64_t slot_bytes = 0;       // BatchSlotBytes (CUDA rounds up to 2 MiB)
  uint64_t staging_bytes = 0;    // CUDA: pinned + device staging the workers hold (accounted, not allocated)
  DeviceInfo device;
};

// Creates the ring: checks count * slot_bytes (+ staging) against limits.max_session_memory_bytes, reserves it
// from `budget`, allocates. Memory is returned to the budget when the ring is destroyed.
absl::StatusOr<std::shared_ptr<SlotRing>> CreateSlotRing(const SlotRingRequest& request,
                                                         const ServerLimitsOptions& limits,
                                                         std::shared_ptr<MemoryBudget> budget);

// Copies a host batch into a HOST_SHM slot (labels converted to `label_dtype`, default the engine's) and sets
// batch->image / batch->targets as host_shm references to region `region`. INVALID_ARGUMENT when it does not fit.
absl::Status WriteHostSlot(const BatchResult& result, std::optional<DType> label_dtype, SlotBuffer& slot,
                           const std::string& region, v1::Batch* batch);

// Bytes a batch's tensors reference in slots (0 for inline tensors): what a slot delivery hands over.
uint64_t SlotPayloadBytes(const v1::Batch& batch);

// A session's client input regions, by name.
struct InputRegions {
  std::map<std::string, std::unique_ptr<ShmInputRegion>> host;
  std::map<std::string, std::unique_ptr<CudaInputRegion>> cuda;
  uint64_t bytes() const;
};

// Opens every region of the request (names unique and non-empty; CUDA regions only on a CUDA `device`).
// PERMISSION_DENIED naming --allow_client_shm when !allowed and any region is given. Null when none is given.
absl::StatusOr<std::unique_ptr<InputRegions>> OpenInputRegions(const v1::OpenSessionRequest& request,
                                                               const DeviceInfo& device, bool allowed);

// An AugmentRequest tensor as a view: inline bytes, a host_shm reference (host view) or a cuda_ipc reference
// (device view: `on_device`). INVALID_ARGUMENT naming `field` for unknown regions and out-of-range references.
// A host_shm reference is copied out of the client's object (ShmInputRegion::Read) into `owned`, which the view
// then points to: the engine never reads memory the client can truncate.
struct InputTensor {
  TensorView view;
  bool on_device = false;
  std::unique_ptr<uint8_t[]> owned;
  SlotBuffer* slot = nullptr;  // the server input slot the view lies in (ResolveSlotTensor), else null
};
absl::StatusOr<InputTensor> ResolveInputTensor(const v1::Tensor& tensor, const std::string& field,
                                               const InputRegions* regions);

}  // namespace augmentd
