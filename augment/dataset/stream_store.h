// augment/dataset/stream_store.h — output stores that bypass the caches (non-temporal stores), for box reads
// whose output is far larger than the caches (a 205³ cold sample writes 52 MB).
//
// An ordinary store to a line that is not in the cache first reads the line from memory (read-for-ownership),
// so writing N bytes costs 2N of memory traffic; with many threads writing boxes at once that traffic is the
// shared limit. Non-temporal stores write whole 64-byte lines without reading them first.
//
//   StreamCopy(dst, src, bytes);          // the whole lines of [dst, dst+bytes): non-temporal; ends: ordinary
//   StreamFill(dst, count, pattern, 2);   // count elements of 2 bytes, each = pattern[0..2)
//   StreamFence();                        // before another thread (or a device copy) reads dst
//
// Only the 64-byte lines lying entirely inside the destination range are streamed; the partial lines at either
// end take ordinary stores, so neighbouring writes (the next row of a box) are never torn, and the bytes
// written are exactly those of memcpy/fill. Without SSE2 (non-x86 builds) these are memcpy and a plain fill.
// Thread-safety: free functions, no state. Non-temporal stores are weakly ordered: call StreamFence on the
// writing thread before the output is handed on (CaseArray::ReadBox does).
#pragma once

#include <cstddef>
#include <cstdint>

namespace augmentd::dataset {

// Copies `bytes` bytes from `src` to `dst` (no overlap).
void StreamCopy(void* dst, const void* src, size_t bytes);

// Writes `count` elements of `item` bytes (1, 2, 4 or 8), each a copy of `pattern`, from `dst` on; `dst` need
// not be aligned to `item`.
void StreamFill(void* dst, size_t count, const uint8_t* pattern, size_t item);

// Orders this thread's earlier non-temporal stores before its later stores (sfence).
void StreamFence();

}  // namespace augmentd::dataset
