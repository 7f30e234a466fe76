// augment/dataset/region_copy.h — strided copies between C-ordered arrays placed in a common coordinate
// system: the primitive under every box read (CaseArray::ReadBox, the .b2nd block reader).
//
// An array "placed at origin o" holds, at its element 0, the voxel with global coordinates o; the voxel with
// global coordinates g sits at C-order index (g − o) in it. A box read writes the in-bounds region straight into
// the caller's output box (placed at the box's lower bound), and pads only the outside:
//
//   RegionTarget out{buffer, DType::kInt16, box_lb, box_shape, rank};
//   FillOutside(out, start, stop, -1.0);                               // padding only outside [start, stop)
//   CopyRegion(DType::kInt8, mapped, zeros, array_shape, out, start, stop);   // the inside, converted per row
//
// Rank ≤ kMaxRegionRank (CaseArray::ReadBox refuses higher ranks). The callers guarantee that [lo, hi) lies
// inside both arrays (no bounds checks here).
// Large outputs (RegionTarget::stream, set by CaseArray::ReadBox for boxes of ≥ StreamingStoreThreshold()
// bytes; from 4 MiB by default) are written with non-temporal stores (stream_store.h): contiguous runs of output rows
// are assembled in a 4 KiB buffer and streamed as whole cache lines. The bytes written are the same either way;
// the caller calls StreamFence() before handing such an output on.
// Thread-safety: free functions, no state (except the process-wide threshold); no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "augment/dataset/dtype.h"

namespace augmentd::dataset {

// Highest rank a region copy handles: numpy's classic limit (b2nd's is 8).
inline constexpr int kMaxRegionRank = 32;

// A C-ordered destination array: `base` holds NumElements(shape) elements of `dtype`, placed at `origin`.
struct RegionTarget {
  void* base = nullptr;
  DType dtype = DType::kFloat32;
  const int64_t* origin = nullptr;  // `rank` entries
  const int64_t* shape = nullptr;   // `rank` entries
  int rank = 0;
  bool stream = false;  // non-temporal stores for whole cache lines (large outputs; see above)
};

// Output size (bytes) from which CaseArray::ReadBox streams its stores; default kDefaultStreamingStoreBytes = 4 MiB
// (a 205³ float box is 34 MiB). Measured: on the H200 host, 16 threads, cold 205³ boxes, 636 samples/s streaming
// vs 591 with ordinary stores in the same run (bench/results/2026-11-30-h200-dataset-s4.md: many threads share the
// memory bandwidth, and streaming halves the output's traffic); on the 2-core development VM ordinary stores were
// ~15 % faster per sample at 1 and 2 threads (bench/results/2026-11-30-dataset-cpu-s4.md). The service runs on GPU
// nodes with many cores, hence the default. SetStreamingStoreThreshold(0) streams every box read, SIZE_MAX none.
inline constexpr size_t kDefaultStreamingStoreBytes = size_t{4} << 20;
size_t StreamingStoreThreshold();
void SetStreamingStoreThreshold(size_t bytes);

// Writes converted pieces of source rows to their places in a RegionTarget, with one element converter resolved
// for the whole region. With dst.stream, pieces that continue each other in the output (the pieces of one row,
// and consecutive rows that span the output's last axis) form one run, assembled in a 4 KiB buffer and streamed
// in whole cache lines; otherwise each piece is converted straight into place. Call Flush() after the last
// Put (the destructor does not). One writer per thread.
class RowWriter {
 public:
  RowWriter(DType src_dtype, const RegionTarget& dst);
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  // Converts `count` elements at `src` to `out` (inside the target).
  void Put(const void* src, uint8_t* out, size_t count) {
    if (!stream_) {
      convert_(src, out, count);
      return;
    }
    PutStreamed(static_cast<const uint8_t*>(src), out, count);
  }
  // Where to put the converted `bytes` bytes bound for [out, out + bytes): `out` itself without streaming, else
  // the buffer (after writing out what does not continue into `out`); nullptr when they do not fit the buffer
  // (use Put). Commit(bytes) after writing them there.
  uint8_t* Span(uint8_t* out, size_t bytes) {
    if (!stream_) return out;
    if (out != run_ + used_) {
      Drain(true);
      run_ = out;
    }
    if (used_ + bytes > kBufferBytes) Drain(false);
    return used_ + bytes <= kBufferBytes ? buf_ + used_ : nullptr;
  }
  void Commit(size_t bytes) {
    if (stream_) used_ += bytes;
  }
  ConvertFn converter() const { return convert_; }
  // Writes what is buffered.
  void Flush();

 private:
  static constexpr size_t kBufferBytes = 4096;
  void PutStreamed(const uint8_t* src, uint8_t* out, size_t count);
  // Streams the buffered bytes up to the last whole output line (all of them when `all`), keeping the rest.
  void Drain(bool all);

  ConvertFn convert_;
  size_t in_item_, out_item_;
  bool stream_;
  uint8_t* run_ = nullptr;  // output address of buf_[0]
  size_t used_ = 0;         // bytes in buf_
  alignas(64) uint8_t buf_[kBufferBytes];
};

// Copies the voxels [lo, hi) (global coordinates, `dst.rank` axes) from `src` — a C-ordered array of
// `src_dtype` with shape `src_shape`, placed at `src_origin` — into `dst`, converting element types with
// ConvertElements' rules. Same-type rows are memcpy'd. Empty regions copy nothing.
void CopyRegion(DType src_dtype, const void* src, const int64_t* src_origin, const int64_t* src_shape,
                const RegionTarget& dst, const int64_t* lo, const int64_t* hi);

// Sets the elements [lo, hi) (global coordinates, inside dst's extent) of `dst` to `value`.
void FillRegion(const RegionTarget& dst, const int64_t* lo, const int64_t* hi, double value);

// Sets every element of `dst` outside [lo, hi) (global coordinates, inside dst's extent) to `value`; the
// elements inside are not touched. Writes nothing when [lo, hi) covers dst.
void FillOutside(const RegionTarget& dst, const int64_t* lo, const int64_t* hi, double value);

}  // namespace augmentd::dataset
