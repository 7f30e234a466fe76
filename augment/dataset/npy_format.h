// augment/dataset/npy_format.h — the NPY file header (numpy's format, versions 1.0, 2.0 and 3.0).
//
// An .npy file is: magic "\x93NUMPY", major, minor, header length (uint16 LE for v1, uint32 LE for v2/v3),
// an ASCII Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (1, 64, 64, 64), } padded
// with spaces to a 64-byte boundary, then the raw elements. `.npz` files are zip archives of .npy members.
//
//   ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(bytes, size, path));
//   const uint8_t* elements = bytes + h.data_offset;
//
// Thread-safety: free functions, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"
#include "augment/dataset/dtype.h"

namespace augmentd::dataset {

struct NpyHeader {
  DType dtype = DType::kFloat32;
  bool fortran_order = false;
  Shape shape;
  size_t data_offset = 0;  // bytes from the start of the file to the first element
};

// Parses the header at the start of `bytes` (which holds at least the whole header; more is fine).
// DATA_LOSS naming `name` for a bad magic, a truncated or malformed header; UNIMPLEMENTED for an unsupported
// dtype (structured, big-endian, ...). Fortran order is parsed, not rejected (the caller decides).
absl::StatusOr<NpyHeader> ParseNpyHeader(const uint8_t* bytes, size_t size, const std::string& name);

// Builds a version-1.0 NPY header (C order) for `dtype` and `shape`, padded to 64 bytes; used by tests and
// by the old-format converters of the test suite.
std::string MakeNpyHeader(DType dtype, const Shape& shape, bool fortran_order = false);

}  // namespace augmentd::dataset
