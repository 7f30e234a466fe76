// server/shm_region.h — host shared memory: the server's HOST_SHM output slots and the clients' input regions.
//
// Output slots are POSIX shared-memory objects "/augmentd-<pid>-<session>-<slot>" (shm_open O_CREAT|O_EXCL,
// mode 0600: only processes of the server's user can open them — co-located trainers run as that user; a
// container needs the server's /dev/shm). They are exported by that name (HostShmRegion.key) and unlinked at
// CloseSession, so the name disappears at once while mappings stay valid until the last one goes. POSIX names
// were chosen over memfd because a /proc/<pid>/fd path needs ptrace-level access to the server and dies with
// the fd number, while a name is opened with plain shm_open / open("/dev/shm/...") by any same-user process.
//
// Input regions (OpenSessionRequest.host_shm_regions, patch mode) are opened by key: a POSIX shm name ("/x",
// no further '/') or a memfd path "/proc/<pid>/fd/<n>". The object's real size (fstat) must cover
// offset + byte_size. The region is NOT mapped: the object belongs to the client, which may truncate it at any
// time, and a mapping of a truncated object raises SIGBUS in whichever server thread touches it (LibTorch's
// intra-op threads included), killing every session. Read() copies a request's tensor out with pread on the
// fd kept open for the session: a truncation is then a short read, i.e. a Status for that request
// (FAILED_PRECONDITION when fstat already shows the object shorter, DATA_LOSS when it shrinks during the
// read), and the engine works on server-owned memory nobody else can change under it. The cost is one copy
// of the request's inputs (tmpfs page cache → our buffer), which the engine's first pass would have read anyway.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ShmSlot> slot, ShmSlot::Create("/augmentd-42-s1-0", 8 << 20));
//   ASSIGN_OR_RETURN(std::unique_ptr<ShmInputRegion> in, ShmInputRegion::Open(region, "host_shm_regions[0]"));
//
// Errors: INVALID_ARGUMENT naming the field (bad key, size beyond the object, overflow), NOT_FOUND for a missing
// object, PERMISSION_DENIED when it cannot be opened, RESOURCE_EXHAUSTED when memory runs out, INTERNAL otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "augmentd/v1/tensor.pb.h"
#include "server/slot_ring.h"

namespace augmentd {

class ShmSlot final : public SlotBuffer {
 public:
  static absl::StatusOr<std::unique_ptr<ShmSlot>> Create(const std::string& name, uint64_t bytes);
  ~ShmSlot() override;
  void* data() override { return base_; }
  uint64_t byte_size() const override { return bytes_; }
  v1::OutputSlot Export(uint32_t index) const override;
  void Unlink() override;
  const std::string& name() const { return name_; }
  // Page-locked for a CUDA device (PinHostSlot: cudaHostRegister of the mapping, once): the worker copies between
  // the slot and the device without staging. `unpin` runs before the mapping goes.
  bool pinned() const { return static_cast<bool>(unpin_); }
  void set_pinned(std::function<void()> unpin) { unpin_ = std::move(unpin); }

 private:
  ShmSlot(std::string name, void* base, uint64_t bytes) : name_(std::move(name)), base_(base), bytes_(bytes) {}
  const std::string name_;
  void* const base_;
  const uint64_t bytes_;
  bool linked_ = true;
  std::function<void()> unpin_;
};

class ShmInputRegion {
 public:
  static absl::StatusOr<std::unique_ptr<ShmInputRegion>> Open(const v1::HostShmRegion& region,
                                                              const std::string& field);
  ~ShmInputRegion();
  ShmInputRegion(const ShmInputRegion&) = delete;
  ShmInputRegion& operator=(const ShmInputRegion&) = delete;
  uint64_t byte_size() const { return bytes_; }
  // Copies [offset, offset + bytes) of the region (offset relative to the region) into `dst`.
  // FAILED_PRECONDITION / DATA_LOSS naming `field` and the region when the client truncated the object.
  absl::Status Read(uint64_t offset, uint64_t bytes, void* dst, const std::string& field) const;

 private:
  ShmInputRegion(int fd, std::string describe, uint64_t offset, uint64_t bytes)
      : fd_(fd), describe_(std::move(describe)), offset_(offset), bytes_(bytes) {}
  const int fd_;
  const std::string describe_;  // "host_shm_regions[0] 'name' (key)"
  const uint64_t offset_;       // of the region in the object
  const uint64_t bytes_;
};

// The name of output slot `slot` of session `session_id` in this process.
std::string ShmSlotName(const std::string& session_id, uint32_t slot);

}  // namespace augmentd
