#include "server/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace augmentd {
namespace {

absl::Status Errno(const std::string& what) {
  const int e = errno;
  const std::string msg = absl::StrCat(what, ": ", std::strerror(e));
  if (e == ENOENT) return absl::NotFoundError(msg);
  if (e == EACCES || e == EPERM) return absl::PermissionDeniedError(msg);
  if (e == ENOMEM || e == ENOSPC || e == EMFILE || e == ENFILE) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

// "/name" (POSIX shm) or "/proc/<pid>/fd/<n>" (memfd); anything else is refused before touching the filesystem.
bool ValidKey(const std::string& key) {
  if (key.size() < 2 || key[0] != '/') return false;
  if (key.find('/', 1) == std::string::npos) return key.size() < 250 && key.find('\0') == std::string::npos;
  std::vector<std::string> parts = absl::StrSplit(key.substr(1), '/');
  uint64_t n = 0;
  return parts.size() == 4 && parts[0] == "proc" && absl::SimpleAtoi(parts[1], &n) && parts[2] == "fd" &&
         absl::SimpleAtoi(parts[3], &n);
}

}  // namespace

std::string ShmSlotName(const std::string& session_id, uint32_t slot) {
  return absl::StrCat("/augmentd-", getpid(), "-", session_id, "-", slot);
}

absl::StatusOr<std::unique_ptr<ShmSlot>> ShmSlot::Create(const std::string& name, uint64_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return Errno(absl::StrCat("shm_open ", name));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    absl::Status s = Errno(absl::StrCat("ftruncate ", name, " to ", bytes, " bytes"));
    close(fd);
    shm_unlink(name.c_str());
    return s;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    absl::Status s = Errno(absl::StrCat("mmap ", name));
    shm_unlink(name.c_str());
    return s;
  }
  return std::unique_ptr<ShmSlot>(new ShmSlot(name, base, bytes));
}

ShmSlot::~ShmSlot() {
  Unlink();
  if (unpin_) unpin_();
  munmap(base_, bytes_);
}

void ShmSlot::Unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

v1::OutputSlot ShmSlot::Export(uint32_t index) const {
  v1::OutputSlot out;
  out.set_index(index);
  out.set_byte_size(bytes_);
  v1::HostShmRegion* r = out.mutable_host_shm();
  r->set_name(absl::StrCat("slot", index));
  r->set_key(name_);
  r->set_offset(0);
  r->set_byte_size(bytes_);
  return out;
}

absl::StatusOr<std::unique_ptr<ShmInputRegion>> ShmInputRegion::Open(const v1::HostShmRegion& region,
                                                                     const std::string& field) {
  const std::string& key = region.key();
  if (!ValidKey(key)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".key: '", key,
                                                   "' is neither a POSIX shm name (\"/name\") nor /proc/<pid>/fd/<n>"));
  }
  if (region.byte_size() == 0) return absl::InvalidArgumentError(absl::StrCat(field, ".byte_size: must be > 0"));
  if (region.offset() > (uint64_t{1} << 48) || region.byte_size() > (uint64_t{1} << 48)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".offset/byte_size: out of range"));
  }
  const bool proc = absl::StartsWith(key, "/proc/");
  const int fd = proc ? open(key.c_str(), O_RDONLY | O_CLOEXEC) : shm_open(key.c_str(), O_RDONLY, 0);
  if (fd < 0) {
    absl::Status s = Errno(absl::StrCat(field, ".key: cannot open '", key, "'"));
    return s;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(field, ".key: '", key, "' is not a shared-memory object"));
  }
  const uint64_t end = region.offset() + region.byte_size();
  if (end > static_cast<uint64_t>(st.st_size)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(field, ".byte_size: offset ", region.offset(), " + byte_size ",
                                                   region.byte_size(), " exceeds the object's real size ", st.st_size));
  }
  return std::unique_ptr<ShmInputRegion>(new ShmInputRegion(
      fd, absl::StrCat(field, " '", region.name(), "' (", key, ")"), region.offset(), region.byte_size()));
}

ShmInputRegion::~ShmInputRegion() { close(fd_); }

absl::Status ShmInputRegion::Read(uint64_t offset, uint64_t bytes, void* dst, const std::string& field) const {
  if (offset > bytes_ || bytes > bytes_ - offset) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": bytes [", offset, ", ", offset + bytes,
                                                   ") lie outside ", describe_, " of ", bytes_, " bytes"));
  }
  struct stat st {};
  const uint64_t end = offset_ + offset + bytes;
  if (fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) < end) {
    return absl::FailedPreconditionError(absl::StrCat(field, ": ", describe_, " was truncated by its owner to ",
                                                      st.st_size, " bytes; the tensor needs bytes up to ", end));
  }
  uint8_t* out = static_cast<uint8_t*>(dst);
  uint64_t done = 0;
  while (done < bytes) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes - done, uint64_t{1} << 30));
    const ssize_t n = pread(fd_, out + done, chunk, static_cast<off_t>(offset_ + offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(absl::StrCat(field, ": read of ", describe_));
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(field, ": ", describe_, " shrank while being read (", done, " of ",
                                              bytes, " bytes read): truncated by its owner"));
    }
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace augmentd
