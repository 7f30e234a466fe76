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
// Thread-safety: free functions, no state; no allocation.
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
