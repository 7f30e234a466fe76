// augment/dataset/b2nd_blocks.h — block-granular reads of a `.b2nd` array: decompress only the nd-blocks a
// region touches (b2nd_reader.cc's fast path).
//
//   std::unique_ptr<B2ndBlockReader> blocks = B2ndBlockReader::Create(array);   // nullptr: layout not supported
//   ASSIGN_OR_RETURN(bool done, blocks->Read(start, stop, dst));                // false: use b2nd_get_slice_cbuffer
//
// Layout (c-blosc2 b2nd): chunks are numbered in C order over the chunk grid (extshape / chunkshape); inside a
// chunk, blocks are stored in C order over extchunkshape / blockshape (extchunkshape = chunkshape rounded up to
// whole blocks), each block C-contiguous over blockshape, edge blocks padded to the full blockshape. Per touched
// chunk the reader takes the chunk lazily (blosc2_schunk_get_lazychunk: header and block offsets only), masks
// out every block the region does not touch (blosc2_set_maskout) and decompresses the chunk: only the touched
// blocks are read from the file and decoded, each straight to its place in a chunk-sized buffer; then it copies
// each block's intersection with the region (never the padding) row by row into `dst`. (blosc2_getitem_ctx per
// block would decode each block into a temporary and copy it once more.)
// Applies to: rank ≥ 1, filters NOFILTER/SHUFFLE/BITSHUFFLE (per-block filters; nnU-Net writes SHUFFLE or
// none), any built-in codec. Create returns nullptr otherwise (e.g. DELTA, which references block 0). Read
// returns false — and the caller falls back to the whole-chunk path — for a chunk that is uninitialised or
// whose header disagrees with the b2nd layout (block size, padded chunk size).
// Errors: a chunk that fails to load or decode is DATA_LOSS (the message names the chunk; the caller prefixes
// the file).
// Resources: a decompression context per reader; per reading thread, a thread_local chunk buffer as large as
// the largest padded chunk read on that thread (≤ 6 MiB for nnU-Net ≥ 2.8 float32 data), kept until the thread
// ends.
// Thread-safety: none; one reader per array, used under the array's mutex (the decompression context, the
// mask and the super-chunk's frame are shared state).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "b2nd.h"
#include "blosc2.h"

namespace augmentd::dataset {

class B2ndBlockReader {
 public:
  // nullptr when the array's layout or filters are not handled (see above). Does not own `array`.
  static std::unique_ptr<B2ndBlockReader> Create(b2nd_array_t* array);
  ~B2ndBlockReader();
  B2ndBlockReader(const B2ndBlockReader&) = delete;
  B2ndBlockReader& operator=(const B2ndBlockReader&) = delete;

  // Reads [start, stop) (full rank, inside the array, start ≤ stop) into `dst`, C order, shape stop − start,
  // the array's item size. true: done; false: not applicable to some chunk (dst partly written; redo it all).
  absl::StatusOr<bool> Read(const int64_t* start, const int64_t* stop, void* dst);

 private:
  B2ndBlockReader(b2nd_array_t* array, blosc2_context* dctx);
  // Decodes the touched blocks of chunk `nchunk` (grid coordinates `chunk`) and copies them into dst.
  absl::StatusOr<bool> ReadChunk(int64_t nchunk, const int64_t* chunk, const int64_t* start, const int64_t* stop,
                                 uint8_t* dst);

  b2nd_array_t* array_;
  blosc2_context* dctx_;
  int32_t typesize_;
  int nblocks_;                  // blocks per chunk
  std::unique_ptr<bool[]> mask_;  // per block of a chunk: true = skip (blosc2_set_maskout)
};

}  // namespace augmentd::dataset
