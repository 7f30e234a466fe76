#include "server/input_slots.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/adapter.h"
#include "server/cuda_ipc_slots.h"
#include "server/log.h"
#include "server/shm_region.h"

namespace augmentd {
namespace {

uint64_t Align256(uint64_t n) { return (n + 255) & ~uint64_t{255}; }

uint64_t Product(const std::vector<int64_t>& v) {
  uint64_t p = 1;
  for (int64_t x : v) p *= static_cast<uint64_t>(x);
  return p;
}

}  // namespace

std::string InputSlotRegionName(uint32_t slot) { return absl::StrCat("input", slot); }

uint64_t InputSlotBytes(const std::vector<int64_t>& input_patch, int64_t batch, int64_t image_channels,
                        int64_t seg_channels, DType image_dtype, DType label_dtype) {
  const uint64_t voxels = Product(input_patch) * static_cast<uint64_t>(batch);
  return Align256(voxels * static_cast<uint64_t>(image_channels) * DTypeSize(image_dtype)) +
         Align256(voxels * static_cast<uint64_t>(seg_channels) * DTypeSize(label_dtype));
}

absl::StatusOr<std::unique_ptr<InputSlots>> InputSlots::Create(const InputSlotsRequest& request,
                                                               const ServerLimitsOptions& limits,
                                                               std::shared_ptr<MemoryBudget> budget) {
  const bool cuda = request.kind == v1::DELIVERY_KIND_CUDA_IPC;
  if (request.kind != v1::DELIVERY_KIND_HOST_SHM && !cuda) {
    return absl::InvalidArgumentError(absl::StrCat("config.patch.input_slot_kind: ",
                                                   v1::DeliveryKind_Name(request.kind),
                                                   " is not an input slot kind (HOST_SHM or CUDA_IPC)"));
  }
  if (cuda && request.device.kind != DeviceKind::kCuda) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.patch.input_slot_kind: CUDA_IPC input slots need a session on a CUDA device (this one runs on ",
        request.device.name, ")"));
  }
  const uint64_t slot_bytes =
      cuda ? (request.slot_bytes + kCudaSlotAlignment - 1) / kCudaSlotAlignment * kCudaSlotAlignment
           : request.slot_bytes;
  const uint64_t total = slot_bytes * request.count;
  if (limits.max_session_memory_bytes != 0 && total > limits.max_session_memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "max_session_memory_bytes: ", request.count, " input slots of ", slot_bytes, " bytes = ", total,
        " bytes exceed the server's limit of ", limits.max_session_memory_bytes,
        " (lower config.patch.input_slots or config.batch_size)"));
  }
  if (budget != nullptr) {
    if (absl::Status s = budget->Reserve(total); !s.ok()) return s;
  }
  std::vector<std::unique_ptr<SlotBuffer>> buffers;
  for (uint32_t i = 0; i < request.count; ++i) {
    absl::StatusOr<std::unique_ptr<SlotBuffer>> slot =
        cuda ? CreateCudaIpcSlot(request.device.index, request.device.uuid, slot_bytes)
             : absl::StatusOr<std::unique_ptr<SlotBuffer>>(
                   ShmSlot::Create(ShmSlotName(request.session_id + "-in", i), slot_bytes));
    if (!slot.ok()) {
      buffers.clear();
      if (budget != nullptr) budget->Release(total);
      return absl::Status(slot.status().code(), absl::StrCat("input slot ", i, ": ", slot.status().message()));
    }
    // A CUDA session's host input slots are page-locked once: the device copies them without staging.
    if (!cuda && request.device.kind == DeviceKind::kCuda) {
      if (absl::Status s = PinHostSlot(**slot, request.device.index); !s.ok()) {
        LogWarning("input slot ", i, ": not page-locked (inputs go through staging): ", s.ToString());
      }
    }
    buffers.push_back(*std::move(slot));
  }
  static thread_local std::mt19937_64 rng(std::random_device{}());
  const uint64_t base = (rng() & 0xffffffffu) << 32;
  return std::unique_ptr<InputSlots>(new InputSlots(request.kind, std::move(buffers), std::move(budget), total, base));
}

InputSlots::InputSlots(v1::DeliveryKind kind, std::vector<std::unique_ptr<SlotBuffer>> buffers,
                       std::shared_ptr<MemoryBudget> budget, uint64_t reserved, uint64_t generation_base)
    : kind_(kind), budget_(std::move(budget)), reserved_(reserved) {
  slots_.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    slots_[i].buffer = std::move(buffers[i]);
    slots_[i].generation = generation_base;
  }
}

InputSlots::~InputSlots() {
  slots_.clear();
  if (budget_ != nullptr) budget_->Release(reserved_);
}

