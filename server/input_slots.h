// server/input_slots.h — a patch-mode session's server-owned input slots (PatchModeConfig.input_slots): buffers
// the co-located client writes its patches into, so a request carries a lease instead of the bytes.
//
// Memory: host shared memory (ShmSlot, "/augmentd-<pid>-<session>-in-<i>", mode 0600) or, on a CUDA session,
// cudaMalloc'd device memory (CreateCudaIpcSlot: 2 MiB aligned, one cudaIpcGetMemHandle at creation). Both are
// allocated and exported once, at OpenSession (OpenSessionResponse.input_slots, region names "input<i>"); no
// per-call registration, never a handle of a client allocation.
//
// Lease rules (one slot): free → leased to a stream (StreamPatches start: LeaseFree hands every free slot to the
// stream, the leases go to the client in the stream's first message) → in use (the client named the lease in a
// request: Take) → leased again with a new generation (Renew, after the engine read it; the batch carries the new
// lease) … → free (the stream ended: ReclaimOwner). A lease is handed over once: naming it again before it came
// back, naming a slot leased to another stream, a stale generation or one of another session (generations start
// at a random 32-bit base per session) is FAILED_PRECONDITION naming `input_slot`; a slot index out of range is
// INVALID_ARGUMENT.
//
//   ASSIGN_OR_RETURN(auto inputs, InputSlots::Create(request, limits, budget));
//   std::vector<v1::SlotLease> leases = inputs->LeaseFree(stream_id);        // → client
//   ASSIGN_OR_RETURN(SlotBuffer* slot, inputs->Take(stream_id, request.input_slot()));
//   ... augment from slot->data() ...; std::optional<v1::SlotLease> back = inputs->Renew(slot_index);
//
// Thread-safety: every method is safe to call concurrently. Memory returns to `budget` when the object goes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/device.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/session.pb.h"
#include "server/delivery.h"
#include "server/options.h"
#include "server/slot_ring.h"

namespace augmentd {

// The region name of input slot `slot` ("input<slot>").
std::string InputSlotRegionName(uint32_t slot);

// Bytes one batch of patches needs: the image (B, C, *in) then the segmentation (B, S, *in), each 256-aligned.
uint64_t InputSlotBytes(const std::vector<int64_t>& input_patch, int64_t batch, int64_t image_channels,
                        int64_t seg_channels, DType image_dtype, DType label_dtype);

struct InputSlotsRequest {
  v1::DeliveryKind kind = v1::DELIVERY_KIND_HOST_SHM;  // HOST_SHM or CUDA_IPC
  std::string session_id;
  uint32_t count = 0;
  uint64_t slot_bytes = 0;  // InputSlotBytes (CUDA rounds up to 2 MiB)
  DeviceInfo device;
};

class InputSlots {
 public:
  // Checks count * slot_bytes against limits.max_session_memory_bytes (RESOURCE_EXHAUSTED naming it), reserves it
  // from `budget` (may be null), allocates and exports. INVALID_ARGUMENT for CUDA_IPC on a CPU device.
  static absl::StatusOr<std::unique_ptr<InputSlots>> Create(const InputSlotsRequest& request,
                                                            const ServerLimitsOptions& limits,
                                                            std::shared_ptr<MemoryBudget> budget);
  ~InputSlots();
  InputSlots(const InputSlots&) = delete;
  InputSlots& operator=(const InputSlots&) = delete;

  v1::DeliveryKind kind() const { return kind_; }
  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }
  uint64_t total_bytes() const { return reserved_; }
  SlotBuffer& buffer(uint32_t slot) { return *slots_[slot].buffer; }
  // OpenSessionResponse.input_slots: every slot's region ("input<i>"), in index order.
  std::vector<v1::OutputSlot> Export() const;

  // Leases every free slot to `owner`; returns the leases (empty when another stream holds them all).
  std::vector<v1::SlotLease> LeaseFree(uint64_t owner);
  // leased to `owner` under `lease.generation()` → in use; the slot's memory. Errors name `field` (see above).
  absl::StatusOr<SlotBuffer*> Take(uint64_t owner, const v1::SlotLease& lease, const std::string& field);
  // in use → leased to its owner again with a new generation, returned; nullopt (and free) when the owner's
  // stream ended meanwhile.
  std::optional<v1::SlotLease> Renew(uint32_t slot);
  // Frees every slot `owner` leased; slots in use are freed by their Renew. Returns how many were freed now.
  uint32_t ReclaimOwner(uint64_t owner);
  uint32_t leased_slots() const;
  // Unlinks the host shm names (CloseSession); the memory goes with the object.
  void Unlink();

 private:
  enum class State { kFree, kLeased, kInUse };
  struct Slot {
    std::unique_ptr<SlotBuffer> buffer;
    State state = State::kFree;
    uint64_t owner = 0;
    uint64_t generation = 0;
    bool orphaned = false;  // in use when its owner went: freed by Renew
  };
  InputSlots(v1::DeliveryKind kind, std::vector<std::unique_ptr<SlotBuffer>> buffers,
             std::shared_ptr<MemoryBudget> budget, uint64_t reserved, uint64_t generation_base);

  const v1::DeliveryKind kind_;
  std::shared_ptr<MemoryBudget> budget_;
  const uint64_t reserved_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;  // states guarded by mu_
};

// A request tensor that references input slot `region` (`buffer`, of `kind`): checked (region name, byte size,
// range) and returned as a view; on_device for CUDA slots. INVALID_ARGUMENT naming `field` otherwise
// ("image.host_shm.offset: ... does not fit input slot 'input1' of N bytes").
absl::StatusOr<InputTensor> ResolveSlotTensor(const v1::Tensor& tensor, const std::string& field,
                                              v1::DeliveryKind kind, const std::string& region, SlotBuffer& buffer);

}  // namespace augmentd
