#include "augment/dataset/case_array.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "augment/dataset/b2nd_reader.h"
#include "augment/dataset/npy_reader.h"

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

absl::Status CaseArray::ReadRegion(const int64_t*, const int64_t*, void*) const {
  return absl::InternalError(absl::StrCat(path_, ": reader implements neither MappedData nor ReadRegion"));
}

// Crop-and-pad in three steps: (1) intersect the box with the array — if it misses the array on any axis
// everything is padding; (2) get the in-bounds region as a C-ordered source (the mapping itself, or a
// decoded temporary); (3) copy it row by row (innermost axis) to its place in the output, converting dtype.
absl::Status CaseArray::ReadBox(const Box& box, double pad_value, DType out_dtype, void* out, size_t out_bytes) const {
  if (absl::Status st = ValidateBox(box, rank()); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", st.message()));
  }
  const Shape out_shape = BoxShape(shape_, box);
  const int64_t total = NumElements(out_shape);
  const size_t out_item = DTypeSize(out_dtype);
  if (out == nullptr || out_bytes < static_cast<size_t>(total) * out_item) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": output buffer of ", out_bytes, " bytes for a box of ",
                                                   total, " ", DTypeName(out_dtype), " elements"));
  }
  if (total == 0) return absl::OkStatus();

  const size_t k = rank();
  if (k == 0) return absl::InvalidArgumentError(absl::StrCat(path_, ": rank-0 arrays have no boxes"));
  const size_t lead = k - box.rank();
  // Region [start, stop) over all axes and where it lands in the output (dst_origin).
  Shape start(k, 0), stop(shape_), dst_origin(k, 0);
  bool padded = false;
  for (size_t d = 0; d < box.rank(); ++d) {
    const size_t a = lead + d;
    start[a] = std::max<int64_t>(box.lb[d], 0);
    stop[a] = std::min<int64_t>(box.ub[d], shape_[a]);
    if (stop[a] <= start[a]) {
      FillElements(out_dtype, out, static_cast<size_t>(total), pad_value);
      return absl::OkStatus();
    }
    dst_origin[a] = start[a] - box.lb[d];
    padded |= box.lb[d] < 0 || box.ub[d] > shape_[a];
  }
  Shape region(k);
  for (size_t a = 0; a < k; ++a) region[a] = stop[a] - start[a];

  const size_t in_item = DTypeSize(dtype_);
  const uint8_t* src = static_cast<const uint8_t*>(MappedData());
  Shape src_shape = shape_;
  Shape src_origin = start;
  if (src == nullptr) {
    if (!padded && out_dtype == dtype_) return ReadRegion(start.data(), stop.data(), out);
    // Decoded region before padding/conversion. Kept per thread: boxes are large (205³ f32 = 34 MB) and a
    // fresh allocation per read would page-fault it in every time.
    thread_local std::vector<uint8_t> temp;
    temp.resize(static_cast<size_t>(NumElements(region)) * in_item);
    if (absl::Status st = ReadRegion(start.data(), stop.data(), temp.data()); !st.ok()) return st;
    src = temp.data();
    src_shape = region;
    src_origin.assign(k, 0);
  }
  if (padded) FillElements(out_dtype, out, static_cast<size_t>(total), pad_value);

  // Row-major strides (in elements) of source and destination.
  std::vector<int64_t> src_stride(k, 1), dst_stride(k, 1);
  for (size_t a = k - 1; a > 0; --a) {
    src_stride[a - 1] = src_stride[a] * src_shape[a];
    dst_stride[a - 1] = dst_stride[a] * out_shape[a];
  }
  const int64_t row = region[k - 1];
  std::vector<int64_t> idx(k, 0);  // position within the region; the last axis is copied as a row
  uint8_t* dst = static_cast<uint8_t*>(out);
  while (true) {
    int64_t so = 0, doff = 0;
    for (size_t a = 0; a < k; ++a) {
      so += (src_origin[a] + idx[a]) * src_stride[a];
      doff += (dst_origin[a] + idx[a]) * dst_stride[a];
    }
    ConvertElements(dtype_, src + so * static_cast<int64_t>(in_item), out_dtype,
                    dst + doff * static_cast<int64_t>(out_item), static_cast<size_t>(row));
    // Advance the multi-index over all axes but the last.
    size_t a = k - 1;
    while (a > 0) {
      --a;
      if (++idx[a] < region[a]) break;
      idx[a] = 0;
      if (a == 0) return absl::OkStatus();
    }
    if (k == 1) return absl::OkStatus();
  }
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
