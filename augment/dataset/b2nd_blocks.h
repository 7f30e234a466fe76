// augment/dataset/b2nd_blocks.h — block-granular reads of a `.b2nd` array: decompress only the nd-blocks a
// region touches, straight from a memory mapping of the file, on any number of threads at once (b2nd_reader.cc's
// fast path).
//
//   b2nd_array_t* array = B2ndArrayOverMapping(*mapping);                         // an in-memory frame
//   std::unique_ptr<B2ndBlockReader> blocks = B2ndBlockReader::Create(array, DType::kFloat32);  // nullptr: n/a
//   RETURN_IF_ERROR(blocks->Read(start, stop, out_box, slice_fallback));
//
// Layout (c-blosc2 b2nd): chunks are numbered in C order over the chunk grid (extshape / chunkshape); inside a
// chunk, blocks are stored in C order over extchunkshape / blockshape (extchunkshape = chunkshape rounded up to
// whole blocks), each block C-contiguous over blockshape, edge blocks padded to the full blockshape.
// The region is read one column of chunks along the last axis (z) at a time: for each touched chunk the reader
// takes the chunk's address in the frame (blosc2_schunk_get_lazychunk: for an in-memory frame a pointer into it,
// no copy); then, for each row of touched blocks along z across the column's chunks, it decodes just those
// blocks (blosc2_getitem_bytes_ctx) into a per-thread staging buffer (≤ 1 MiB: 8 float32 blocks of 32³, the
// blocks a 205-voxel box row touches) and writes the rows they cover, each output row assembled from the
// blocks' pieces side by side (RegionTarget::stream: as whole streamed cache lines, region_copy.h), converting
// the element type on the way with one converter per read. Only the blocks' intersection with the region is
// copied (never the padding). Untouched blocks are neither read nor decoded; no chunk-sized buffer is written.
// All-zero chunks (c-blosc2 stores them as a header only) are filled with zeros without decoding.
// Applies to: rank ≥ 1, filters NOFILTER/SHUFFLE/BITSHUFFLE (per-block filters; nnU-Net writes SHUFFLE or
// none), any built-in codec. Create returns nullptr otherwise (e.g. DELTA, which references block 0). Read hands
// a chunk's share of the region to the caller's fallback (the whole-chunk path) when the chunk is uninitialised,
// holds another special value, is not in memory (a file-backed frame hands out lazy chunk copies) or its header
// disagrees with the b2nd layout.
// Errors: a chunk that fails to load or a block that fails to decode is DATA_LOSS (the message names the chunk;
// the caller prefixes the file).
// Resources: per reading thread, a decompression context and a staging buffer of up to 1 MiB (one block when
// blocks are larger), kept until the thread ends.
// Thread-safety: Read may be called from several threads at once: the frame lookup of a chunk (which uses the
// super-chunk's shared state) is serialised by the reader's mutex, decoding and copying run in parallel.
// Nothing else may use `array` concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "augment/dataset/dtype.h"
#include "augment/dataset/mapped_file.h"
#include "augment/dataset/region_copy.h"
#include "b2nd.h"
#include "blosc2.h"

namespace augmentd::dataset {

// The .b2nd file mapped by `file` as an in-memory b2nd array (b2nd_from_cframe without a copy: c-blosc2 marks
// such a frame's buffer as not its own, never frees or writes it). `file` must outlive the array; free the array
// with b2nd_free. nullptr if c-blosc2 rejects the frame (e.g. trailing bytes after it): the caller then reads
// through the file-backed handle.
b2nd_array_t* B2ndArrayOverMapping(const MappedFile& file);

// Process-wide time of all B2ndBlockReader reads in decoding blocks and in writing their rows to the output
// (benchmarks' per-stage breakdown). Off by default; when on, each decode pass and row write reads the steady
// clock (a few hundred reads per 205³ box).
struct B2ndBlockTiming {
  uint64_t decode_ns = 0, write_ns = 0, blocks = 0;
};
void SetB2ndBlockTiming(bool enabled);
B2ndBlockTiming B2ndBlockTimingTotals();

class B2ndBlockReader {
 public:
  // nullptr when the array's layout or filters are not handled (see above), or `dtype` (the array's element
  // type) does not match its item size. Does not own `array`, which should wrap an in-memory frame.
  static std::unique_ptr<B2ndBlockReader> Create(b2nd_array_t* array, DType dtype);
  B2ndBlockReader(const B2ndBlockReader&) = delete;
  B2ndBlockReader& operator=(const B2ndBlockReader&) = delete;

  // Reads the part [lo, hi) of a region that the block path cannot decode (one chunk's share) to its place in
  // the output; B2ndArray passes b2nd_get_slice_cbuffer + a copy.
  using ChunkFallback = absl::FunctionRef<absl::Status(const int64_t* lo, const int64_t* hi)>;

  // Reads [start, stop) (full rank, inside the array, start ≤ stop) to its place in `dst` (rank = the array's;
  // dst covers the region), converted to dst.dtype; nothing outside [start, stop) is written. All-zero chunks
  // are filled without decoding; chunks the block path does not handle go to `fallback`.
  absl::Status Read(const int64_t* start, const int64_t* stop, const RegionTarget& dst, ChunkFallback fallback) const;

 private:
  // Blocks of one column decoded before their rows are written (bounds the per-thread staging buffer).
  static constexpr int64_t kStagingBytes = int64_t{1} << 20;
  static constexpr int64_t kMaxGroup = 64;
  // A chunk of a column that decodes block by block: its frame bytes, origin and the region's part [lo, hi) on z.
  struct ColumnChunk {
    const uint8_t* src;
    int srcsize;
    int64_t nchunk, origin, lo, hi;
  };
  // A decoded block's part of a row: the elements [z, z + count) of the row, at `src` for the first row.
  struct Piece {
    const uint8_t* src;
    int64_t z, count;
  };

  B2ndBlockReader(b2nd_array_t* array, DType dtype) : array_(array), dtype_(dtype), typesize_(array->sc->typesize) {}
  // Reads the region's part of the chunks column[0..z) × [first, last) on the last axis z.
  absl::Status ReadColumn(const int64_t* grid, const int64_t* column, int64_t first, int64_t last,
                          const int64_t* start, const int64_t* stop, const RegionTarget& dst, ChunkFallback fallback,
                          RowWriter& writer) const;
  // Decodes the touched blocks of `chunks` (one column; [clo, chi) on the leading axes) one row of blocks
  // along z at a time into the per-thread staging buffer, then writes the rows they cover.
  absl::Status DecodeColumn(const std::vector<ColumnChunk>& chunks, const int64_t* corigin, const int64_t* clo,
                            const int64_t* chi, blosc2_context* dctx, const RegionTarget& dst,
                            RowWriter& writer) const;
  // Writes the rows [rlo, rhi) (leading axes) of `count` pieces side by side along z.
  void WriteRows(const Piece* pieces, int64_t count, const int64_t* rlo, const int64_t* rhi, const int64_t* bstride,
                 const int64_t* dstride, int64_t out_item, const RegionTarget& dst, RowWriter& writer) const;

  b2nd_array_t* array_;
  DType dtype_;
  int32_t typesize_;
  mutable std::mutex chunk_mu_;  // guards blosc2_schunk_get_lazychunk on array_
};

}  // namespace augmentd::dataset
