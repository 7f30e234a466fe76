#include "augment/dataset/case_array.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/mapped_file.h"
#include "augment/dataset/npy_reader.h"
#include "augment/dataset/stream_store.h"

namespace augmentd::dataset {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape Box::extent() const {
  Shape e(lb.size());
  for (size_t d = 0; d < lb.size(); ++d) e[d] = ub[d] - lb[d];
  return e;
}

absl::Status ValidateBox(const Box& box, size_t array_rank) {
  if (box.lb.size() != box.ub.size()) {
    return absl::InvalidArgumentError(absl::StrCat("box: lb has ", box.lb.size(), " axes but ub has ", box.ub.size()));
  }
  if (box.lb.size() > array_rank) {
    return absl::InvalidArgumentError(absl::StrCat("box: ", box.lb.size(), " axes for an array of rank ", array_rank));
  }
  // Extents are bounded so that element and byte counts cannot overflow (2^40 elements is far beyond any box).
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  int64_t n = 1;
  for (size_t d = 0; d < box.lb.size(); ++d) {
    if (box.ub[d] < box.lb[d]) {
      return absl::InvalidArgumentError(absl::StrCat("box: ub[", d, "]=", box.ub[d], " < lb[", d, "]=", box.lb[d]));
    }
    int64_t extent = 0;
    if (__builtin_sub_overflow(box.ub[d], box.lb[d], &extent) || __builtin_mul_overflow(n, extent, &n) ||
        n > kMaxElements) {
      return absl::InvalidArgumentError("box: too large");
    }
  }
  return absl::OkStatus();
}

bool BoxMissesArray(const Box& box, const Shape& spatial) {
  const size_t off = spatial.size() - std::min(spatial.size(), box.rank());
  for (size_t d = 0; d < box.rank(); ++d) {
    if (box.ub[d] <= 0 || box.lb[d] >= spatial[off + d]) return true;
  }
  return false;
}

Shape BoxShape(const Shape& shape, const Box& box) {
  const size_t lead = shape.size() - std::min(shape.size(), box.rank());
  Shape out(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(lead));
  for (size_t d = 0; d < box.rank(); ++d) out.push_back(box.ub[d] - box.lb[d]);
  return out;
}

absl::Status CaseArray::ReadRegion(const int64_t*, const int64_t*, const RegionTarget&) const {
  return absl::InternalError(absl::StrCat(path_, ": reader implements neither MappedData nor ReadRegion"));
}

// Crop-and-pad in three steps: (1) intersect the box with the array — if it misses the array on any axis
// everything is padding; (2) pad only the output voxels outside the intersection; (3) copy (mapped arrays) or
// decode (ReadRegion) the intersection straight into its place in the output, converting dtype per row.
absl::Status CaseArray::ReadBox(const Box& box, double pad_value, DType out_dtype, void* out, size_t out_bytes) const {
  if (absl::Status st = ValidateBox(box, rank()); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", st.message()));
  }
  const size_t k = rank();
  if (k == 0) return absl::InvalidArgumentError(absl::StrCat(path_, ": rank-0 arrays have no boxes"));
  if (k > static_cast<size_t>(kMaxRegionRank)) {
    return absl::UnimplementedError(absl::StrCat(path_, ": arrays of rank ", k, " (more than ", kMaxRegionRank,
                                                 " axes) are not supported"));
  }
  const size_t lead = k - box.rank();
  // Output shape, the intersection [start, stop) over all axes and the output's placement (origin): all on the
  // stack.
  int64_t out_shape[kMaxRegionRank], start[kMaxRegionRank], stop[kMaxRegionRank], origin[kMaxRegionRank];
  int64_t total = 1;
  for (size_t a = 0; a < k; ++a) {
    const bool cropped = a >= lead;
    origin[a] = cropped ? box.lb[a - lead] : 0;
    out_shape[a] = cropped ? box.ub[a - lead] - box.lb[a - lead] : shape_[a];
    start[a] = std::max<int64_t>(origin[a], 0);
    stop[a] = std::min<int64_t>(origin[a] + out_shape[a], shape_[a]);
    total *= out_shape[a];
  }
  const size_t out_item = DTypeSize(out_dtype);
  if (out == nullptr || out_bytes < static_cast<size_t>(total) * out_item) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": output buffer of ", out_bytes, " bytes for a box of ",
                                                   total, " ", DTypeName(out_dtype), " elements"));
  }
  if (total == 0) return absl::OkStatus();
  for (size_t a = lead; a < k; ++a) {
    if (stop[a] <= start[a]) {
      FillElements(out_dtype, out, static_cast<size_t>(total), pad_value);
      return absl::OkStatus();
    }
  }
  // Outputs of at least StreamingStoreThreshold() bytes (4 MiB by default): non-temporal stores, fenced below.
  const bool stream = static_cast<size_t>(total) * out_item >= StreamingStoreThreshold();
  const RegionTarget dst{out, out_dtype, origin, out_shape, static_cast<int>(k), stream};
  FillOutside(dst, start, stop, pad_value);
  absl::Status st;
  const MappedFile* backing = Backing();
  {
    std::optional<MappingRead> guard;
    if (backing != nullptr) guard.emplace(backing->range());
    if (const void* src = MappedData(); src != nullptr) {
      const int64_t zeros[kMaxRegionRank] = {0};
      CopyRegion(dtype_, src, zeros, shape_.data(), dst, start, stop);
    } else {
      st = ReadRegion(start, stop, dst);
    }
    if (guard.has_value() && guard->failed()) st = backing->LostPagesError();
  }
  if (stream) StreamFence();
  return st;
}

absl::Status CaseArray::ReadAll(DType out_dtype, void* out, size_t out_bytes) const {
  Box box{Shape(shape_.size(), 0), shape_};
  return ReadBox(box, 0.0, out_dtype, out, out_bytes);
}

absl::StatusOr<std::unique_ptr<CaseArray>> OpenCaseArray(const std::string& path) {
  if (absl::EndsWith(path, ".b2nd")) return OpenB2nd(path);
  if (absl::EndsWith(path, ".npy")) return OpenNpy(path);
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": unsupported file ending (expected .b2nd or .npy; .npz members via OpenNpzMember)"));
}

}  // namespace augmentd::dataset
