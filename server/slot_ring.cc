#include "server/slot_ring.h"

#include <algorithm>

#include <utility>

#include "absl/strings/str_cat.h"

namespace augmentd {

absl::Status MemoryBudget::Reserve(uint64_t bytes) {
  uint64_t used = used_.load();
  do {
    if (limit_ != 0 && used + bytes > limit_) {
      return absl::ResourceExhaustedError(absl::StrCat("device_memory_budget_bytes: the session needs ", bytes,
                                                       " bytes of slot/staging memory, ", used, " of the server's ",
                                                       limit_, " are in use"));
    }
  } while (!used_.compare_exchange_weak(used, used + bytes));
  return absl::OkStatus();
}

void MemoryBudget::Release(uint64_t bytes) { used_.fetch_sub(bytes); }

SlotRing::SlotRing(v1::DeliveryKind kind, std::vector<std::unique_ptr<SlotBuffer>> buffers,
                   std::shared_ptr<MemoryBudget> budget, uint64_t reserved)
    : kind_(kind), budget_(std::move(budget)), reserved_(reserved) {
  for (auto& b : buffers) slots_.push_back(Slot{std::move(b)});
}

SlotRing::~SlotRing() {
  slots_.clear();  // frees the memory first
  if (budget_ != nullptr) budget_->Release(reserved_);
}

uint64_t SlotRing::total_bytes() const {
  uint64_t sum = 0;
  for (const Slot& s : slots_) sum += s.buffer->byte_size();
  return sum;
}

std::vector<v1::OutputSlot> SlotRing::Export() const {
  std::vector<v1::OutputSlot> out;
  for (size_t i = 0; i < slots_.size(); ++i) out.push_back(slots_[i].buffer->Export(static_cast<uint32_t>(i)));
  return out;
}

uint32_t SlotRing::ShareLocked() const {
  const size_t streams = std::max<size_t>(1, waiters_.size());
  return static_cast<uint32_t>(std::max<size_t>(1, slots_.size() / streams));
}

uint32_t SlotRing::InUseLocked(uint64_t owner) const {
  uint32_t n = 0;
  for (const Slot& s : slots_) n += s.state != State::kFree && s.owner == owner ? 1 : 0;
  return n;
}

uint32_t SlotRing::Share() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ShareLocked();
}

uint32_t SlotRing::OverShare(uint64_t owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t used = InUseLocked(owner), share = ShareLocked();
  return used > share ? used - share : 0;
}

std::optional<v1::SlotLease> SlotRing::Acquire(uint64_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  if (InUseLocked(owner) >= ShareLocked()) return std::nullopt;  // its share is used: wait (fair hand-out)
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.state != State::kFree) continue;
    s.state = State::kHeld;
    s.owner = owner;
    ++s.generation;
    v1::SlotLease lease;
    lease.set_slot(static_cast<uint32_t>(i));
    lease.set_generation(s.generation);
    return lease;
  }
  return std::nullopt;
}

void SlotRing::Lease(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot < slots_.size() && slots_[slot].state == State::kHeld) slots_[slot].state = State::kLeased;
}

void SlotRing::Abandon(uint32_t slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot >= slots_.size() || slots_[slot].state != State::kHeld) return;
    slots_[slot].state = State::kFree;
  }
  NotifyWaiters();
}

bool SlotRing::Release(uint64_t owner, const v1::SlotLease& lease) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lease.slot() >= slots_.size() || slots_[lease.slot()].state != State::kLeased ||
        slots_[lease.slot()].owner != owner || slots_[lease.slot()].generation != lease.generation()) {
      stale_.fetch_add(1);
      return false;
    }
    slots_[lease.slot()].state = State::kFree;
  }
  NotifyWaiters();
  return true;
}

uint32_t SlotRing::ReclaimOwner(uint64_t owner) {
  uint32_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Slot& s : slots_) {
      if (s.state == State::kLeased && s.owner == owner) {
        s.state = State::kFree;
        ++n;
      }
    }
  }
  if (n > 0) NotifyWaiters();
  return n;
}

uint32_t SlotRing::free_slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (const Slot& s : slots_) n += s.state == State::kFree ? 1 : 0;
  return n;
}

uint32_t SlotRing::leased_slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (const Slot& s : slots_) n += s.state == State::kLeased ? 1 : 0;
  return n;
}

void SlotRing::AddWaiter(uint64_t owner, std::function<void()> waiter) {
  bool shared;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters_[owner] = std::move(waiter);
    shared = waiters_.size() > 1;
  }
  if (shared) NotifyWaiters();  // the share shrank: streams above it give back unsent batches
}

void SlotRing::RemoveWaiter(uint64_t owner) {
  bool shared;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shared = waiters_.erase(owner) > 0 && !waiters_.empty();
  }
  if (shared) NotifyWaiters();  // the share grew: the others may produce more
}

void SlotRing::Unlink() {
  for (Slot& s : slots_) s.buffer->Unlink();
}

void SlotRing::NotifyWaiters() {
  std::vector<std::function<void()>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [owner, w] : waiters_) waiters.push_back(w);
  }
  for (const auto& w : waiters) w();
}

}  // namespace augmentd
