#include "augment/dataset/region_copy.h"

#include <cstring>

namespace augmentd::dataset {
namespace {

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
void FillPattern(uint8_t* dst, int64_t count, const uint8_t* pattern, size_t item, bool zero) {
  if (count <= 0) return;
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
};

// Fills the outside of [lo, hi) within the sub-array that starts at `p` on axis d (outer indices fixed inside
// the region): the slabs before and after [lo[d], hi[d]) whole, then recurses into the rows inside.
void FillOutsideAxis(const FillJob& j, int d, uint8_t* p) {
  const int64_t step = j.inner[d] * static_cast<int64_t>(j.item);
  FillPattern(p, j.lo[d] * j.inner[d], j.pattern, j.item, j.zero);
  FillPattern(p + j.hi[d] * step, (j.shape[d] - j.hi[d]) * j.inner[d], j.pattern, j.item, j.zero);
  if (d == j.n - 1) return;
  // Inner axes fully covered: nothing left to fill below this axis.
  bool covered = true;
  for (int e = d + 1; e < j.n; ++e) covered &= j.lo[e] == 0 && j.hi[e] == j.shape[e];
  if (covered) return;
  for (int64_t i = j.lo[d]; i < j.hi[d]; ++i) FillOutsideAxis(j, d + 1, p + i * step);
}

}  // namespace

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
  if (src_dtype == dst.dtype) {
    const size_t row_bytes = row * static_cast<size_t>(in_item);
    ForEachRow(n, ext, ss, ds, s, t, [row_bytes](const uint8_t* a, uint8_t* b) { std::memcpy(b, a, row_bytes); });
  } else {
    const DType from = src_dtype, to = dst.dtype;
    ForEachRow(n, ext, ss, ds, s, t, [=](const uint8_t* a, uint8_t* b) { ConvertElements(from, a, to, b, row); });
  }
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
    FillPattern(b, row, pattern, static_cast<size_t>(item), zero);
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
  const FillJob job{n, dst.shape, inner, llo, lhi, pattern, item, zero};
  FillOutsideAxis(job, 0, static_cast<uint8_t*>(dst.base));
}

}  // namespace augmentd::dataset
