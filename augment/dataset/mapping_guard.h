// augment/dataset/mapping_guard.h — reads of memory-mapped files that someone else may truncate under us.
//
// A read-only mapping of a file (MappedFile) stays valid only while the file keeps its size: when another
// process truncates the file in place (re-running nnUNetv2_preprocess over a dataset in use opens its outputs
// with O_TRUNC), touching a page past the new end raises SIGBUS, which kills the whole server. A reader wraps
// every access to such a mapping in a MappingRead; a SIGBUS inside the guarded range then
//   1. marks the range poisoned (MappedRange::poisoned(), an atomic the handler sets first),
//   2. maps anonymous zero pages over the rest of the range (mmap MAP_FIXED), so the faulting instruction and
//      every later access read zeros instead of faulting again, and returns from the handler;
// the read runs to its end on zeros and its caller turns MappingRead::failed() into DATA_LOSS naming the file.
//
// Why this and not sigsetjmp/siglongjmp out of the handler: the reads run inside c-blosc2's decoder (its
// contexts, buffers) and our own code holding locks and vectors; a longjmp would skip their destructors and
// unlocks and leave a decoder context half-updated. Returning from the handler keeps every frame intact: the
// decoder sees zeros (garbage it must survive anyway — tests/fuzz), nothing unwinds. Why not pread: the
// .b2nd block reader decodes nd-blocks straight from the mapping and the .npy path copies straight from it (one
// pass, no staging buffer; a shared mapping per file across sessions); pread would add a copy of every byte.
// Client shared-memory inputs, read once per request, do use pread (server/shm_region.h).
//
// Another thread reading a zero page that this fault installed sees `poisoned()` already set (the handler sets
// it before it maps), so it fails too: no read of a poisoned range ever succeeds. A SIGBUS outside every guarded
// range (a real bug) goes to the previously installed handler or the default action (the process dies as
// before). The handler is installed once per process, on the first MappingRead.
//
//   MappingRead guard(file->range());
//   CopyRegion(...);                               // reads the mapping
//   if (guard.failed()) return absl::DataLossError(path + ": truncated while being read");
//
// Thread-safety: MappingRead is per thread (a thread-local pointer; nests); MappedRange is shared.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace augmentd::dataset {

// A mapped address range that may lose its backing file.
class MappedRange {
 public:
  MappedRange(const void* begin, size_t bytes) : begin_(reinterpret_cast<uintptr_t>(begin)), bytes_(bytes) {}
  MappedRange(const MappedRange&) = delete;
  MappedRange& operator=(const MappedRange&) = delete;
  // True once a guarded read faulted on this range (its pages are zeros from there on).
  bool poisoned() const { return poisoned_.load(std::memory_order_acquire); }
  uintptr_t begin() const { return begin_; }
  size_t bytes() const { return bytes_; }

 private:
  friend struct MappingGuardAccess;
  const uintptr_t begin_;
  const size_t bytes_;
  mutable std::atomic<bool> poisoned_{false};  // set by the SIGBUS handler
};

class MappingRead {
 public:
  explicit MappingRead(const MappedRange& range);
  ~MappingRead();
  MappingRead(const MappingRead&) = delete;
  MappingRead& operator=(const MappingRead&) = delete;
  // The range lost its backing before or during this read (its result must be discarded).
  bool failed() const;

 private:
  friend struct MappingGuardAccess;
  const MappedRange& range_;
  MappingRead* const previous_;  // the enclosing guard of this thread (nesting)
  std::atomic<bool> faulted_{false};
};

// Number of SIGBUS faults turned into failed reads in this process (for tests and metrics).
uint64_t MappingFaults();

}  // namespace augmentd::dataset
