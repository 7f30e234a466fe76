// augment/dataset/npy_reader.h — memory-mapped `.npy` case arrays (nnU-Net < 2.6 unpacked its `.npz` files
// into `<id>.npy` and `<id>_seg.npy`).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CaseArray> a, OpenNpy("/pre/Dataset001_X/nnUNetPlans_3d_fullres/c0.npy"));
//
// Supports NPY v1/v2/v3 headers, C order, the little-endian dtypes of dtype.h (`<f4`, `<i2`, `|i1`, ...).
// Fortran order → UNIMPLEMENTED naming the file; a file shorter than its header announces → DATA_LOSS.
// Thread-safety: see case_array.h (reads copy straight from the mapping; fully concurrent).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"

namespace augmentd::dataset {

absl::StatusOr<std::unique_ptr<CaseArray>> OpenNpy(const std::string& path);

}  // namespace augmentd::dataset
