// server/slot_ring.h — a session's ring of output slots (HOST_SHM / CUDA_IPC delivery) and the lease rules,
// plus the server-wide memory budget the slots are admitted against.
//
// A slot moves free → held (a stream acquired it to write a batch into) → leased (the batch message naming it
// was sent; the client reads it in place) → free (the client released {slot, generation}, or its stream ended).
// A held or leased slot is never handed out again, so a leased slot is never rewritten. Each Acquire bumps the
// slot's generation; a Release whose generation is not the slot's current one, names another stream's slot or a
// slot that is not leased is ignored (counted in stale_releases). Slots are owned by the stream (owner id) that
// acquired them: ReclaimOwner frees everything a finished / cancelled stream still leased.
//
//   ASSIGN_OR_RETURN(auto ring, SlotRing::Create(v1::DELIVERY_KIND_HOST_SHM, std::move(buffers), budget));
//   std::optional<v1::SlotLease> lease = ring->Acquire(stream_id);    // nullopt: every slot is in use — wait
//   ... write the batch into ring->buffer(lease->slot()) ...; ring->Lease(lease->slot()); send the batch
//   ring->Release(stream_id, lease_from_client);                       // or ring->ReclaimOwner(stream_id)
//
// Fair hand-out between the streams of one session (per-stream quota): while n streams are registered
// (AddWaiter), each may have at most Share() = max(1, size / n) slots held or leased at once; Acquire refuses
// beyond that. A stream that filled the ring while it was alone (its prefetch runs ahead of its credits) gives
// back its produced-but-unsent batches above its share when a second stream registers (OverShare(); the stream
// re-produces them later: a batch index always gives the same batch). So an idle stream keeps at most its share,
// and a reading stream always gets the rest. A quota rather than first-come hand-out because prefetch is
// greedy: without it, whichever stream starts first owns every slot for as long as it idles.
//
// Waiters: a stream waiting for a free slot registers a callback; it runs (outside the ring's lock, possibly on
// the caller's thread while the caller holds its own locks — so it must only enqueue work) whenever a slot is
// freed. Thread-safety: every method is safe to call concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/session.pb.h"

namespace augmentd {

// The memory of one output slot: host shared memory (server/shm_region.h) or a CUDA allocation
// (server/cuda_ipc_slots.h).
class SlotBuffer {
 public:
  virtual ~SlotBuffer() = default;
  // Host pointer (HOST_SHM) or device pointer (CUDA_IPC) of the slot's first byte.
  virtual void* data() = 0;
  virtual uint64_t byte_size() const = 0;
  // The region description clients open once (OpenSessionResponse.output_slots[index]).
  virtual v1::OutputSlot Export(uint32_t index) const = 0;
  // Makes the slot unreachable for new openers (CloseSession); the memory itself goes with the object.
  virtual void Unlink() {}
};

// Server-wide budget (--device_memory_budget_bytes) for slot and staging memory; 0 = unlimited.
class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t limit) : limit_(limit) {}
  // RESOURCE_EXHAUSTED naming device_memory_budget_bytes when `bytes` do not fit.
  absl::Status Reserve(uint64_t bytes);
  void Release(uint64_t bytes);
  uint64_t used() const { return used_.load(); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

class SlotRing {
 public:
  // `reserved` bytes were reserved from `budget` (may be null) for this ring and are returned on destruction.
  SlotRing(v1::DeliveryKind kind, std::vector<std::unique_ptr<SlotBuffer>> buffers,
           std::shared_ptr<MemoryBudget> budget, uint64_t reserved);
  ~SlotRing();
  SlotRing(const SlotRing&) = delete;
  SlotRing& operator=(const SlotRing&) = delete;

  v1::DeliveryKind kind() const { return kind_; }
  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }
  uint64_t total_bytes() const;
  SlotBuffer& buffer(uint32_t slot) { return *slots_[slot].buffer; }
  // Every slot's OutputSlot, in index order.
  std::vector<v1::OutputSlot> Export() const;

  // A free slot for `owner` to write into (its generation bumped), or nullopt when none is free or `owner`
  // already has Share() slots held or leased.
  std::optional<v1::SlotLease> Acquire(uint64_t owner);
  // held → leased: the batch naming the slot is being sent.
  void Lease(uint32_t slot);
  // held → free: the batch was not sent (failed, or its stream ended first).
  void Abandon(uint32_t slot);
  // leased by `owner` with `lease.generation()` → free, true. Anything else is ignored: false.
  bool Release(uint64_t owner, const v1::SlotLease& lease);
  // Frees every slot `owner` leased; returns how many.
  uint32_t ReclaimOwner(uint64_t owner);

  // Slots one stream may have held or leased while the registered streams share the ring.
  uint32_t Share() const;
  // How many slots `owner` has beyond Share() (0 if none).
  uint32_t OverShare(uint64_t owner) const;

  uint32_t free_slots() const;
  uint32_t leased_slots() const;
  uint64_t stale_releases() const { return stale_.load(); }

  void AddWaiter(uint64_t owner, std::function<void()> waiter);
  void RemoveWaiter(uint64_t owner);
  // Unlinks every slot (CloseSession).
  void Unlink();

 private:
  enum class State { kFree, kHeld, kLeased };
  struct Slot {
    std::unique_ptr<SlotBuffer> buffer;
    State state = State::kFree;
    uint64_t owner = 0;
    uint64_t generation = 0;
  };
  void NotifyWaiters();
  uint32_t ShareLocked() const;                    // mu_ held
  uint32_t InUseLocked(uint64_t owner) const;      // mu_ held

  const v1::DeliveryKind kind_;
  std::shared_ptr<MemoryBudget> budget_;
  const uint64_t reserved_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;                                   // states guarded by mu_
  std::map<uint64_t, std::function<void()>> waiters_;         // guarded by mu_
  std::atomic<uint64_t> stale_{0};
};

}  // namespace augmentd