std::vector<v1::OutputSlot> InputSlots::Export() const {
  std::vector<v1::OutputSlot> out;
  for (size_t i = 0; i < slots_.size(); ++i) {
    v1::OutputSlot slot = slots_[i].buffer->Export(static_cast<uint32_t>(i));
    const std::string name = InputSlotRegionName(static_cast<uint32_t>(i));
    if (slot.has_host_shm()) slot.mutable_host_shm()->set_name(name);
    if (slot.has_cuda_ipc()) slot.mutable_cuda_ipc()->set_name(name);
    out.push_back(std::move(slot));
  }
  return out;
}

std::vector<v1::SlotLease> InputSlots::LeaseFree(uint64_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::SlotLease> out;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.state != State::kFree) continue;
    s.state = State::kLeased;
    s.owner = owner;
    ++s.generation;
    v1::SlotLease lease;
    lease.set_slot(static_cast<uint32_t>(i));
    lease.set_generation(s.generation);
    out.push_back(lease);
  }
  return out;
}

absl::StatusOr<SlotBuffer*> InputSlots::Take(uint64_t owner, const v1::SlotLease& lease, const std::string& field) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lease.slot() >= slots_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".slot: ", lease.slot(), ", but the session has ", slots_.size(), " input slots"));
  }
  Slot& s = slots_[lease.slot()];
  if (s.state == State::kFree || s.owner != owner) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": input slot ", lease.slot(), " is not leased to this stream (",
        s.state == State::kFree ? "it is free" : "another stream of the session holds it",
        "): write only into the slots of this stream's input_slots message or of its batches' input_lease"));
  }
  if (s.generation != lease.generation()) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ".generation: ", lease.generation(), " is not the current lease of input slot ", lease.slot(),
        " (a stale lease, or one of another session)"));
  }
  if (s.state == State::kInUse) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": input slot ", lease.slot(), " generation ", lease.generation(),
        " was already handed over by an earlier request (released twice); it comes back with that batch's "
        "input_lease"));
  }
  s.state = State::kInUse;
  return s.buffer.get();
}

std::optional<v1::SlotLease> InputSlots::Renew(uint32_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[slot];
  if (s.state != State::kInUse) return std::nullopt;
  if (s.orphaned) {
    s.state = State::kFree;
    s.owner = 0;
    s.orphaned = false;
    return std::nullopt;
  }
  s.state = State::kLeased;
  ++s.generation;
  v1::SlotLease lease;
  lease.set_slot(slot);
  lease.set_generation(s.generation);
  return lease;
}

uint32_t InputSlots::ReclaimOwner(uint64_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t freed = 0;
  for (Slot& s : slots_) {
    if (s.owner != owner || s.state == State::kFree) continue;
    if (s.state == State::kInUse) {
      s.orphaned = true;
      continue;
    }
    s.state = State::kFree;
    s.owner = 0;
    ++freed;
  }
  return freed;
}

uint32_t InputSlots::leased_slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (const Slot& s : slots_) n += s.state != State::kFree ? 1 : 0;
  return n;
}

void InputSlots::Unlink() {
  for (Slot& s : slots_) s.buffer->Unlink();
}

absl::StatusOr<InputTensor> ResolveSlotTensor(const v1::Tensor& tensor, const std::string& field,
                                              v1::DeliveryKind kind, const std::string& region, SlotBuffer& buffer) {
  const bool cuda = kind == v1::DELIVERY_KIND_CUDA_IPC;
  const v1::Tensor::StorageCase want = cuda ? v1::Tensor::kCudaIpc : v1::Tensor::kHostShm;
  const char* const storage = cuda ? "cuda_ipc" : "host_shm";
  if (tensor.storage_case() != want) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": with input_slot set the tensor must be a ", storage,
                                                   " reference into input slot '", region, "'"));
  }
  uint64_t bytes = 0;
  absl::StatusOr<TensorView> view = TensorLayoutFromProto(tensor, field, &bytes);
  if (!view.ok()) return view.status();
  const std::string& ref_region = cuda ? tensor.cuda_ipc().region() : tensor.host_shm().region();
  const uint64_t offset = cuda ? tensor.cuda_ipc().offset() : tensor.host_shm().offset();
  const uint64_t size = cuda ? tensor.cuda_ipc().byte_size() : tensor.host_shm().byte_size();
  const std::string ref_field = absl::StrCat(field, ".", storage);
  if (ref_region != region) {
    return absl::InvalidArgumentError(absl::StrCat(ref_field, ".region: '", ref_region,
                                                   "', but the request's input_slot is '", region, "'"));
  }
  if (size != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(ref_field, ".byte_size: ", size, " bytes, but the shape and dtype need ", bytes));
  }
  if (offset > buffer.byte_size() || size > buffer.byte_size() - offset) {
    return absl::InvalidArgumentError(absl::StrCat(ref_field, ".offset: [", offset, ", ", offset, " + ", size,
                                                   ") does not fit input slot '", region, "' of ",
                                                   buffer.byte_size(), " bytes"));
  }
  InputTensor out;
  out.view = *view;
  out.view.data = static_cast<const uint8_t*>(buffer.data()) + offset;
  out.on_device = cuda;
  out.slot = &buffer;
  return out;
}

}  // namespace augmentd
