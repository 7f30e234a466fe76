// augment/dataset/case_array.h — one array of a preprocessed nnU-Net case (data or segmentation), opened
// from disk, from which boxes are read with nnU-Net's crop-and-pad semantics.
//
// A CaseArray is what the readers (b2nd_reader.h, npy_reader.h, npz_reader.h) return. Its shape is nnU-Net's
// (C, X, Y, Z) (or any rank); a box covers the trailing box.rank() axes and keeps the leading ones whole,
// exactly like acvl_utils' `crop_and_pad_nd(image, bbox, pad_value)`: the part of [lb, ub) inside the array
// is copied, the rest is set to `pad_value`.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CaseArray> seg, OpenCaseArray("/data/.../case_000_seg.b2nd"));
//   Box box{{-10, 4, 0}, {118, 132, 128}};                 // may extend past the array on any side
//   std::vector<int16_t> out(seg->BoxElements(box));
//   RETURN_IF_ERROR(seg->ReadBox(box, /*pad_value=*/-1, DType::kInt16, out.data(), out.size() * 2));
//
// Errors: a missing file is NOT_FOUND naming it; a truncated or corrupt file DATA_LOSS naming it (at open or
// at read, whichever first sees the damage); an unsupported layout (Fortran order, big-endian) UNIMPLEMENTED.
// Thread-safety: all const methods may be called concurrently. Readers that keep decoder state (b2nd's chunk
// cache) serialise their reads internally, so reads of *different* arrays run in parallel and reads of the
// same array from several threads are safe but sequential. A CaseArray can be kept open for the lifetime of
// a session (it holds a file mapping or a decoder handle, not the decoded data, except .npz deflated members).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/dataset/dtype.h"
#include "augment/dataset/region_copy.h"

namespace augmentd::dataset {

using Shape = std::vector<int64_t>;
class MappedFile;

// Product of the extents (1 for rank 0).
int64_t NumElements(const Shape& shape);

// A half-open box [lb, ub) per axis over the trailing axes of an array. Bounds may be negative or past the
// array end (the outside is padded); ub[d] >= lb[d] is required.
struct Box {
  std::vector<int64_t> lb;
  std::vector<int64_t> ub;

  size_t rank() const { return lb.size(); }
  Shape extent() const;
};

// Checks that `box` fits an array of `array_rank` axes (box rank ≤ array rank, lb.size()==ub.size(),
// ub >= lb). INVALID_ARGUMENT otherwise.
absl::Status ValidateBox(const Box& box, size_t array_rank);

// Whether `box` lies entirely outside an array of the given trailing (spatial) extents on some axis. Then
// crop_and_pad_nd returns zeros (not the pad value) for the whole box — a quirk every crop path reproduces.
bool BoxMissesArray(const Box& box, const Shape& spatial);

// Output shape of a box read: the leading (uncropped) extents of `shape` followed by box.extent().
Shape BoxShape(const Shape& shape, const Box& box);

class CaseArray {
 public:
  virtual ~CaseArray() = default;
  CaseArray(const CaseArray&) = delete;
  CaseArray& operator=(const CaseArray&) = delete;

  // The file this array was opened from (for .npz: "<file>:<member>").
  const std::string& path() const { return path_; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  size_t rank() const { return shape_.size(); }

  // Number of output elements of ReadBox(box, ...).
  int64_t BoxElements(const Box& box) const { return NumElements(BoxShape(shape_, box)); }

  // Reads `box` into `out` (C order, shape BoxShape(shape(), box)), converted to `out_dtype`; voxels outside
  // the array get `pad_value`. `out_bytes` must be at least BoxElements(box) * DTypeSize(out_dtype).
  // The in-bounds part is copied (or decoded) straight into `out` and only the outside is padded: one write per
  // output voxel, no temporary, no heap allocation per call (except the .b2nd whole-chunk fallback's
  // per-thread buffer).
  // INVALID_ARGUMENT for a malformed box or a short buffer; UNIMPLEMENTED for arrays of rank > kMaxRegionRank;
  // DATA_LOSS if the file turns out to be damaged.
  absl::Status ReadBox(const Box& box, double pad_value, DType out_dtype, void* out, size_t out_bytes) const;

  // Reads the whole array (no padding), converted to `out_dtype`.
  absl::Status ReadAll(DType out_dtype, void* out, size_t out_bytes) const;

  // The elements in memory (C order, native dtype) for memory-mapped and in-memory arrays; nullptr for
  // arrays decoded on read (.b2nd).
  const void* ElementData() const { return MappedData(); }

 protected:
  CaseArray(std::string path, Shape shape, DType dtype)
      : path_(std::move(path)), shape_(std::move(shape)), dtype_(dtype) {}

  // Readers whose elements are addressable in memory (mapped .npy, .npz members) return a pointer to the
  // first element (C order, native dtype); ReadBox then copies straight from it. Others return nullptr and
  // implement ReadRegion.
  virtual const void* MappedData() const { return nullptr; }

  // The file mapping MappedData() / ReadRegion read from, if any: ReadBox guards those reads (mapping_guard.h),
  // so a file truncated under the mapping gives DATA_LOSS naming it instead of SIGBUS.
  virtual const MappedFile* Backing() const { return nullptr; }

  // Decodes the in-bounds hyper-rectangle [start, stop) over *all* axes straight into its place in `dst` (the
  // caller's output box, region_copy.h), converting to dst.dtype; writes nothing outside [start, stop). Only
  // called when MappedData() is nullptr.
  virtual absl::Status ReadRegion(const int64_t* start, const int64_t* stop, const RegionTarget& dst) const;

 private:
  std::string path_;
  Shape shape_;
  DType dtype_;
};

// Opens a case array by file ending: ".b2nd" (OpenB2nd), ".npy" (OpenNpy). For ".npz" members use
// OpenNpzMember (npz_reader.h). NOT_FOUND for a missing file, INVALID_ARGUMENT for another ending.
absl::StatusOr<std::unique_ptr<CaseArray>> OpenCaseArray(const std::string& path);

}  // namespace augmentd::dataset
