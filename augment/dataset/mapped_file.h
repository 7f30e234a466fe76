// augment/dataset/mapped_file.h — a read-only memory mapping of a whole file (internal to the readers).
//
//   ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> f, MappedFile::Open(path));
//   const uint8_t* bytes = f->data();  size_t n = f->size();
//
// Errors name the file: NOT_FOUND (missing), PERMISSION_DENIED, FAILED_PRECONDITION (a directory),
// INTERNAL (other mmap/open failures). An empty file maps to size() == 0 with data() == nullptr.
// Thread-safety: immutable after Open; share freely. The mapping lives until the last owner releases it.
//
// OpenShared keeps the mappings of recently opened files (a process-wide LRU, ≤ kSharedMappingBytes of address
// space, ≤ kSharedMappings files) and hands out the same mapping again while the file is unchanged (same device,
// inode, size, mtime and ctime). Readers that open a case per sample (cold dataset reads) then skip mmap, the
// page faults and munmap's TLB shootdowns across all threads; nothing is read ahead or kept in anonymous memory
// (the pages are the page cache's, though the touched ones count in the process's RSS — hence the small bound;
// a dataset larger than it maps its files per open again, as without the cache).
//
// Files others may rewrite: every read of data() goes through a MappingRead over range() (mapping_guard.h), so a
// truncation under the mapping becomes LostPagesError() (DATA_LOSS naming the file) instead of SIGBUS. A
// poisoned mapping is never handed out again by OpenShared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "augment/dataset/mapping_guard.h"

struct stat;

namespace augmentd::dataset {

class MappedFile {
 public:
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  static absl::StatusOr<std::shared_ptr<const MappedFile>> OpenShared(const std::string& path);
  static constexpr uint64_t kSharedMappingBytes = uint64_t{4} << 30;
  static constexpr size_t kSharedMappings = 512;
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The mapped bytes, for MappingRead.
  const MappedRange& range() const { return range_; }
  // DATA_LOSS naming the file: a guarded read found it truncated (or replaced in place) under the mapping.
  absl::Status LostPagesError() const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size), range_(data, size) {}
  // Open, also returning the opened file's identity (fstat).
  static absl::StatusOr<std::shared_ptr<const MappedFile>> OpenWithStat(const std::string& path, struct stat* st);
  std::string path_;
  const uint8_t* data_;
  size_t size_;
  MappedRange range_;
};

// Maps errno from open()/stat() on `path` to a status naming the file.
absl::Status FileErrnoToStatus(int err, const std::string& path, const char* what);

}  // namespace augmentd::dataset
