#include "augment/dataset/region_copy.h"

#include <atomic>
#include <cstring>

#include "augment/dataset/stream_store.h"

namespace augmentd::dataset {
namespace {

std::atomic<size_t> streaming_threshold{kDefaultStreamingStoreBytes};

// Rows shorter than this are filled with ordinary stores even in a streamed target (no whole line to gain).
constexpr size_t kMinStreamedFillBytes = 256;

// Row-major byte strides of an array of `shape` with `item`-byte elements.
void ByteStrides(int n, const int64_t* shape, int64_t item, int64_t* stride) {
  stride[n - 1] = item;
  for (int d = n - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape[d + 1];
}

// Copies `rows` rows of `row_bytes` in an odometer over the outer axes 0..n-2 (extents `ext`), moving both
// pointers by their strides. `Row(src, dst)` copies one row.
template <typename Row>
void ForEachRow(int n, const int64_t* ext, const int64_t* ss, const int64_t* ds, const uint8_t* src, uint8_t* dst,
                Row row) {
  int64_t idx[kMaxRegionRank] = {0};
  for (;;) {
    row(src, dst);
    int d = n - 2;
    for (; d >= 0; --d) {
      src += ss[d];
      dst += ds[d];
      if (++idx[d] < ext[d]) break;
      src -= ss[d] * ext[d];
      dst -= ds[d] * ext[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Fills `count` elements of `item` bytes from `pattern` (one element) at `dst`.
void FillPattern(uint8_t* dst, int64_t count, const uint8_t* pattern, size_t item, bool zero, bool stream) {
  if (count <= 0) return;
  if (stream && static_cast<size_t>(count) * item >= kMinStreamedFillBytes) {
    StreamFill(dst, static_cast<size_t>(count), pattern, item);
    return;
  }
  if (zero) {
    std::memset(dst, 0, static_cast<size_t>(count) * item);
    return;
  }
  switch (item) {  // typed stores let the compiler vectorise the fill
    case 1:
      std::memset(dst, pattern[0], static_cast<size_t>(count));
      return;
    case 2: {
      uint16_t v;
      std::memcpy(&v, pattern, 2);
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + 2 * i, &v, 2);
      return;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, pattern, 4);
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + 4 * i, &v, 4);
      return;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, pattern, 8);
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + 8 * i, &v, 8);
      return;
    }
  }
}

struct FillJob {
  int n;
  const int64_t* shape;
  const int64_t* inner;  // elements per index step on each axis
  const int64_t* lo;     // local (dst) coordinates
  const int64_t* hi;
  const uint8_t* pattern;
  size_t item;
  bool zero;
  bool stream;
};

// Fills the outside of [lo, hi) within the sub-array that starts at `p` on axis d (outer indices fixed inside
// the region): the slabs before and after [lo[d], hi[d]) whole, then recurses into the rows inside.
void FillOutsideAxis(const FillJob& j, int d, uint8_t* p) {
  const int64_t step = j.inner[d] * static_cast<int64_t>(j.item);
  FillPattern(p, j.lo[d] * j.inner[d], j.pattern, j.item, j.zero, j.stream);
  FillPattern(p + j.hi[d] * step, (j.shape[d] - j.hi[d]) * j.inner[d], j.pattern, j.item, j.zero, j.stream);
  if (d == j.n - 1) return;
  // Inner axes fully covered: nothing left to fill below this axis.
  bool covered = true;
  for (int e = d + 1; e < j.n; ++e) covered &= j.lo[e] == 0 && j.hi[e] == j.shape[e];
  if (covered) return;
  for (int64_t i = j.lo[d]; i < j.hi[d]; ++i) FillOutsideAxis(j, d + 1, p + i * step);
}

}  // namespace

size_t StreamingStoreThreshold() { return streaming_threshold.load(std::memory_order_relaxed); }

void SetStreamingStoreThreshold(size_t bytes) { streaming_threshold.store(bytes, std::memory_order_relaxed); }

RowWriter::RowWriter(DType src_dtype, const RegionTarget& dst)
    : convert_(ElementConverter(src_dtype, dst.dtype)),
      in_item_(DTypeSize(src_dtype)),
      out_item_(DTypeSize(dst.dtype)),
      stream_(dst.stream) {}

void RowWriter::PutStreamed(const uint8_t* src, uint8_t* out, size_t count) {
  if (out != run_ + used_) {  // not a continuation of the buffered run
    Drain(true);
    run_ = out;
  }
  while (count > 0) {
    size_t n = (kBufferBytes - used_) / out_item_;
    if (n == 0) {
      Drain(false);
      continue;
    }
    n = n < count ? n : count;
    convert_(src, buf_ + used_, n);
    used_ += n * out_item_;
    src += n * in_item_;
    count -= n;
  }
}

void RowWriter::Drain(bool all) {
  if (used_ == 0) return;
  size_t cut = used_;
  if (!all) {  // stop at the last line boundary of the output; the partial line stays buffered
    const uintptr_t end = reinterpret_cast<uintptr_t>(run_ + used_) & ~uintptr_t{63};
    if (end > reinterpret_cast<uintptr_t>(run_)) cut = static_cast<size_t>(end - reinterpret_cast<uintptr_t>(run_));
  }
  StreamCopy(run_, buf_, cut);
  std::memmove(buf_, buf_ + cut, used_ - cut);
  run_ += cut;
  used_ -= cut;
}

void RowWriter::Flush() {
  if (stream_ && used_ > 0) Drain(true);
}

void CopyRegion(DType src_dtype, const void* src, const int64_t* src_origin, const int64_t* src_shape,
                const RegionTarget& dst, const int64_t* lo, const int64_t* hi) {
  const int n = dst.rank;
  if (n <= 0) return;
  const int64_t in_item = static_cast<int64_t>(DTypeSize(src_dtype));
  const int64_t out_item = static_cast<int64_t>(DTypeSize(dst.dtype));
  int64_t ss[kMaxRegionRank], ds[kMaxRegionRank], ext[kMaxRegionRank];
  ByteStrides(n, src_shape, in_item, ss);
  ByteStrides(n, dst.shape, out_item, ds);
  const uint8_t* s = static_cast<const uint8_t*>(src);
  uint8_t* t = static_cast<uint8_t*>(dst.base);
  for (int d = 0; d < n; ++d) {
    ext[d] = hi[d] - lo[d];
    if (ext[d] <= 0) return;
    s += (lo[d] - src_origin[d]) * ss[d];
    t += (lo[d] - dst.origin[d]) * ds[d];
  }
  const size_t row = static_cast<size_t>(ext[n - 1]);
  RowWriter writer(src_dtype, dst);
  ForEachRow(n, ext, ss, ds, s, t, [&writer, row](const uint8_t* a, uint8_t* b) { writer.Put(a, b, row); });
  writer.Flush();
}

void FillRegion(const RegionTarget& dst, const int64_t* lo, const int64_t* hi, double value) {
  const int n = dst.rank;
  if (n <= 0) return;
  const int64_t item = static_cast<int64_t>(DTypeSize(dst.dtype));
  int64_t ds[kMaxRegionRank], ext[kMaxRegionRank];
  ByteStrides(n, dst.shape, item, ds);
  uint8_t* t = static_cast<uint8_t*>(dst.base);
  for (int d = 0; d < n; ++d) {
    ext[d] = hi[d] - lo[d];
    if (ext[d] <= 0) return;
    t += (lo[d] - dst.origin[d]) * ds[d];
  }
  uint8_t pattern[8] = {0};
  FillElements(dst.dtype, pattern, 1, value);
  bool zero = true;
  for (int64_t i = 0; i < item; ++i) zero &= pattern[i] == 0;
  const int64_t row = ext[n - 1];
  ForEachRow(n, ext, ds, ds, t, t, [&](const uint8_t*, uint8_t* b) {
    FillPattern(b, row, pattern, static_cast<size_t>(item), zero, dst.stream);
  });
}

void FillOutside(const RegionTarget& dst, const int64_t* lo, const int64_t* hi, double value) {
  const int n = dst.rank;
  if (n <= 0) return;
  int64_t llo[kMaxRegionRank], lhi[kMaxRegionRank], inner[kMaxRegionRank];
  bool inside = true;
  for (int d = 0; d < n; ++d) {
    llo[d] = lo[d] - dst.origin[d];
    lhi[d] = hi[d] - dst.origin[d];
    inside &= llo[d] == 0 && lhi[d] == dst.shape[d];
  }
  if (inside) return;
  inner[n - 1] = 1;
  for (int d = n - 2; d >= 0; --d) inner[d] = inner[d + 1] * dst.shape[d + 1];
  uint8_t pattern[8] = {0};
  FillElements(dst.dtype, pattern, 1, value);
  const size_t item = DTypeSize(dst.dtype);
  bool zero = true;
  for (size_t i = 0; i < item; ++i) zero &= pattern[i] == 0;
  const FillJob job{n, dst.shape, inner, llo, lhi, pattern, item, zero, dst.stream};
  FillOutsideAxis(job, 0, static_cast<uint8_t*>(dst.base));
}

}  // namespace augmentd::dataset
